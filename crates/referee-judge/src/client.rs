//! The per-endpoint client: limits, attempts, and what a reply or a failure carries.

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use referee_core::judge::media::{Media, MediaKind};
use referee_core::judge::{EndpointConfig, StructuredOutputs};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
    /// Images and audio, each after the first `.0` bytes of `content`: such a message is sent
    /// as content parts in order (text, image, text, ...).
    #[serde(skip)]
    pub media: Vec<(usize, Arc<Media>)>,
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = ser.serialize_map(Some(2))?;
        m.serialize_entry("role", &self.role)?;
        if self.media.is_empty() {
            m.serialize_entry("content", &self.content)?;
        } else {
            m.serialize_entry("content", &self.parts())?;
        }
        m.end()
    }
}

impl Message {
    /// The content as chat-completions parts: `text`, `image_url` and `input_audio`.
    fn parts(&self) -> Vec<Value> {
        let mut media: Vec<&(usize, Arc<Media>)> = self.media.iter().collect();
        media.sort_by_key(|(at, _)| *at);
        let mut out = Vec::with_capacity(media.len() * 2 + 1);
        let mut from = 0;
        let text = |out: &mut Vec<Value>, to: usize, from: &mut usize| {
            let to = to.clamp(*from, self.content.len());
            let mut t = self.content.get(*from..to).unwrap_or_default();
            // Text blocks are joined with a newline; after a part it only separates.
            if out.last().is_some_and(|p| p["type"] != "text") {
                t = t.strip_prefix('\n').unwrap_or(t);
            }
            if !t.trim().is_empty() {
                out.push(json!({"type": "text", "text": t}));
            }
            *from = to;
        };
        for (at, m) in media {
            text(&mut out, *at, &mut from);
            out.push(match &m.kind {
                MediaKind::Image { detail } => {
                    let mut img = json!({"url": &*m.data});
                    if let Some(d) = detail {
                        img["detail"] = json!(d);
                    }
                    json!({"type": "image_url", "image_url": img})
                }
                MediaKind::Audio { format } => json!({"type": "input_audio",
                    "input_audio": {"data": &*m.data, "format": format}}),
            });
        }
        text(&mut out, self.content.len(), &mut from);
        out
    }
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: "system".into(),
            content: content.into(),
            media: Vec::new(),
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: "user".into(),
            content: content.into(),
            media: Vec::new(),
        }
    }
}

/// One chat-completions call. `json_schema`, when set, is sent as OpenAI's
/// `response_format: {type: json_schema, json_schema: {name, schema, strict: true}}`.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Ask for the top `n` log-probabilities of each generated token.
    pub top_logprobs: Option<u32>,
    pub json_schema: Option<Value>,
    /// Any other body fields (`seed`, `stop`, a server's own extensions).
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone)]
pub struct ChatReply {
    pub content: String,
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// `choices[0].logprobs` as the server sent it (shapes differ between servers).
    pub logprobs: Option<Value>,
    /// From the send of the successful attempt to its body.
    pub latency_ms: f64,
    pub attempts: u32,
    /// Whether the reply was constrained by `response_format` (false after a fallback).
    pub structured: bool,
    /// `choices[1..]`, in their `index` order, when the request asked for `n`.
    pub more: Vec<referee_core::judge::JudgeChoice>,
}

/// Why a call could not be completed: a stable snake_case `reason` and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct JudgeError {
    pub reason: &'static str,
    pub message: String,
    pub attempts: u32,
}

/// A client for one endpoint. Cheap to share behind an `Arc`; every method takes `&self`.
pub struct Client {
    cfg: EndpointConfig,
    url: String,
    key: Option<String>,
    http: reqwest::Client,
    slots: Semaphore,
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    /// Set once the server has rejected `response_format`.
    no_schema: AtomicBool,
}

/// One attempt's outcome before the retry decision.
enum Attempt<T> {
    Done(T),
    /// Worth another attempt, after at least this long (from `Retry-After`).
    Retry(JudgeError, Option<Duration>),
    Fail(JudgeError),
    /// The server rejected `response_format`.
    SchemaRejected(JudgeError),
}

fn limiter(per_minute: u32) -> Option<(DefaultDirectRateLimiter, NonZeroU32)> {
    let n = NonZeroU32::new(per_minute)?;
    // About one second's worth of burst: smooth, yet a few requests may start together.
    let burst = NonZeroU32::new(per_minute.div_ceil(60)).unwrap_or(NonZeroU32::MIN);
    Some((
        RateLimiter::direct(Quota::per_minute(n).allow_burst(burst)),
        burst,
    ))
}

