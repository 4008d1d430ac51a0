//! # all_of
//! *What it scores:* 1 when every child holds (its value is at least `threshold`), else 0. The
//! CGPO "all judges agree" rule, for rule graders.
//!
//! *Spec:* `inputs` (list of graders); `threshold` (default 1.0).
//!
//! *Example:*
//! ```yaml
//! type: all_of
//! inputs:
//!   - {type: format, style: r1}
//!   - {type: contains, keywords: [Paris]}
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
        all: true,
    }))
}
