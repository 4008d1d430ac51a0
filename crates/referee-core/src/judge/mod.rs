//! What model graders ask of a judge server, and what they get back (DESIGN §4: the core
//! declares the interface, `referee-judge` implements it over HTTP, tests may inject fakes).
//! The judge graders themselves come with issue 6; this is the seam they will call through.

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
}

pub mod guard;
pub mod soft;
