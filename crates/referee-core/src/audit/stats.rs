//! The statistics `referee eval` and `referee compare` report: Pearson, Spearman (average ranks
//! for ties), Kendall tau-b, percentile bootstrap confidence intervals, and accuracy with ties.
//!
//! Conventions, the same everywhere (and the same as SciPy's, whose `pearsonr`, `spearmanr` and
//! `kendalltau(variant="b")` these reproduce):
//! - A correlation is `None` (JSON `null`) when it is undefined: fewer than 2 pairs, or a column
//!   that is constant (zero variance; SciPy returns NaN there). It is never reported as 0.
//! - Inputs are finite numbers. Callers remove pairs whose reward could not be computed *before*
//!   calling, and count them as errors; NaN never reaches these functions silently (a NaN input
//!   makes the result `None`, not a number).
//! - A bootstrap interval needs at least 3 pairs; it is `None` below that, or when no resample
//!   gave a defined statistic. Resamples whose statistic is undefined (a constant resample) are
//!   skipped, so the interval is over the defined ones.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// The fewest pairs a bootstrap interval is computed from.
pub const MIN_BOOTSTRAP_N: usize = 3;

fn finite(xs: &[f64]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

/// Pearson's product-moment correlation. `None` when undefined (see the module docs).
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "pearson: columns of different lengths");
    let n = x.len();
    if n < 2 || !finite(x) || !finite(y) {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    if n == 2 {
        // Two points are always on a line; exact, as SciPy special-cases it.
        return Some((x[1] - x[0]).signum() * (y[1] - y[0]).signum());
    }
    // Rounding can push |r| a hair past 1 for perfectly correlated columns.
    Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// Ranks from 1, ties sharing the average of the ranks they span (`scipy.stats.rankdata`'s
/// default, "average").
pub fn average_ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        // Positions i..=j (0-based) hold ranks i+1..=j+1; their mean is (i+j)/2 + 1.
        let r = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = r;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rank correlation: Pearson's on average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "spearman: columns of different lengths");
    if !finite(x) || !finite(y) {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's tau-b, `(C - D) / sqrt((n0 - n1)(n0 - n2))` with `n1`, `n2` the pairs tied in x and
/// in y. O(n log n) (Knight's algorithm: sort by x then y, count the discordant pairs as the
/// swaps of a merge sort on y), so bootstrapping thousands of resamples stays cheap.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    assert_eq!(x.len(), y.len(), "kendall: columns of different lengths");
    let n = x.len();
    if n < 2 || !finite(x) || !finite(y) {
        return None;
    }
    let mut pairs: Vec<(f64, f64)> = x.iter().copied().zip(y.iter().copied()).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let n0 = (n * (n - 1) / 2) as f64;
    // Pairs tied in x (n1), and tied in both (n3), from runs of the sorted pairs.
    let (mut n1, mut n3) = (0u64, 0u64);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && pairs[j + 1].0 == pairs[i].0 {
            j += 1;
        }
        let t = (j - i + 1) as u64;
        n1 += t * (t - 1) / 2;
        let mut k = i;
        while k <= j {
            let mut m = k;
            while m < j && pairs[m + 1].1 == pairs[k].1 {
                m += 1;
            }
            let u = (m - k + 1) as u64;
            n3 += u * (u - 1) / 2;
            k = m + 1;
        }
        i = j + 1;
    }
    let mut ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let swaps = merge_count(&mut ys);
    // Pairs tied in y, from the now sorted ys.
    let mut n2 = 0u64;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && ys[j + 1] == ys[i] {
            j += 1;
        }
        let t = (j - i + 1) as u64;
        n2 += t * (t - 1) / 2;
        i = j + 1;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let denom = ((n0 - n1f) * (n0 - n2f)).sqrt();
    if denom == 0.0 {
        return None;
    }
    // C - D = n0 - n1 - n2 + n3 - 2 * swaps.
    let s = n0 - n1f - n2f + n3 as f64 - 2.0 * swaps as f64;
    Some((s / denom).clamp(-1.0, 1.0))
}

