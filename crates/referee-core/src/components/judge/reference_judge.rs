//! # reference_judge
//! *What it scores:* whether the sample's answer is equivalent to a reference answer, decided by
//! a judge model: for answers no rule can compare (free-form, units, paraphrases), as VerifyBench
//! and verifiers' reference judges do.
//!
//! *Spec:*
//! - `reference` (required): the reference answer, a template (`"{{item.answer}}"`).
//! - `question`: the question (template); required with `commit_first`.
//! - `input`: what is graded (default `{{sample.output_text}}`).
//! - `instructions`: extra guidance for the judge (what counts as equivalent).
//! - `explain` (default true): ask for `{"reasoning", "equivalent"}` (reasoning first);
//!   `false` asks for `{"equivalent"}` alone.
//! - `commit_first` (default false): two calls. First the judge answers the question **blind**,
//!   seeing neither the candidate nor the reference (`{"reasoning", "answer"}`); then it sees its
//!   own committed answer, the reference and the candidate, and decides equivalence. Why: the
//!   one-token "master key" attacks (`":"`, `"Thought process:"`) work because a judge that has
//!   not worked the problem defers to whatever the candidate looks like; a judge that has
//!   committed to its own solution before it reads the candidate has something to compare with
//!   and cannot be talked into it first. The blind call's prompt is the same for every rollout
//!   of a question, so a judge cache answers it once per group.
//! - `soft` (default false): the score is the judge's probability of `true` at the
//!   `equivalent` position (from `top_logprobs`), not the sampled boolean.
//! - As in `score_model`: `judge`, `model`, `sampling_params`, `reasoning`, `prefilter`,
//!   `min_chars`, `max_chars`, `injection`, `deadline_ms`.
//!
//! *Example:*
//! ```yaml
//! type: reference_judge
//! name: correct
//! question: "{{item.question}}"
//! reference: "{{item.answer}}"
//! commit_first: true
//! ```
//!
//! *Score and failure modes:* 1 when the judge says `"equivalent": true`, else 0 (or the
//! probability with `soft`). The candidate is delimited and prefiltered as in `score_model`
//! (an empty or master-key answer, or one that writes the verdict key `"equivalent":` itself,
//! scores 0 without a call). Booleans must be JSON booleans; a
//! reply that is cut off, has other keys, or (commit-first) a missing or empty `answer` is
//! `judge_unparseable`; a failed call keeps its reason (`judge_timeout`, ...): errors, never
//! a 0. The trace shows the committed answer and the verdict.

use crate::compile::{judged, At, Compiler};
use crate::components::judge::{unparseable, AgainstRow, Caller, JudgeFields, NOTICE};
use crate::exec::BoxFuture;
use crate::judge::soft;
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Instant;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReferenceJudgeSpec {
    /// The reference answer (template).
    pub reference: String,
    #[serde(default)]
    pub question: Option<String>,
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub instructions: Option<String>,
    /// Ask for the judge's reasoning before its verdict (default true).
    #[serde(default)]
    pub explain: Option<bool>,
    /// Let the judge answer the question blind before it sees the candidate.
    #[serde(default)]
    pub commit_first: bool,
    #[serde(default)]
    pub soft: bool,
}

pub struct ReferenceJudge {
    reference: Template,
    question: Option<Template>,
    input: Template,
    explain: bool,
    commit_first: bool,
    soft: bool,
    system: String,
    schema: Value,
    commit_system: String,
    commit_schema: Value,
    caller: Caller,
}

