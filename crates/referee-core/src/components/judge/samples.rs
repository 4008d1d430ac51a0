//! `samples:` on a model grader: the judge is asked `n` times (distinct seeds, so distinct cache
//! keys; or `n` choices of one call) and the verdicts are reduced by mean, median or majority.
//! Judges are noisy: one verdict cannot say how sure it is, `n` can, so their spread is reported
//! beside the value (the `<name>.std` component and the trace).
//!
//! Each sample is the grader run whole in a context of its own ([`ScoreCtx::fork`]): prefilter,
//! prompt, call and strict parsing, so a sample that fails fails alone. The reduced value needs
//! a strict majority of the samples to have scored; below that the node is an error with the
//! first failure's reason, never a value made of the few that answered.

use crate::compile::{At, Compiler};
use crate::node::{AsyncComponent, Cost, Draw, Imp, ScoreCtx};
use crate::outcome::{Outcome, Status};
use crate::sample::Sample;
use crate::steps::StepReward;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;

/// The most samples one grader may take per candidate.
pub const MAX_SAMPLES: u32 = 32;

/// `samples: 5`, or `samples: {n: 5, reduce: median, via: choices}`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SamplesSpec {
    N(u32),
    Full(SamplesFields),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SamplesFields {
    /// How many verdicts per candidate (1 to 32).
    pub n: u32,
    #[serde(default)]
    pub reduce: Reduce,
    #[serde(default)]
    pub via: Via,
}

/// How the samples' values become the grader's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    /// The mean of the values.
    #[default]
    Mean,
    /// The middle value (the mean of the middle two for an even count).
    Median,
    /// The most frequent value; a tie goes to the lowest of the tied values, so an even split
    /// is not paid as a pass.
    Majority,
}

impl Reduce {
    pub fn as_str(self) -> &'static str {
        match self {
            Reduce::Mean => "mean",
            Reduce::Median => "median",
            Reduce::Majority => "majority",
        }
    }

    /// The reduced value of a non-empty list.
    pub fn apply(self, values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        match self {
            Reduce::Mean => v.iter().sum::<f64>() / v.len() as f64,
            Reduce::Median => {
                let m = v.len() / 2;
                if v.len() % 2 == 1 {
                    v[m]
                } else {
                    f64::midpoint(v[m - 1], v[m])
                }
            }
            Reduce::Majority => {
                // Sorted, so equal values are adjacent; the first longest run is the lowest.
                let (mut best, mut best_len) = (v[0], 0);
                let mut i = 0;
                while i < v.len() {
                    let j = v[i..]
                        .iter()
                        .position(|x| (x - v[i]).abs() > 1e-9)
                        .map_or(v.len(), |k| i + k);
                    if j - i > best_len {
                        (best, best_len) = (v[i], j - i);
                    }
                    i = j;
                }
                best
            }
        }
    }
}

/// Whether the samples are separate calls or the choices of one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// `n` calls, each with its own seed (the grader's `seed`, or 0, plus the sample's index),
    /// so each has its own cache key. Works on every server.
    #[default]
    Calls,
    /// One call with `n` in the request (vLLM, OpenAI); every sample reads its own choice. A
    /// server that returns fewer choices fails the samples it did not answer.
    Choices,
}

/// The compiled `samples:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Samples {
    pub n: u32,
    pub reduce: Reduce,
    pub via: Via,
}

impl Samples {
    /// Checks `samples:` at `at`; `None` when absent, invalid (reported) or `n: 1`.
    pub fn compile(
        cx: &mut Compiler,
        at: &At,
        spec: Option<&SamplesSpec>,
        temperature: Option<f64>,
    ) -> Option<Samples> {
        let s = match spec? {
            SamplesSpec::N(n) => Samples {
                n: *n,
                reduce: Reduce::default(),
                via: Via::default(),
            },
            SamplesSpec::Full(f) => Samples {
                n: f.n,
                reduce: f.reduce,
                via: f.via,
            },
        };
        let field = match spec? {
            SamplesSpec::N(_) => "samples",
            SamplesSpec::Full(_) => "samples/n",
        };
        if !(1..=MAX_SAMPLES).contains(&s.n) {
            cx.err_in(
                at,
                field,
                format!("must be from 1 to {MAX_SAMPLES}, found {}", s.n),
            );
            return None;
        }
        if s.n > 1 && temperature == Some(0.0) {
            cx.err_in(
                at,
                "sampling_params/temperature",
                format!("temperature 0 would give the same verdict {} times; raise it (samples default to temperature 1) or drop `samples`", s.n),
            );
            return None;
        }
        (s.n > 1).then_some(s)
    }

    /// The grader's node: itself, or wrapped to take `n` samples.
    pub fn imp(samples: Option<Samples>, c: Box<dyn AsyncComponent>) -> Imp {
        match samples {
            Some(samples) => Imp::Async(Box::new(Sampled { inner: c, samples })),
            None => Imp::Async(c),
        }
    }
}

/// A model grader scored `n` times and reduced.
struct Sampled {
    inner: Box<dyn AsyncComponent>,
    samples: Samples,
}

/// One sample's result, for the reduction and the trace.
struct Drawn {
    out: Outcome,
    steps: Vec<StepReward>,
    note: Option<String>,
    detail: Option<Value>,
}

