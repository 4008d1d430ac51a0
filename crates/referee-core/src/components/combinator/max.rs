//! # max
//! *What it scores:* the largest value among its children: the best of several ways to earn the
//! reward.
//!
//! *Spec:* `inputs` (list of graders).
//!
//! *Example:*
//! ```yaml
//! type: max
//! inputs:
//!   - {type: contains, keywords: [Paris]}
//!   - {type: contains, keywords: [capital of France]}
//! ```
//!
//! *Score and failure modes:* children that do not apply are skipped; all not applicable →
//! not applicable; a child that failed without `on_error` fails the node with its reason.

use super::{list, Decides, Fold, ListSpec};
use crate::compile::{sync, At, Compiler};
use serde_json::Value;

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ListSpec = cx.spec(v, at)?;
    let children = list(cx, at, &spec.inputs)?;
    Some(sync(Fold {
        children,
        init: f64::NEG_INFINITY,
        decides: Decides::Ceiling,
        op: f64::max,
    }))
}