impl Client {
    pub fn new(cfg: EndpointConfig) -> Result<Client, String> {
        let key = match &cfg.api_key_env {
            Some(var) => Some(
                std::env::var(var)
                    .map_err(|_| format!("the API key variable `{var}` is not set"))?,
            ),
            None => None,
        };
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(cfg.max_concurrency.max(1))
            .connect_timeout(Duration::from_millis(cfg.timeout_ms.min(10_000)))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Client {
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            key,
            http,
            slots: Semaphore::new(cfg.max_concurrency.max(1)),
            rpm: cfg.requests_per_minute.and_then(limiter).map(|(l, _)| l),
            tpm: cfg.tokens_per_minute.and_then(limiter),
            no_schema: AtomicBool::new(false),
            cfg,
        })
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// One chat completion, retried as configured, ended by `deadline` at the latest.
    pub async fn chat(
        &self,
        req: &ChatRequest,
        deadline: Option<Instant>,
    ) -> Result<ChatReply, JudgeError> {
        let work = self.chat_inner(req);
        match deadline {
            None => work.await,
            Some(d) => match tokio::time::timeout_at(d.into(), work).await {
                Ok(r) => r,
                Err(_) => Err(JudgeError {
                    reason: "judge_deadline",
                    message: "the call did not finish before the sample's deadline".into(),
                    attempts: 0,
                }),
            },
        }
    }

    async fn chat_inner(&self, req: &ChatRequest) -> Result<ChatReply, JudgeError> {
        let use_schema = AtomicBool::new(
            req.json_schema.is_some()
                && match self.cfg.structured_outputs {
                    StructuredOutputs::Never => false,
                    StructuredOutputs::Always => true,
                    StructuredOutputs::Auto => !self.no_schema.load(Ordering::Relaxed),
                },
        );
        let chars: usize = req.messages.iter().map(|m| m.content.len()).sum();
        // An image or clip costs the judge about as much as a page of text.
        let parts: usize = req.messages.iter().map(|m| m.media.len()).sum();
        let est = (chars / 4 + parts * 1000) as u64 + u64::from(req.max_tokens.unwrap_or(256));
        let (mut r, attempts) = self
            .retrying(est, || async {
                let schema = use_schema.load(Ordering::Relaxed);
                match self
                    .attempt(
                        &self.url,
                        &self.body(req, schema),
                        |body, latency_ms| {
                            parse_reply(body).map(
                                |(content, finish_reason, usage, logprobs, more)| ChatReply {
                                    content,
                                    finish_reason,
                                    usage,
                                    logprobs,
                                    latency_ms,
                                    attempts: 0,
                                    structured: schema,
                                    more,
                                },
                            )
                        },
                        schema,
                    )
                    .await
                {
                    Attempt::SchemaRejected(e)
                        if self.cfg.structured_outputs == StructuredOutputs::Auto =>
                    {
                        // Remember it: every later call to this endpoint asks in the prompt only.
                        self.no_schema.store(true, Ordering::Relaxed);
                        use_schema.store(false, Ordering::Relaxed);
                        Attempt::SchemaRejected(e)
                    }
                    Attempt::SchemaRejected(e) => Attempt::Fail(e),
                    other => other,
                }
            })
            .await?;
        r.attempts = attempts;
        Ok(r)
    }

    /// A POST of any JSON body to `url`, with the same slots, quotas, timeouts and retries as
    /// chat calls (reward-model APIs). `parse` reads the reply (body, latency in ms).
    pub async fn post<T>(
        &self,
        url: &str,
        body: &Value,
        est_tokens: u64,
        deadline: Option<Instant>,
        parse: impl Fn(&[u8], f64) -> Result<T, String>,
    ) -> Result<(T, u32), JudgeError> {
        let work = self.retrying(est_tokens, || self.attempt(url, body, &parse, false));
        match deadline {
            None => work.await,
            Some(d) => tokio::time::timeout_at(d.into(), work)
                .await
                .unwrap_or_else(|_| {
                    Err(JudgeError {
                        reason: "judge_deadline",
                        message: "the call did not finish before the sample's deadline".into(),
                        attempts: 0,
                    })
                }),
        }
    }

