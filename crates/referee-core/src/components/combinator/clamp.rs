//! # clamp
//! *What it scores:* its child's value limited to [`min`, `max`]: a cap on a shaping term, or a
//! floor under a penalty.
//!
//! *Spec:* `grader` (the child), `min` and/or `max` (at least one).
//!
//! *Example:*
//! ```yaml
//! type: clamp
//! min: -0.5
//! max: 0
//! grader: {type: length, unit: words, max: 400, penalty: linear, per_unit: 0.01}
//! ```
//!
//! *Score and failure modes:* the clamped value; a failed child fails the node unless it has
//! `on_error`. Compile error when neither bound is given or `min > max`.

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
pub struct ClampSpec {
    /// The child grader.
    pub grader: Child,
    /// Lower bound.
    #[serde(default)]
    pub min: Option<f64>,
    /// Upper bound.
    #[serde(default)]
    pub max: Option<f64>,
}

pub struct Clamp {
    child: Node,
    min: f64,
    max: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ClampSpec = cx.spec(v, at)?;
    let child = cx.child(&spec.grader, at, "grader");
    let (min, max) = (
        spec.min.unwrap_or(f64::NEG_INFINITY),
        spec.max.unwrap_or(f64::INFINITY),
    );
    if spec.min.is_none() && spec.max.is_none() {
        cx.err(at, None, "give `min`, `max` or both");
        return None;
    }
    if min > max {
        cx.err(
            at,
            Some("min"),
            format!("min {min} is greater than max {max}"),
        );
        return None;
    }
    Some(sync(Clamp {
        child: child?,
        min,
        max,
    }))
}

impl SyncComponent for Clamp {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        unary(&self.child, s, cx, |v| v.clamp(self.min, self.max))
    }
    fn children(&self) -> Vec<&Node> {
        vec![&self.child]
    }
}
