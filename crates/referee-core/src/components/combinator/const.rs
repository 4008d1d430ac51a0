//! # const
//! *What it scores:* nothing: it always gives `value`. A branch of a gate, a baseline, a bonus.
//!
//! *Spec:* `value` (number).
//!
//! *Example:*
//! ```yaml
//! type: const
//! value: -1
//! ```
//!
//! *Score and failure modes:* always `value`; never fails.

use crate::compile::{sync, At, Compiler};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConstSpec {
    /// The value.
    pub value: f64,
}

pub struct Const(f64);

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ConstSpec = cx.spec(v, at)?;
    Some(sync(Const(spec.value)))
}

impl SyncComponent for Const {
    fn score(&self, _: &Sample, _: &mut ScoreCtx) -> Outcome {
        Outcome::ok(self.0)
    }
}
