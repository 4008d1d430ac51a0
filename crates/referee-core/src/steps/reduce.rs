//! Per-step scores to one value, the same way for every step component, and the per-step values
//! a result carries.
//!
//! `aggregate:` (each from the work that uses it; how it takes step inflation, i.e. a policy
//! adding steps, is said for each and tested):
//! - `min` (default): the weakest step (Math-Shepherd, Wang et al. 2023, arXiv 2312.08935; the
//!   PRM-as-reward setting of Gao et al. 2024, arXiv 2410.15115). Adding steps can only lower it.
//! - `product`: the chance that every step is right (Lightman et al. 2023, "Let's Verify Step by
//!   Step", arXiv 2305.20050). Adding a step multiplies by at most 1: it can only lower it.
//! - `last`: the last step's score (the "last" reduction of Qwen2.5-Math-PRM, Zhang et al. 2025,
//!   arXiv 2501.07301). Steps before the last do not count, added or not.
//! - `mean`: the mean step score. **Not inflation-proof**: a policy adding steps that score
//!   high raises it. Repeats score 0 and the cap bounds it; prefer min, product, Clip or Delta
//!   where a policy can add steps.
//! - `fraction`: the share of steps scoring at least `threshold`; as mean, not inflation-proof.
//! - `first_error`: the share of steps before the first step below `threshold` (1 when none is;
//!   ProcessBench's first-error position, Zheng et al. 2024, arXiv 2412.06559). Adding good steps
//!   before the error raises it: use it to audit, or with the outcome gate.
//! - `sum`: the total. Inflatable; for rules whose per-step values are penalties (≤ 0).
//! - `clip`: Gao et al. 2024 (arXiv 2410.15115): each step's reward is `min(r − threshold, 0)`,
//!   summed. Every term is ≤ 0, so adding steps can never raise it.
//! - `delta`: Gao et al. 2024: each step's reward is `r_t − r_{t+1}`, the last step keeping
//!   `r_T`, summed; the sum telescopes to `r_1`, and the return from any step is that step's
//!   score. Steps added after the first change nothing; a step put *first* replaces `r_1`, so
//!   Delta is for PRM scores, which rate the prefix (the chance of a right answer from here),
//!   not for a rule per step, which would pay a trivially true opening step.
//!
//! `outcome:` gates the process credit by an outcome grader: `when: correct` (default) gives
//! the credit only when the outcome holds (≥ its `threshold`, default 1), 0 otherwise; `when:
//! wrong` only when it does not (a penalty term for wrong answers, e.g. with `clip`). The outcome
//! is scored first, and the steps are not graded when the gate is shut. The per-step values in
//! `step_rewards` are the terms the aggregate is made of (for `clip` and `delta` the
//! transformed ones); a shut gate emits none.

use super::segment::{Segmented, Step};
use crate::compile::{At, Child, Compiler};
use crate::node::{Node, ScoreCtx};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepAggregate {
    #[default]
    Min,
    Product,
    Last,
    Mean,
    Fraction,
    FirstError,
    Sum,
    Clip,
    Delta,
}

/// `outcome:` on a step component.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeSpec {
    /// The outcome grader (e.g. `math_equiv`).
    pub grader: Child,
    /// `correct` (default): process credit only when the outcome holds; `wrong`: only when not.
    #[serde(default)]
    pub when: When,
    /// The outcome holds at or above this (default 1).
    #[serde(default)]
    pub threshold: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum When {
    #[default]
    Correct,
    Wrong,
}

/// The outcome gate, compiled.
pub struct Gate {
    pub node: Node,
    when: When,
    threshold: f64,
}

impl Gate {
    pub fn compile(spec: &OutcomeSpec, cx: &mut Compiler, at: &At) -> Option<Gate> {
        let threshold = spec.threshold.unwrap_or(1.0);
        if !threshold.is_finite() {
            cx.err(
                at,
                Some("outcome"),
                "`outcome.threshold` must be a finite number",
            );
            return None;
        }
        let node = cx.child(
            &spec.grader,
            &At {
                path: at.field("outcome"),
                kind: at.kind,
            },
            "grader",
        )?;
        Some(Gate {
            node,
            when: spec.when,
            threshold,
        })
    }

    /// Whether the process credit applies, from the outcome's result; `Err` is this node's
    /// outcome when the outcome grader could not say (failed, or does not apply).
    pub fn open(&self, o: &Outcome) -> Result<bool, Outcome> {
        if let Some(f) = o.failure().filter(|_| !o.usable()) {
            return Err(Outcome::error(
                f.reason.clone(),
                format!("outcome ({}): {}", self.node.meta.kind, f.message),
            ));
        }
        if !o.usable() {
            return Err(Outcome::not_applicable());
        }
        Ok(o.holds(self.threshold) == (self.when == When::Correct))
    }

    /// Scores the outcome now (a rule outcome); see [`Gate::open`].
    pub fn eval(&self, s: &Sample, cx: &mut ScoreCtx) -> Result<bool, Outcome> {
        let o = self.node.eval(s, cx);
        self.open(&o)
    }

