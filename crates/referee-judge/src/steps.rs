//! Process reward models: one text with a tag after each step in, one score per tag out,
//! batched like scalar reward models (the texts of concurrent samples in one request).
//!
//! - `pooling`: vLLM's `POST /pooling` (`{model, input: [texts], task?}`); `data[i].data` is
//!   one row per step-tag token (the server's `step_tag_id`), the score a column of it.
//! - `math_shepherd`: `POST /v1/completions` with `echo`, `logprobs` and `max_tokens: 1`. The
//!   tags are found in the tokens the server returns (never by tokenising here): the tokens
//!   must spell the text sent, and each tag must end a token of its own, whose next position's
//!   distribution gives `P(good) / (P(good) + P(bad))`.

use crate::client::Client;
use referee_core::judge::{JudgeFailure, RewardApi, StepApi, StepCall, StepReply};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// One text waiting for its batch.
pub struct StepJob {
    pub call: StepCall,
    pub tx: oneshot::Sender<Result<StepReply, JudgeFailure>>,
}

/// Sends the texts that arrive within `batch_wait_ms` of the first (up to `max_batch`) as one
/// request; requests run concurrently within the endpoint's slots.
pub async fn worker(client: Arc<Client>, api: StepApi, mut rx: mpsc::UnboundedReceiver<StepJob>) {
    while let Some(jobs) = crate::pool::next_batch(&mut rx, client.config()).await {
        tokio::spawn(run_batch(client.clone(), api.clone(), jobs));
    }
}

async fn run_batch(client: Arc<Client>, api: StepApi, jobs: Vec<StepJob>) {
    let cfg = client.config();
    let texts: Vec<&str> = jobs.iter().map(|j| j.call.text.as_str()).collect();
    let (url, body) = match &api {
        StepApi::Pooling { task, .. } => {
            // vLLM serves its pooling APIs at the server's root, beside `/v1`.
            let root = cfg.base_url.trim_end_matches('/').trim_end_matches("/v1");
            let mut b = json!({"model": cfg.model, "input": texts});
            if let Some(t) = task {
                b["task"] = json!(t);
            }
            (format!("{root}/pooling"), b)
        }
        StepApi::MathShepherd { top_logprobs, .. } => (
            format!("{}/completions", cfg.base_url.trim_end_matches('/')),
            json!({"model": cfg.model, "prompt": texts, "max_tokens": 1, "temperature": 0,
                   "echo": true, "logprobs": top_logprobs}),
        ),
    };
    let est: u64 = texts.iter().map(|t| t.len() as u64 / 4).sum();
    let n = jobs.len();
    let r = client
        .post(&url, &body, est, None, |b, latency| {
            outputs(&api, b, n).map(|v| (v, latency))
        })
        .await;
    match r {
        Ok(((outs, latency_ms), _)) => {
            for (job, out) in jobs.into_iter().zip(outs) {
                let scores = match &api {
                    StepApi::Pooling { index, .. } => {
                        pooling_scores(&out, job.call.tags.len(), *index)
                    }
                    StepApi::MathShepherd { good, bad, .. } => {
                        shepherd_scores(&job.call.text, &job.call.tags, &out, good, bad)
                    }
                };
                let reply = scores
                    .map(|values| StepReply {
                        values,
                        latency_ms,
                        batch_size: n,
                        cached: false,
                    })
                    .map_err(|message| JudgeFailure {
                        reason: "judge_unparseable".into(),
                        message,
                    });
                let _ = job.tx.send(reply);
            }
        }
        Err(e) => {
            for job in jobs {
                let _ = job.tx.send(Err(JudgeFailure {
                    reason: e.reason.into(),
                    message: format!("{} (after {} attempts)", e.message, e.attempts),
                }));
            }
        }
    }
}

