//! The `group:` section as written in the spec file; each mode's own spec sits with its mode.

use super::{
    listwise::ListwiseSpec, tie_break, Combine, CrpsSpec, Estimator, HeroSpec, MajoritySpec,
    Pow3rSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;

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
    /// Listwise group judge: the judge ranks (or scores) every rollout of a group in one call
    /// per order; the estimator sees that value.
    #[serde(default)]
    pub listwise: Option<ListwiseSpec>,
    /// Break flat groups with a judged pairwise tournament fitted with Bradley–Terry.
    #[serde(default)]
    pub tie_break: Option<tie_break::TieBreakSpec>,
    /// Policy-aware rubric weights: criteria weighted inside each group by how much they
    /// separate its rollouts.
    #[serde(default)]
    pub pow3r: Option<Pow3rSpec>,
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
