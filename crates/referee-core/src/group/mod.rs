//! # group
//! *What it does:* the group stage turns the scored rollouts of one prompt (the samples sharing a
//! `group` id) into GRPO-family advantages, flags the groups that carry no signal, and reports
//! per batch how much signal there was. It is a top-level section of the spec file, **off by
//! default**: a trainer that normalises rewards itself must not normalise twice. The raw
//! `reward` is never changed; each result gains `advantage` (and `group_flag` when a flag
//! applies). When explaining, the stage adds a `group` node (advantage, flag, why) as the last
//! child of the result's trace. It runs in `referee_core::score` (every shell's scoring call);
//! `Program::score` (one sample, no group) does not run it.
//!
//! *Spec:*
//! - `advantage`: `grpo` (default) `(r − mean)/(std + epsilon)` within the group, as TRL's
//!   `scale_rewards: group` and verl's `grpo`; `dr_grpo` `r − mean` (TRL `scale_rewards: none`,
//!   verl `norm_adv_by_std_in_grpo: false`); `rloo` `r − mean of the others` = `n/(n−1)·(r − mean)`
//!   (verl's `rloo`); `batch_std` `(r − group mean)/(std of the whole batch + epsilon)` (TRL
//!   `scale_rewards: batch`); `none` (no advantage written, flags and diagnostics only).
//!   Every std is the sample std (Bessel's `n − 1`), as `torch.std` in TRL and verl.
//! - `epsilon` (default `1e-4`, TRL's; verl uses `1e-6`).
//! - `combine`: `sum_then_normalize` (default: the grader's reward is normalised) or
//!   `normalize_then_sum` (TRL's GDPO: each named component is normalised within its group with
//!   the chosen estimator, missing values left out; the weighted sum is then whitened over the
//!   batch). `weights` (`normalize_then_sum` only): weight per component name; default 1 for
//!   every named component (name only the top-level ones when components nest).
//! - `pass_threshold` (default 1.0): a sample passes when its reward is at least this, for the
//!   all-pass / all-fail / mixed counts.
//! - `flat_tolerance` (default `1e-9`): a group of two or more whose reward std is at most this
//!   is flat.
//! - At most one of these replaces the value the estimator sees (written as `group_reward`;
//!   `reward` stays the grader's):
//!   - `hero: {verifier, reward_model, alpha: 0.1, beta: 0.1}` (HERO, Tao et al. 2025):
//!     inside each group the reward-model score is min-max ranked within the verifier-correct
//!     stratum into `[1 − beta, 1 + beta]` and within the wrong stratum into `[−alpha, alpha]`
//!     (`alpha + beta < 1`), so no wrong answer ever outscores a correct one. A stratum whose
//!     scores are all equal gets its midpoint (the paper's formula would give its bottom). A
//!     sample missing either component is excluded.
//!   - `majority_vote: {answer: "{{sample.output_text}}", extract: strict}`: 1 for agreeing with
//!     the group's most common answer, 0 otherwise (label-free, TTRL-style). Answers are
//!     extracted as `math_equiv` does (`strict`, `boxed`, `lenient`, or `none` for the trimmed
//!     text) and compared by canonical math form, so `1/2` and `\frac12` vote together. No
//!     answer never agrees. *Known failure modes:* the majority is only as right as the policy
//!     (a confidently wrong majority is reinforced; entropy collapses toward whatever the group
//!     already says); a tie goes to the answer seen first; answer spraying is a hedge and gets
//!     no answer under `strict`, but an answer copied from the prompt can win the vote.
//!   - `crps: {prediction: "{{sample.output_text}}", target, extract: strict}`: the group's
//!     numeric predictions are an empirical distribution scored against `target` with the
//!     continuous ranked probability score `E|X − y| − ½E|X − X'|`; each rollout's value is
//!     its leave-one-out credit `CRPS(without it) − CRPS(all)` (positive when it helped). A
//!     rollout with no single number gets the group's lowest credit (at most 0); a sample whose
//!     target does not parse is excluded. *Known failure modes:* credit is relative to the
//!     group, so a group that is uniformly far off still hands out positive credit to its
//!     least-bad member; CRPS is scale-dependent (targets in thousands give larger
//!     advantages before normalisation).
//!
//!   - `pow3r: {weights: {criterion: w, ...}, floor: 0.1}` (policy-aware rubric weights, after
//!     POW3R, Tyagi et al. 2026; the formula is ours, the paper's was not available): inside
//!     each group a criterion's weight is `w · (floor + its within-group std)`, and the value is
//!     the weighted mean of the criteria the sample has. A criterion every rollout passes (or
//!     fails) keeps only `floor` of its weight, so it no longer drowns the criteria that
//!     separate the rollouts; the human weights stay the objective (`reward` is unchanged).
//!     A sample with none of the criteria is excluded. *Known failure mode:* a noisy criterion
//!     (a judge flipping on identical answers) looks like a separating one and gains weight.
//! - `tie_break: {judge, question, input, instructions, anchors: 2, spread: 0.1}`: a flat group
//!   (only) is sent to a pairwise tournament through the judge: each rollout against the
//!   group's first `anchors` rollouts, both orders (position bias cancels), the anchors among
//!   themselves; Bradley–Terry ([`bradley_terry`]: Hunter's MM algorithm with a small
//!   virtual-comparison prior, fitted per connected component) on the comparisons; the
//!   members' values become `reward + spread·s` with `s` the log-strength scaled into [−1, 1],
//!   and the estimator runs on those (`group_flag: tie_break`, `group_reward` written). A reply
//!   that is not exactly `{"winner": "A"|"B"|"tie"}` or a failed call is dropped; when no call
//!   succeeds the group stays flat (counted as `tie_unbroken_groups`). The calls are not
//!   counted in per-result `usage` (the summary counts them). *Known failure modes:* the
//!   judge's preferences become the training signal inside ties (a judge that likes length
//!   rewards length); rollouts never compared directly with the same record tie; with
//!   `batch_std`, the batch std is computed before the spread.
//!
//! *Example:*
//! ```yaml
//! grader: {type: contains, name: has_answer, keywords: ["42"]}
//! group:
//!   advantage: grpo
//!   epsilon: 1.0e-4
//!   pass_threshold: 1.0
//! ```
//!
//! *Advantages and failure modes:* a sample whose status is `error` (even with an `on_error`
//! reward) or that has no reward gets `advantage: null`, `group_flag: excluded`, and is left out
//! of its group's mean and std: a failure never becomes a silent 0 in the baseline. A group
//! with one scored sample (or a sample with no `group` id) gets advantage 0 and
//! `group_flag: singleton_group` (verl would give `r/(1+ε)`, TRL a NaN std). A flat group gets
//! advantage 0 for every member (`group_flag: flat_group`, counted in the summary). With
//! `normalize_then_sum`, members of a reward-flat group can still get non-zero advantages when
//! their components differ. `batch_std` and the `normalize_then_sum` whitening use the batch
//! the stage sees: a `score` call, or a chunk of 8,192 lines in `referee score`.