/// Each text's raw output in input order: the pooling rows, or the completion's `logprobs`.
fn outputs(api: &StepApi, body: &[u8], n: usize) -> Result<Vec<Value>, String> {
    if let StepApi::Pooling { .. } = api {
        return crate::pool::outputs(RewardApi::Pooling, body, n);
    }
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("the reply has no `choices` list")?;
    if choices.len() != n {
        return Err(format!("{} choices for {n} prompts", choices.len()));
    }
    let mut out = vec![Value::Null; n];
    for (i, c) in choices.iter().enumerate() {
        let at = c
            .get("index")
            .and_then(Value::as_u64)
            .map_or(i, |x| x as usize);
        if at < n {
            out[at] = c.get("logprobs").cloned().unwrap_or(Value::Null);
        }
    }
    Ok(out)
}

/// A pooling output's step scores: one row per tag, column `index` of each.
pub fn pooling_scores(out: &Value, tags: usize, index: usize) -> Result<Vec<f64>, String> {
    let rows = out
        .as_array()
        .ok_or_else(|| format!("the output is not a list of rows: {}", short(out)))?;
    if rows.len() != tags {
        return Err(format!(
            "{} step rows for {tags} step tags (is the server's step_tag_id the tag sent?)",
            rows.len()
        ));
    }
    rows.iter()
        .enumerate()
        .map(|(k, r)| {
            r.as_array()
                .and_then(|r| r.get(index))
                .and_then(Value::as_f64)
                .filter(|x| x.is_finite())
                .ok_or_else(|| {
                    format!(
                        "step {k}: no finite number at index {index} in {}",
                        short(r)
                    )
                })
        })
        .collect()
}

/// Math-Shepherd's step scores from a completion's echoed `logprobs` (`tokens`,
/// `top_logprobs`): `tags` are char ranges of the tags in `text`.
pub fn shepherd_scores(
    text: &str,
    tags: &[(usize, usize)],
    logprobs: &Value,
    good: &str,
    bad: &str,
) -> Result<Vec<f64>, String> {
    let tokens: Vec<&str> = logprobs
        .get("tokens")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_str).collect())
        .ok_or("the choice has no `logprobs.tokens` strings (is `echo` honoured?)")?;
    let top = logprobs
        .get("top_logprobs")
        .and_then(Value::as_array)
        .ok_or("the choice has no `logprobs.top_logprobs`")?;
    if top.len() != tokens.len() {
        return Err(format!(
            "{} tokens but {} top_logprobs",
            tokens.len(),
            top.len()
        ));
    }
    // Each token's start, in chars and bytes, in the tokens' concatenation.
    let (mut chars, mut bytes) = (vec![0usize], vec![0usize]);
    for t in &tokens {
        chars.push(chars[chars.len() - 1] + t.chars().count());
        bytes.push(bytes[bytes.len() - 1] + t.len());
    }
    let spelled = tokens.concat();
    // The server may put a special token or two (BOS) before the text.
    let Some(base) = (0..=tokens.len().min(2)).find(|&m| spelled[bytes[m]..].starts_with(text))
    else {
        return by_count(text, tags, &tokens, top, good, bad).map_err(|e| {
            let at = spelled
                .chars()
                .zip(text.chars())
                .take_while(|(a, b)| a == b)
                .count();
            format!(
                "the server's tokens do not spell the text sent (they differ at char {at}: {:?}), and {e}",
                spelled.chars().skip(at).take(20).collect::<String>()
            )
        });
    };
    let base = chars[base];
    tags.iter()
        .enumerate()
        .map(|(k, &(a, b))| {
            let end = base + b;
            let j = chars[1..]
                .binary_search(&end)
                .map_err(|_| format!("step {k}'s tag does not end a token in the server's tokenization"))?;
            if tokens[j].trim_start().chars().count() != b - a || chars[j] > base + a {
                return Err(format!(
                    "step {k}'s tag is not a token of its own in the server's tokenization (token {:?})",
                    tokens[j]
                ));
            }
            after_tag(top, j, k, good, bad)
        })
        .collect()
}