/// Sorts `v` ascending and returns the number of strictly inverted pairs (`i < j`, `v[i] > v[j]`).
fn merge_count(v: &mut [f64]) -> u64 {
    let n = v.len();
    if n < 2 {
        return 0;
    }
    let mid = n / 2;
    let mut swaps = merge_count(&mut v[..mid]) + merge_count(&mut v[mid..]);
    let mut merged = Vec::with_capacity(n);
    let (mut i, mut j) = (0, mid);
    while i < mid && j < n {
        if v[j] < v[i] {
            swaps += (mid - i) as u64;
            merged.push(v[j]);
            j += 1;
        } else {
            merged.push(v[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&v[i..mid]);
    merged.extend_from_slice(&v[j..n]);
    v.copy_from_slice(&merged);
    swaps
}

/// The `q`-quantile (0..=1) of sorted values, linearly interpolated between the two nearest
/// (NumPy's default `percentile` method).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// How bootstrap intervals are drawn: `resamples` resamples of the pairs with replacement, from
/// a ChaCha8 generator seeded with `seed`, resample `b` on stream `b` (so a seed reproduces an
/// interval exactly, on every platform and thread count), at confidence `level` (0.95 for a 95%
/// interval). Resamples run in parallel on the rayon pool.
#[derive(Debug, Clone, Copy)]
pub struct Bootstrap {
    pub resamples: usize,
    pub seed: u64,
    pub level: f64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 1000,
            seed: 0,
            level: 0.95,
        }
    }
}

/// A statistic with its percentile bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub value: Option<f64>,
    pub ci: Option<[f64; 2]>,
}

impl Bootstrap {
    /// `stat` on the pairs, with the percentile interval of `stat` over the resamples.
    /// Every statistic of one call sees the same resamples (the generator is reseeded per call),
    /// so the intervals of Pearson, Spearman and Kendall on one table are comparable.
    pub fn estimate(
        &self,
        x: &[f64],
        y: &[f64],
        stat: impl Fn(&[f64], &[f64]) -> Option<f64> + Sync,
    ) -> Estimate {
        let value = stat(x, y);
        let n = x.len();
        if n < MIN_BOOTSTRAP_N || self.resamples == 0 || value.is_none() {
            return Estimate { value, ci: None };
        }
        // Resample `b` draws from its own stream of the seeded generator, so the resamples are
        // the same whatever the number of threads that compute them.
        let mut stats: Vec<f64> = (0..self.resamples)
            .into_par_iter()
            .filter_map(|b| {
                let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
                rng.set_stream(b as u64);
                let (mut bx, mut by) = (Vec::with_capacity(n), Vec::with_capacity(n));
                for _ in 0..n {
                    let i = rng.random_range(0..n);
                    bx.push(x[i]);
                    by.push(y[i]);
                }
                stat(&bx, &by)
            })
            .collect();
        stats.sort_by(f64::total_cmp);
        let alpha = (1.0 - self.level.clamp(0.0, 1.0)) / 2.0;
        let ci = match (
            quantile_sorted(&stats, alpha),
            quantile_sorted(&stats, 1.0 - alpha),
        ) {
            (Some(lo), Some(hi)) => Some([lo, hi]),
            _ => None,
        };
        Estimate { value, ci }
    }
}

/// The credit one comparison gets when `k` candidates tie at the top and `correct` of them are
/// right: the expected value of picking one of the tied uniformly (`correct / k`). With one
/// correct candidate this is RewardBench 2's `1/k` tie penalty.
pub fn tie_credit(correct: usize, k: usize) -> f64 {
    if k == 0 {
        0.0
    } else {
        correct as f64 / k as f64
    }
}