pub mod advantage;
pub mod bradley_terry;
pub mod diagnostics;
pub mod tie_break;

pub use advantage::Estimator;
pub use diagnostics::GroupReport;

use crate::compile::Compiler;
use crate::outcome::Status;
use crate::result::ScoreResult;
pub use crate::result::{GroupFlag, GroupOutcome};
use advantage::{group_advantages, mean_std};
use diagnostics::Acc;
use rayon::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The `group:` section of a spec file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupStageSpec {
    /// The advantage estimator (default `grpo`).
    #[serde(default)]
    pub advantage: Estimator,
    /// Added to the std before dividing (default 1e-4, as TRL).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// How a multi-component reward is normalised (default `sum_then_normalize`).
    #[serde(default)]
    pub combine: Combine,
    /// `normalize_then_sum` only: weight per named component (default 1 for each).
    #[serde(default)]
    pub weights: Option<BTreeMap<String, f64>>,
    /// A sample passes when its reward is at least this (default 1.0).
    #[serde(default = "default_pass")]
    pub pass_threshold: f64,
    /// A group whose reward std is at most this is flat (default 1e-9).
    #[serde(default = "default_flat")]
    pub flat_tolerance: f64,
    /// HERO stratified normalisation: advantages from reward-model scores ranked inside the
    /// verifier's correct and wrong strata.
    #[serde(default)]
    pub hero: Option<HeroSpec>,
    /// Label-free reward: 1 for agreeing with the group's most common answer, else 0.
    #[serde(default)]
    pub majority_vote: Option<MajoritySpec>,
    /// Distributional reward for numeric predictions: each rollout's leave-one-out CRPS credit.
    #[serde(default)]
    pub crps: Option<CrpsSpec>,
    /// Break flat groups with a judged pairwise tournament fitted with Bradley–Terry.
    #[serde(default)]
    pub tie_break: Option<tie_break::TieBreakSpec>,
    /// Policy-aware rubric weights: criteria weighted inside each group by how much they
    /// separate its rollouts.
    #[serde(default)]
    pub pow3r: Option<Pow3rSpec>,
}

/// `pow3r:` the estimator sees a weighted mean of the named criteria whose weight inside a group
/// is `weight · (floor + within-group std of the criterion)`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pow3rSpec {
    /// The human weight of each criterion (named component), the rubric's objective.
    pub weights: BTreeMap<String, f64>,
    /// Share of its human weight a criterion keeps when it does not separate the group
    /// (default 0.1).
    #[serde(default = "default_floor")]
    pub floor: f64,
}

fn default_floor() -> f64 {
    0.1
}