impl AsyncComponent for Sampled {
    fn score<'a>(
        &'a self,
        s: &'a Sample,
        cx: &'a mut ScoreCtx,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            let Samples { n, via, .. } = self.samples;
            let mut forks: Vec<ScoreCtx> = (0..n)
                .map(|index| {
                    cx.fork(Draw {
                        index,
                        n,
                        choices: via == Via::Choices,
                    })
                })
                .collect();
            let outs =
                futures::future::join_all(forks.iter_mut().map(|f| self.inner.score(s, f))).await;
            let drawn: Vec<Drawn> = forks
                .into_iter()
                .zip(outs)
                .map(|(f, out)| {
                    let (steps, note, detail) = cx.join(f);
                    Drawn {
                        out,
                        steps,
                        note,
                        detail,
                    }
                })
                .collect();
            reduced(&drawn, self.samples, cx)
        })
    }

    fn bounds(&self) -> Option<(f64, f64)> {
        self.inner.bounds()
    }

    fn cost(&self) -> Option<Cost> {
        Some(self.inner.cost().unwrap_or(Cost::Judge))
    }

    fn spread(&self) -> bool {
        true
    }
}

/// The samples' reduced outcome, with their spread, step credit, note and detail.
fn reduced(drawn: &[Drawn], samples: Samples, cx: &mut ScoreCtx) -> Outcome {
    let (n, reduce) = (drawn.len(), samples.reduce);
    let values: Vec<f64> = drawn
        .iter()
        .filter(|d| d.out.is_ok() && d.out.value.is_finite())
        .map(|d| d.out.value)
        .collect();
    let failed: Vec<&Outcome> = drawn
        .iter()
        .map(|d| &d.out)
        .filter(|o| o.is_error())
        .collect();
    if cx.explaining() {
        let per: Vec<Value> = drawn
            .iter()
            .map(|d| {
                let mut m = json!({"value": d.out.value.is_finite().then_some(d.out.value),
                                   "status": d.out.status.as_str()});
                if let Some(f) = d.out.failure() {
                    m["reason"] = json!(f.reason);
                }
                if let Some(note) = &d.note {
                    m["note"] = json!(note);
                }
                if let Some(detail) = &d.detail {
                    m["detail"] = detail.clone();
                }
                m
            })
            .collect();
        let via = match samples.via {
            Via::Calls => "calls",
            Via::Choices => "choices",
        };
        cx.detail(
            || json!({"samples": {"n": n, "reduce": reduce.as_str(), "via": via, "draws": per}}),
        );
    }
    if values.is_empty() && failed.is_empty() {
        cx.note(|| format!("none of the {n} samples applied"));
        return Outcome::not_applicable();
    }
    // A strict majority of the samples must have scored.
    if values.len() * 2 <= n {
        let Some(first) = failed.first().and_then(|o| o.failure()).cloned() else {
            cx.note(|| format!("only {} of {n} samples applied", values.len()));
            return Outcome::not_applicable();
        };
        return Outcome::error(
            first.reason,
            format!(
                "{} of {n} samples scored, fewer than a majority; the first failure: {}",
                values.len(),
                first.message
            ),
        );
    }
    let value = reduce.apply(&values);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64).sqrt();
    cx.report_spread(std);
    cx.steps.extend(reduced_steps(drawn, reduce));
    cx.note(|| {
        let shown: Vec<String> = drawn
            .iter()
            .map(|d| match d.out.failure() {
                Some(f) => f.reason.to_string(),
                None if d.out.value.is_finite() => format!("{}", round(d.out.value)),
                None => d.out.status.as_str().to_string(),
            })
            .collect();
        let same = drawn.iter().all(|d| d.note == drawn[0].note);
        let shared = match (&drawn[0].note, same) {
            (Some(note), true) => format!("; every sample: {note}"),
            _ => String::new(),
        };
        format!(
            "{n} samples [{}], {} {} (std {}){shared}",
            shown.join(", "),
            reduce.as_str(),
            round(value),
            round(std)
        )
    });
    Outcome {
        value,
        status: Status::Ok,
    }
}

/// Step credit per step, reduced across the samples that gave it (samples see the same steps:
/// the candidate's).
fn reduced_steps(drawn: &[Drawn], reduce: Reduce) -> Vec<StepReward> {
    let mut order: Vec<(StepReward, Vec<f64>)> = Vec::new();
    for d in drawn.iter().filter(|d| d.out.is_ok()) {
        for r in &d.steps {
            let same = |o: &StepReward| {
                o.start == r.start
                    && o.end == r.end
                    && o.turn == r.turn
                    && o.on_output == r.on_output
                    && o.component == r.component
            };
            match order.iter_mut().find(|(o, _)| same(o)) {
                Some((_, vs)) => vs.push(r.value),
                None => order.push((r.clone(), vec![r.value])),
            }
        }
    }
    order
        .into_iter()
        .map(|(mut r, vs)| {
            r.value = reduce.apply(&vs);
            r
        })
        .collect()
}

fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::Reduce;

    #[test]
    fn reductions() {
        assert_eq!(Reduce::Mean.apply(&[1.0, 0.0, 1.0, 0.0]), 0.5);
        assert_eq!(Reduce::Median.apply(&[0.9, 0.1, 0.5]), 0.5);
        assert_eq!(Reduce::Median.apply(&[0.9, 0.1, 0.5, 0.7]), 0.6);
        assert_eq!(Reduce::Majority.apply(&[1.0, 0.0, 1.0]), 1.0);
        // An even split goes to the lower value.
        assert_eq!(Reduce::Majority.apply(&[1.0, 0.0, 1.0, 0.0]), 0.0);
        assert_eq!(Reduce::Majority.apply(&[0.7, 0.2, 0.7, 0.9, 0.2]), 0.2);
        assert_eq!(Reduce::Majority.apply(&[0.3]), 0.3);
    }
}
