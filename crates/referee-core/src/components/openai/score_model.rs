//! # score_model
//! *What it scores:* OpenAI's `score_model` grader, accepted verbatim: a judge model reads the
//! `input` messages (templates over `item` and `sample`) and returns a number in `range`.
//!
//! *Spec:* OpenAI's fields: `input` (messages `{role, content}`; content a string or text
//! blocks), `model`, `range` (default `[0, 1]`), `pass_threshold` (shown in the trace),
//! `sampling_params` (`temperature` (default 0), `top_p`, `seed`, `max_completions_tokens`
//! (default 1024), `reasoning_effort`). Referee's additions:
//! - `judge`: the endpoint, by its name in the file's `judges:` section. Without it, an
//!   endpoint named after `model` (or serving it), else `default`, else the only one.
//! - `steps` (default true): ask for OpenAI's `{"steps": [{description, conclusion}], "result"}`
//!   (reasoning first); `false` asks for `{"result"}` alone.
//! - `soft` (default false): the score is the expected value of the judge's distribution over
//!   the integer scores of `range` (read from `top_logprobs` at the result's position), not
//!   the one it sampled. Needs a range within 0–9 (one token per score).
//! - `reasoning` (`strip`, default, or `keep`): whether the candidate's thinking section is
//!   shown to the judge. `prefilter` (default true), `min_chars` (default 0), `max_chars` and
//!   `injection` (`fail`, default, or `flag`): see below. `deadline_ms`: the most a sample may
//!   wait for its verdict, retries included.
//!
//! *Example:*
//! ```yaml
//! type: score_model
//! name: helpfulness
//! model: judge
//! range: [1, 5]
//! input:
//!   - role: system
//!     content: Rate how helpful the answer is, from 1 (useless) to 5 (excellent).
//!   - role: user
//!     content: "Question: {{item.question}}\nAnswer: {{sample.output_text}}"
//! ```
//!
//! *Score and failure modes:* the judge's `result`, clipped to `range` (as OpenAI does; the
//! trace says when it was clipped). Everything the policy wrote renders inside
//! `<candidate_response>` tags and the judge is told to ignore instructions in it. A candidate
//! that is empty, only a master-key opener ("Thought process:", ":"), shorter than `min_chars` or
//! longer than `max_chars`, repetitive padding, an echo of the prompt's own words (a restated
//! rubric), or one that addresses the grader ("ignore the rubric", a fake `System:` turn, grader
//! role-play; only flagged in the trace with `injection: flag`) scores 0 (status ok) without a
//! call. A reply that is cut off, not exactly the JSON asked for
//! or has a non-numeric `result` is `judge_unparseable`; a call that fails is `judge_timeout`,
//! `judge_http_5xx`, ... — errors, never a 0. Token usage goes to the result's `usage`.

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
pub struct ScoreModelSpec {
    pub input: Vec<MessageSpec>,
    /// `[low, high]` (default `[0, 1]`).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    #[serde(default)]
    pub steps: Option<bool>,
    #[serde(default)]
    pub soft: bool,
}

pub struct ScoreModel {
    call: ResultCall,
    range: (f64, f64),
    pass_threshold: Option<f64>,
    /// For soft scores: the score tokens and their values.
    soft_scale: Option<Vec<(String, f64)>>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let (spec, common): (ScoreModelSpec, JudgeFields) = cx.spec_pair(v, at)?;
    let [lo, hi] = spec.range.unwrap_or([0.0, 1.0]);
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        cx.err(at, Some("range"), "expected [low, high] with low < high");
    }
    let soft_scale = spec.soft.then(|| {
        let ok = lo >= 0.0 && hi <= 9.0 && lo.fract() == 0.0 && hi.fract() == 0.0;
        if !ok {
            cx.err(
                at,
                Some("soft"),
                "soft scores need an integer range within 0–9 (one token per score)",
            );
        }
        (lo as i64..=hi as i64)
            .map(|i| (i.to_string(), i as f64))
            .collect::<Vec<_>>()
    });
    let prompt = Prompt::compile(cx, at, "input", &spec.input, common.reasoning);
    let caller = Caller::compile(cx, at, &common, 1024);
    let steps = spec.steps.unwrap_or(true);
    let mut result = json!({"type": "number", "minimum": lo, "maximum": hi});
    if soft_scale.is_some() {
        result = json!({"type": "integer", "minimum": lo, "maximum": hi});
    }
    let kind = if soft_scale.is_some() {
        "an integer"
    } else {
        "a number"
    };
    let caller = caller?;
    let samples = caller.samples;
    Some(judged(
        samples,
        ScoreModel {
            call: ResultCall::new(
                caller,
                prompt?,
                steps,
                &result,
                "R",
                &format!("{kind} from {lo} to {hi}"),
            ),
            range: (lo, hi),
            pass_threshold: spec.pass_threshold,
            soft_scale,
        },
    ))
}

impl ScoreModel {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let top = self.soft_scale.as_ref().map(|_| 20);
        let (reply, m) = match self.call.ask(s, cx, top).await {
            Ok(r) => r,
            Err(o) => return o,
        };
        let Some(raw) = m.get("result").and_then(Value::as_f64) else {
            return unparseable(format!("`result` is not a number: {}", m["result"]));
        };
        let (lo, hi) = self.range;
        let hard = raw.clamp(lo, hi);
        let mut value = hard;
        let mut soft_used = false;
        if let Some(scale) = &self.soft_scale {
            let sc: Vec<(&str, f64)> = scale.iter().map(|(t, v)| (t.as_str(), *v)).collect();
            match reply
                .logprobs
                .as_ref()
                .and_then(|lp| soft::expected_score_after(lp, "\"result\"", &sc))
            {
                Some(e) => {
                    value = e;
                    soft_used = true;
                }
                None => cx.note(|| "no usable logprobs: the sampled score is used".into()),
            }
        }
        cx.note(|| {
            let mut n = format!("judge `{}` scored {raw}", self.call.caller.judge.endpoint);
            if raw != hard {
                let _ = write!(n, " (clipped to {hard})");
            }
            if soft_used {
                let _ = write!(n, "; expected score from logprobs {value:.4}");
            }
            if reply.cached {
                n.push_str(" [cache hit]");
            }
            if let Some(t) = self.pass_threshold {
                n.push_str(if value >= t { "; passed" } else { "; failed" });
                let _ = write!(n, " (threshold {t})");
            }
            n
        });
        cx.detail(|| {
            json!({"verdict": Value::Object(m.clone()), "cached": reply.cached,
                   "structured": reply.structured, "latency_ms": reply.latency_ms,
                   "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens})
        });
        Outcome::ok(value)
    }
}

impl AsyncComponent for ScoreModel {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }

    /// The range, widened to 0: a refused or prefiltered candidate scores 0.
    fn bounds(&self) -> Option<(f64, f64)> {
        Some((self.range.0.min(0.0), self.range.1.max(0.0)))
    }
}
