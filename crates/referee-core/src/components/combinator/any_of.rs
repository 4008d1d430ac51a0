//! # any_of
//! *What it scores:* 1 when at least one child holds (its value is at least `threshold`), else 0:
//! several acceptable answer forms.
//!
//! *Spec:* `inputs` (list of graders); `threshold` (default 1.0).
//!
//! *Example:*
//! ```yaml
//! type: any_of
//! inputs:
//!   - {type: contains, keywords: [Paris]}
//!   - {type: contains, keywords: [Lutetia]}
//! ```
//!
//! *Score and failure modes:* 1 or 0. Children that do not apply are skipped (all not
//! applicable → not applicable); a child that failed without `on_error` fails the node: an
//! unscored child is not a child that held.

use super::{list, HoldSpec, Holds};
use crate::compile::{sync, At, Compiler};
use serde_json::Value;

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: HoldSpec = cx.spec(v, at)?;
    let children = list(cx, at, &spec.inputs)?;
    Some(sync(Holds {
        children,
        threshold: spec.threshold,
        all: false,
    }))
}
