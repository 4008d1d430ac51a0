//! What model graders ask of a judge server, and what they get back (DESIGN §4: the core
//! declares the interface, `referee-judge` implements it over HTTP, tests may inject fakes).
//! Model graders (`components/judge/`) call through this seam; the spec's `judges:` section
//! ([`endpoint`]) names the endpoints, and a shell's [`JudgeConnect`] turns it into a [`Judge`].

use crate::outcome::Outcome;
use futures::future::BoxFuture;
use serde_json::Value;
use std::borrow::Cow;
use std::time::Instant;

/// One chat call. `json_schema`, when set, asks for structured output (the implementation falls
/// back to the prompt where the server cannot constrain it, and says so in the reply).
#[derive(Debug, Clone, Default)]
pub struct JudgeCall {
    /// `(role, content)` pairs.
    pub messages: Vec<(String, String)>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub top_logprobs: Option<u32>,
    pub json_schema: Option<Value>,
    /// Other sampling parameters sent as they are (`top_p`, `seed`, `reasoning_effort`, ...).
    pub extra: serde_json::Map<String, Value>,
    /// Images and audio, each placed in a message at a byte offset of its text (a message with
    /// media is sent as content parts; the cache keys each part by its digest).
    pub media: Vec<media::MediaAt>,
    /// Which choice of the reply this caller reads, when the call asks for `n` of them (`n` in
    /// `extra`): calls differing only here are one request, each caller taking its choice.
    pub choice: Option<u32>,
}

#[derive(Debug, Clone, Default)]
pub struct JudgeReply {
    pub content: String,
    pub finish_reason: Option<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `choices[0].logprobs` as the server sent it.
    pub logprobs: Option<Value>,
    pub latency_ms: f64,
    pub attempts: u32,
    /// Whether the reply was constrained by the schema.
    pub structured: bool,
    /// Served from the cache (or shared with an identical call in flight): no new judge call.
    pub cached: bool,
    /// The choices after the first, when the call asked for `n` (`JudgeCall::choice`).
    pub more: Vec<JudgeChoice>,
}

/// One more choice of a reply to an `n`-choice call.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JudgeChoice {
    pub content: String,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Option<Value>,
}

impl JudgeReply {
    /// The reply as the caller reading choice `index` of `n` sees it; a server that sent fewer
    /// choices than asked does not support `n`, which is the caller's failure, never a verdict.
    pub fn choice(mut self, index: u32, n: u32) -> Result<JudgeReply, JudgeFailure> {
        let more = std::mem::take(&mut self.more);
        if index == 0 {
            return Ok(self);
        }
        let got = more.len() + 1;
        let Some(c) = more.into_iter().nth(index as usize - 1) else {
            return Err(JudgeFailure {
                reason: "judge_config".into(),
                message: format!("asked for n = {n} choices, the server returned {got}: it does not support `n`; sample with `samples: {{via: calls}}`"),
            });
        };
        self.content = c.content;
        self.finish_reason = c.finish_reason;
        self.logprobs = c.logprobs;
        Ok(self)
    }
}

/// A call that could not be completed: `judge_timeout`, `judge_deadline`, `judge_http_5xx`,
/// `judge_http_4xx`, `judge_rate_limited`, `judge_connection`, `judge_unparseable`,
/// `judge_config`.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeFailure {
    pub reason: Cow<'static, str>,
    pub message: String,
}

impl JudgeFailure {
    /// The failure as a node's outcome: an error with its reason, never a score.
    pub fn outcome(&self) -> Outcome {
        Outcome::error(self.reason.clone(), self.message.clone())
    }
}

/// The reward-model APIs a `reward_model` grader can call.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RewardApi {
    /// vLLM's `POST /pooling` (`{model, input: [texts]}` → `data[i].data`): reward models served
    /// with the pooling runner; per-token outputs take the last token's row.
    #[default]
    Pooling,
    /// vLLM's `POST /classify` (→ `data[i].probs`): sequence classifiers; `index` picks the class.
    Classify,
    /// OpenRLHF's remote reward server, `POST /get_reward` (`{query: [texts]}` → `rewards`).
    Openrlhf,
}

/// One text for a reward model; implementations batch concurrent calls into one request.
#[derive(Debug, Clone)]
pub struct RewardCall {
    pub api: RewardApi,
    pub text: String,
    /// Which element of the model's output vector (or which class) is the reward.
    pub index: usize,
}

