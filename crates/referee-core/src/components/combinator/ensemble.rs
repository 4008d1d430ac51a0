//! # ensemble
//! *What it scores:* several graders of the same thing (judges of different models or prompts,
//! reward models), reduced by mean, median or majority, minus `penalty` times their standard
//! deviation: where the members disagree the reward is less sure, and a policy should not be
//! paid for pleasing one of them (RM ensembles, variance-aware and uncertainty-penalised
//! rewards). Their disagreement is the `<name>.std` component and in the trace.
//!
//! *Spec:* `inputs` (at least two graders on one scale); `reduce`: `mean` (default), `median`
//! or `majority` (the most frequent value, a tie going to the lowest); `penalty`: k ≥ 0
//! (default 0), the value being `reduce − k·std` (population standard deviation), so it can go
//! below the members' lowest value: wrap it in `clamp` to bound it.
//!
//! *Example:*
//! ```yaml
//! type: ensemble
//! name: judges
//! reduce: mean
//! penalty: 1.0
//! inputs:
//!   - {type: score_model, name: strict, model: judge-a, input: [{role: user, content: "Grade 0-1, strictly: {{sample.output_text}}"}]}
//!   - {type: score_model, name: lenient, model: judge-b, input: [{role: user, content: "Grade 0-1: {{sample.output_text}}"}]}
//!   - {type: numeric, name: exact, reference: "{{item.answer}}"}
//! ```
//!
//! *Score and failure modes:* members that do not apply are left out; none applies → not
//! applicable. Unlike the other combinators, a member that failed without `on_error` does not
//! fail the ensemble while a strict majority of the applicable members scored: its members are
//! interchangeable opinions, and one endpoint down should not stop the reward. The failure is in
//! the trace and the member's component stays null. Below a majority the ensemble fails with
//! the first failure's reason. A member's `on_error` value counts as its opinion, and the
//! failure shows in the ensemble's status. Compile errors: fewer than two inputs, a negative or
//! non-finite penalty.

use super::{list, propagate};
use crate::compile::{sync, At, Child, Compiler};
use crate::components::judge::samples::Reduce;
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnsembleSpec {
    /// The member graders (at least two, on one scale).
    pub inputs: Vec<Child>,
    #[serde(default)]
    pub reduce: Reduce,
    /// k in `reduce − k·std` (default 0: disagreement reported, not penalised).
    #[serde(default)]
    pub penalty: f64,
}

pub struct Ensemble {
    children: Vec<Node>,
    reduce: Reduce,
    penalty: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: EnsembleSpec = cx.spec(v, at)?;
    let mut ok = true;
    if spec.inputs.len() == 1 {
        cx.err(
            at,
            Some("inputs"),
            "an ensemble needs at least two graders (one has no disagreement to report)",
        );
        ok = false;
    }
    if !(spec.penalty.is_finite() && spec.penalty >= 0.0) {
        cx.err(
            at,
            Some("penalty"),
            format!("must be a number ≥ 0, found {}", spec.penalty),
        );
        ok = false;
    }
    let children = list(cx, at, &spec.inputs)?;
    ok.then(|| {
        sync(Ensemble {
            children,
            reduce: spec.reduce,
            penalty: spec.penalty,
        })
    })
}

impl SyncComponent for Ensemble {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let mark = cx.mark();
        let mut st = StatusAcc::default();
        let mut values = Vec::new();
        let mut failed: Vec<Outcome> = Vec::new();
        let mut shown = Vec::new();
        for c in &self.children {
            let before = cx.mark();
            let o = c.eval(s, cx);
            if cx.mark() > before {
                continue;
            }
            let at = c.meta.name.as_deref().unwrap_or(&c.meta.path).to_string();
            if o.usable() {
                st.add(&o);
                values.push(o.value);
                shown.push(json!({"member": at, "value": o.value}));
            } else if o.is_error() {
                let f = o.failure().map(|f| f.reason.to_string());
                failed.push(propagate(c, o));
                shown.push(json!({"member": at, "value": null, "reason": f}));
            }
        }
        if cx.mark() > mark {
            // Members still waiting: this round's value is a placeholder.
            return Outcome::not_applicable();
        }
        let n = values.len() + failed.len();
        if n == 0 {
            return Outcome::not_applicable();
        }
        if values.len() * 2 <= n {
            let first = failed.swap_remove(0);
            let f = first.failure().expect("a failed member").clone();
            return Outcome::error(
                f.reason,
                format!(
                    "{} of {n} members scored, fewer than a majority; the first failure: {}",
                    values.len(),
                    f.message
                ),
            );
        }
        let centre = self.reduce.apply(&values);
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let std =
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64).sqrt();
        let value = centre - self.penalty * std;
        cx.report_spread(std);
        let reduce = self.reduce.as_str();
        cx.detail(|| {
            json!({"ensemble": {"members": shown, "reduce": reduce, "centre": centre, "std": std,
                                "penalty": self.penalty}})
        });
        cx.note(|| {
            let vs: Vec<String> = values.iter().map(|v| format!("{}", round(*v))).collect();
            let failures = if failed.is_empty() {
                String::new()
            } else {
                format!(", {} failed", failed.len())
            };
            let penalised = if self.penalty > 0.0 {
                format!(" − {}·std = {}", self.penalty, round(value))
            } else {
                String::new()
            };
            format!(
                "{} members [{}]{failures}: {reduce} {}, std {}{penalised}",
                n,
                vs.join(", "),
                round(centre),
                round(std)
            )
        });
        st.finish(value)
    }

    fn children(&self) -> Vec<&Node> {
        self.children.iter().collect()
    }

    fn spread(&self) -> bool {
        true
    }
}

fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}