const COMMIT_TASK: &str = "Solve the question yourself. Respond with only a JSON object: \
{\"reasoning\": \"your working, briefly\", \"answer\": \"your final answer\"}.";

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let (spec, common): (ReferenceJudgeSpec, JudgeFields) = cx.spec_pair(v, at)?;
    let reference = cx.template(&spec.reference, at, "reference");
    let question = spec
        .question
        .as_deref()
        .map(|q| cx.template(q, at, "question"));
    if spec.commit_first && spec.question.is_none() {
        cx.err(
            at,
            Some("question"),
            "commit_first needs the question the judge answers blind",
        );
    }
    let input = cx.input(spec.input.as_deref(), at);
    let caller = Caller::compile(cx, at, &common, 1024);
    let explain = spec.explain.unwrap_or(true);
    let mut task = String::from(
        "You decide whether a candidate's final answer is equivalent to the reference answer: \
the same result, possibly written differently (equal values, equivalent expressions, the same \
choice, a faithful paraphrase). An answer that is missing, only restates the question, only \
announces a solution, or hedges between several answers is not equivalent.",
    );
    if spec.commit_first {
        task.push_str(
            " You already solved the question before seeing the other answers; your own answer \
is shown for context, but the reference answer is authoritative.",
        );
    }
    if let Some(extra) = &spec.instructions {
        task.push(' ');
        task.push_str(extra);
    }
    if explain {
        task.push_str(" Respond with only a JSON object: {\"reasoning\": \"a few sentences\", \"equivalent\": true or false}.");
    } else {
        task.push_str(" Respond with only a JSON object: {\"equivalent\": true or false}.");
    }
    let system = format!("{task}\n\n{NOTICE}");
    let schema = if explain {
        json!({"type": "object", "properties": {"reasoning": {"type": "string"},
            "equivalent": {"type": "boolean"}},
            "required": ["reasoning", "equivalent"], "additionalProperties": false})
    } else {
        json!({"type": "object", "properties": {"equivalent": {"type": "boolean"}},
            "required": ["equivalent"], "additionalProperties": false})
    };
    let commit_schema = json!({"type": "object", "properties": {"reasoning": {"type": "string"},
        "answer": {"type": "string"}},
        "required": ["reasoning", "answer"], "additionalProperties": false});
    if cx.has_errors() {
        return None;
    }
    let caller = caller?;
    let samples = caller.samples;
    Some(judged(
        samples,
        ReferenceJudge {
            reference: reference?,
            question: question.flatten(),
            input: input?,
            explain,
            commit_first: spec.commit_first,
            soft: spec.soft,
            system,
            schema,
            commit_system: COMMIT_TASK.to_string(),
            commit_schema,
            caller,
        },
    ))
}