    /// The slot, the quotas and the retry loop around attempts; returns the result and the
    /// number of attempts made. A `SchemaRejected` attempt is retried at once and not counted
    /// (the caller has switched to asking in the prompt).
    async fn retrying<T, F, Fut>(&self, est_tokens: u64, mut one: F) -> Result<(T, u32), JudgeError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Attempt<T>>,
    {
        let _permit = self.slots.acquire().await.map_err(|_| JudgeError {
            reason: "judge_connection",
            message: "the client is shutting down".into(),
            attempts: 0,
        })?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            self.wait_for_quota(est_tokens).await;
            let (mut err, after) = match one().await {
                Attempt::Done(r) => return Ok((r, attempt)),
                Attempt::Fail(mut e) => {
                    e.attempts = attempt;
                    return Err(e);
                }
                Attempt::SchemaRejected(_) => {
                    attempt -= 1; // the server's refusal is not a failed attempt
                    continue;
                }
                Attempt::Retry(e, after) => (e, after),
            };
            if attempt > self.cfg.max_retries {
                err.attempts = attempt;
                return Err(err);
            }
            let backoff = self
                .cfg
                .backoff_ms
                .saturating_mul(1 << (attempt - 1).min(16))
                .min(self.cfg.backoff_max_ms);
            let wait = after.map_or(Duration::from_millis(backoff), |a| {
                a.min(Duration::from_millis(self.cfg.backoff_max_ms))
            });
            tokio::time::sleep(jitter(wait)).await;
        }
    }

    async fn wait_for_quota(&self, est: u64) {
        if let Some(l) = &self.rpm {
            l.until_ready().await;
        }
        if let Some((l, burst)) = &self.tpm {
            // A call bigger than the bucket waits for a full bucket rather than forever.
            let n =
                NonZeroU32::new(est.min(u64::from(burst.get())) as u32).unwrap_or(NonZeroU32::MIN);
            let _ = l.until_n_ready(n).await;
        }
    }

    fn body(&self, req: &ChatRequest, use_schema: bool) -> Value {
        let mut b = req.extra.clone();
        b.insert("model".into(), json!(self.cfg.model));
        b.insert("messages".into(), json!(req.messages));
        if let Some(t) = req.temperature {
            b.insert("temperature".into(), json!(t));
        }
        if let Some(m) = req.max_tokens {
            b.insert("max_tokens".into(), json!(m));
        }
        if let Some(n) = req.top_logprobs {
            b.insert("logprobs".into(), json!(true));
            b.insert("top_logprobs".into(), json!(n));
        }
        if let (true, Some(schema)) = (use_schema, &req.json_schema) {
            b.insert(
                "response_format".into(),
                json!({"type": "json_schema",
                       "json_schema": {"name": "verdict", "schema": schema, "strict": true}}),
            );
        }
        Value::Object(b)
    }

    async fn attempt<T>(
        &self,
        url: &str,
        body: &Value,
        parse: impl Fn(&[u8], f64) -> Result<T, String>,
        use_schema: bool,
    ) -> Attempt<T> {
        let mut rb = self.http.post(url).json(body);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(k);
        }
        let timeout = Duration::from_millis(self.cfg.timeout_ms);
        let started = Instant::now();
        let sent = tokio::time::timeout(timeout, async {
            let resp = rb.send().await?;
            let status = resp.status();
            let retry_after = resp
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(Duration::from_secs_f64);
            let body = resp.bytes().await?;
            Ok::<_, reqwest::Error>((status, retry_after, body))
        })
        .await;
        let err = |reason, message: String| JudgeError {
            reason,
            message,
            attempts: 0,
        };
        let (status, retry_after, body) = match sent {
            Err(_) => {
                return Attempt::Retry(
                    err(
                        "judge_timeout",
                        format!("no reply within {} ms", self.cfg.timeout_ms),
                    ),
                    None,
                )
            }
            Ok(Err(e)) => {
                return Attempt::Retry(err("judge_connection", e.to_string()), None);
            }
            Ok(Ok(x)) => x,
        };
        let latency_ms = started.elapsed().as_secs_f64() * 1e3;
        let text = String::from_utf8_lossy(&body);
        let snippet: String = text.chars().take(300).collect();
        if status.as_u16() == 429 {
            return Attempt::Retry(
                err("judge_rate_limited", format!("HTTP 429: {snippet}")),
                retry_after,
            );
        }
        if use_schema
            && (status.is_client_error() || status.is_server_error())
            && rejects_schema(&text)
        {
            return Attempt::SchemaRejected(err(
                "judge_http_4xx",
                format!("the server rejected response_format (HTTP {status}): {snippet}"),
            ));
        }
        if status.is_server_error() {
            return Attempt::Retry(
                err("judge_http_5xx", format!("HTTP {status}: {snippet}")),
                retry_after,
            );
        }
        if !status.is_success() {
            return Attempt::Fail(err("judge_http_4xx", format!("HTTP {status}: {snippet}")));
        }
        match parse(&body, latency_ms) {
            Ok(r) => Attempt::Done(r),
            Err(m) => Attempt::Fail(err("judge_unparseable", m)),
        }
    }
}