/// `crps:` the group's predictions form an empirical distribution scored against the target
/// with the continuous ranked probability score; each rollout is credited with how much the
/// group's CRPS gets worse without it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CrpsSpec {
    /// Where the prediction is read (template, default `{{sample.output_text}}`).
    #[serde(default)]
    pub prediction: Option<String>,
    /// The observed value (template), e.g. `{{item.answer}}`.
    pub target: String,
    /// How the prediction is found in the text: `strict` (default), `boxed`, `lenient`, or
    /// `none` (the whole rendered text).
    #[serde(default)]
    pub extract: MajorityExtract,
}

#[derive(Debug, Clone)]
struct Crps {
    prediction: crate::template::Template,
    target: crate::template::Template,
    mode: referee_math::ExtractMode,
}

/// A number from text: the extracted answer (per `mode`), without thousands separators or `$`.
fn number_in(text: &str, mode: referee_math::ExtractMode) -> Option<f64> {
    let raw = match mode {
        referee_math::ExtractMode::Bare => text.trim().to_string(),
        mode @ referee_math::ExtractMode::Markers { .. } => {
            let e = referee_math::extract(text, mode)?;
            if e.questioned || e.parts.len() != 1 {
                return None; // a hedge is not a prediction
            }
            e.text()
        }
    };
    let cleaned: String = raw
        .chars()
        .filter(|c| !matches!(c, ',' | '$' | ' '))
        .collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// CRPS of the empirical distribution of `xs` at `y`: `E|X − y| − ½ E|X − X'|` (lower is better).
pub fn crps(xs: &[f64], y: f64) -> f64 {
    let n = xs.len() as f64;
    let a = xs.iter().map(|x| (x - y).abs()).sum::<f64>() / n;
    let mut b = 0.0;
    for x in xs {
        for z in xs {
            b += (x - z).abs();
        }
    }
    a - b / (2.0 * n * n)
}

/// `majority_vote:` the estimator sees agreement with the group's most common answer (TTRL-style
/// test-time RL without labels).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MajoritySpec {
    /// Where the answer is read (template, default `{{sample.output_text}}`).
    #[serde(default)]
    pub answer: Option<String>,
    /// `strict` (default: boxes, answer phrases, `####`, as `math_equiv`), `boxed`, `lenient`,
    /// or `none` (the rendered text, trimmed, is the answer).
    #[serde(default)]
    pub extract: MajorityExtract,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MajorityExtract {
    #[default]
    Strict,
    Boxed,
    Lenient,
    None,
}

#[derive(Debug, Clone)]
struct Majority {
    answer: crate::template::Template,
    mode: referee_math::ExtractMode,
}

impl Majority {
    /// The answer's key: the extracted answer's canonical math form when it parses, else its
    /// trimmed text. `None` when there is no answer (no marker, missing field, a `?`).
    fn key(&self, s: &crate::Sample) -> Option<String> {
        let text = self.answer.render(s).ok()?;
        let raw = match self.mode {
            referee_math::ExtractMode::Bare => text.trim().to_string(),
            mode @ referee_math::ExtractMode::Markers { .. } => {
                let e = referee_math::extract(&text, mode)?;
                if e.questioned {
                    return None;
                }
                e.text()
            }
        };
        if raw.is_empty() {
            return None;
        }
        Some(referee_math::parse(&raw).map_or(raw, |p| p.canonical()))
    }
}

/// `hero:` the verifier's verdict bounds the reward model's score (Tao et al. 2025, HERO).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeroSpec {
    /// Named component giving the verdict (correct when ≥ 0.5).
    pub verifier: String,
    /// Named component giving the reward-model score.
    pub reward_model: String,
    /// Wrong answers get `[−alpha, alpha]` (default 0.1).
    #[serde(default = "default_hero")]
    pub alpha: f64,
    /// Correct answers get `[1 − beta, 1 + beta]` (default 0.1).
    #[serde(default = "default_hero")]
    pub beta: f64,
}

fn default_hero() -> f64 {
    0.1
}

#[derive(Debug, Clone, Copy)]
struct Hero {
    verifier: usize,
    reward_model: usize,
    alpha: f64,
    beta: f64,
}

fn default_epsilon() -> f64 {
    1e-4
}
fn default_pass() -> f64 {
    1.0
}
fn default_flat() -> f64 {
    1e-9
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    #[default]
    SumThenNormalize,
    NormalizeThenSum,
}

/// The compiled `group:` section.
#[derive(Debug, Clone)]
pub struct GroupStage {
    pub estimator: Estimator,
    pub epsilon: f64,
    pub combine: Combine,
    /// `normalize_then_sum`: (component position, weight).
    weights: Vec<(usize, f64)>,
    pub pass_threshold: f64,
    pub flat_tolerance: f64,
    hero: Option<Hero>,
    majority: Option<Majority>,
    crps: Option<Crps>,
    tie_break: Option<Arc<tie_break::TieBreak>>,
    /// `pow3r`: (component position, human weight), and the floor.
    pow3r: Option<(Vec<(usize, f64)>, f64)>,
}