#[derive(Debug, Clone, Default)]
pub struct RewardReply {
    pub value: f64,
    /// The batch request's latency.
    pub latency_ms: f64,
    /// How many texts went in the same request.
    pub batch_size: usize,
    pub cached: bool,
}

/// How a process reward model is asked for per-step scores (`prm`). Calls with equal values
/// share a request, so every parameter that goes into the request body is here.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StepApi {
    /// vLLM's `POST /pooling` (`{model, input: [texts], task?}` → `data[i].data`: one row per
    /// step tag token, the server's `step_tag_id`); the step score is column `index` of its row.
    Pooling { task: Option<String>, index: usize },
    /// `POST /v1/completions` with `echo`, `logprobs: top_logprobs`, `max_tokens: 1`: the score
    /// of a step is `P(good) / (P(good) + P(bad))` in the distribution of the token after its
    /// tag, the tag located in the server's own tokens (Math-Shepherd).
    MathShepherd {
        good: String,
        bad: String,
        top_logprobs: u32,
    },
}

/// One text with a tag after each step; implementations batch concurrent calls.
#[derive(Debug, Clone)]
pub struct StepCall {
    pub api: StepApi,
    /// The whole text sent.
    pub text: String,
    /// Where each step's tag is in `text` (char offsets, Unicode scalar values), in order.
    /// Exactly one score per tag comes back, or a failure.
    pub tags: Vec<(usize, usize)>,
}

#[derive(Debug, Clone, Default)]
pub struct StepReply {
    /// One score per tag, in order.
    pub values: Vec<f64>,
    /// The batch request's latency.
    pub latency_ms: f64,
    /// How many texts went in the same request.
    pub batch_size: usize,
    pub cached: bool,
}

/// One text to embed (`POST /v1/embeddings`); implementations batch concurrent calls into one
/// request and cache vectors by content.
#[derive(Debug, Clone)]
pub struct EmbedCall {
    /// Never empty: servers reject an empty input (llama-server fails the whole batch), so
    /// graders decide what an empty text scores before calling.
    pub text: String,
}

#[derive(Debug, Clone, Default)]
pub struct EmbedReply {
    pub vector: std::sync::Arc<[f32]>,
    /// The batch request's latency.
    pub latency_ms: f64,
    /// How many texts went in the same request.
    pub batch_size: usize,
    pub cached: bool,
}

/// How a completions endpoint is asked for the logprobs of a prompt's own tokens.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PromptLogprobApi {
    /// `echo: true, logprobs: 0, max_tokens: 0` (vLLM's echo without generation, OpenAI's
    /// legacy completions): `choices[i].logprobs.{tokens, token_logprobs, text_offset}`.
    #[default]
    Echo,
    /// vLLM's `prompt_logprobs: 0` (`choices[i].prompt_logprobs`, one `{id: {logprob,
    /// decoded_token}}` per prompt token).
    PromptLogprobs,
}

/// One text whose tokens' logprobs are wanted, as the endpoint tokenises it.
#[derive(Debug, Clone)]
pub struct PromptCall {
    pub api: PromptLogprobApi,
    pub text: String,
}

/// The endpoint's tokens of the text with their logprobs. Token strings are as the server
/// decoded them, one by one (so they may not spell the text: a SentencePiece token loses its
/// leading space, half a UTF-8 character shows as U+FFFD); `offsets` are the server's
/// `text_offset` where it sends them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PromptTokens {
    pub tokens: Vec<String>,
    /// `None` where the server gives none (the first token).
    pub logprobs: Vec<Option<f64>>,
    #[serde(default)]
    pub offsets: Option<Vec<usize>>,
}

#[derive(Debug, Clone, Default)]
pub struct PromptReply {
    pub tokens: std::sync::Arc<PromptTokens>,
    pub latency_ms: f64,
    pub batch_size: usize,
    pub cached: bool,
}