impl ReferenceJudge {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let started = Instant::now();
        let AgainstRow {
            other: reference,
            question,
            candidate,
        } = match self.caller.against_row(
            s,
            cx,
            &self.reference,
            self.question.as_ref(),
            &self.input,
            &self.system,
            &["equivalent"],
        ) {
            Ok(x) => x,
            Err(o) => return o,
        };
        // Commit first: the judge's own answer, before it sees anything from the policy.
        let mut committed: Option<(String, Value)> = None;
        if self.commit_first {
            let q = question.as_deref().unwrap_or_default();
            let messages = vec![
                ("system".to_string(), self.commit_system.clone()),
                ("user".to_string(), format!("Question:\n{q}")),
            ];
            let m = match self
                .caller
                .ask(
                    s,
                    messages,
                    Vec::new(),
                    self.commit_schema.clone(),
                    None,
                    started,
                    cx,
                    &["answer"],
                    &["reasoning"],
                    "committed answer",
                )
                .await
            {
                Ok((_, m)) => m,
                Err(o) => return o,
            };
            match m["answer"].as_str().map(str::trim) {
                Some(a) if !a.is_empty() => committed = Some((a.to_string(), Value::Object(m))),
                _ => {
                    return unparseable(format!(
                        "committed answer: `answer` is not a non-empty string: {}",
                        m["answer"]
                    ))
                }
            }
        }
        let mut user = String::new();
        if let Some(q) = &question {
            let _ = write!(user, "Question:\n{q}\n\n");
        }
        if let Some((a, _)) = &committed {
            let _ = write!(
                user,
                "Your own answer (given before you saw the others):\n{a}\n\n"
            );
        }
        let _ = write!(
            user,
            "Reference answer:\n{reference}\n\nCandidate answer:\n{candidate}"
        );
        let messages = vec![
            ("system".to_string(), self.system.clone()),
            ("user".to_string(), user),
        ];
        let top = self.soft.then_some(20);
        let (required, optional): (&[&str], &[&str]) = if self.explain {
            (&["reasoning", "equivalent"], &[])
        } else {
            (&["equivalent"], &["reasoning"])
        };
        let (reply, m) = match self
            .caller
            .ask(
                s,
                messages,
                Vec::new(),
                self.schema.clone(),
                top,
                started,
                cx,
                required,
                optional,
                "",
            )
            .await
        {
            Ok(r) => r,
            Err(o) => return o,
        };
        if m.get("reasoning").is_some_and(|r| !r.is_string()) {
            return unparseable("`reasoning` is not a string");
        }
        let Some(equivalent) = m["equivalent"].as_bool() else {
            return unparseable(format!(
                "`equivalent` is not a JSON boolean: {}",
                m["equivalent"]
            ));
        };
        let mut value = if equivalent { 1.0 } else { 0.0 };
        let mut soft_used = false;
        if self.soft {
            // The quoted key: the reasoning before it may say "equivalent" and "true" in prose.
            match reply.logprobs.as_ref().and_then(|lp| {
                soft::label_distribution_after(lp, "\"equivalent\"", &["true", "false"])
            }) {
                Some(p) => {
                    value = p[0];
                    soft_used = true;
                }
                None => cx.note(|| "no usable logprobs: the sampled verdict is used".into()),
            }
        }
        cx.note(|| {
            let mut n = String::new();
            if let Some((a, _)) = &committed {
                let _ = write!(
                    n,
                    "judge committed to `{}` blind; then ",
                    crate::node::shorten(a)
                );
            }
            let _ = write!(
                n,
                "judge `{}`: {}",
                self.caller.judge.endpoint,
                if equivalent {
                    "equivalent to the reference"
                } else {
                    "not equivalent to the reference"
                }
            );
            if soft_used {
                let _ = write!(n, "; probability {value:.4}");
            }
            if reply.cached {
                n.push_str(" [cache hit]");
            }
            n
        });
        cx.detail(|| {
            json!({"committed": committed.as_ref().map(|(_, v)| v.clone()),
                   "verdict": Value::Object(m.clone()), "cached": reply.cached})
        });
        Outcome::ok(value)
    }
}

impl AsyncComponent for ReferenceJudge {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}

#[cfg(test)]
mod tests {
    use crate::judge::script::ScriptJudge;
    use crate::{Program, Sample};
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn the_blind_call_shows_only_the_question_and_comes_first() {
        let judge = Arc::new(
            ScriptJudge::from_value(&json!([
                {"when": "Solve the question yourself", "content": "{\"reasoning\": \"3 × 4\", \"answer\": \"12\"}"},
                {"content": "{\"reasoning\": \"same\", \"equivalent\": true}"}
            ]))
            .unwrap(),
        );
        let env = crate::exec::Env {
            judge: Some(judge.clone()),
            ..Default::default()
        };
        let spec = json!({"type": "reference_judge", "question": "{{item.q}}",
                          "reference": "{{item.a}}", "commit_first": true});
        let p = Program::compile_with(&spec, env).unwrap();
        let s = Sample::new(
            "Twelve square units.",
            json!({"q": "Area of a 3 by 4 rectangle?", "a": "REF-12"}),
        );
        let r = p.explain(&s);
        assert_eq!(r.reward, Some(1.0));
        let calls = judge.calls();
        assert_eq!(calls.len(), 2);
        let blind: String = calls[0]
            .1
            .messages
            .iter()
            .map(|(_, c)| c.as_str())
            .collect();
        assert!(blind.contains("Area of a 3 by 4 rectangle?"));
        assert!(
            !blind.contains("Twelve")
                && !blind.contains("REF-12")
                && !blind.contains("<candidate_response>")
        );
        let second: String = calls[1]
            .1
            .messages
            .iter()
            .map(|(_, c)| c.as_str())
            .collect();
        assert!(second.contains("Your own answer (given before you saw the others):\n12"));
        assert!(second.contains("REF-12") && second.contains("Twelve square units."));
        let detail = r.trace.unwrap().detail.unwrap();
        assert_eq!(detail["committed"]["answer"], "12");
        assert_eq!(detail["verdict"]["equivalent"], true);
    }
}