    /// What every step component does first: `Ok` when there is no gate or it is open; else
    /// the node's outcome, the outcome's failure or 0 for a shut gate (then `steps` says, in
    /// the trace, what was not done with the steps: "graded", "sent", "judged").
    pub fn admit(
        gate: Option<&Gate>,
        s: &Sample,
        cx: &mut ScoreCtx,
        steps: &str,
    ) -> Result<(), Outcome> {
        let Some(g) = gate else { return Ok(()) };
        if g.eval(s, cx)? {
            return Ok(());
        }
        cx.note(|| format!("the outcome gate is shut: no process credit, steps not {steps}"));
        Err(Outcome::ok(0.0))
    }
}

/// What a step component shares: its aggregate and threshold, and the value with no steps.
pub struct Credit {
    pub aggregate: StepAggregate,
    pub threshold: f64,
    pub if_none: f64,
}

/// One graded step's outcome (`None` for steps not graded: repeats, past the cap).
pub struct StepScore {
    pub out: Option<Outcome>,
    pub note: Option<String>,
}

impl StepScore {
    pub fn ungraded() -> StepScore {
        StepScore {
            out: None,
            note: None,
        }
    }
    pub fn of(out: Outcome) -> StepScore {
        StepScore {
            out: Some(out),
            note: None,
        }
    }
}

impl Credit {
    pub fn compile(
        aggregate: StepAggregate,
        threshold: Option<f64>,
        if_none: Option<f64>,
        cx: &mut Compiler,
        at: &At,
    ) -> Option<Credit> {
        let threshold = threshold.unwrap_or(0.5);
        let if_none = if_none.unwrap_or(0.0);
        if !threshold.is_finite() || !if_none.is_finite() {
            cx.err(at, None, "`threshold` and `if_none` must be finite numbers");
            return None;
        }
        Some(Credit {
            aggregate,
            threshold,
            if_none,
        })
    }

    /// The node's outcome from its steps' scores (one per step, in order), with the per-step
    /// values pushed to the result and, when explaining, every step in the trace.
    pub fn finish(&self, seg: &Segmented<'_>, scores: &[StepScore], cx: &mut ScoreCtx) -> Outcome {
        debug_assert_eq!(seg.steps.len(), scores.len());
        cx.detail(|| detail(seg, scores));
        if seg.steps.is_empty() {
            cx.note(|| format!("no steps: {}", self.if_none));
            return Outcome::ok(self.if_none);
        }
        for (i, sc) in scores.iter().enumerate() {
            if let Some(o) = sc.out.as_ref().filter(|o| o.is_error() && !o.usable()) {
                let f = o.failure().expect("an error has a failure");
                return Outcome::error(f.reason.clone(), format!("step {i}: {}", f.message));
            }
        }
        let mut st = StatusAcc::default();
        let mut used: Vec<(&Step<'_>, f64)> = Vec::with_capacity(scores.len());
        for (step, sc) in seg.steps.iter().zip(scores) {
            match &sc.out {
                None => used.push((step, 0.0)),
                Some(o) if o.usable() => {
                    st.add(o);
                    used.push((step, o.value));
                }
                Some(_) => {}
            }
        }
        if used.is_empty() {
            cx.note(|| "the step grader applies to none of the steps".into());
            return Outcome::not_applicable();
        }
        let raw: Vec<f64> = used.iter().map(|u| u.1).collect();
        let (value, terms) = reduce(self.aggregate, self.threshold, &raw);
        cx.step_rewards(
            seg.on_output,
            used.iter()
                .zip(&terms)
                .map(|((step, _), v)| (step.start, step.end, step.turn, *v)),
        );
        cx.note(|| {
            let mut n = format!(
                "{} steps, {} at ≥ {}; {} {value}",
                raw.len(),
                raw.iter().filter(|v| **v >= self.threshold - 1e-9).count(),
                self.threshold,
                format!("{:?}", self.aggregate).to_lowercase()
            );
            let (r, c) = (seg.repeats(), seg.over_cap());
            if r + c + seg.merged > 0 {
                let _ = write!(
                    n,
                    " ({r} repeated and {c} past the cap scored 0; {} short merged)",
                    seg.merged
                );
            }
            n
        });
        st.finish(value)
    }
}

/// The aggregate of per-step scores `r` (non-empty) and the per-step terms it is made of.
pub fn reduce(agg: StepAggregate, threshold: f64, r: &[f64]) -> (f64, Vec<f64>) {
    let n = r.len() as f64;
    let holds = |v: f64| v >= threshold - 1e-9;
    let raw = r.to_vec();
    match agg {
        StepAggregate::Min => (r.iter().copied().fold(f64::INFINITY, f64::min), raw),
        StepAggregate::Product => (r.iter().product(), raw),
        StepAggregate::Last => (r[r.len() - 1], raw),
        StepAggregate::Mean => (r.iter().sum::<f64>() / n, raw),
        StepAggregate::Fraction => (r.iter().filter(|v| holds(**v)).count() as f64 / n, raw),
        StepAggregate::FirstError => {
            let k = r.iter().position(|v| !holds(*v)).unwrap_or(r.len());
            (k as f64 / n, raw)
        }
        StepAggregate::Sum => (r.iter().sum(), raw),
        StepAggregate::Clip => {
            let t: Vec<f64> = r.iter().map(|v| (v - threshold).min(0.0)).collect();
            (t.iter().sum(), t)
        }
        StepAggregate::Delta => {
            let t: Vec<f64> = (0..r.len())
                .map(|i| r.get(i + 1).map_or(r[i], |next| r[i] - next))
                .collect();
            (t.iter().sum(), t)
        }
    }
}

/// The index of the first step below `threshold` among graded, usable steps: what step-labelled
/// evaluation (ProcessBench) compares with its label.
pub fn first_error(threshold: f64, scores: &[StepScore]) -> Option<usize> {
    scores.iter().position(|s| match &s.out {
        None => true,
        Some(o) => o.usable() && o.value < threshold - 1e-9,
    })
}

fn detail(seg: &Segmented<'_>, scores: &[StepScore]) -> serde_json::Value {
    let steps: Vec<serde_json::Value> = seg
        .steps
        .iter()
        .zip(scores)
        .enumerate()
        .map(|(i, (st, sc))| {
            let mut o = json!({"step": i, "start": st.start, "end": st.end});
            if let Some(t) = st.turn {
                o["turn"] = json!(t);
            }
            if let Some(out) = &sc.out {
                o["status"] = json!(out.status.as_str());
                o["value"] = json!(out.usable().then_some(out.value));
                if let Some(f) = out.failure() {
                    o["reason"] = json!(format!("{}: {}", f.reason, f.message));
                }
            } else {
                o["value"] = json!(0.0);
                o["note"] = json!(st.repeat_of.map_or_else(
                    || "past max_steps: 0, not graded".to_string(),
                    |j| format!("repeats step {j}: 0, not graded"),
                ));
            }
            if let Some(n) = &sc.note {
                o["note"] = json!(n);
            }
            o
        })
        .collect();
    json!({"steps": steps})
}

#[cfg(test)]
mod tests {
    use super::*;
    use StepAggregate as A;