pub trait Judge: Send + Sync {
    /// One call to the named endpoint, finished by `deadline` at the latest. The future runs on
    /// any executor (the implementation drives its own I/O).
    fn call(
        &self,
        endpoint: &str,
        call: JudgeCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<JudgeReply, JudgeFailure>>;

    /// The endpoint names it serves (checked when a spec is compiled).
    fn endpoints(&self) -> Vec<String>;

    /// A scalar reward for one text from a reward-model endpoint.
    fn reward(
        &self,
        endpoint: &str,
        call: RewardCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<RewardReply, JudgeFailure>> {
        let _ = (call, deadline);
        unserved(endpoint, "reward models")
    }

    /// One score per step tag of a text from a process-reward-model endpoint.
    fn step_rewards(
        &self,
        endpoint: &str,
        call: StepCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<StepReply, JudgeFailure>> {
        let _ = (call, deadline);
        unserved(endpoint, "process reward models")
    }

    /// The embedding of one text from an embeddings endpoint.
    fn embed(
        &self,
        endpoint: &str,
        call: EmbedCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<EmbedReply, JudgeFailure>> {
        let _ = (call, deadline);
        unserved(endpoint, "embeddings")
    }

    /// The logprobs of a text's own tokens from a completions endpoint.
    fn prompt_logprobs(
        &self,
        endpoint: &str,
        call: PromptCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<PromptReply, JudgeFailure>> {
        let _ = (call, deadline);
        unserved(endpoint, "prompt logprobs")
    }
}

fn unserved<T: Send + 'static>(
    endpoint: &str,
    what: &str,
) -> BoxFuture<'static, Result<T, JudgeFailure>> {
    let message = format!("endpoint `{endpoint}`: this judge serves no {what}");
    Box::pin(async move {
        Err(JudgeFailure {
            reason: "judge_config".into(),
            message,
        })
    })
}

/// What judging one sample cost. `judge_calls` are calls that reached a server (failed ones
/// included); cache hits cost nothing and are counted apart; tokens and time are the server's.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Usage {
    pub judge_calls: u64,
    pub cache_hits: u64,
    pub judge_errors: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Summed latency of the calls (they may overlap).
    pub judge_ms: f64,
}

impl Usage {
    pub fn reward(&mut self, r: &RewardReply) {
        self.batched(r.cached, r.latency_ms);
    }

    pub fn steps(&mut self, r: &StepReply) {
        self.batched(r.cached, r.latency_ms);
    }

    pub fn embedding(&mut self, r: &EmbedReply) {
        self.batched(r.cached, r.latency_ms);
    }

    pub fn prompt(&mut self, r: &PromptReply) {
        self.batched(r.cached, r.latency_ms);
    }

    /// A reply to a call that went in a batch request: each call counts as one.
    fn batched(&mut self, cached: bool, latency_ms: f64) {
        if cached {
            self.cache_hits += 1;
        } else {
            self.judge_calls += 1;
            self.judge_ms += latency_ms;
        }
    }

    pub fn reply(&mut self, r: &JudgeReply) {
        if r.cached {
            self.cache_hits += 1;
        } else {
            self.judge_calls += 1;
            self.prompt_tokens += r.prompt_tokens;
            self.completion_tokens += r.completion_tokens;
            self.judge_ms += r.latency_ms;
        }
    }

    pub fn add(&mut self, o: &Usage) {
        self.judge_calls += o.judge_calls;
        self.cache_hits += o.cache_hits;
        self.judge_errors += o.judge_errors;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.judge_ms += o.judge_ms;
    }

    /// What was spent since `before` (an earlier copy of this counter).
    #[must_use]
    pub fn since(&self, before: &Usage) -> Usage {
        Usage {
            judge_calls: self.judge_calls - before.judge_calls,
            cache_hits: self.cache_hits - before.cache_hits,
            judge_errors: self.judge_errors - before.judge_errors,
            prompt_tokens: self.prompt_tokens - before.prompt_tokens,
            completion_tokens: self.completion_tokens - before.completion_tokens,
            judge_ms: self.judge_ms - before.judge_ms,
        }
    }
}

/// Builds the [`Judge`] for a spec's endpoints (a shell's HTTP pool, with its cache). Given to
/// `compile` in the [`crate::exec::Env`], so one spec file carries its endpoints and the shell
/// only says how to reach them.
pub trait JudgeConnect: Send + Sync {
    fn connect(
        &self,
        endpoints: &std::collections::BTreeMap<String, EndpointConfig>,
        cache: &CacheConfig,
    ) -> Result<std::sync::Arc<dyn Judge>, String>;
}

pub mod endpoint;
pub mod guard;
pub mod media;
pub mod render;
pub mod script;
pub mod soft;

pub use endpoint::{CacheBackend, CacheConfig, EndpointConfig, StructuredOutputs};
