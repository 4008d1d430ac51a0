//! # product
//! *What it scores:* the product of its children's values: a multiplicative gate where any zero
//! zeroes the whole reward (e.g. correctness × format).
//!
//! *Spec:* `inputs` (list of graders).
//!
//! *Example:*
//! ```yaml
//! type: product
//! inputs:
//!   - {type: format, style: r1}
//!   - {type: numeric, reference: "{{item.answer}}"}
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
        init: 1.0,
        decides: Decides::Zero,
        op: |a, b| a * b,
    }))
}
