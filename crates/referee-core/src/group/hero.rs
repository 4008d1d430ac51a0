//! `hero:` HERO stratified normalisation (Tao et al. 2025): the reward-model score ranked inside
//! the verifier-correct and the verifier-wrong strata, so no wrong answer outscores a correct one.

use super::compile::{unknown_component, Checks};
use super::{component, scored};
use crate::compile::Compiler;
use crate::result::ScoreResult;
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

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
pub(super) struct Hero {
    verifier: usize,
    reward_model: usize,
    alpha: f64,
    beta: f64,
}

impl Hero {
    /// Compiles `hero:`: both components found by name, `alpha + beta < 1`.
    pub(super) fn compile(
        h: &HeroSpec,
        names: &[Arc<str>],
        cx: &mut Compiler,
        ck: &mut Checks,
    ) -> Option<Hero> {
        let mut find = |cx: &mut Compiler, field: &str, name: &str| {
            let j = names.iter().position(|n| &**n == name);
            if j.is_none() {
                ck.check(
                    cx,
                    &format!("hero/{field}"),
                    false,
                    &unknown_component(name, names),
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
        ck.check(
            cx,
            "hero",
            ok,
            "`alpha` and `beta` must be ≥ 0 with alpha + beta < 1 (so no wrong answer outscores a correct one)",
        );
        Some(Hero {
            verifier: v?,
            reward_model: m?,
            alpha: h.alpha,
            beta: h.beta,
        })
    }

    /// The stratified reward-model score of every scored sample of the group (`idx`) that has
    /// both components, with its position into `rs`.
    pub(super) fn values(&self, rs: &[ScoreResult], idx: &[usize]) -> (Vec<f64>, Vec<usize>) {
        let mut xs = Vec::with_capacity(idx.len());
        let mut pos = Vec::with_capacity(idx.len());
        let mut ok = Vec::with_capacity(idx.len());
        // [min, max] of the reward-model score per stratum (0 wrong, 1 correct).
        let mut range = [(f64::INFINITY, f64::NEG_INFINITY); 2];
        for &i in idx {
            if scored(&rs[i]).is_none() {
                continue;
            }
            if let (Some(v), Some(m)) = (
                component(&rs[i], self.verifier),
                component(&rs[i], self.reward_model),
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
                1.0 - self.beta + 2.0 * self.beta * t
            } else {
                -self.alpha + 2.0 * self.alpha * t
            });
            pos.push(i);
        }
        (xs, pos)
    }
}
