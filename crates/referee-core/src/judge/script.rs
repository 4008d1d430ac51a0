//! A scripted judge for tests of the model graders' logic (parsing, aggregation, prefilters):
//! each rule answers the calls whose prompt contains its `when` text. The graders' behaviour
//! against a real server is tested in `crates/referee-judge/tests` against llama-server.
//!
//! A script is a list of rules, first match wins:
//! `{when?: "text in any message", content?: "...", finish_reason?: "stop", logprobs?: {...},
//!   fail?: "judge_timeout", endpoint?: "name", reward?: 0.7, steps?: [0.9, 0.2], step?: 0.9}`.
//! A rule with `media: "image/png"` (a type or a digest's part) answers only calls carrying such
//! a media part, so a test can tell that an image reached the judge.
//! A rule with `seed: 2` answers only calls sent with that seed, and one with `choice: 1` only
//! the caller reading that choice of an `n`-choice call, so a test can script the several
//! samples of one grader (`samples:`) differently.
//! Reward-model calls are answered by the first matching rule with a `reward` (or a `fail`);
//! `when` is matched against the text.
//!
//! Process-reward-model calls (`prm`) are answered like a PRM reads its input: by the first
//! rule with `steps` (that list as it is, to script a wrong count) or `fail` whose `when` is in
//! the whole text; else one score per occurrence of the step tag *in the text sent* (so a tag
//! the policy smuggled in shows as an extra score), each the `step` of the first rule whose
//! `when` is in the text before that tag (since the previous one).
//!
//! Embedding calls get a bag-of-words vector (lower-cased words hashed into 64 dimensions, unit
//! length), so texts sharing words are close; an empty text is refused as llama-server refuses
//! it; a `fail` rule whose `when` is in the text fails the call.
//!
//! Listwise calls (`group.listwise`, `tie_break: {mode: listwise}`) are answered by a rule with
//! `rank_by: ["text", ...]`: the responses are read from the prompt as the judge sees them
//! (`Response <id>:` then a `<candidate_response>` section), ordered by the first `rank_by`
//! text each contains (earlier is better; none: after all, in the order shown), and the reply
//! is `{"ranking": [ids]}`, or `{"scores": [{"id", "score": 10 − position}]}` when the prompt
//! asks for scores ("Score each of the"). `corrupt: "repeat" | "drop"` repeats the first id instead of the last, or
//! drops the last (to script a broken reply).
//!
//! Prompt-logprob calls get the text cut into tokens of leading whitespace plus a word; the
//! first token has no logprob, each other the `logprob` of the first rule with one whose `when`
//! is in the text before the token (default -1). A rule `{when, spell: false}` makes the tokens
//! come back without their leading whitespace, as a SentencePiece server decodes them one by
//! one (they no longer spell the text).

use super::{
    EmbedCall, EmbedReply, Judge, JudgeCall, JudgeFailure, JudgeReply, PromptCall, PromptReply,
    PromptTokens, RewardCall, RewardReply, StepCall, StepReply,
};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Mutex;
use std::time::Instant;

#[derive(Debug, Clone)]
struct Rule {
    when: Option<String>,
    endpoint: Option<String>,
    reply: Result<JudgeReply, JudgeFailure>,
    reward: Option<f64>,
    steps: Option<Vec<f64>>,
    step: Option<f64>,
    logprob: Option<f64>,
    spell: Option<bool>,
    /// Matches only a call carrying a media part whose type or digest contains this.
    media: Option<String>,
    rank_by: Option<Vec<String>>,
    corrupt: Option<String>,
    seed: Option<i64>,
    choice: Option<u64>,
}

/// Answers from a script and keeps every call it saw.
#[derive(Debug, Default)]
pub struct ScriptJudge {
    rules: Vec<Rule>,
    endpoints: Vec<String>,
    calls: Mutex<Vec<(String, JudgeCall)>>,
}

