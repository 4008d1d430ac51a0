//! A scripted judge for tests of the model graders' logic (parsing, aggregation, prefilters):
//! each rule answers the calls whose prompt contains its `when` text. The graders' behaviour
//! against a real server is tested in `crates/referee-judge/tests` against llama-server.
//!
//! A script is a list of rules, first match wins:
//! `{when?: "text in any message", content?: "...", finish_reason?: "stop", logprobs?: {...},
//!   fail?: "judge_timeout", endpoint?: "name", reward?: 0.7, steps?: [0.9, 0.2], step?: 0.9}`.
//! Reward-model calls are answered by the first matching rule with a `reward` (or a `fail`);
//! `when` is matched against the text.
//!
//! Process-reward-model calls (`prm`) are answered like a PRM reads its input: by the first
//! rule with `steps` (that list as it is, to script a wrong count) or `fail` whose `when` is in
//! the whole text; else one score per occurrence of the step tag *in the text sent* (so a tag
//! the policy smuggled in shows as an extra score), each the `step` of the first rule whose
//! `when` is in the text before that tag (since the previous one).

use super::{
    Judge, JudgeCall, JudgeFailure, JudgeReply, RewardCall, RewardReply, StepCall, StepReply,
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
            });
        }
        Ok(out)
    }

    /// Every call so far: `(endpoint, call)`.
    pub fn calls(&self) -> Vec<(String, JudgeCall)> {
        self.calls.lock().expect("script lock").clone()
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
            })
            .map_or_else(
                || {
                    Err(JudgeFailure {
                        reason: "judge_config".into(),
                        message: "no scripted reply for this call".into(),
                    })
                },
                |r| r.reply.clone(),
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
}