impl GroupStage {
    /// Compiles the section; `names` are the program's component names in spec order. Every
    /// problem is reported with its path under `/group`.
    pub fn compile(v: &Value, names: &[Arc<str>], cx: &mut Compiler) -> Option<GroupStage> {
        let spec = match serde_path_to_error::deserialize::<_, GroupStageSpec>(v) {
            Ok(s) => s,
            Err(e) => {
                let inner = e.path().to_string();
                let p = if inner == "." {
                    "/group".to_string()
                } else {
                    format!("/group/{}", inner.replace('.', "/"))
                };
                cx.error(p, None, e.into_inner().to_string());
                return None;
            }
        };
        let mut bad = false;
        let mut check = |cx: &mut Compiler, field: &str, ok: bool, msg: &str| {
            if !ok {
                bad = true;
                cx.error(format!("/group/{field}"), None, msg);
            }
        };
        check(
            cx,
            "epsilon",
            spec.epsilon.is_finite() && spec.epsilon >= 0.0,
            "must be a finite number ≥ 0",
        );
        check(
            cx,
            "flat_tolerance",
            spec.flat_tolerance.is_finite() && spec.flat_tolerance >= 0.0,
            "must be a finite number ≥ 0",
        );
        check(
            cx,
            "pass_threshold",
            spec.pass_threshold.is_finite(),
            "must be a finite number",
        );
        let mut weights = Vec::new();
        match (spec.combine, &spec.weights) {
            (Combine::SumThenNormalize, Some(_)) => check(
                cx,
                "weights",
                false,
                "`weights` applies only to `combine: normalize_then_sum` (with `sum_then_normalize` the grader's own weights combine the components)",
            ),
            (Combine::NormalizeThenSum, Some(w)) => {
                for (k, &wt) in w {
                    let path = format!("weights/{}", crate::compile::escape(k));
                    if let Some(j) = names.iter().position(|n| &**n == k) {
                        check(cx, &path, wt.is_finite(), "must be a finite number");
                        weights.push((j, wt));
                    } else {
                            let known: Vec<&str> = names.iter().map(|n| &**n).collect();
                            check(
                                cx,
                                &path,
                                false,
                                &format!(
                                    "no component is named `{k}`{}; named components: {}",
                                    crate::compile::did_you_mean(k, &known),
                                    if known.is_empty() {
                                        "none".to_string()
                                    } else {
                                        known.join(", ")
                                    }
                                ),
                            );
                    }
                }
            }
            (Combine::NormalizeThenSum, None) => {
                weights = (0..names.len()).map(|j| (j, 1.0)).collect();
            }
            (Combine::SumThenNormalize, None) => {}
        }
        if spec.combine == Combine::NormalizeThenSum && names.is_empty() {
            check(
                cx,
                "combine",
                false,
                "`normalize_then_sum` needs named components (`name:` on the grader's nodes)",
            );
        }
        let mut hero = None;
        if let Some(h) = &spec.hero {
            let mut find = |cx: &mut Compiler, field: &str, name: &str| {
                let j = names.iter().position(|n| &**n == name);
                if j.is_none() {
                    let known: Vec<&str> = names.iter().map(|n| &**n).collect();
                    check(
                        cx,
                        &format!("hero/{field}"),
                        false,
                        &format!(
                            "no component is named `{name}`{}; named components: {}",
                            crate::compile::did_you_mean(name, &known),
                            if known.is_empty() {
                                "none".to_string()
                            } else {
                                known.join(", ")
                            }
                        ),
                    );
                }
                j
            };
            let v = find(cx, "verifier", &h.verifier);
            let m = find(cx, "reward_model", &h.reward_model);
            let ok = h.alpha.is_finite()
                && h.beta.is_finite()
                && h.alpha >= 0.0
                && h.beta >= 0.0
                && h.alpha + h.beta < 1.0;
            check(
                cx,
                "hero",
                ok,
                "`alpha` and `beta` must be ≥ 0 with alpha + beta < 1 (so no wrong answer outscores a correct one)",
            );
            check(
                cx,
                "hero",
                spec.combine == Combine::SumThenNormalize,
                "`hero` replaces the reward the estimator sees; it cannot be combined with `normalize_then_sum`",
            );
            if let (Some(verifier), Some(reward_model)) = (v, m) {
                hero = Some(Hero {
                    verifier,
                    reward_model,
                    alpha: h.alpha,
                    beta: h.beta,
                });
            }
        }
        let mut majority = None;
        if let Some(m) = &spec.majority_vote {
            check(
                cx,
                "majority_vote",
                spec.hero.is_none() && spec.combine == Combine::SumThenNormalize,
                "`majority_vote` replaces the reward the estimator sees; it cannot be combined with `hero` or `normalize_then_sum`",
            );
            let answer = match &m.answer {
                None => Some(crate::template::Template::output_text()),
                Some(src) => match crate::template::Template::parse(src) {
                    Ok(t) => Some(t),
                    Err(es) => {
                        for e in es {
                            check(cx, "majority_vote/answer", false, &e);
                        }
                        None
                    }
                },
            };
            let mode = extract_mode(m.extract);
            majority = answer.map(|answer| Majority { answer, mode });
        }
        let mut crps_stage = None;
        if let Some(c) = &spec.crps {
            check(
                cx,
                "crps",
                spec.hero.is_none()
                    && spec.majority_vote.is_none()
                    && spec.combine == Combine::SumThenNormalize,
                "`crps` replaces the reward the estimator sees; it cannot be combined with `hero`, `majority_vote` or `normalize_then_sum`",
            );
            let mut tpl = |cx: &mut Compiler, field: &str, src: Option<&str>| match src {
                None => Some(crate::template::Template::output_text()),
                Some(src) => match crate::template::Template::parse(src) {
                    Ok(t) => Some(t),
                    Err(es) => {
                        for e in es {
                            check(cx, &format!("crps/{field}"), false, &e);
                        }
                        None
                    }
                },
            };
            let prediction = tpl(cx, "prediction", c.prediction.as_deref());
            let target = tpl(cx, "target", Some(&c.target));
            if let (Some(prediction), Some(target)) = (prediction, target) {
                crps_stage = Some(Crps {
                    prediction,
                    target,
                    mode: extract_mode(c.extract),
                });
            }
        }
        let mut pow3r = None;
        if let Some(pw) = &spec.pow3r {
            check(
                cx,
                "pow3r",
                spec.hero.is_none()
                    && spec.majority_vote.is_none()
                    && spec.crps.is_none()
                    && spec.combine == Combine::SumThenNormalize,
                "`pow3r` replaces the reward the estimator sees; it cannot be combined with `hero`, `majority_vote`, `crps` or `normalize_then_sum`",
            );
            check(
                cx,
                "pow3r/floor",
                pw.floor.is_finite() && pw.floor >= 0.0,
                "must be a finite number ≥ 0",
            );
            check(
                cx,
                "pow3r/weights",
                !pw.weights.is_empty(),
                "name at least one criterion",
            );
            let mut ws = Vec::new();
            for (k, &w) in &pw.weights {
                let path = format!("pow3r/weights/{}", crate::compile::escape(k));
                if let Some(j) = names.iter().position(|n| &**n == k) {
                    check(
                        cx,
                        &path,
                        w.is_finite() && w > 0.0,
                        "must be a finite number > 0",
                    );
                    ws.push((j, w));
                } else {
                    let known: Vec<&str> = names.iter().map(|n| &**n).collect();
                    check(
                        cx,
                        &path,
                        false,
                        &format!(
                            "no component is named `{k}`{}",
                            crate::compile::did_you_mean(k, &known)
                        ),
                    );
                }
            }
            pow3r = Some((ws, pw.floor));
        }
        let mut tie = None;
        if let Some(t) = &spec.tie_break {
            check(
                cx,
                "tie_break",
                spec.advantage != Estimator::None && spec.combine == Combine::SumThenNormalize,
                "`tie_break` spreads the reward the estimator sees: it needs an `advantage` other than `none` and `combine: sum_then_normalize`",
            );
            tie = tie_break::TieBreak::compile(t, cx).map(Arc::new);
            tie.as_ref()?;
        }
        if bad {
            return None;
        }
        Some(GroupStage {
            estimator: spec.advantage,
            epsilon: spec.epsilon,
            combine: spec.combine,
            weights,
            pass_threshold: spec.pass_threshold,
            flat_tolerance: spec.flat_tolerance,
            hero,
            majority,
            crps: crps_stage,
            tie_break: tie,
            pow3r,
        })
    }