/// The tags found by count when the tokens do not spell the text: vLLM decodes each echoed
/// token on its own, so SentencePiece tokens lose their leading space (`▁ки` reads `ки`) and a
/// character split over byte-level tokens reads U+FFFD. The tags are then the tokens that read
/// as the tag; there must be exactly one per tag sent (the policy's own tags were replaced
/// before sending, so no other can be there), else nothing is scored.
fn by_count(
    text: &str,
    tags: &[(usize, usize)],
    tokens: &[&str],
    top: &[Value],
    good: &str,
    bad: &str,
) -> Result<Vec<f64>, String> {
    let tag: String = match tags.first() {
        Some(&(a, b)) => text.chars().skip(a).take(b - a).collect(),
        None => return Ok(Vec::new()),
    };
    let clean = |t: &str| {
        t.trim_matches(|c: char| c.is_whitespace() || c == '▁' || c == 'Ġ')
            .to_string()
    };
    let want = clean(&tag);
    let at: Vec<usize> = (0..tokens.len())
        .filter(|&j| !want.is_empty() && clean(tokens[j]) == want)
        .collect();
    if at.len() != tags.len() {
        return Err(format!(
            "{} of its tokens read as the tag `{want}` where {} tags were sent",
            at.len(),
            tags.len()
        ));
    }
    at.iter()
        .enumerate()
        .map(|(k, &j)| after_tag(top, j, k, good, bad))
        .collect()
}

/// Step `k`'s score from the distribution after its tag, the token at `j`:
/// `P(good) / (P(good) + P(bad))`.
fn after_tag(top: &[Value], j: usize, k: usize, good: &str, bad: &str) -> Result<f64, String> {
    let dist = top
        .get(j + 1)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("no distribution after step {k}'s tag"))?;
    let lg = logprob(dist, good, k)?;
    let lb = logprob(dist, bad, k)?;
    Ok(1.0 / (1.0 + (lb - lg).exp()))
}

/// The log-probability of `token` in a top-k distribution: its key exactly, else the one key
/// that is it with spaces trimmed (a tokenizer's `" +"`).
fn logprob(dist: &Map<String, Value>, token: &str, k: usize) -> Result<f64, String> {
    let lp = if let Some(v) = dist.get(token) {
        v
    } else {
        let mut near = dist.iter().filter(|(key, _)| key.trim() == token.trim());
        match (near.next(), near.next()) {
            (Some((_, v)), None) => v,
            (Some((a, _)), Some((b, _))) => {
                return Err(format!(
                    "after step {k}'s tag both {a:?} and {b:?} read `{token}`: set the exact token"
                ))
            }
            (None, _) => {
                let keys: Vec<&str> = dist.keys().map(String::as_str).collect();
                return Err(format!(
                    "the distribution after step {k}'s tag lacks `{token}` (it has {keys:?}): raise `top_logprobs`"
                ));
            }
        }
    };
    lp.as_f64()
        .filter(|x| !x.is_nan())
        .ok_or_else(|| format!("`{token}` after step {k}'s tag has no number"))
}