/// `num / den`, `None` when `den` is 0 (an empty table has no accuracy, not accuracy 0).
pub fn ratio(num: f64, den: usize) -> Option<f64> {
    (den > 0).then(|| num / den as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("defined");
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    /// Kendall tau-b by its definition, O(n^2), to check the fast one against.
    fn kendall_naive(x: &[f64], y: &[f64]) -> Option<f64> {
        let n = x.len();
        let (mut c, mut d, mut tx, mut ty) = (0.0f64, 0.0, 0.0, 0.0);
        for i in 0..n {
            for j in i + 1..n {
                let a = (x[i] - x[j]).signum() * f64::from(x[i] != x[j]);
                let b = (y[i] - y[j]).signum() * f64::from(y[i] != y[j]);
                if a == 0.0 && b == 0.0 {
                } else if a == 0.0 {
                    tx += 1.0;
                } else if b == 0.0 {
                    ty += 1.0;
                } else if a == b {
                    c += 1.0;
                } else {
                    d += 1.0;
                }
            }
        }
        let den = ((c + d + tx) * (c + d + ty)).sqrt();
        (den > 0.0).then(|| (c - d) / den)
    }

    #[test]
    fn pearson_by_hand() {
        // x = 1,2,3,4; y = 2,4,5,4: means 2.5 and 3.75; sxy = 3.5, sxx = 5, syy = 4.75.
        close(
            pearson(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 5.0, 4.0]),
            3.5 / (5.0f64.sqrt() * 4.75f64.sqrt()),
        );
        close(pearson(&[1.0, 2.0, 3.0], &[6.0, 4.0, 2.0]), -1.0);
        // Two points always lie on a line.
        close(pearson(&[0.0, 1.0], &[5.0, 7.0]), 1.0);
    }

    #[test]
    fn undefined_is_none_not_zero() {
        // A constant column has no correlation (SciPy: NaN).
        assert_eq!(pearson(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[4.0, 4.0, 4.0]), None);
        assert_eq!(kendall_tau_b(&[2.0, 2.0], &[1.0, 3.0]), None);
        // n < 2.
        assert_eq!(pearson(&[1.0], &[1.0]), None);
        assert_eq!(kendall_tau_b(&[], &[]), None);
        // NaN never turns into a number.
        assert_eq!(pearson(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0, f64::NAN, 3.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(kendall_tau_b(&[1.0, 2.0, 3.0], &[1.0, f64::NAN, 3.0]), None);
    }

    #[test]
    fn average_ranks_share_ties() {
        assert_eq!(
            average_ranks(&[10.0, 20.0, 10.0, 30.0, 20.0, 20.0]),
            vec![1.5, 4.0, 1.5, 6.0, 4.0, 4.0]
        );
    }

    #[test]
    fn spearman_by_hand_with_ties() {
        // x ranks 1,2,3,4; y = 1,1,2,3 ranks 1.5,1.5,3,4.
        // Pearson of (1,2,3,4) and (1.5,1.5,3,4): means 2.5, 2.5; sxy = 4.5, sxx = 5, syy = 4.5.
        close(
            spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 1.0, 2.0, 3.0]),
            4.5 / (5.0f64.sqrt() * 4.5f64.sqrt()),
        );
        // Monotone but not linear: rho = 1 where Pearson is below 1.
        close(spearman(&[1.0, 2.0, 3.0], &[1.0, 10.0, 100.0]), 1.0);
    }

    #[test]
    fn kendall_by_hand() {
        // x = 1,2,3,4; y = 1,3,2,4: pairs C = 5, D = 1, no ties: tau = 4/6.
        close(
            kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]),
            4.0 / 6.0,
        );
        // Ties: x = 1,1,2,3; y = 1,2,2,3. n0 = 6; tied in x: (0,1); tied in y: (1,2).
        // Remaining 4 pairs: (0,2) C, (0,3) C, (1,3) C, (2,3) C; C - D = 4.
        // tau_b = 4 / sqrt((6-1)(6-1)) = 0.8 (SciPy: 0.7999999999999999).
        close(
            kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 2.0, 3.0]),
            0.8,
        );
        // Pairs tied in both count in neither C nor D but in n1 and n2.
        // x = 1,1,2; y = 5,5,4: n0 = 3, n1 = 1, n2 = 1, pairs (0,2), (1,2) discordant.
        // tau_b = -2 / sqrt(2 * 2) = -1.
        close(kendall_tau_b(&[1.0, 1.0, 2.0], &[5.0, 5.0, 4.0]), -1.0);
        close(kendall_tau_b(&[3.0, 2.0, 1.0], &[1.0, 2.0, 3.0]), -1.0);
    }

    #[test]
    fn kendall_fast_matches_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [2usize, 3, 5, 17, 64] {
            for _ in 0..50 {
                // Few distinct values, so ties of every kind are common.
                let x: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(0..4))).collect();
                let y: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(0..4))).collect();
                match (kendall_tau_b(&x, &y), kendall_naive(&x, &y)) {
                    (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{x:?} {y:?}"),
                    (a, b) => assert_eq!(a, b, "{x:?} {y:?}"),
                }
            }
        }
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        // numpy.percentile([1,2,3,4], 2.5) = 1.075; 97.5 -> 3.925.
        close(quantile_sorted(&v, 0.025), 1.075);
        close(quantile_sorted(&v, 0.975), 3.925);
        close(quantile_sorted(&v, 0.5), 2.5);
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_value() {
        let x: Vec<f64> = (0..40).map(f64::from).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|v| v + if (*v as u32) % 3 == 0 { 5.0 } else { 0.0 })
            .collect();
        let b = Bootstrap {
            resamples: 500,
            seed: 42,
            level: 0.95,
        };
        let e1 = b.estimate(&x, &y, pearson);
        let e2 = b.estimate(&x, &y, pearson);
        assert_eq!(e1, e2, "same seed, same interval");
        let [lo, hi] = e1.ci.unwrap();
        let v = e1.value.unwrap();
        assert!(lo <= v && v <= hi && lo < hi, "{lo} {v} {hi}");
        let other = Bootstrap { seed: 43, ..b }.estimate(&x, &y, pearson);
        assert_ne!(other.ci, e1.ci, "another seed, another draw");
    }

    #[test]
    fn bootstrap_does_not_depend_on_the_thread_count() {
        let x: Vec<f64> = (0..30).map(|i| f64::from(i % 7)).collect();
        let y: Vec<f64> = (0..30).map(|i| f64::from((i * 5) % 11)).collect();
        let b = Bootstrap {
            resamples: 300,
            seed: 3,
            level: 0.9,
        };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| b.estimate(&x, &y, kendall_tau_b));
        let four = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap()
            .install(|| b.estimate(&x, &y, kendall_tau_b));
        assert_eq!(one, four);
    }

    #[test]
    fn bootstrap_needs_three_pairs_and_a_defined_value() {
        let b = Bootstrap::default();
        let e = b.estimate(&[1.0, 2.0], &[1.0, 3.0], pearson);
        assert_eq!(e.value, Some(1.0));
        assert_eq!(e.ci, None);
        let e = b.estimate(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0], pearson);
        assert_eq!(
            e,
            Estimate {
                value: None,
                ci: None
            }
        );
        // Perfectly correlated: every defined resample is 1 (to rounding), so is the interval.
        let e = b.estimate(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0, 8.0], spearman);
        let [lo, hi] = e.ci.unwrap();
        assert!(
            (lo - 1.0).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12,
            "{lo} {hi}"
        );
    }

    #[test]
    fn ties_and_ratios() {
        assert_eq!(tie_credit(1, 1), 1.0);
        assert_eq!(tie_credit(1, 4), 0.25);
        assert_eq!(tie_credit(2, 3), 2.0 / 3.0);
        assert_eq!(tie_credit(0, 0), 0.0);
        assert_eq!(ratio(3.0, 4), Some(0.75));
        assert_eq!(ratio(0.0, 0), None);
    }
}