/// Whether an error body is a server refusing `response_format` / JSON schemas, as opposed to
/// any other bad request.
fn rejects_schema(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    b.contains("response_format") || b.contains("json_schema") || b.contains("schema")
}

type Parsed = (
    String,
    Option<String>,
    Usage,
    Option<Value>,
    Vec<referee_core::judge::JudgeChoice>,
);

fn parse_reply(body: &[u8]) -> Result<Parsed, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        format!(
            "the reply is not JSON ({e}): {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        )
    })?;
    let mut choices: Vec<&Value> = v
        .get("choices")
        .and_then(Value::as_array)
        .map(|c| c.iter().collect())
        .unwrap_or_default();
    // Choices by their `index` where they give one (servers may send them in any order).
    choices.sort_by_key(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0));
    let read = |i: usize, c: &Value| -> Result<referee_core::judge::JudgeChoice, String> {
        Ok(referee_core::judge::JudgeChoice {
            content: c
                .get("message")
                .and_then(|m| m.get("content"))
                .and_then(Value::as_str)
                .ok_or(format!(
                    "the reply has no `choices[{i}].message.content` string"
                ))?
                .to_string(),
            finish_reason: c
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            logprobs: c.get("logprobs").filter(|l| !l.is_null()).cloned(),
        })
    };
    let choice = *choices.first().ok_or("the reply has no `choices[0]`")?;
    let first = read(0, choice)?;
    let (content, finish_reason) = (first.content, first.finish_reason);
    let more = choices[1..]
        .iter()
        .enumerate()
        .map(|(i, c)| read(i + 1, c))
        .collect::<Result<Vec<_>, _>>()?;
    let n = |k: &str| {
        v.get("usage")
            .and_then(|u| u.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let usage = Usage {
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
    };
    Ok((content, finish_reason, usage, first.logprobs, more))
}

/// Up to 25% less than `d`, so clients that failed together do not retry together. The
/// randomness comes from the standard library's per-process hasher keys and the clock.
fn jitter(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    let frac = (h.finish() % 1000) as f64 / 4000.0;
    d.mul_f64(1.0 - frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_reply() {
        let body = br#"{"choices":[{"message":{"content":"yes"},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":12,"completion_tokens":1}}"#;
        let (c, f, u, l, more) = parse_reply(body).unwrap();
        assert_eq!((c.as_str(), f.as_deref()), ("yes", Some("stop")));
        assert_eq!(u.prompt_tokens + u.completion_tokens, 13);
        assert!(l.is_none() && more.is_empty());
        // n choices, out of order: read by index.
        let body = br#"{"choices":[{"index":1,"message":{"content":"b"},"finish_reason":"length"},{"index":0,"message":{"content":"a"},"finish_reason":"stop"}]}"#;
        let (c, _, _, _, more) = parse_reply(body).unwrap();
        assert_eq!(c, "a");
        assert_eq!(
            (more[0].content.as_str(), more[0].finish_reason.as_deref()),
            ("b", Some("length"))
        );
        assert!(
            parse_reply(br#"{"choices":[{"message":{"content":"a"}},{"message":{}}]}"#).is_err()
        );
        assert!(parse_reply(b"{\"choices\": []}").is_err());
        assert!(parse_reply(b"<html>").unwrap_err().contains("not JSON"));
    }

    #[test]
    fn schema_rejections_are_recognised() {
        assert!(rejects_schema(
            r#"{"error": "response_format type json_schema is not supported"}"#
        ));
        assert!(!rejects_schema(r#"{"error": "max_tokens too large"}"#));
    }

    #[test]
    fn jitter_stays_within_a_quarter() {
        for _ in 0..100 {
            let j = jitter(Duration::from_secs(1));
            assert!(j <= Duration::from_secs(1) && j >= Duration::from_millis(750));
        }
    }
}