    /// Writes `group` on every result of `groups` (indices into `results`) and returns the
    /// batch's diagnostics. `names` are the component names, in the order of every result's
    /// `components`.
    /// `samples[i]` is the sample of `results[i]` (`None` for a line that never parsed; may be
    /// empty when no option reads the samples).
    pub fn apply(
        &self,
        results: &mut [ScoreResult],
        groups: &[Vec<usize>],
        names: &[Arc<str>],
        samples: &[Option<&crate::Sample>],
    ) -> GroupReport {
        let k = names.len();
        let rs: &[ScoreResult] = results;
        let nts = self.combine == Combine::NormalizeThenSum;
        let batch_std = if self.estimator == Estimator::BatchStd && !nts {
            let all: Vec<f64> = groups
                .iter()
                .flat_map(|idx| self.inputs(rs, idx, samples).0)
                .collect();
            mean_std(&all).1
        } else {
            0.0
        };
        let comp_batch_std: Vec<f64> = if self.estimator == Estimator::BatchStd && nts {
            (0..k)
                .map(|j| {
                    let v: Vec<f64> = rs
                        .iter()
                        .filter(|r| scored(r).is_some())
                        .filter_map(|r| component(r, j))
                        .collect();
                    mean_std(&v).1
                })
                .collect()
        } else {
            Vec::new()
        };
        let (mut outs, acc) = groups
            .par_iter()
            .fold(
                || (Vec::new(), Acc::new(k)),
                |(mut outs, mut acc), idx| {
                    self.one_group(
                        rs,
                        samples,
                        idx,
                        batch_std,
                        &comp_batch_std,
                        &mut acc,
                        &mut outs,
                    );
                    (outs, acc)
                },
            )
            .reduce(
                || (Vec::new(), Acc::new(k)),
                |(mut a, x), (mut b, y)| {
                    if a.len() < b.len() {
                        std::mem::swap(&mut a, &mut b);
                    }
                    a.append(&mut b);
                    (a, x.merge(&y))
                },
            );
        if nts && self.estimator != Estimator::None {
            // GDPO: the weighted sum of normalised components is whitened over the batch.
            let vals: Vec<f64> = outs
                .iter()
                .filter(|(_, o)| o.flag != Some(GroupFlag::SingletonGroup))
                .filter_map(|(_, o)| o.advantage)
                .collect();
            let (m, s) = mean_std(&vals);
            if vals.len() >= 2 {
                for (_, o) in &mut outs {
                    if o.flag != Some(GroupFlag::SingletonGroup) {
                        if let Some(a) = &mut o.advantage {
                            *a = (*a - m) / (s + self.epsilon);
                        }
                    }
                }
            }
        }
        for (i, o) in outs {
            if let Some(t) = &mut results[i].trace {
                t.children.push(self.trace(&o));
            }
            results[i].group = Some(o);
        }
        acc.into_report(names)
    }

