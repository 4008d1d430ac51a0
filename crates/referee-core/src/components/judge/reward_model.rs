//! # reward_model
//! *What it scores:* the scalar score of a trained reward model served over HTTP (vLLM's
//! `/pooling` or `/classify`, or another OpenRLHF-style `/get_reward` server), batched: the
//! texts of concurrent samples go to the server in one request.
//!
//! *Spec:*
//! - `judge`: the endpoint by name in the file's `judges:` (its `max_batch`, default 32, and
//!   `batch_wait_ms`, default 5, shape the batches).
//! - `api`: `pooling` (default), `classify` or `openrlhf`.
//! - `input`: the text the model scores (default `{{sample.output_text}}`). Reward models score
//!   a whole conversation: write it with the model's chat template, e.g.
//!   `"<|user|>{{item.prompt}}<|assistant|>{{sample.output_text}}"`.
//! - `index` (default 0): the element of the output vector (`pooling`; per-token outputs use the
//!   last token's row) or the class (`classify`) that is the reward.
//! - `transform`: `none` (default) or `sigmoid` (maps a logit to (0, 1)).
//! - `prefilter` (default false) with `degenerate_reward`: score degenerate candidates (empty,
//!   master keys, `min_chars`) with this value instead of asking the model. Off by default
//!   because a reward model's scale has no natural "0".
//! - `deadline_ms`: the most a sample waits for its reward.
//!
//! *Example:*
//! ```yaml
//! type: reward_model
//! name: rm
//! api: pooling
//! input: "User: {{item.prompt}}\nAssistant: {{sample.output_text}}"
//! transform: sigmoid
//! ```
//!
//! *Score and failure modes:* the model's score (after `transform`). Cached by content
//! (endpoint, model, API, text) like judge replies. A server that fails, times out or answers
//! without a number for the text is an error with its reason (`judge_http_5xx`,
//! `judge_timeout`, `judge_unparseable`, ...), never a 0.

use crate::compile::{waits, At, Compiler, JudgeRef};
use crate::exec::BoxFuture;
use crate::judge::{guard, RewardApi, RewardCall};
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::reasoning::{strip_reasoning, Reasoning};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::time::{Duration, Instant};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewardModelSpec {
    #[serde(default)]
    pub judge: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub api: RewardApi,
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub index: usize,
    #[serde(default)]
    pub transform: Transform,
    #[serde(default)]
    pub prefilter: bool,
    #[serde(default)]
    pub degenerate_reward: Option<f64>,
    #[serde(default)]
    pub min_chars: Option<usize>,
    /// Whether the thinking section of `sample.*` text is kept in the scored text.
    #[serde(default)]
    pub reasoning: Reasoning,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Transform {
    #[default]
    None,
    Sigmoid,
}

pub struct RewardModel {
    judge: JudgeRef,
    api: RewardApi,
    input: Template,
    index: usize,
    transform: Transform,
    degenerate: Option<(f64, usize)>,
    reasoning: Reasoning,
    deadline: Option<Duration>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: RewardModelSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let degenerate = match (spec.prefilter, spec.degenerate_reward) {
        (true, Some(r)) => Some((r, spec.min_chars.unwrap_or(0))),
        (true, None) => {
            cx.err(
                at,
                Some("degenerate_reward"),
                "with `prefilter: true`, say what a degenerate candidate gets (a reward model's scale has no natural 0)",
            );
            None
        }
        (false, _) => None,
    };
    let judge = cx.judge(at, spec.judge.as_deref(), spec.model.as_deref());
    Some(waits(RewardModel {
        judge: judge?,
        api: spec.api,
        input: input?,
        index: spec.index,
        transform: spec.transform,
        degenerate,
        reasoning: spec.reasoning,
        deadline: spec.deadline_ms.map(Duration::from_millis),
    }))
}

impl RewardModel {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let started = Instant::now();
        if let Some((reward, min)) = self.degenerate {
            let answer = strip_reasoning(&s.output_text).text;
            if let Some(why) = guard::degenerate(answer, min) {
                cx.note(|| format!("prefilter: {why}; scored {reward} without a call"));
                return Outcome::ok(reward);
            }
        }
        let reasoning = self.reasoning;
        let text = match self.input.render_with(s, &|from_policy, t| {
            if from_policy && reasoning == Reasoning::Strip {
                strip_reasoning(t).text.to_string()
            } else {
                t.to_string()
            }
        }) {
            Ok(t) => t,
            Err(miss) => return miss.outcome(cx),
        };
        let call = RewardCall {
            api: self.api,
            text,
            index: self.index,
        };
        let r = self
            .judge
            .judge
            .reward(
                &self.judge.endpoint,
                call,
                self.deadline.map(|d| started + d),
            )
            .await;
        let reply = match r {
            Ok(r) => {
                cx.reward_reply(&r);
                r
            }
            Err(f) => {
                cx.judge_failed();
                return f.outcome();
            }
        };
        let value = match self.transform {
            Transform::None => reply.value,
            Transform::Sigmoid => 1.0 / (1.0 + (-reply.value).exp()),
        };
        cx.note(|| {
            format!(
                "reward model `{}` scored {}{} (batch of {}){}",
                self.judge.endpoint,
                reply.value,
                if self.transform == Transform::Sigmoid {
                    format!(", sigmoid {value:.4}")
                } else {
                    String::new()
                },
                reply.batch_size,
                if reply.cached { " [cache hit]" } else { "" }
            )
        });
        Outcome::ok(value)
    }
}

impl AsyncComponent for RewardModel {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}
