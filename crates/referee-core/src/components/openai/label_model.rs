//! # label_model
//! *What it scores:* OpenAI's `label_model` grader, accepted verbatim: a judge model reads the
//! `input` messages and picks one of `labels`; the sample passes (1) when the label is one of
//! `passing_labels`, else 0.
//!
//! *Spec:* OpenAI's fields: `input`, `model`, `labels`, `passing_labels`, `sampling_params`.
//! Referee's additions, as in `score_model`: `judge` (the endpoint by name), `steps` (default
//! true: reasoning before the label), `soft` (default false: the score is the probability the
//! judge gave the passing labels, renormalised over all labels, from `top_logprobs`; labels
//! should then be single words), `reasoning`, `prefilter`, `min_chars`, `max_chars`,
//! `injection`, `deadline_ms`.
//!
//! *Example:*
//! ```yaml
//! type: label_model
//! name: sentiment
//! model: judge
//! labels: [positive, neutral, negative]
//! passing_labels: [positive]
//! input:
//!   - role: user
//!     content: "Classify the sentiment of this review: {{sample.output_text}}"
//! ```
//!
//! *Score and failure modes:* 1 or 0 (or the passing probability with `soft`). The candidate is
//! delimited and prefiltered as in `score_model`. A label outside `labels` (compared exactly), a
//! reply that is cut off or not exactly `{"steps", "result"}` is `judge_unparseable`; call
//! failures are errors with their reason, never a 0.

use crate::compile::{judged, At, Compiler};
use crate::components::judge::{unparseable, Caller, JudgeFields, MessageSpec, Prompt, ResultCall};
use crate::exec::BoxFuture;
use crate::judge::soft;
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelModelSpec {
    pub input: Vec<MessageSpec>,
    pub labels: Vec<String>,
    pub passing_labels: Vec<String>,
    #[serde(default)]
    pub steps: Option<bool>,
    #[serde(default)]
    pub soft: bool,
}

pub struct LabelModel {
    call: ResultCall,
    labels: Vec<String>,
    passing: Vec<bool>,
    soft: bool,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let (spec, common): (LabelModelSpec, JudgeFields) = cx.spec_pair(v, at)?;
    if spec.labels.len() < 2 {
        cx.err(at, Some("labels"), "needs at least two labels");
    }
    let mut seen = std::collections::HashSet::new();
    for (i, l) in spec.labels.iter().enumerate() {
        if l.trim().is_empty() || !seen.insert(l) {
            cx.err_in(
                at,
                &format!("labels/{i}"),
                format!("label `{l}` is empty or repeated"),
            );
        }
    }
    if spec.passing_labels.is_empty() {
        cx.err(at, Some("passing_labels"), "needs at least one label");
    }
    for (i, p) in spec.passing_labels.iter().enumerate() {
        if !spec.labels.contains(p) {
            cx.err_in(
                at,
                &format!("passing_labels/{i}"),
                format!("`{p}` is not one of `labels`"),
            );
        }
    }
    let prompt = Prompt::compile(cx, at, "input", &spec.input, common.reasoning);
    let caller = Caller::compile(cx, at, &common, 1024);
    let steps = spec.steps.unwrap_or(true);
    let result = json!({"type": "string", "enum": spec.labels});
    let list = spec
        .labels
        .iter()
        .map(|l| serde_json::to_string(l).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(", ");
    let passing = spec
        .labels
        .iter()
        .map(|l| spec.passing_labels.contains(l))
        .collect();
    let caller = caller?;
    let samples = caller.samples;
    Some(judged(
        samples,
        LabelModel {
            call: ResultCall::new(
                caller,
                prompt?,
                steps,
                &result,
                "L",
                &format!("exactly one of {list}"),
            ),
            labels: spec.labels,
            passing,
            soft: spec.soft,
        },
    ))
}

impl LabelModel {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let top = self.soft.then_some(20);
        let (reply, m) = match self.call.ask(s, cx, top).await {
            Ok(r) => r,
            Err(o) => return o,
        };
        let Some(label) = m.get("result").and_then(Value::as_str) else {
            return unparseable(format!("`result` is not a label: {}", m["result"]));
        };
        let Some(i) = self.labels.iter().position(|l| l == label) else {
            return unparseable(format!("`{label}` is not one of the labels"));
        };
        let mut value = if self.passing[i] { 1.0 } else { 0.0 };
        let mut soft_used = false;
        if self.soft {
            let labels: Vec<&str> = self.labels.iter().map(String::as_str).collect();
            match reply
                .logprobs
                .as_ref()
                .and_then(|lp| soft::label_distribution_after(lp, "\"result\"", &labels))
            {
                Some(p) => {
                    value = p
                        .iter()
                        .zip(&self.passing)
                        .filter(|(_, pass)| **pass)
                        .map(|(p, _)| p)
                        .sum();
                    soft_used = true;
                }
                None => cx.note(|| "no usable logprobs: the sampled label is used".into()),
            }
        }
        cx.note(|| {
            let mut n = format!(
                "judge `{}` chose `{label}` ({})",
                self.call.caller.judge.endpoint,
                if self.passing[i] {
                    "passing"
                } else {
                    "not passing"
                }
            );
            if soft_used {
                let _ = write!(n, "; passing probability {value:.4}");
            }
            if reply.cached {
                n.push_str(" [cache hit]");
            }
            n
        });
        cx.detail(|| {
            json!({"verdict": Value::Object(m.clone()), "cached": reply.cached,
                   "structured": reply.structured, "latency_ms": reply.latency_ms})
        });
        Outcome::ok(value)
    }
}

impl AsyncComponent for LabelModel {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }

    fn bounds(&self) -> Option<(f64, f64)> {
        Some((0.0, 1.0))
    }
}
