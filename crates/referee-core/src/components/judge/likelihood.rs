//! # likelihood
//! *What it scores:* how likely a model finds the reference answer after a context: a
//! verifier-free reward for free-form answers (proofs, essays, medical or long-form answers)
//! from an OpenAI-compatible `/v1/completions` endpoint that returns prompt logprobs: RLPR's
//! mean token probability, VeriFree/JEPO/NOVER's log-likelihood, SAR/InfoMem's gain over a
//! baseline context. The endpoint is usually the policy itself, at its current weights (the
//! trainer's rollout server, where it serves `/v1/completions`; the README says which do).
//!
//! *Spec:*
//! - `judge`: the completions endpoint by name in `judges:` (`max_batch`, `batch_wait_ms` shape
//!   the batches).
//! - `api`: `echo` (default: `echo: true, logprobs: 0, max_tokens: 0`, vLLM and OpenAI's
//!   legacy completions) or `prompt_logprobs` (vLLM's `prompt_logprobs: 0`).
//! - `context`: a template, e.g. `"{{item.question}}\n{{sample.reasoning}}\nAnswer:"`
//!   (`sample.reasoning` is the thinking section, without the policy's own answer).
//! - `target`: the reference answer, e.g. `" {{item.reference}}"`. The context must end on a
//!   token boundary of the endpoint's tokenizer (end it with a space or newline, or start the
//!   target with one).
//! - `reduce` over the target's token logprobs: `mean_prob` (default, RLPR), `mean_logprob`,
//!   `sum_logprob` (VeriFree/JEPO), `exp_mean_logprob` (the geometric-mean probability).
//! - `baseline` (optional): a second context; the reward is reduce(context) − reduce(baseline)
//!   (SAR: the question alone; InfoMem: a baseline context).
//! - `leak`: the policy's text in the context restating the reference (folded, case and
//!   punctuation ignored, whole words: `crate::text::restate`) must not pay. `action: penalize`
//!   (default) scores `reward` (default 0 for `mean_prob` and `exp_mean_logprob` without a
//!   baseline; the other reductions have no natural floor, so say it), `error` makes the
//!   sample an error (`reference_leak`), `allow` scores it anyway with a note. `min_chars`
//!   (default 1): shorter references are not searched (a short answer the reasoning derives).
//! - `deadline_ms`: the most a sample waits.
//!
//! A row may carry the trainer's own logprobs of the target (`sample.target_logprobs`, and
//! `sample.baseline_logprobs`): then no call is made for it. Per-group standardisation, as the
//! papers apply, is the `group:` stage's `advantage: grpo`.
//!
//! *Example:*
//! ```yaml
//! type: likelihood
//! name: rlpr
//! context: "{{item.question}}\n{{sample.reasoning}}\nAnswer:"
//! target: " {{item.reference}}"
//! reduce: mean_prob
//! ```
//!
//! *Score and failure modes:* the reduction (or its difference). The target's tokens are found
//! from the endpoint's own tokens and offsets (`likelihood::boundary`): a sample whose boundary
//! cannot be found is an error `likelihood_boundary`; an empty target `empty_reference`;
//! trainer logprobs of the wrong shape `invalid_row`; a failed call its `judge_*` reason. Never
//! a 0 that was not scored.

pub mod boundary;

use crate::compile::{waits, At, Compiler, JudgeRef};
use crate::exec::BoxFuture;
use crate::judge::{PromptCall, PromptLogprobApi, PromptReply};
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::restate::{restates, words};
use boundary::NoBoundary;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;
use std::time::{Duration, Instant};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LikelihoodSpec {
    #[serde(default)]
    pub judge: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub api: PromptLogprobApi,
    pub context: String,
    pub target: String,
    #[serde(default)]
    pub reduce: Reduce,
    #[serde(default)]
    pub baseline: Option<String>,
    #[serde(default)]
    pub leak: LeakSpec,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// How the target's token logprobs become one number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    /// The mean of the tokens' probabilities (RLPR), in [0, 1].
    #[default]
    MeanProb,
    MeanLogprob,
    /// The target's log-likelihood (VeriFree, JEPO).
    SumLogprob,
    /// exp(mean logprob): the geometric mean of the probabilities, in [0, 1].
    ExpMeanLogprob,
}

