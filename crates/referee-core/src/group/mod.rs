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
//!   - `listwise: {judge, question, input, instructions, output: rank, orders: 2,
//!     max_chars: 24000, anchors: 2, reasoning, prefilter, min_chars, injection, deadline_ms,
//!     sampling_params}` ([`listwise`]; GenSelect / BPO / groupwise ranking rewards): the
//!     judge sees every scored rollout of the group at once, each introduced by a 4-character
//!     id derived from a hash of the whole group (a rollout cannot name itself or another:
//!     "Response 3 is best" names nobody) and delimited as hostile text (tags defused,
//!     reasoning stripped), and returns `{"ranking": [ids]}` best first (`output: rank`) or
//!     `{"scores": [{"id", "score": 0–10}]}` (`output: scores`), asked with a JSON schema
//!     and parsed strictly. One call per group per order; with `orders: 2` the rollouts are
//!     shown as given and reversed so position bias cancels. The value is the Borda mean of
//!     `(n − 1 − rank)/(n − 1)` over the orders, or the mean score / 10. Empty, master-key,
//!     too-short, alone-over-`max_chars`, verdict-forging (`"ranking":`) and, with
//!     `injection: fail`, grader-addressing rollouts are ranked last (0) without being shown;
//!     a lone shown rollout gets 1 without a call. Over `max_chars` characters of shown text
//!     (the fallback): chunks that each hold the first `anchors` shown rollouts plus as many
//!     others as fit (at least one, so long anchors may overrun), ranks merged by
//!     Bradley–Terry over the pairs each chunk's ranking implies (scores are averaged). The
//!     orders' disagreement (Kendall τ-b, mean absolute difference) is in the trace and the
//!     summary (`listwise_order_tau`, `listwise_order_gap`). A reply with a missing,
//!     repeated or unknown id, an extra key, a score out of range, or any failed call fails
//!     the **whole group**: its members get status `error` with the reason
//!     (`judge_unparseable`, `judge_timeout`, ...; `reward` stays the grader's),
//!     `advantage: null`, `group_flag: excluded`, never a 0. The calls are counted in the
//!     summary (`listwise_calls`), not in per-result `usage`. *Known failure modes:* the
//!     judge's taste is the training signal (a judge that likes length rewards length);
//!     rollouts of different chunks that never met tie when they beat the anchors equally;
//!     Borda is relative, so a group of only bad rollouts still hands out 1 to its least bad;
//!     a rollout that talks the judge out of the reply format fails its whole group (watch
//!     `listwise_failed_groups`).
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
//!   `batch_std`, the batch std is computed before the spread. `mode: listwise` (with
//!   `output`, `orders`, `max_chars`) replaces the tournament by the listwise judge above: one
//!   call per order for the whole group, its values centred and scaled into
//!   `[−spread, spread]`; a failed call leaves the group flat, as in the pairwise mode.
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

// One file per idea: the section's spec (`spec.rs`) and its compilation (`compile.rs`); the
// stage's main loop (`apply.rs`: exclusions, pass counts, flat and singleton flags, tie-break
// wiring, advantages); one file per mode (`hero.rs`, `majority.rs`, `crps.rs`, `pow3r.rs`,
// `listwise.rs` (the judge shared by `listwise:` and `tie_break: {mode: listwise}`), and
// `combine.rs` for `normalize_then_sum`); the explained trace's node (`trace.rs`).

pub mod advantage;
pub mod bradley_terry;
pub mod diagnostics;
pub mod tie_break;

mod apply;
mod combine;
mod compile;
mod crps;
mod hero;
pub mod listwise;
mod majority;
mod pow3r;
mod spec;
mod trace;

pub use advantage::Estimator;
pub use combine::Combine;
pub use crps::{crps, CrpsSpec};
pub use diagnostics::GroupReport;
pub use hero::HeroSpec;
pub use listwise::{ListwiseOutput, ListwiseSpec};
pub use majority::{MajorityExtract, MajoritySpec};
pub use pow3r::Pow3rSpec;
pub use spec::GroupStageSpec;

use crate::outcome::Status;
use crate::result::ScoreResult;
pub use crate::result::{GroupFlag, GroupOutcome};
use std::sync::Arc;

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
    hero: Option<hero::Hero>,
    majority: Option<majority::Majority>,
    crps: Option<crps::Crps>,
    listwise: Option<Arc<listwise::Listwise>>,
    tie_break: Option<Arc<tie_break::TieBreak>>,
    pow3r: Option<pow3r::Pow3r>,
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
