//! # weighted_sum
//! *What it scores:* Σ wᵢ·vᵢ over its children, divided by a normaliser you choose explicitly,
//! because the anchors disagree (verifiers and TRL sum, open-instruct divides by Σ|w|,
//! ProRubric by the positive weights with a clamp) and a silent default would change rewards.
//!
//! *Spec:* `inputs` (list of graders); `weights` (same length; numbers or numeric strings);
//! `normalize`: `none` (plain sum), `sum` (÷ Σw), `abs_sum` (÷ Σ|w|), or `positive_clamp`
//! (÷ Σ max(0,w), then clamped to [0,1], so negative-weight "pitfall" children subtract).
//!
//! *Example:*
//! ```yaml
//! type: weighted_sum
//! normalize: sum
//! weights: [0.8, 0.2]
//! inputs:
//!   - {type: numeric, name: correct, reference: "{{item.answer}}"}
//!   - {type: format, name: format, style: r1}
//! ```
//!
//! *Score and failure modes:* children that do not apply are left out of both the sum and the
//! normaliser; all not applicable → not applicable. A child that failed without `on_error`
//! fails the node. Compile errors: weights that do not parse, a count that differs from
//! `inputs`, a normaliser that is zero.

use super::{fold, list};
use crate::compile::{sync, At, Child, Compiler, Number};
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedSumSpec {
    /// The child graders.
    pub inputs: Vec<Child>,
    /// One weight per input.
    pub weights: Vec<Number>,
    /// How the sum is normalised. Required: there is no safe default.
    pub normalize: Normalize,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Normalize {
    None,
    Sum,
    AbsSum,
    PositiveClamp,
}

pub struct WeightedSum {
    children: Vec<Node>,
    weights: Vec<f64>,
    normalize: Normalize,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: WeightedSumSpec = cx.spec(v, at)?;
    let children = list(cx, at, &spec.inputs);
    let weights: Vec<f64> = spec.weights.iter().map(|w| w.0).collect();
    let mut ok = true;
    if weights.len() != spec.inputs.len() {
        cx.err(
            at,
            Some("weights"),
            format!(
                "{} weights for {} inputs; give exactly one weight per input",
                weights.len(),
                spec.inputs.len()
            ),
        );
        ok = false;
    } else if normaliser(spec.normalize, weights.iter().copied()) == Some(0.0) {
        cx.err(
            at,
            Some("weights"),
            format!(
                "weights give a zero normaliser for `normalize: {:?}`",
                spec.normalize
            )
            .to_lowercase(),
        );
        ok = false;
    }
    let children = children?;
    ok.then(|| {
        sync(WeightedSum {
            children,
            weights,
            normalize: spec.normalize,
        })
    })
}

fn normaliser(n: Normalize, ws: impl Iterator<Item = f64>) -> Option<f64> {
    match n {
        Normalize::None => None,
        Normalize::Sum => Some(ws.sum()),
        Normalize::AbsSum => Some(ws.map(f64::abs).sum()),
        Normalize::PositiveClamp => Some(ws.map(|w| w.max(0.0)).sum()),
    }
}

impl SyncComponent for WeightedSum {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let ws = &self.weights;
        let r = fold(
            &self.children,
            s,
            cx,
            (0.0, 0.0, 0.0, 0.0),
            |(sum, w, wa, wp), i, v| {
                let wi = ws[i];
                (sum + wi * v, w + wi, wa + wi.abs(), wp + wi.max(0.0))
            },
            None,
        );
        let ((sum, w, wa, wp), st) = match r {
            Err(o) => return o,
            Ok(None) => return Outcome::not_applicable(),
            Ok(Some(x)) => x,
        };
        let z = match self.normalize {
            Normalize::None => 1.0,
            Normalize::Sum => w,
            Normalize::AbsSum => wa,
            Normalize::PositiveClamp => wp,
        };
        if z == 0.0 {
            return Outcome::error(
                "zero_normaliser",
                "the weights of the children that applied sum to zero",
            );
        }
        let mut v = sum / z;
        if self.normalize == Normalize::PositiveClamp {
            v = v.clamp(0.0, 1.0);
        }
        cx.note(|| format!("Σ w·v = {sum}, normaliser {z}"));
        st.finish(v)
    }
    /// `wᵢ` for `none`, `wᵢ/Σw` for `sum`, `wᵢ/Σ|w|` for `abs_sum`; `positive_clamp` clamps, so
    /// it is not a sum.
    fn linear_weights(&self) -> Option<Vec<f64>> {
        let z = match self.normalize {
            Normalize::None => 1.0,
            Normalize::PositiveClamp => return None,
            n => normaliser(n, self.weights.iter().copied())?,
        };
        (z != 0.0).then(|| self.weights.iter().map(|w| w / z).collect())
    }
    fn children(&self) -> Vec<&Node> {
        self.children.iter().collect()
    }
}