impl Reduce {
    pub fn apply(self, lp: &[f64]) -> f64 {
        let n = lp.len() as f64;
        match self {
            Reduce::MeanProb => lp.iter().map(|x| x.exp()).sum::<f64>() / n,
            Reduce::MeanLogprob => lp.iter().sum::<f64>() / n,
            Reduce::SumLogprob => lp.iter().sum(),
            Reduce::ExpMeanLogprob => (lp.iter().sum::<f64>() / n).exp(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeakSpec {
    #[serde(default)]
    pub action: LeakAction,
    /// What a restating sample scores with `action: penalize`.
    #[serde(default)]
    pub reward: Option<f64>,
    /// References shorter than this (in chars of their words) are not searched.
    #[serde(default = "one")]
    pub min_chars: usize,
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LeakAction {
    #[default]
    Penalize,
    Error,
    Allow,
}

pub struct Likelihood {
    judge: JudgeRef,
    api: PromptLogprobApi,
    context: Template,
    target: Template,
    baseline: Option<Template>,
    reduce: Reduce,
    leak: (LeakAction, f64, usize),
    deadline: Option<Duration>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: LikelihoodSpec = cx.spec(v, at)?;
    let context = cx.template(&spec.context, at, "context");
    let target = cx.template(&spec.target, at, "target");
    let baseline = match &spec.baseline {
        Some(b) => Some(cx.template(b, at, "baseline")?),
        None => None,
    };
    let bounded = matches!(spec.reduce, Reduce::MeanProb | Reduce::ExpMeanLogprob);
    let reward = match (spec.leak.action, spec.leak.reward) {
        (_, Some(r)) => r,
        (LeakAction::Penalize, None) if bounded && baseline.is_none() => 0.0,
        (LeakAction::Penalize, None) => {
            cx.err(
                at,
                Some("leak"),
                "say what a sample restating the reference scores (`leak: {reward: ...}`): this reduction has no natural floor",
            );
            return None;
        }
        (_, None) => 0.0,
    };
    let judge = cx.judge(at, spec.judge.as_deref(), spec.model.as_deref());
    Some(waits(Likelihood {
        judge: judge?,
        api: spec.api,
        context: context?,
        target: target?,
        baseline,
        reduce: spec.reduce,
        leak: (spec.leak.action, reward, spec.leak.min_chars),
        deadline: spec.deadline_ms.map(Duration::from_millis),
    }))
}

/// A context rendered, with the text the policy wrote in it.
struct Rendered {
    text: String,
    policy: String,
}

fn render(t: &Template, s: &Sample) -> Result<Rendered, crate::template::Miss> {
    let policy = RefCell::new(String::new());
    let text = t.render_with(s, &|from_policy, part| {
        if from_policy {
            let mut p = policy.borrow_mut();
            p.push_str(part);
            p.push('\n');
        }
        part.to_string()
    })?;
    Ok(Rendered {
        text,
        policy: policy.into_inner(),
    })
}

/// The target's logprobs after one context, and how they were found.
struct Scored {
    logprobs: Vec<f64>,
    how: &'static str,
}

impl Likelihood {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let deadline = self.deadline.map(|d| Instant::now() + d);
        let (context, target) = match (render(&self.context, s), self.target.render(s)) {
            (Ok(c), Ok(t)) => (c, t.into_owned()),
            (Err(m), _) | (_, Err(m)) => return m.outcome(cx),
        };
        let baseline = match self.baseline.as_ref().map(|b| render(b, s)).transpose() {
            Ok(b) => b,
            Err(m) => return m.outcome(cx),
        };
        if target.trim().is_empty() {
            return Outcome::error("empty_reference", "the target (reference) is empty");
        }
        let (action, leak_reward, min_chars) = self.leak;
        let policy = format!(
            "{}{}",
            context.policy,
            baseline.as_ref().map_or("", |b| b.policy.as_str())
        );
        if !policy.is_empty() {
            let long = words(&target)
                .iter()
                .map(|w| w.chars().count())
                .sum::<usize>()
                >= min_chars;
            if long && restates(&policy, &target) {
                match action {
                    LeakAction::Penalize => {
                        cx.note(|| {
                            format!(
                                "the policy's text restates the reference: scored {leak_reward}"
                            )
                        });
                        return Outcome::ok(leak_reward);
                    }
                    LeakAction::Error => {
                        return Outcome::error(
                            "reference_leak",
                            "the policy's text in the context restates the reference",
                        )
                    }
                    LeakAction::Allow => {
                        cx.note(|| "the policy's text restates the reference (allowed)".into());
                    }
                }
            }
        }
        let main = self.target_logprobs(
            &context.text,
            &target,
            s.target_logprobs.as_deref(),
            deadline,
        );
        let base = async {
            match &baseline {
                Some(b) => Some(
                    self.target_logprobs(
                        &b.text,
                        &target,
                        s.baseline_logprobs.as_deref(),
                        deadline,
                    )
                    .await,
                ),
                None => None,
            }
        };
        let ((main, replies), base) = futures::future::join(main, base).await;
        let (base, base_replies) = match base {
            Some((b, r)) => (Some(b), r),
            None => (None, Vec::new()),
        };
        for r in replies.iter().chain(&base_replies) {
            match r {
                Ok(r) => cx.usage.prompt(r),
                Err(_) => cx.judge_failed(),
            }
        }
        let main = match main {
            Ok(m) => m,
            Err(o) => return o,
        };
        let value = self.reduce.apply(&main.logprobs);
        let Some(base) = base else {
            cx.note(|| {
                format!(
                    "{:?} of the target's {} tokens = {value:.6} ({})",
                    self.reduce,
                    main.logprobs.len(),
                    main.how
                )
            });
            return Outcome::ok(value);
        };
        let base = match base {
            Ok(b) => b,
            Err(o) => return o,
        };
        let b = self.reduce.apply(&base.logprobs);
        cx.note(|| {
            format!(
                "{:?}: {value:.6} after the context − {b:.6} after the baseline ({} and {} target tokens; {})",
                self.reduce,
                main.logprobs.len(),
                base.logprobs.len(),
                main.how
            )
        });
        Outcome::ok(value - b)
    }

    /// The target's logprobs after `context`: the trainer's, or the endpoint's, with every
    /// reply (for the usage count).
    async fn target_logprobs(
        &self,
        context: &str,
        target: &str,
        given: Option<&[f64]>,
        deadline: Option<Instant>,
    ) -> (
        Result<Scored, Outcome>,
        Vec<Result<PromptReply, crate::judge::JudgeFailure>>,
    ) {
        if let Some(lp) = given {
            if lp.is_empty() {
                let o = Outcome::error("invalid_row", "the trainer's target logprobs are empty");
                return (Err(o), Vec::new());
            }
            let scored = Scored {
                logprobs: lp.to_vec(),
                how: "the trainer's logprobs",
            };
            return (Ok(scored), Vec::new());
        }
        let text = format!("{context}{target}");
        let call = |text: String| {
            self.judge.judge.prompt_logprobs(
                &self.judge.endpoint,
                PromptCall {
                    api: self.api,
                    text,
                },
                deadline,
            )
        };
        let joint = call(text.clone()).await;
        let mut replies = vec![joint.clone()];
        let joint = match joint {
            Ok(j) => j,
            Err(f) => return (Err(f.outcome()), replies),
        };
        let range = match boundary::by_offsets(&joint.tokens, &text, context.chars().count()) {
            Ok(r) => Ok((r, "boundary from the endpoint's offsets")),
            Err(NoBoundary::Failed(m)) => Err(m),
            Err(NoBoundary::NotSpelled) => {
                let alone = call(context.to_string()).await;
                replies.push(alone.clone());
                match alone {
                    Ok(c) => boundary::by_context_tokens(&joint.tokens, &c.tokens)
                        .map(|r| (r, "boundary from the context's own tokens")),
                    Err(f) => return (Err(f.outcome()), replies),
                }
            }
        };
        let (range, how) = match range {
            Ok(r) => r,
            Err(m) => return (Err(Outcome::error("likelihood_boundary", m)), replies),
        };
        let lp: Option<Vec<f64>> = joint.tokens.logprobs[range.clone()]
            .iter()
            .copied()
            .collect();
        let Some(logprobs) = lp else {
            let o = Outcome::error(
                "judge_unparseable",
                format!("a target token ({range:?}) came back without a logprob"),
            );
            return (Err(o), replies);
        };
        (Ok(Scored { logprobs, how }), replies)
    }
}

impl AsyncComponent for Likelihood {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}