    #[allow(clippy::too_many_arguments)]
    fn one_group(
        &self,
        rs: &[ScoreResult],
        samples: &[Option<&crate::Sample>],
        idx: &[usize],
        batch_std: f64,
        comp_batch_std: &[f64],
        acc: &mut Acc,
        outs: &mut Vec<(usize, GroupOutcome)>,
    ) {
        let has = self.estimator != Estimator::None;
        let (mut xs, pos) = self.inputs(rs, idx, samples);
        // `pos` is a subsequence of `idx`: walk both.
        let mut next = pos.iter().peekable();
        for &i in idx {
            if next.peek() == Some(&&i) {
                next.next();
            } else {
                acc.excluded += 1;
                outs.push((
                    i,
                    GroupOutcome {
                        advantage: None,
                        flag: Some(GroupFlag::Excluded),
                        has_advantage: has,
                        group_reward: None,
                    },
                ));
            }
        }
        let n = xs.len();
        if n == 0 {
            acc.empty_groups += 1;
            return;
        }
        acc.groups += 1;
        // Pass/fail is about the raw reward, whatever the estimator sees.
        let passed = pos
            .iter()
            .filter(|&&i| scored(&rs[i]).is_some_and(|x| x >= self.pass_threshold))
            .count();
        if passed == n {
            acc.all_pass += 1;
        } else if passed == 0 {
            acc.all_fail += 1;
        } else {
            acc.mixed += 1;
        }
        let mut flag = if n == 1 {
            acc.singleton_groups += 1;
            Some(GroupFlag::SingletonGroup)
        } else {
            let (_, std) = mean_std(&xs);
            acc.std_sum += std;
            acc.std_groups += 1;
            (std <= self.flat_tolerance).then(|| {
                acc.flat_groups += 1;
                GroupFlag::FlatGroup
            })
        };
        let mut tied = false;
        if let (Some(tb), Some(GroupFlag::FlatGroup), true) = (&self.tie_break, flag, has) {
            let members: Option<Vec<&crate::Sample>> = pos
                .iter()
                .map(|&i| samples.get(i).copied().flatten())
                .collect();
            if let Some(sp) = members.and_then(|m| tb.spread(&m)) {
                acc.tie_calls += sp.calls;
                acc.tie_failures += sp.failures;
                acc.tie_broken += 1;
                for (x, o) in xs.iter_mut().zip(&sp.offsets) {
                    *x += o;
                }
                flag = Some(GroupFlag::TieBreak);
                tied = true;
            } else {
                acc.tie_unbroken += 1;
            }
        }
        let mut adv = vec![0.0; n];
        if has && n > 1 {
            match self.combine {
                Combine::SumThenNormalize => {
                    group_advantages(self.estimator, &xs, batch_std, self.epsilon, &mut adv);
                    if flag == Some(GroupFlag::FlatGroup) {
                        adv.fill(0.0); // no rounding residue: a flat group carries no signal
                    }
                }
                Combine::NormalizeThenSum => {
                    let mut vals = Vec::with_capacity(n);
                    let mut at = Vec::with_capacity(n);
                    let mut out = Vec::with_capacity(n);
                    for &(j, w) in &self.weights {
                        vals.clear();
                        at.clear();
                        for (p, &i) in pos.iter().enumerate() {
                            if let Some(v) = component(&rs[i], j) {
                                vals.push(v);
                                at.push(p);
                            }
                        }
                        out.clear();
                        out.resize(vals.len(), 0.0);
                        let bs = comp_batch_std.get(j).copied().unwrap_or(0.0);
                        group_advantages(self.estimator, &vals, bs, self.epsilon, &mut out);
                        for (&p, a) in at.iter().zip(&out) {
                            adv[p] += w * a;
                        }
                    }
                }
            }
        }
        for j in 0..k_of(acc) {
            let (mut min, mut max, mut c) = (f64::INFINITY, f64::NEG_INFINITY, 0);
            for &i in &pos {
                if let Some(v) = component(&rs[i], j) {
                    min = min.min(v);
                    max = max.max(v);
                    c += 1;
                }
            }
            acc.component_group(j, min, max, c, self.flat_tolerance);
        }
        for (p, &i) in pos.iter().enumerate() {
            if k_of(acc) > 1 {
                acc.sample_components(|j| component(&rs[i], j));
            }
            outs.push((
                i,
                GroupOutcome {
                    advantage: has.then_some(adv[p]),
                    flag,
                    has_advantage: has,
                    group_reward: (self.hero.is_some()
                        || self.majority.is_some()
                        || self.crps.is_some()
                        || self.pow3r.is_some()
                        || tied)
                        .then(|| xs[p]),
                },
            ));
        }
    }
}