impl ScriptJudge {
    /// Builds a judge from a script (see the module docs); it serves `default` plus any
    /// endpoint a rule names.
    pub fn from_value(v: &Value) -> Result<ScriptJudge, String> {
        let rules = v.as_array().ok_or("a judge script is a list of rules")?;
        let mut out = ScriptJudge {
            endpoints: vec!["default".into()],
            ..ScriptJudge::default()
        };
        for r in rules {
            let get = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
            let reply = match get("fail") {
                Some(reason) => Err(JudgeFailure {
                    message: format!("scripted {reason}"),
                    reason: reason.into(),
                }),
                None => Ok(JudgeReply {
                    content: get("content").unwrap_or_default(),
                    finish_reason: Some(get("finish_reason").unwrap_or_else(|| "stop".into())),
                    prompt_tokens: 100,
                    completion_tokens: 10,
                    logprobs: r.get("logprobs").cloned(),
                    latency_ms: 1.0,
                    attempts: 1,
                    structured: true,
                    cached: r.get("cached").and_then(Value::as_bool).unwrap_or(false),
                    more: Vec::new(),
                }),
            };
            let endpoint = get("endpoint");
            if let Some(e) = &endpoint {
                if !out.endpoints.contains(e) {
                    out.endpoints.push(e.clone());
                }
            }
            out.rules.push(Rule {
                when: get("when"),
                endpoint,
                reply,
                reward: r.get("reward").and_then(Value::as_f64),
                steps: match r.get("steps") {
                    None => None,
                    Some(v) => Some(
                        v.as_array()
                            .and_then(|a| a.iter().map(Value::as_f64).collect())
                            .ok_or("`steps` in a judge script is a list of numbers")?,
                    ),
                },
                step: r.get("step").and_then(Value::as_f64),
                logprob: r.get("logprob").and_then(Value::as_f64),
                spell: r.get("spell").and_then(Value::as_bool),
                media: get("media"),
                rank_by: match r.get("rank_by") {
                    None => None,
                    Some(v) => Some(
                        v.as_array()
                            .and_then(|a| {
                                a.iter().map(|x| x.as_str().map(str::to_string)).collect()
                            })
                            .ok_or("`rank_by` in a judge script is a list of strings")?,
                    ),
                },
                corrupt: get("corrupt"),
                seed: r.get("seed").and_then(Value::as_i64),
                choice: r.get("choice").and_then(Value::as_u64),
            });
        }
        Ok(out)
    }

    /// Every call so far: `(endpoint, call)`.
    pub fn calls(&self) -> Vec<(String, JudgeCall)> {
        self.calls.lock().expect("script lock").clone()
    }
}

/// The reply of a `rank_by` rule to a listwise prompt (see the module doc).
fn listwise_reply(text: &str, by: &[String], corrupt: Option<&str>) -> String {
    use crate::components::judge::{CLOSE, OPEN};
    let mut shown: Vec<(String, String)> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&format!(":\n{OPEN}\n")) {
        let id = rest[..at].rsplit("Response ").next().unwrap_or_default();
        let body = &rest[at + OPEN.len() + 3..];
        let end = body.find(&format!("\n{CLOSE}")).unwrap_or(body.len());
        shown.push((id.to_string(), body[..end].to_string()));
        rest = &body[end..];
    }
    let key = |t: &str| {
        by.iter()
            .position(|w| t.contains(w.as_str()))
            .unwrap_or(by.len())
    };
    let mut order: Vec<usize> = (0..shown.len()).collect();
    order.sort_by_key(|&i| key(&shown[i].1));
    let mut ids: Vec<&str> = order.iter().map(|&i| shown[i].0.as_str()).collect();
    match corrupt {
        Some("repeat") if ids.len() > 1 => {
            let first = ids[0];
            *ids.last_mut().expect("two ids") = first;
        }
        Some("drop") => {
            ids.pop();
        }
        _ => {}
    }
    if text.contains("Score each of the") {
        let scores: Vec<Value> = ids
            .iter()
            .enumerate()
            .map(|(p, id)| serde_json::json!({"id": id, "score": 10 - p.min(10)}))
            .collect();
        serde_json::json!({ "scores": scores }).to_string()
    } else {
        serde_json::json!({ "ranking": ids }).to_string()
    }
}

