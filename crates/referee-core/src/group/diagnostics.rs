//! How much training signal a batch carried: pass/fail mix of the groups, flat groups, the mean
//! within-group spread, components that never separate rollouts, and how components co-vary.
//!
//! Built per batch (a CLI chunk, a `score` call) by folding groups in parallel, and
//! mergeable, so the run summary is the same however the input was cut.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The diagnostics of one or more batches (the `group` object of the run summary).
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// Groups with at least one scored sample.
    pub groups: usize,
    /// Groups where every sample failed or had no reward (no statistics, no advantages).
    pub empty_groups: usize,
    /// Groups with exactly one scored sample (advantage 0, flagged `singleton_group`).
    pub singleton_groups: usize,
    /// Groups of two or more scored samples whose rewards do not vary (advantage 0 for all).
    pub flat_groups: usize,
    /// Groups where every scored sample reached `pass_threshold`.
    pub all_pass: usize,
    /// Groups where no scored sample reached `pass_threshold`.
    pub all_fail: usize,
    /// Groups with both.
    pub mixed: usize,
    pub frac_all_pass: Option<f64>,
    pub frac_all_fail: Option<f64>,
    pub frac_mixed: Option<f64>,
    pub frac_flat: Option<f64>,
    /// Samples left out of the statistics: status error, or no reward.
    pub excluded_samples: usize,
    /// `tie_break`: flat groups spread by the tournament, flat groups left flat (every call
    /// failed), judge calls made and calls that failed or did not parse.
    pub tie_broken_groups: usize,
    pub tie_unbroken_groups: usize,
    pub tie_break_calls: usize,
    pub tie_break_failures: usize,
    /// `listwise` (the group reward, or the tie-break's listwise mode): groups ranked, groups
    /// the judge could not rank (their members fail with the reason), judge calls, groups cut
    /// into chunks, samples ranked last without being shown (prefilter).
    pub listwise_groups: usize,
    pub listwise_failed_groups: usize,
    pub listwise_calls: usize,
    pub listwise_chunked_groups: usize,
    pub listwise_unseen_samples: usize,
    /// Mean over groups ranked in both orders of the orders' Kendall τ-b (1: same order;
    /// lower: position bias or a noisy judge) and of their mean absolute difference (in ranks,
    /// or score points).
    pub listwise_order_tau: Option<f64>,
    pub listwise_order_gap: Option<f64>,
    #[serde(skip)]
    lw_tau: (f64, usize),
    #[serde(skip)]
    lw_gap: (f64, usize),
    /// Mean over groups of two or more of the sample std of the rewards.
    pub mean_within_group_std: Option<f64>,
    /// Per named component: in how many groups (of two or more values) it was constant,
    /// always 1, always 0. A component constant in every group carries no signal.
    pub components: BTreeMap<String, Saturation>,
    /// Pearson correlation between each pair of components, over the scored samples where both
    /// have a value.
    pub correlations: Vec<Correlation>,
    #[serde(skip)]
    std_sum: f64,
    #[serde(skip)]
    std_groups: usize,
    #[serde(skip)]
    pairs: BTreeMap<(String, String), PairAcc>,
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Saturation {
    /// Groups where the component has at least two values.
    pub groups: usize,
    /// ... and all of them equal.
    pub constant: usize,
    /// ... constant at 1 or more (always passed).
    pub always_one: usize,
    /// ... constant at 0 or less (never passed; a penalty that never fired).
    pub always_zero: usize,
    /// `constant / groups`: 1 means the component never separated two rollouts.
    pub frac_constant: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlation {
    pub a: String,
    pub b: String,
    /// `None` when one of the two never varies (or fewer than two joint values).
    pub pearson: Option<f64>,
    pub n: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct PairAcc {
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    syy: f64,
    sxy: f64,
}

impl PairAcc {
    fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.syy += y * y;
        self.sxy += x * y;
    }
    fn merge(&mut self, o: &PairAcc) {
        self.n += o.n;
        self.sx += o.sx;
        self.sy += o.sy;
        self.sxx += o.sxx;
        self.syy += o.syy;
        self.sxy += o.sxy;
    }
    fn pearson(&self) -> Option<f64> {
        let cov = self.n * self.sxy - self.sx * self.sy;
        let vx = self.n * self.sxx - self.sx * self.sx;
        let vy = self.n * self.syy - self.sy * self.sy;
        // Relative tolerance: sums of identical values leave rounding noise, not variance.
        let tiny = |v: f64, s: f64| v <= 1e-12 * (self.n * s).abs().max(1e-300);
        if self.n < 2.0 || tiny(vx, self.sxx) || tiny(vy, self.syy) {
            return None;
        }
        Some((cov / (vx.sqrt() * vy.sqrt())).clamp(-1.0, 1.0))
    }
}

/// The per-batch accumulator, indexed by component position (no strings on the hot path).
#[derive(Debug, Clone)]
pub(crate) struct Acc {
    pub groups: usize,
    pub empty_groups: usize,
    pub singleton_groups: usize,
    pub flat_groups: usize,
    pub all_pass: usize,
    pub all_fail: usize,
    pub mixed: usize,
    pub excluded: usize,
    pub tie_broken: usize,
    pub tie_unbroken: usize,
    pub tie_calls: usize,
    pub tie_failures: usize,
    pub std_sum: f64,
    pub std_groups: usize,
    /// `[groups, constant, always_one, always_zero]` per component.
    pub sat: Vec<[usize; 4]>,
    /// Upper triangle of component pairs, row-major.
    pairs: Vec<PairAcc>,
}

impl Acc {
    pub fn new(k: usize) -> Self {
        Acc {
            groups: 0,
            empty_groups: 0,
            singleton_groups: 0,
            flat_groups: 0,
            all_pass: 0,
            all_fail: 0,
            mixed: 0,
            excluded: 0,
            tie_broken: 0,
            tie_unbroken: 0,
            tie_calls: 0,
            tie_failures: 0,
            std_sum: 0.0,
            std_groups: 0,
            sat: vec![[0; 4]; k],
            pairs: vec![PairAcc::default(); k * k.saturating_sub(1) / 2],
        }
    }

    pub fn merge(mut self, o: &Acc) -> Acc {
        self.groups += o.groups;
        self.empty_groups += o.empty_groups;
        self.singleton_groups += o.singleton_groups;
        self.flat_groups += o.flat_groups;
        self.all_pass += o.all_pass;
        self.all_fail += o.all_fail;
        self.mixed += o.mixed;
        self.excluded += o.excluded;
        self.tie_broken += o.tie_broken;
        self.tie_unbroken += o.tie_unbroken;
        self.tie_calls += o.tie_calls;
        self.tie_failures += o.tie_failures;
        self.std_sum += o.std_sum;
        self.std_groups += o.std_groups;
        for (a, b) in self.sat.iter_mut().zip(&o.sat) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        for (a, b) in self.pairs.iter_mut().zip(&o.pairs) {
            a.merge(b);
        }
        self
    }

    /// One component's values within one group (scored samples where it has a value).
    pub fn component_group(&mut self, j: usize, min: f64, max: f64, count: usize, tol: f64) {
        if count < 2 {
            return;
        }
        let s = &mut self.sat[j];
        s[0] += 1;
        if max - min <= tol {
            s[1] += 1;
            if min >= 1.0 {
                s[2] += 1;
            }
            if max <= 0.0 {
                s[3] += 1;
            }
        }
    }

    /// One scored sample's component values, for the correlations.
    pub fn sample_components(&mut self, values: impl Fn(usize) -> Option<f64>) {
        let k = self.sat.len();
        let mut p = 0;
        for a in 0..k {
            let va = values(a);
            for b in a + 1..k {
                if let (Some(x), Some(y)) = (va, values(b)) {
                    self.pairs[p].add(x, y);
                }
                p += 1;
            }
        }
    }

    pub fn into_report(self, names: &[Arc<str>]) -> GroupReport {
        let mut r = GroupReport {
            groups: self.groups,
            empty_groups: self.empty_groups,
            singleton_groups: self.singleton_groups,
            flat_groups: self.flat_groups,
            all_pass: self.all_pass,
            all_fail: self.all_fail,
            mixed: self.mixed,
            excluded_samples: self.excluded,
            tie_broken_groups: self.tie_broken,
            tie_unbroken_groups: self.tie_unbroken,
            tie_break_calls: self.tie_calls,
            tie_break_failures: self.tie_failures,
            std_sum: self.std_sum,
            std_groups: self.std_groups,
            ..GroupReport::default()
        };
        for (j, s) in self.sat.iter().enumerate() {
            r.components.insert(
                names[j].to_string(),
                Saturation {
                    groups: s[0],
                    constant: s[1],
                    always_one: s[2],
                    always_zero: s[3],
                    frac_constant: None,
                },
            );
        }
        let k = names.len();
        let mut p = 0;
        for a in 0..k {
            for b in a + 1..k {
                r.pairs
                    .insert((names[a].to_string(), names[b].to_string()), self.pairs[p]);
                p += 1;
            }
        }
        r.finish();
        r
    }
}

impl GroupReport {
    /// Adds a batch's listwise counts: `[groups, failed, calls, chunked, unseen]`, and the
    /// sums and counts of the orders' τ and gap.
    pub(crate) fn listwise(&mut self, c: [usize; 5], tau: (f64, usize), gap: (f64, usize)) {
        self.listwise_groups += c[0];
        self.listwise_failed_groups += c[1];
        self.listwise_calls += c[2];
        self.listwise_chunked_groups += c[3];
        self.listwise_unseen_samples += c[4];
        self.lw_tau = (self.lw_tau.0 + tau.0, self.lw_tau.1 + tau.1);
        self.lw_gap = (self.lw_gap.0 + gap.0, self.lw_gap.1 + gap.1);
        self.finish();
    }

    /// Folds another batch's report into this one.
    pub fn merge(&mut self, o: GroupReport) {
        self.groups += o.groups;
        self.empty_groups += o.empty_groups;
        self.singleton_groups += o.singleton_groups;
        self.flat_groups += o.flat_groups;
        self.all_pass += o.all_pass;
        self.all_fail += o.all_fail;
        self.mixed += o.mixed;
        self.excluded_samples += o.excluded_samples;
        self.tie_broken_groups += o.tie_broken_groups;
        self.tie_unbroken_groups += o.tie_unbroken_groups;
        self.tie_break_calls += o.tie_break_calls;
        self.tie_break_failures += o.tie_break_failures;
        let c = [
            o.listwise_groups,
            o.listwise_failed_groups,
            o.listwise_calls,
            o.listwise_chunked_groups,
            o.listwise_unseen_samples,
        ];
        self.listwise(c, o.lw_tau, o.lw_gap);
        self.std_sum += o.std_sum;
        self.std_groups += o.std_groups;
        for (k, s) in o.components {
            let m = self.components.entry(k).or_default();
            m.groups += s.groups;
            m.constant += s.constant;
            m.always_one += s.always_one;
            m.always_zero += s.always_zero;
        }
        for (k, p) in o.pairs {
            self.pairs.entry(k).or_default().merge(&p);
        }
        self.finish();
    }

    /// Recomputes the derived fields (fractions, means, correlations) from the counts.
    fn finish(&mut self) {
        let frac = |n: usize, d: usize| (d > 0).then(|| n as f64 / d as f64);
        self.frac_all_pass = frac(self.all_pass, self.groups);
        self.frac_all_fail = frac(self.all_fail, self.groups);
        self.frac_mixed = frac(self.mixed, self.groups);
        self.frac_flat = frac(self.flat_groups, self.groups);
        self.mean_within_group_std =
            (self.std_groups > 0).then(|| self.std_sum / self.std_groups as f64);
        self.listwise_order_tau = (self.lw_tau.1 > 0).then(|| self.lw_tau.0 / self.lw_tau.1 as f64);
        self.listwise_order_gap = (self.lw_gap.1 > 0).then(|| self.lw_gap.0 / self.lw_gap.1 as f64);
        for s in self.components.values_mut() {
            s.frac_constant = frac(s.constant, s.groups);
        }
        self.correlations = self
            .pairs
            .iter()
            .map(|((a, b), p)| Correlation {
                a: a.clone(),
                b: b.clone(),
                pearson: p.pearson(),
                n: p.n as usize,
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pearson_of_known_series() {
        let mut p = PairAcc::default();
        for (x, y) in [(1.0, 2.0), (2.0, 4.0), (3.0, 6.0)] {
            p.add(x, y);
        }
        assert!((p.pearson().unwrap() - 1.0).abs() < 1e-12);
        let mut q = PairAcc::default();
        for (x, y) in [(1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.0, 1.0)] {
            q.add(x, y);
        }
        assert!(q.pearson().unwrap().abs() < 1e-12);
        let mut c = PairAcc::default();
        for (x, y) in [(1.0, 1.0), (1.0, 0.0)] {
            c.add(x, y);
        }
        assert_eq!(c.pearson(), None, "a constant series has no correlation");
    }
}
