//! `combine:` how a multi-component reward is normalised. `sum_then_normalize` (default) hands
//! the grader's reward to the estimator; `normalize_then_sum` (TRL's GDPO) normalises each named
//! component within its group, sums them with `weights`, and whitens the sum over the batch.

use super::advantage::{group_advantages, mean_std};
use super::compile::{unknown_component, Checks};
use super::{component, scored, Estimator, GroupFlag, GroupOutcome, GroupStage, GroupStageSpec};
use crate::compile::Compiler;
use crate::result::ScoreResult;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    #[default]
    SumThenNormalize,
    NormalizeThenSum,
}

/// Compiles `weights` (and checks `combine`): with `normalize_then_sum`, (component position,
/// weight) for each named weight, or weight 1 for every named component when none is given.
pub(super) fn weights(
    spec: &GroupStageSpec,
    names: &[Arc<str>],
    cx: &mut Compiler,
    ck: &mut Checks,
) -> Vec<(usize, f64)> {
    let mut weights = Vec::new();
    match (spec.combine, &spec.weights) {
        (Combine::SumThenNormalize, Some(_)) => ck.check(
            cx,
            "weights",
            false,
            "`weights` applies only to `combine: normalize_then_sum` (with `sum_then_normalize` the grader's own weights combine the components)",
        ),
        (Combine::NormalizeThenSum, Some(w)) => {
            for (k, &wt) in w {
                let path = format!("weights/{}", crate::compile::escape(k));
                if let Some(j) = names.iter().position(|n| &**n == k) {
                    ck.check(cx, &path, wt.is_finite(), "must be a finite number");
                    weights.push((j, wt));
                } else {
                    ck.check(cx, &path, false, &unknown_component(k, names));
                }
            }
        }
        (Combine::NormalizeThenSum, None) => {
            weights = (0..names.len()).map(|j| (j, 1.0)).collect();
        }
        (Combine::SumThenNormalize, None) => {}
    }
    if spec.combine == Combine::NormalizeThenSum && names.is_empty() {
        ck.check(
            cx,
            "combine",
            false,
            "`normalize_then_sum` needs named components (`name:` on the grader's nodes)",
        );
    }
    weights
}

impl GroupStage {
    /// `batch_std` with `normalize_then_sum`: each of the `k` components' std over the batch's
    /// scored samples (empty otherwise).
    pub(super) fn component_batch_std(&self, rs: &[ScoreResult], k: usize) -> Vec<f64> {
        if self.estimator == Estimator::BatchStd && self.combine == Combine::NormalizeThenSum {
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
        }
    }

    /// One group's advantages (`adv`, by position in `pos`): each weighted component normalised
    /// within the group with the estimator, missing values left out, and summed.
    pub(super) fn normalize_then_sum(
        &self,
        rs: &[ScoreResult],
        pos: &[usize],
        comp_batch_std: &[f64],
        adv: &mut [f64],
    ) {
        let n = pos.len();
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

    /// GDPO: the weighted sum of normalised components is whitened over the batch (singleton
    /// groups keep their 0).
    pub(super) fn whiten(&self, outs: &mut [(usize, GroupOutcome)]) {
        let vals: Vec<f64> = outs
            .iter()
            .filter(|(_, o)| o.flag != Some(GroupFlag::SingletonGroup))
            .filter_map(|(_, o)| o.advantage)
            .collect();
        let (m, s) = mean_std(&vals);
        if vals.len() >= 2 {
            for (_, o) in outs.iter_mut() {
                if o.flag != Some(GroupFlag::SingletonGroup) {
                    if let Some(a) = &mut o.advantage {
                        *a = (*a - m) / (s + self.epsilon);
                    }
                }
            }
        }
    }
}