fn short(v: &Value) -> String {
    referee_core::node::shorten(&v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooling_rows_must_match_the_tags() {
        let out = json!([[0.1, 0.9], [0.8, 0.2]]);
        assert_eq!(pooling_scores(&out, 2, 1).unwrap(), vec![0.9, 0.2]);
        assert!(pooling_scores(&out, 3, 1)
            .unwrap_err()
            .contains("2 step rows for 3"));
        assert!(pooling_scores(&out, 2, 2).is_err());
        assert!(pooling_scores(&json!([[0.1, null]]), 1, 1).is_err());
    }

    fn lp(tokens: &[&str], top: &[Value]) -> Value {
        json!({"tokens": tokens, "top_logprobs": top})
    }

    #[test]
    fn math_shepherd_reads_the_distribution_after_each_tag() {
        let text = "a ки\nb ки";
        // Char ranges of the two `ки`.
        let tags = [(2, 4), (7, 9)];
        let d = |p: f64, m: f64| json!({" +": p.ln(), " -": m.ln()});
        let v = lp(
            &["<s>", "a", " ки", "\n", "b", " ки", " +"],
            &[
                Value::Null,
                json!({}),
                json!({}),
                d(0.6, 0.2),
                json!({}),
                json!({}),
                d(0.1, 0.3),
            ],
        );
        let got = shepherd_scores(text, &tags, &v, "+", "-").unwrap();
        assert!(
            (got[0] - 0.75).abs() < 1e-12 && (got[1] - 0.25).abs() < 1e-12,
            "{got:?}"
        );
    }

    #[test]
    fn math_shepherd_finds_tags_by_count_in_tokens_decoded_one_by_one() {
        // vLLM's echo decodes each token alone: SentencePiece drops the leading spaces, and the
        // byte-level halves of `é` read U+FFFD, so the tokens no longer spell the text.
        let text = "é ки\nb ки";
        let tags = [(2, 4), (7, 9)];
        let d = |p: f64, m: f64| json!({"+": p.ln(), "-": m.ln()});
        let v = lp(
            &["<s>", "\u{FFFD}", "\u{FFFD}", "ки", "\n", "b", "ки", "+"],
            &[
                Value::Null,
                json!({}),
                json!({}),
                json!({}),
                d(0.6, 0.2),
                json!({}),
                json!({}),
                d(0.1, 0.3),
            ],
        );
        let got = shepherd_scores(text, &tags, &v, "+", "-").unwrap();
        assert!(
            (got[0] - 0.75).abs() < 1e-12 && (got[1] - 0.25).abs() < 1e-12,
            "{got:?}"
        );
        // One tag token too many (or too few): nothing is scored.
        let v = lp(
            &["ки", "\u{FFFD}", "ки", "\n", "b", "ки", "+"],
            &[
                Value::Null,
                json!({}),
                json!({}),
                d(0.6, 0.2),
                json!({}),
                json!({}),
                d(0.1, 0.3),
            ],
        );
        let e = shepherd_scores(text, &tags, &v, "+", "-").unwrap_err();
        assert!(
            e.contains("3 of its tokens read as the tag `ки` where 2"),
            "{e}"
        );
    }

    #[test]
    fn math_shepherd_refuses_what_it_cannot_locate() {
        let text = "a ки";
        let tags = [(2, 4)];
        let ok = json!({"+": -0.1, "-": -2.0});
        // The tag split over two tokens.
        let v = lp(
            &["a", " к", "и", "+"],
            &[Value::Null, json!({}), json!({}), ok.clone()],
        );
        assert!(shepherd_scores(text, &tags, &v, "+", "-")
            .unwrap_err()
            .contains("not a token of its own"));
        // The tag merged with the next character.
        let v = lp(&["a", " ки\n"], &[Value::Null, ok.clone()]);
        assert!(shepherd_scores("a ки\n", &tags, &v, "+", "-")
            .unwrap_err()
            .contains("does not end a token"));
        // Tokens that spell another text, with no tag token among them.
        let v = lp(
            &["b", " к", "и", "+"],
            &[Value::Null, json!({}), json!({}), ok.clone()],
        );
        let e = shepherd_scores(text, &tags, &v, "+", "-").unwrap_err();
        assert!(
            e.contains("do not spell") && e.contains("0 of its tokens"),
            "{e}"
        );
        // `-` missing from the top-k.
        let v = lp(
            &["a", " ки", "+"],
            &[Value::Null, json!({}), json!({"+": -0.1})],
        );
        assert!(shepherd_scores(text, &tags, &v, "+", "-")
            .unwrap_err()
            .contains("raise `top_logprobs`"));
        // Two keys that both read `+`.
        let v = lp(
            &["a", " ки", "+"],
            &[
                Value::Null,
                json!({}),
                json!({" +": -1.0, "+ ": -2.0, "-": -3.0}),
            ],
        );
        assert!(shepherd_scores(text, &tags, &v, "+", "-")
            .unwrap_err()
            .contains("set the exact token"));
        // No position after the last tag.
        let v = lp(&["a", " ки"], &[Value::Null, json!({})]);
        assert!(shepherd_scores(text, &tags, &v, "+", "-")
            .unwrap_err()
            .contains("no distribution"));
    }
}
