//! The advantage estimators on one group's rewards (pure arithmetic, no allocation).
//!
//! Every standard deviation is the sample one (Bessel's correction, `n − 1`), because that is what
//! `torch.std` computes by default and so what TRL's `GRPOTrainer` and verl's `core_algos.py` use.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a group's rewards become advantages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// `(r − mean) / (std + epsilon)` within the group (TRL `scale_rewards: group`, verl `grpo`).
    #[default]
    Grpo,
    /// `r − mean` within the group (Dr. GRPO; TRL `scale_rewards: none`, verl
    /// `norm_adv_by_std_in_grpo: false`).
    DrGrpo,
    /// `r − mean of the other rollouts` (leave-one-out baseline; verl `rloo`).
    Rloo,
    /// `(r − group mean) / (batch std + epsilon)` (TRL `scale_rewards: batch`).
    BatchStd,
    /// No advantage is written; the stage only reports flat groups and diagnostics.
    None,
}

/// Mean and sample standard deviation (0 for fewer than two values).
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (mean, (ss / (n - 1) as f64).sqrt())
}

/// Writes the advantage of each value of one group into `out` (same length as `xs`).
/// `batch_std` is only read by [`Estimator::BatchStd`]. A group of one gets 0: with no other
/// rollout there is no baseline to compare against.
pub fn group_advantages(est: Estimator, xs: &[f64], batch_std: f64, eps: f64, out: &mut [f64]) {
    debug_assert_eq!(xs.len(), out.len());
    let n = xs.len();
    if n < 2 {
        out.fill(0.0);
        return;
    }
    let (mean, std) = mean_std(xs);
    match est {
        Estimator::Grpo => {
            for (o, x) in out.iter_mut().zip(xs) {
                *o = (x - mean) / (std + eps);
            }
        }
        Estimator::DrGrpo | Estimator::None => {
            for (o, x) in out.iter_mut().zip(xs) {
                *o = x - mean;
            }
        }
        Estimator::Rloo => {
            // r_i − (Σ − r_i)/(n − 1) = n/(n − 1) · (r_i − mean): verl's form.
            let k = n as f64 / (n - 1) as f64;
            for (o, x) in out.iter_mut().zip(xs) {
                *o = k * (x - mean);
            }
        }
        Estimator::BatchStd => {
            for (o, x) in out.iter_mut().zip(xs) {
                *o = (x - mean) / (batch_std + eps);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adv(est: Estimator, xs: &[f64], batch_std: f64, eps: f64) -> Vec<f64> {
        let mut out = vec![f64::NAN; xs.len()];
        group_advantages(est, xs, batch_std, eps, &mut out);
        out
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-9, "{a:?} != {b:?}");
        }
    }

    #[test]
    fn grpo_uses_the_sample_std() {
        // [1, 0, 0, 1]: mean 0.5, sample std sqrt(1/3) = 0.57735.
        let s = (1.0f64 / 3.0).sqrt();
        close(
            &adv(Estimator::Grpo, &[1.0, 0.0, 0.0, 1.0], 0.0, 0.0),
            &[0.5 / s, -0.5 / s, -0.5 / s, 0.5 / s],
        );
        // epsilon is added to the std, as in TRL and verl.
        close(
            &adv(Estimator::Grpo, &[1.0, 0.0], 0.0, 1e-4),
            &[0.5 / (0.5f64.sqrt() + 1e-4), -0.5 / (0.5f64.sqrt() + 1e-4)],
        );
    }

    #[test]
    fn dr_grpo_and_rloo() {
        close(
            &adv(Estimator::DrGrpo, &[1.0, 0.0, 0.0, 0.0], 0.0, 1e-4),
            &[0.75, -0.25, -0.25, -0.25],
        );
        // Leave-one-out: 1 − 0 = 1; 0 − 1/3.
        close(
            &adv(Estimator::Rloo, &[1.0, 0.0, 0.0, 0.0], 0.0, 1e-4),
            &[1.0, -1.0 / 3.0, -1.0 / 3.0, -1.0 / 3.0],
        );
    }

    #[test]
    fn batch_std_divides_by_the_given_std() {
        close(
            &adv(Estimator::BatchStd, &[2.0, 0.0], 2.0, 0.0),
            &[0.5, -0.5],
        );
    }

    #[test]
    fn flat_and_singleton_groups_get_zero() {
        for est in [Estimator::Grpo, Estimator::DrGrpo, Estimator::Rloo] {
            close(&adv(est, &[0.7, 0.7, 0.7], 0.0, 1e-4), &[0.0, 0.0, 0.0]);
            close(&adv(est, &[0.7], 0.0, 1e-4), &[0.0]);
        }
    }
}