    #[test]
    fn aggregates_are_as_published() {
        let r = [0.9, 0.6, 0.8];
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(reduce(A::Min, 0.5, &r).0, 0.6));
        assert!(close(reduce(A::Product, 0.5, &r).0, 0.9 * 0.6 * 0.8));
        assert!(close(reduce(A::Last, 0.5, &r).0, 0.8));
        assert!(close(reduce(A::Mean, 0.5, &r).0, 2.3 / 3.0));
        assert!(close(reduce(A::Fraction, 0.7, &r).0, 2.0 / 3.0));
        assert!(close(reduce(A::FirstError, 0.7, &r).0, 1.0 / 3.0));
        assert!(close(reduce(A::FirstError, 0.5, &r).0, 1.0));
        let (v, t) = reduce(A::Clip, 0.7, &r);
        assert!(close(v, -0.1) && close(t[0], 0.0) && close(t[1], -0.1) && close(t[2], 0.0));
        let (v, t) = reduce(A::Delta, 0.5, &r);
        assert!(close(v, 0.9), "delta telescopes to the first step's score");
        assert!(close(t[0], 0.3) && close(t[1], -0.2) && close(t[2], 0.8));
    }

    /// Step inflation: appending or inserting steps never raises the aggregates documented as
    /// inflation-proof, whatever the added steps score.
    #[test]
    fn inflation_never_pays_for_min_product_last_clip_delta() {
        let base = [0.7, 0.4, 0.9];
        let fillers = [0.0, 0.3, 0.99, 1.0];
        for agg in [A::Min, A::Product, A::Clip, A::Delta] {
            let (b, _) = reduce(agg, 0.5, &base);
            for f in fillers {
                for at in 0..=base.len() {
                    for k in 1..=5 {
                        let mut r = base.to_vec();
                        for _ in 0..k {
                            r.insert(at, f);
                        }
                        let (v, _) = reduce(agg, 0.5, &r);
                        // Delta keeps the first step's score: a filler put first replaces it.
                        if agg == A::Delta && at == 0 {
                            assert!((v - f).abs() < 1e-12);
                            continue;
                        }
                        assert!(v <= b + 1e-12, "{agg:?}: {r:?} scored {v} > {b}");
                    }
                }
            }
        }
        // last: only the last step counts; steps added before it change nothing.
        let (b, _) = reduce(A::Last, 0.5, &base);
        let mut r = vec![1.0; 20];
        r.extend(base);
        assert_eq!(reduce(A::Last, 0.5, &r).0, b);
    }

    #[test]
    fn mean_and_fraction_are_inflatable_as_documented() {
        let base = [0.9, 0.2];
        let mut r = base.to_vec();
        r.extend([1.0; 8]);
        assert!(reduce(A::Mean, 0.5, &r).0 > reduce(A::Mean, 0.5, &base).0);
        assert!(reduce(A::Fraction, 0.5, &r).0 > reduce(A::Fraction, 0.5, &base).0);
    }
}