impl GroupStage {
    /// The values the estimator sees for one group, with the positions (into `rs`) of the
    /// samples that have one: the reward of every scored sample, or with HERO the stratified
    /// reward-model score of every scored sample that has both components.
    fn inputs(
        &self,
        rs: &[ScoreResult],
        idx: &[usize],
        samples: &[Option<&crate::Sample>],
    ) -> (Vec<f64>, Vec<usize>) {
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
        if let Some(c) = &self.crps {
            // (index, prediction) of the scored samples whose target parses.
            let mut preds: Vec<(usize, Option<f64>)> = Vec::with_capacity(idx.len());
            let mut target = None;
            for &i in idx {
                let Some(s) = samples.get(i).copied().flatten() else {
                    continue;
                };
                if scored(&rs[i]).is_none() {
                    continue;
                }
                let Some(y) = c
                    .target
                    .render(s)
                    .ok()
                    .and_then(|t| number_in(&t, referee_math::ExtractMode::Bare))
                else {
                    continue;
                };
                target = Some(y);
                let x = c
                    .prediction
                    .render(s)
                    .ok()
                    .and_then(|t| number_in(&t, c.mode));
                preds.push((i, x));
            }
            let Some(y) = target else {
                return (xs, pos);
            };
            let vals: Vec<f64> = preds.iter().filter_map(|p| p.1).collect();
            let whole = if vals.is_empty() { 0.0 } else { crps(&vals, y) };
            let mut rest = Vec::with_capacity(vals.len());
            let mut credits = Vec::with_capacity(preds.len());
            let mut k = 0;
            for (_, x) in &preds {
                credits.push(x.map(|_| {
                    rest.clear();
                    rest.extend(
                        vals.iter()
                            .enumerate()
                            .filter(|(j, _)| *j != k)
                            .map(|(_, v)| *v),
                    );
                    k += 1;
                    if rest.is_empty() {
                        0.0
                    } else {
                        crps(&rest, y) - whole
                    }
                }));
            }
            // No number is a wrong answer: the group's lowest credit, never a neutral 0.
            let worst = credits
                .iter()
                .flatten()
                .copied()
                .fold(f64::INFINITY, f64::min);
            let worst = if worst.is_finite() {
                worst.min(0.0)
            } else {
                0.0
            };
            for ((i, _), cr) in preds.iter().zip(credits) {
                xs.push(cr.unwrap_or(worst));
                pos.push(*i);
            }
            return (xs, pos);
        }
        if let Some((ws, floor)) = &self.pow3r {
            let members: Vec<usize> = idx
                .iter()
                .copied()
                .filter(|&i| scored(&rs[i]).is_some())
                .collect();
            // Per criterion, its weight inside this group.
            let mut vals = Vec::with_capacity(members.len());
            let eff: Vec<(usize, f64)> = ws
                .iter()
                .map(|&(j, w)| {
                    vals.clear();
                    vals.extend(members.iter().filter_map(|&i| component(&rs[i], j)));
                    (j, w * (floor + mean_std(&vals).1))
                })
                .collect();
            for &i in &members {
                let (mut num, mut den) = (0.0, 0.0);
                for &(j, w) in &eff {
                    if let Some(v) = component(&rs[i], j) {
                        num += w * v;
                        den += w;
                    }
                }
                if den > 0.0 {
                    xs.push(num / den);
                    pos.push(i);
                }
            }
            return (xs, pos);
        }
        if let Some(m) = &self.majority {
            let keys: Vec<(usize, Option<String>)> = idx
                .iter()
                .filter(|&&i| scored(&rs[i]).is_some())
                .map(|&i| (i, samples.get(i).copied().flatten().and_then(|s| m.key(s))))
                .collect();
            // The most common answer; a tie goes to the answer seen first (deterministic).
            let mut counts: Vec<(&str, usize)> = Vec::new();
            for k in keys.iter().filter_map(|(_, k)| k.as_deref()) {
                match counts.iter_mut().find(|(c, _)| *c == k) {
                    Some(c) => c.1 += 1,
                    None => counts.push((k, 1)),
                }
            }
            let best = counts
                .iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(std::cmp::Ordering::Greater));
            let best = best.map(|b| b.0);
            for (i, k) in &keys {
                xs.push(f64::from(u8::from(k.is_some() && k.as_deref() == best)));
                pos.push(*i);
            }
            return (xs, pos);
        }
        let Some(h) = self.hero else {
            for &i in idx {
                if let Some(v) = scored(&rs[i]) {
                    xs.push(v);
                    pos.push(i);
                }
            }
            return (xs, pos);
        };
        let mut ok = Vec::with_capacity(idx.len());
        // [min, max] of the reward-model score per stratum (0 wrong, 1 correct).
        let mut range = [(f64::INFINITY, f64::NEG_INFINITY); 2];
        for &i in idx {
            if scored(&rs[i]).is_none() {
                continue;
            }
            if let (Some(v), Some(m)) = (
                component(&rs[i], h.verifier),
                component(&rs[i], h.reward_model),
            ) {
                let s = usize::from(v >= 0.5);
                range[s].0 = range[s].0.min(m);
                range[s].1 = range[s].1.max(m);
                ok.push((i, s, m));
            }
        }
        for (i, s, m) in ok {
            let (lo, hi) = range[s];
            let t = if hi > lo { (m - lo) / (hi - lo) } else { 0.5 };
            xs.push(if s == 1 {
                1.0 - h.beta + 2.0 * h.beta * t
            } else {
                -h.alpha + 2.0 * h.alpha * t
            });
            pos.push(i);
        }
        (xs, pos)
    }
}

