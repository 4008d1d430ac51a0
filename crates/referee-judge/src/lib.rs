//! Referee's client for OpenAI-compatible judge servers (vLLM, SGLang, llama.cpp, OpenAI).
//!
//! Judge calls are the slowest and most fragile part of an RL step, so the client's job is to
//! make every call end, and end with a reason:
//! - one pooled HTTP client per endpoint, with a **concurrency limit** (a semaphore) and optional
//!   **requests-per-minute** and **tokens-per-minute** limits (token buckets, about one second's
//!   worth of burst, so a batch does not spend a minute's quota in its first millisecond);
//! - **retries** with exponential backoff on 429, 5xx and connection failures, honouring
//!   `Retry-After`; never on a 4xx that will fail again, nor on a reply that cannot be read;
//! - a **timeout per attempt measured from when the request is sent**, not from when it was
//!   queued behind the concurrency limit (a long queue is not the server's fault), and an
//!   overall **deadline** per call that covers queueing, attempts and backoff;
//! - **structured outputs** through OpenAI's `response_format` where the server supports it;
//!   when a server rejects it, the client remembers that and falls back to asking in the prompt;
//! - every failure is a [`JudgeError`] with a stable reason (`judge_timeout`, `judge_deadline`,
//!   `judge_http_5xx`, `judge_http_4xx`, `judge_rate_limited`, `judge_connection`,
//!   `judge_unparseable`), never a default score.
//!
//! Token usage, latency and the number of attempts are returned with every reply.
//!
//! Replies are cached by content address (endpoint, model, rendered prompt, sampling
//! parameters, schema) in an embedded file store, Redis or memory, and identical calls in flight
//! at once are made once (see `cache.rs`).
//!
//! [`Pool`] serves named endpoints to the graders through the core's `judge::Judge` trait, on
//! its own tokio runtime, so the core's executor-agnostic scoring can await judge calls.

#![forbid(unsafe_code)]

mod batched;
mod cache;
mod client;
mod embed;
mod pool;
mod prompt;
mod steps;

pub use client::{ChatReply, ChatRequest, Client, JudgeError, Message, Usage};
pub use pool::{Connector, Pool};
pub use referee_core::judge::{CacheBackend, CacheConfig, EndpointConfig, StructuredOutputs};
