//! # scale
//! *What it scores:* `factor · value + offset` of its child: maps a 0/1 check to −1/+1, or
//! shrinks a shaping term.
//!
//! *Spec:* `grader` (the child), `factor` (default 1), `offset` (default 0).
//!
//! *Example:*
//! ```yaml
//! type: scale
//! factor: 2
//! offset: -1
//! grader: {type: string_check, input: "{{sample.output_text}}", reference: "{{item.label}}", operation: eq}
//! ```
//!
//! *Score and failure modes:* the mapped value; a failed child fails the node unless it has
//! `on_error`.

use super::unary;
use crate::compile::{sync, At, Child, Compiler};
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleSpec {
    /// The child grader.
    pub grader: Child,
    /// Multiplier (default 1).
    #[serde(default = "super::one")]
    pub factor: f64,
    /// Added after multiplying (default 0).
    #[serde(default)]
    pub offset: f64,
}

pub struct Scale {
    child: Node,
    factor: f64,
    offset: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ScaleSpec = cx.spec(v, at)?;
    let child = cx.child(&spec.grader, at, "grader")?;
    Some(sync(Scale {
        child,
        factor: spec.factor,
        offset: spec.offset,
    }))
}

impl SyncComponent for Scale {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        unary(&self.child, s, cx, |v| self.factor * v + self.offset)
    }
    fn children(&self) -> Vec<&Node> {
        vec![&self.child]
    }
}