impl GroupStage {
    /// The stage's node in an explained result's trace: what it wrote and why.
    fn trace(&self, o: &GroupOutcome) -> crate::node::Trace {
        let est = serde_json::to_value(self.estimator).unwrap_or_default();
        let est = est.as_str().unwrap_or("?");
        let mut note = match o.advantage {
            Some(a) if o.has_advantage => format!("{est} advantage {a:.4}"),
            _ if o.has_advantage => "no advantage".to_string(),
            _ => "advantages off".to_string(),
        };
        if let Some(g) = o.group_reward {
            let _ =
                std::fmt::Write::write_fmt(&mut note, format_args!(" from group_reward {g:.4}"));
        }
        match o.flag {
            Some(GroupFlag::Excluded) => {
                note.push_str(
                    "; excluded: failed or no reward, not part of the group's statistics",
                );
            }
            Some(GroupFlag::SingletonGroup) => {
                note.push_str("; the only scored sample of its group");
            }
            Some(GroupFlag::FlatGroup) => note.push_str("; flat group: every reward equal"),
            Some(GroupFlag::TieBreak) => note.push_str(
                "; tie-break: flat group spread by a judged pairwise tournament (Bradley–Terry)",
            ),
            None => {}
        }
        crate::node::Trace {
            kind: "group",
            name: None,
            path: "/group".into(),
            value: o.advantage,
            status: if o.flag == Some(GroupFlag::Excluded) {
                "error"
            } else {
                "ok"
            },
            reason: None,
            note: Some(note),
            detail: Some(serde_json::json!({
                "advantage": o.advantage,
                "group_flag": o.flag.map(GroupFlag::as_str),
                "group_reward": o.group_reward,
            })),
            children: Vec::new(),
        }
    }
}

fn extract_mode(e: MajorityExtract) -> referee_math::ExtractMode {
    match e {
        MajorityExtract::Strict => referee_math::ExtractMode::STRICT,
        MajorityExtract::Boxed => referee_math::ExtractMode::BOXED,
        MajorityExtract::Lenient => referee_math::ExtractMode::LENIENT,
        MajorityExtract::None => referee_math::ExtractMode::Bare,
    }
}

fn k_of(acc: &Acc) -> usize {
    acc.sat.len()
}

/// The reward a sample contributes to its group's statistics: scored without error, finite.
fn scored(r: &ScoreResult) -> Option<f64> {
    match r.status {
        Status::Error(_) => None,
        _ => r.reward.filter(|v| v.is_finite()),
    }
}

fn component(r: &ScoreResult, j: usize) -> Option<f64> {
    r.components
        .get(j)
        .and_then(|c| c.1)
        .filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests;
