//! `pow3r:` policy-aware rubric weights (after POW3R, Tyagi et al. 2026): inside each group a
//! criterion's weight is `weight · (floor + its within-group std)`, so criteria that do not
//! separate the group's rollouts stop drowning those that do.

use super::advantage::mean_std;
use super::compile::Checks;
use super::{component, scored};
use crate::compile::Compiler;
use crate::result::ScoreResult;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

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

#[derive(Debug, Clone)]
pub(super) struct Pow3r {
    /// (component position, human weight) of each criterion.
    weights: Vec<(usize, f64)>,
    floor: f64,
}

impl Pow3r {
    /// Compiles `pow3r:`: a finite `floor` ≥ 0, at least one criterion, each a named component
    /// with a finite weight > 0.
    pub(super) fn compile(
        pw: &Pow3rSpec,
        names: &[Arc<str>],
        cx: &mut Compiler,
        ck: &mut Checks,
    ) -> Pow3r {
        ck.check(
            cx,
            "pow3r/floor",
            pw.floor.is_finite() && pw.floor >= 0.0,
            "must be a finite number ≥ 0",
        );
        ck.check(
            cx,
            "pow3r/weights",
            !pw.weights.is_empty(),
            "name at least one criterion",
        );
        let mut ws = Vec::new();
        for (k, &w) in &pw.weights {
            let path = format!("pow3r/weights/{}", crate::compile::escape(k));
            if let Some(j) = names.iter().position(|n| &**n == k) {
                ck.check(
                    cx,
                    &path,
                    w.is_finite() && w > 0.0,
                    "must be a finite number > 0",
                );
                ws.push((j, w));
            } else {
                let known: Vec<&str> = names.iter().map(|n| &**n).collect();
                ck.check(
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
        Pow3r {
            weights: ws,
            floor: pw.floor,
        }
    }

    /// Every scored sample of the group (`idx`) that has at least one criterion, with its
    /// position into `rs`: the weighted mean of its criteria, each weighted inside the group.
    pub(super) fn values(&self, rs: &[ScoreResult], idx: &[usize]) -> (Vec<f64>, Vec<usize>) {
        let (ws, floor) = (&self.weights, self.floor);
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
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
        (xs, pos)
    }
}