impl Judge for ScriptJudge {
    fn call(
        &self,
        endpoint: &str,
        call: JudgeCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<JudgeReply, JudgeFailure>> {
        let text: String = call
            .messages
            .iter()
            .map(|(_, c)| c.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let reply = self
            .rules
            .iter()
            .find(|r| {
                r.when.as_ref().is_none_or(|w| text.contains(w.as_str()))
                    && r.endpoint.as_ref().is_none_or(|e| e == endpoint)
                    && r.seed.is_none_or(|want| {
                        call.extra.get("seed").and_then(Value::as_i64) == Some(want)
                    })
                    && r.choice
                        .is_none_or(|want| call.choice.map(u64::from) == Some(want))
                    && r.media.as_ref().is_none_or(|want| {
                        call.media.iter().any(|m| {
                            m.media.mime.contains(want.as_str())
                                || m.media.digest.contains(want.as_str())
                        })
                    })
            })
            .map_or_else(
                || {
                    Err(JudgeFailure {
                        reason: "judge_config".into(),
                        message: "no scripted reply for this call".into(),
                    })
                },
                |r| match &r.rank_by {
                    Some(by) => r.reply.clone().map(|mut reply| {
                        reply.content = listwise_reply(&text, by, r.corrupt.as_deref());
                        reply
                    }),
                    None => r.reply.clone(),
                },
            );
        self.calls
            .lock()
            .expect("script lock")
            .push((endpoint.to_string(), call));
        Box::pin(async move { reply })
    }

    fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn reward(
        &self,
        endpoint: &str,
        call: RewardCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<RewardReply, JudgeFailure>> {
        let rule = self.rules.iter().find(|r| {
            (r.reward.is_some() || r.reply.is_err())
                && r.when
                    .as_ref()
                    .is_none_or(|w| call.text.contains(w.as_str()))
                && r.endpoint.as_ref().is_none_or(|e| e == endpoint)
        });
        let out = match rule {
            Some(Rule {
                reward: Some(v),
                reply,
                ..
            }) => Ok(RewardReply {
                value: *v,
                latency_ms: 1.0,
                batch_size: 1,
                cached: reply.as_ref().is_ok_and(|r| r.cached),
            }),
            Some(Rule { reply: Err(f), .. }) => Err(f.clone()),
            _ => Err(JudgeFailure {
                reason: "judge_config".into(),
                message: "no scripted reward for this text".into(),
            }),
        };
        self.calls.lock().expect("script lock").push((
            endpoint.to_string(),
            JudgeCall {
                messages: vec![("reward".into(), call.text)],
                ..JudgeCall::default()
            },
        ));
        Box::pin(async move { out })
    }

    fn step_rewards(
        &self,
        endpoint: &str,
        call: StepCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<StepReply, JudgeFailure>> {
        let here = |r: &&Rule, text: &str| {
            r.when.as_ref().is_none_or(|w| text.contains(w.as_str()))
                && r.endpoint.as_ref().is_none_or(|e| e == endpoint)
        };
        let whole = self
            .rules
            .iter()
            .find(|r| (r.steps.is_some() || r.reply.is_err()) && here(r, &call.text));
        let reply = |values| StepReply {
            values,
            latency_ms: 1.0,
            batch_size: 1,
            cached: false,
        };
        let out = match whole {
            Some(Rule {
                steps: Some(v),
                reply: r,
                ..
            }) => Ok(StepReply {
                cached: r.as_ref().is_ok_and(|r| r.cached),
                ..reply(v.clone())
            }),
            Some(Rule { reply: Err(f), .. }) => Err(f.clone()),
            _ => {
                let tag: String = call.tags.first().map_or(String::new(), |&(a, b)| {
                    call.text.chars().skip(a).take(b - a).collect()
                });
                let mut values = Vec::new();
                let mut at = 0;
                let mut missing = None;
                for (i, _) in call
                    .text
                    .match_indices(tag.as_str())
                    .filter(|_| !tag.is_empty())
                {
                    let seg = &call.text[at..i];
                    at = i + tag.len();
                    match self.rules.iter().find(|r| r.step.is_some() && here(r, seg)) {
                        Some(r) => values.push(r.step.unwrap_or_default()),
                        None => missing = missing.or(Some(values.len())),
                    }
                }
                match missing {
                    Some(k) => Err(JudgeFailure {
                        reason: "judge_config".into(),
                        message: format!("no scripted step score for step {k}"),
                    }),
                    None => Ok(reply(values)),
                }
            }
        };
        self.calls.lock().expect("script lock").push((
            endpoint.to_string(),
            JudgeCall {
                messages: vec![("steps".into(), call.text)],
                ..JudgeCall::default()
            },
        ));
        Box::pin(async move { out })
    }

    fn embed(
        &self,
        endpoint: &str,
        call: EmbedCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<EmbedReply, JudgeFailure>> {
        let failed = self.failing(endpoint, &call.text);
        let out = match failed {
            Some(f) => Err(f),
            None if call.text.is_empty() => Err(JudgeFailure {
                reason: "judge_http_4xx".into(),
                message: "HTTP 400: the input is empty".into(),
            }),
            None => Ok(EmbedReply {
                vector: bag_of_words(&call.text).into(),
                latency_ms: 1.0,
                batch_size: 1,
                cached: false,
            }),
        };
        self.log(endpoint, "embed", call.text);
        Box::pin(async move { out })
    }

    fn prompt_logprobs(
        &self,
        endpoint: &str,
        call: PromptCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<PromptReply, JudgeFailure>> {
        let out = match self.failing(endpoint, &call.text) {
            Some(f) => Err(f),
            None => Ok(PromptReply {
                tokens: self.tokens(endpoint, &call.text).into(),
                latency_ms: 1.0,
                batch_size: 1,
                cached: false,
            }),
        };
        self.log(endpoint, "prompt", call.text);
        Box::pin(async move { out })
    }
}

impl ScriptJudge {
    fn applies(r: &Rule, endpoint: &str, text: &str) -> bool {
        r.when.as_ref().is_none_or(|w| text.contains(w.as_str()))
            && r.endpoint.as_ref().is_none_or(|e| e == endpoint)
    }

    /// The failure of the first `fail` rule that applies to the text.
    fn failing(&self, endpoint: &str, text: &str) -> Option<JudgeFailure> {
        self.rules
            .iter()
            .find(|r| r.reply.is_err() && Self::applies(r, endpoint, text))
            .and_then(|r| r.reply.clone().err())
    }

    fn log(&self, endpoint: &str, kind: &str, text: String) {
        self.calls.lock().expect("script lock").push((
            endpoint.to_string(),
            JudgeCall {
                messages: vec![(kind.into(), text)],
                ..JudgeCall::default()
            },
        ));
    }

    /// See the module docs.
    fn tokens(&self, endpoint: &str, text: &str) -> PromptTokens {
        let spell = !self
            .rules
            .iter()
            .any(|r| r.spell == Some(false) && Self::applies(r, endpoint, text));
        // A token is the whitespace before a word plus the word: cut where whitespace follows
        // a non-space.
        let mut cuts: Vec<usize> = vec![0];
        let mut prev_word = false;
        for (i, c) in text.char_indices() {
            if c.is_whitespace() && prev_word {
                cuts.push(i);
            }
            prev_word = !c.is_whitespace();
        }
        let mut out = PromptTokens::default();
        let mut offset = 0;
        for (k, &a) in cuts.iter().enumerate() {
            let b = cuts.get(k + 1).copied().unwrap_or(text.len());
            let tok = if spell {
                &text[a..b]
            } else {
                text[a..b].trim_start()
            };
            let lp = (k > 0).then(|| {
                self.rules
                    .iter()
                    .find(|r| r.logprob.is_some() && Self::applies(r, endpoint, &text[..a]))
                    .and_then(|r| r.logprob)
                    .unwrap_or(-1.0)
            });
            out.tokens.push(tok.to_string());
            out.logprobs.push(lp);
            out.offsets.get_or_insert_with(Vec::new).push(offset);
            offset += tok.chars().count();
        }
        out
    }
}

/// Lower-cased words hashed into 64 dimensions, at unit length (all zeros without words).
fn bag_of_words(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 64];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let h = w
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
            });
        v[(h % 64) as usize] += 1.0;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        for x in &mut v {
            *x /= n;
        }
    }
    v
}
