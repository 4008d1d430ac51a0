//! Prompt logprobs: the logprob of each of a text's own tokens, as a completions endpoint
//! tokenises it, for likelihood rewards. Never re-tokenised here: the tokens are the server's.
//!
//! - `echo`: `POST /v1/completions` with `echo: true, logprobs: 0, max_tokens: 0` (vLLM's echo
//!   without generation; OpenAI's legacy API): `choices[i].logprobs` holds `tokens`,
//!   `token_logprobs` (the first `null`) and `text_offset`.
//! - `prompt_logprobs`: vLLM's `prompt_logprobs: 0` (with `max_tokens: 1`, whose token is not
//!   read): `choices[i].prompt_logprobs` holds, per prompt token, `null` (the first) or
//!   `{token_id: {logprob, rank, decoded_token}}` with just that token; where a server adds
//!   others, `choices[i].prompt_token_ids` says which is the prompt's.

use crate::batched::{Kind, Sent};
use crate::client::Client;
use futures::future::FutureExt;
use referee_core::judge::{JudgeFailure, PromptTokens};
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) struct Prompt;

impl Kind for Prompt {
    type Out = PromptTokens;
    const NAME: &'static str = "prompt";

    fn send(client: Arc<Client>, params: Value, texts: Vec<String>) -> Sent<PromptTokens> {
        async move {
            let cfg = client.config();
            let url = format!("{}/completions", cfg.base_url.trim_end_matches('/'));
            let echo = params.get("api").and_then(Value::as_str) != Some("prompt_logprobs");
            let body = if echo {
                json!({"model": cfg.model, "prompt": texts, "max_tokens": 0, "echo": true,
                       "logprobs": 0, "temperature": 0})
            } else {
                json!({"model": cfg.model, "prompt": texts, "max_tokens": 1,
                       "prompt_logprobs": 0, "temperature": 0})
            };
            let est: u64 = texts.iter().map(|t| t.len() as u64 / 4 + 1).sum();
            let n = texts.len();
            client
                .post(&url, &body, est, None, |b, latency| {
                    read(b, n, echo).map(|v| (v, latency))
                })
                .await
                .map(|(r, _)| r)
                .map_err(|e| JudgeFailure {
                    reason: e.reason.into(),
                    message: format!("{} (after {} attempts)", e.message, e.attempts),
                })
        }
        .boxed()
    }
}

/// Each text's tokens in input order (choices by their `index`).
pub(crate) fn read(
    body: &[u8],
    n: usize,
    echo: bool,
) -> Result<Vec<Result<PromptTokens, String>>, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("the reply has no `choices` list")?;
    crate::batched::by_index(choices, n, "choice", |c| {
        if echo {
            echoed(c)
        } else {
            prompt_logprobs(c)
        }
    })
}

fn logprob(v: &Value) -> Result<Option<f64>, String> {
    match v {
        Value::Null => Ok(None),
        _ => v
            .as_f64()
            .filter(|x| x.is_finite() && *x <= 1e-9)
            .map(Some)
            .ok_or_else(|| format!("`{v}` is not a logprob")),
    }
}

