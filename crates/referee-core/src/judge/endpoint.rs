//! The `judges:` and `judge_cache:` sections of a spec file: the endpoints model graders call,
//! by name, and where their replies are cached. Declared in the core (they are part of the
//! spec language and its JSON Schema); `referee-judge` implements them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One OpenAI-compatible endpoint. Only `base_url` and `model` are required.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Up to and including `/v1`, e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key (sent as a bearer token), if any. The key
    /// itself never sits in a spec.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Requests in flight at once (default 8).
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Estimated as prompt characters / 4 plus `max_tokens`, before the call.
    #[serde(default)]
    pub tokens_per_minute: Option<u32>,
    /// Per attempt, from when the request is sent (default 60 000).
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Attempts after the first (default 3).
    #[serde(default = "default_retries")]
    pub max_retries: u32,
    /// First backoff (default 500); doubles per retry up to `backoff_max_ms` (default 8 000).
    #[serde(default = "default_backoff")]
    pub backoff_ms: u64,
    #[serde(default = "default_backoff_max")]
    pub backoff_max_ms: u64,
    #[serde(default)]
    pub structured_outputs: StructuredOutputs,
    /// Reward-model endpoints: the most texts sent in one request (default 32).
    #[serde(default = "default_max_batch")]
    pub max_batch: usize,
    /// Reward-model endpoints: how long a request waits for more texts to join it (default 5).
    #[serde(default = "default_batch_wait")]
    pub batch_wait_ms: u64,
}

/// Whether requests carry OpenAI's `response_format` when a caller asks for a JSON schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputs {
    /// Send it; if the server rejects it, stop sending it to this endpoint (the prompt asks for JSON).
    #[default]
    Auto,
    /// Always send it; a rejection is an error.
    Always,
    /// Never send it.
    Never,
}

fn default_concurrency() -> usize {
    8
}
fn default_timeout() -> u64 {
    60_000
}
fn default_retries() -> u32 {
    3
}
fn default_backoff() -> u64 {
    500
}
fn default_backoff_max() -> u64 {
    8_000
}
fn default_max_batch() -> usize {
    32
}
fn default_batch_wait() -> u64 {
    5
}

impl EndpointConfig {
    /// An endpoint with every default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        EndpointConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            max_concurrency: default_concurrency(),
            requests_per_minute: None,
            tokens_per_minute: None,
            timeout_ms: default_timeout(),
            max_retries: default_retries(),
            backoff_ms: default_backoff(),
            backoff_max_ms: default_backoff_max(),
            structured_outputs: StructuredOutputs::Auto,
            max_batch: default_max_batch(),
            batch_wait_ms: default_batch_wait(),
        }
    }
}

/// Where judge replies are kept between calls and runs (`judge_cache:` in a spec; a shell may
/// override it). Keys are content addresses of (endpoint URL, model, rendered messages, sampling
/// parameters, schema), so a changed prompt or model never reads an old verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// `file` (default: an embedded store that survives restarts), `redis` (shared by
    /// replicas), `memory` (this process only) or `off`.
    #[serde(default)]
    pub backend: CacheBackend,
    /// The store's file for `file` (default: chosen by the shell, e.g. next to the run's output).
    #[serde(default)]
    pub path: Option<String>,
    /// `redis://host:port/db` for `redis`.
    #[serde(default)]
    pub url: Option<String>,
    /// Entries older than this are not used (default: kept forever).
    #[serde(default)]
    pub ttl_s: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheBackend {
    #[default]
    File,
    Redis,
    Memory,
    Off,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            backend: CacheBackend::File,
            path: None,
            url: None,
            ttl_s: None,
        }
    }
}

impl CacheConfig {
    /// The shells' one-word cache override (the CLI's `--judge-cache`, Python's `judge_cache=`):
    /// `off`, `memory`, `redis://...` (or `rediss://`), or else a file path.
    pub fn from_flag(w: &str) -> CacheConfig {
        let mut c = CacheConfig::default();
        match w {
            "off" => c.backend = CacheBackend::Off,
            "memory" => c.backend = CacheBackend::Memory,
            u if u.starts_with("redis://") || u.starts_with("rediss://") => {
                c.backend = CacheBackend::Redis;
                c.url = Some(u.to_string());
            }
            path => c.path = Some(path.to_string()),
        }
        c
    }
}
