//! # min
//! *What it scores:* the smallest value among its children: a reward that is only as good as the
//! weakest part.
//!
//! *Spec:* `inputs` (list of graders).
//!
//! *Example:*
//! ```yaml
//! type: min
//! inputs:
//!   - {type: contains, keywords: [Paris]}
//!   - {type: length, unit: words, max: 50}
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
        init: f64::INFINITY,
        decides: Decides::Floor,
        op: f64::min,
    }))
}