fn echoed(c: &Value) -> Result<PromptTokens, String> {
    let lp = c
        .get("logprobs")
        .filter(|v| !v.is_null())
        .ok_or("the choice has no `logprobs` (does the server support `echo` with logprobs?)")?;
    let list = |k: &str| {
        lp.get(k)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("`logprobs.{k}` is not a list"))
    };
    let tokens = list("tokens")?
        .iter()
        .map(|t| t.as_str().map(str::to_string).ok_or("a token is not text"))
        .collect::<Result<Vec<_>, _>>()?;
    let logprobs = list("token_logprobs")?
        .iter()
        .map(logprob)
        .collect::<Result<Vec<_>, _>>()?;
    let offsets = match lp.get("text_offset") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_array()
                .ok_or("`logprobs.text_offset` is not a list")?
                .iter()
                .map(|x| {
                    x.as_u64()
                        .map(|x| x as usize)
                        .ok_or("an offset is not a count")
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    if logprobs.len() != tokens.len() || offsets.as_ref().is_some_and(|o| o.len() != tokens.len()) {
        return Err("`logprobs` lists of different lengths".into());
    }
    Ok(PromptTokens {
        tokens,
        logprobs,
        offsets,
    })
}

fn prompt_logprobs(c: &Value) -> Result<PromptTokens, String> {
    let list = c
        .get("prompt_logprobs")
        .and_then(Value::as_array)
        .ok_or("the choice has no `prompt_logprobs` list (is the server vLLM?)")?;
    let ids = c.get("prompt_token_ids").and_then(Value::as_array);
    if ids.is_some_and(|ids| ids.len() != list.len()) {
        return Err("`prompt_token_ids` and `prompt_logprobs` differ in length".into());
    }
    let mut out = PromptTokens::default();
    for (j, e) in list.iter().enumerate() {
        let entry = match e {
            Value::Null => {
                out.tokens.push(String::new());
                out.logprobs.push(None);
                continue;
            }
            Value::Object(m) if m.len() == 1 => m.values().next(),
            Value::Object(m) => ids
                .and_then(|ids| ids.get(j))
                .and_then(|id| m.get(&id.to_string())),
            _ => None,
        }
        .ok_or_else(|| {
            format!("prompt token {j}: cannot tell which entry is the prompt's token")
        })?;
        let token = entry
            .get("decoded_token")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("prompt token {j} has no `decoded_token`"))?;
        let lp = logprob(entry.get("logprob").unwrap_or(&Value::Null))?
            .ok_or_else(|| format!("prompt token {j} has no logprob"))?;
        out.tokens.push(token.to_string());
        out.logprobs.push(Some(lp));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_and_prompt_logprobs_replies_are_read() {
        let body = br#"{"choices": [{"index": 0, "text": "ab", "logprobs": {"tokens": ["a", "b"],
            "token_logprobs": [null, -0.5], "text_offset": [0, 1], "top_logprobs": [null, {"b": -0.5}]}}]}"#;
        let t = read(body, 1, true).unwrap().remove(0).unwrap();
        assert_eq!(t.tokens, ["a", "b"]);
        assert_eq!(t.logprobs, [None, Some(-0.5)]);
        assert_eq!(t.offsets, Some(vec![0, 1]));
        let body = br#"{"choices": [{"index": 0, "prompt_logprobs": [null,
            {"7": {"logprob": -1.25, "rank": 3, "decoded_token": " b"}},
            {"9": {"logprob": -2.0, "rank": 1, "decoded_token": "c"}, "4": {"logprob": -0.1, "rank": 1, "decoded_token": "d"}}],
            "prompt_token_ids": [1, 7, 9]}]}"#;
        let t = read(body, 1, false).unwrap().remove(0).unwrap();
        assert_eq!(t.tokens, ["", " b", "c"]);
        assert_eq!(t.logprobs, [None, Some(-1.25), Some(-2.0)]);
        // Which of several entries is the prompt's cannot be guessed without the ids.
        let body = br#"{"choices": [{"prompt_logprobs": [null, {"9": {"logprob": -2.0, "decoded_token": "c"}, "4": {"logprob": -0.1, "decoded_token": "d"}}]}]}"#;
        assert!(read(body, 1, false).unwrap()[0].is_err());
        // A positive "logprob" or a missing list is the server's error, never a number.
        let body = br#"{"choices": [{"logprobs": {"tokens": ["a"], "token_logprobs": [0.5], "text_offset": [0]}}]}"#;
        assert!(read(body, 1, true).unwrap()[0].is_err());
        assert!(read(br#"{"choices": [{"text": "a"}]}"#, 1, true).unwrap()[0].is_err());
        assert!(read(br#"{"choices": []}"#, 1, true).is_err());
    }
}
