//! Descriptive statistics over finished results, for reports (`referee report`, and the same
//! numbers from Python): histograms, the spread of rewards within groups, and where scoring
//! time went according to the traces. In the core so every shell computes them one way.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Equal-width bins over the finite values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Histogram {
    /// Lower edge of the first bin.
    pub lo: f64,
    /// Upper edge of the last bin (inclusive).
    pub hi: f64,
    pub counts: Vec<usize>,
    /// Finite values counted.
    pub n: usize,
    /// NaN and infinite values, left out of the bins.
    pub non_finite: usize,
}

impl Histogram {
    /// Bins `values` into `bins` equal-width bins between their minimum and maximum. When every
    /// value is the same, the one bin is centred on it (width 1), so a constant reward still
    /// shows as one bar rather than vanishing.
    pub fn of(values: &[f64], bins: usize) -> Histogram {
        let bins = bins.max(1);
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let non_finite = values.len() - finite.len();
        let (Some(min), Some(max)) = (
            finite.iter().copied().reduce(f64::min),
            finite.iter().copied().reduce(f64::max),
        ) else {
            return Histogram {
                lo: 0.0,
                hi: 1.0,
                counts: vec![0; bins],
                n: 0,
                non_finite,
            };
        };
        let (lo, hi, bins) = if max > min {
            (min, max, bins)
        } else {
            (min - 0.5, max + 0.5, 1)
        };
        let mut counts = vec![0; bins];
        let width = (hi - lo) / bins as f64;
        for v in &finite {
            let i = (((v - lo) / width) as usize).min(bins - 1);
            counts[i] += 1;
        }
        Histogram {
            lo,
            hi,
            counts,
            n: finite.len(),
            non_finite,
        }
    }

    /// The edges of bin `i`.
    pub fn edges(&self, i: usize) -> (f64, f64) {
        let w = (self.hi - self.lo) / self.counts.len() as f64;
        (self.lo + w * i as f64, self.lo + w * (i + 1) as f64)
    }
}

/// One group's rewards.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupStat {
    pub group: String,
    /// Rows in the group.
    pub rows: usize,
    /// Rows with a reward (the others failed or were not applicable).
    pub rewarded: usize,
    pub mean: Option<f64>,
    /// Population variance of the rewards (GRPO normalises by the population std).
    pub variance: Option<f64>,
    /// Two or more rewards, all within the tolerance of each other: no learning signal.
    pub flat: bool,
}

/// The spread of rewards within groups (GRPO prompts).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSpread {
    pub groups: usize,
    /// Groups with at least two rewards (the only ones that can be flat or not).
    pub comparable: usize,
    pub flat: usize,
    /// `flat / comparable`.
    pub frac_flat: Option<f64>,
    /// Mean over comparable groups of the within-group variance.
    pub mean_variance: Option<f64>,
    /// Per group, in order of first appearance.
    pub per_group: Vec<GroupStat>,
}

/// Per-group reward statistics from `(group, reward)` pairs. A group is flat when it has two or
/// more rewards whose population std is at most `flat_tolerance` (the group stage's
/// `flat_tolerance`, default 1e-9, means the same thing).
pub fn group_spread<'a>(
    rows: impl IntoIterator<Item = (&'a str, Option<f64>)>,
    flat_tolerance: f64,
) -> GroupSpread {
    let mut order: Vec<&str> = Vec::new();
    let mut by: BTreeMap<&str, (usize, Vec<f64>)> = BTreeMap::new();
    for (g, r) in rows {
        let e = by.entry(g).or_insert_with(|| {
            order.push(g);
            (0, Vec::new())
        });
        e.0 += 1;
        if let Some(r) = r.filter(|r| r.is_finite()) {
            e.1.push(r);
        }
    }
    let mut per_group = Vec::with_capacity(order.len());
    let (mut comparable, mut flat, mut var_sum) = (0, 0, 0.0);
    for g in order {
        let (rows, rs) = &by[g];
        let n = rs.len();
        let mean = (n > 0).then(|| rs.iter().sum::<f64>() / n as f64);
        let variance = mean.map(|m| rs.iter().map(|r| (r - m).powi(2)).sum::<f64>() / n as f64);
        let is_flat = n >= 2 && variance.is_some_and(|v| v.sqrt() <= flat_tolerance);
        if n >= 2 {
            comparable += 1;
            var_sum += variance.unwrap_or(0.0);
            flat += usize::from(is_flat);
        }
        per_group.push(GroupStat {
            group: g.to_string(),
            rows: *rows,
            rewarded: n,
            mean,
            variance,
            flat: is_flat,
        });
    }
    GroupSpread {
        groups: per_group.len(),
        comparable,
        flat,
        frac_flat: (comparable > 0).then(|| flat as f64 / comparable as f64),
        mean_variance: (comparable > 0).then(|| var_sum / comparable as f64),
        per_group,
    }
}

/// Time spent in one node of the spec, over every trace that timed it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeTiming {
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub calls: usize,
    pub total_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

/// The time a trace node reports for itself, in milliseconds: `elapsed_ms` (or `elapsed_us`) on
/// the node or in its `detail`; else what the graders that wait record in `detail`: a judge's
/// `latency_ms`, or the sum of a code_exec's tests' `wall_ms`. Rule graders are not timed.
fn node_ms(node: &Value) -> Option<f64> {
    let own = |v: &Value| {
        v.get("elapsed_ms")
            .and_then(Value::as_f64)
            .or_else(|| v.get("elapsed_us").and_then(Value::as_f64).map(|u| u / 1e3))
    };
    let detail = node.get("detail");
    own(node)
        .or_else(|| detail.and_then(own))
        .or_else(|| detail?.get("latency_ms")?.as_f64())
        .or_else(|| {
            let tests = detail?.get("tests")?.as_array()?;
            let walls: Vec<f64> = tests
                .iter()
                .filter_map(|t| t.get("wall_ms")?.as_f64())
                .collect();
            (!walls.is_empty()).then(|| walls.iter().sum())
        })
}

/// Where scoring time went, by spec path, slowest (by total) first. Empty when no trace node
/// carries a timing.
pub fn trace_timings<'a>(traces: impl IntoIterator<Item = &'a Value>) -> Vec<NodeTiming> {
    let mut by: BTreeMap<String, NodeTiming> = BTreeMap::new();
    let mut stack: Vec<&Value> = traces.into_iter().collect();
    while let Some(node) = stack.pop() {
        if let Some(ms) = node_ms(node).filter(|m| m.is_finite()) {
            let path = node.get("path").and_then(Value::as_str).unwrap_or("");
            let t = by.entry(path.to_string()).or_insert_with(|| NodeTiming {
                path: path.to_string(),
                kind: node
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                calls: 0,
                total_ms: 0.0,
                mean_ms: 0.0,
                max_ms: 0.0,
            });
            t.calls += 1;
            t.total_ms += ms;
            t.max_ms = t.max_ms.max(ms);
        }
        if let Some(Value::Array(children)) = node.get("children") {
            stack.extend(children);
        }
    }
    let mut out: Vec<NodeTiming> = by
        .into_values()
        .map(|mut t| {
            t.mean_ms = t.total_ms / t.calls as f64;
            t
        })
        .collect();
    out.sort_by(|a, b| b.total_ms.total_cmp(&a.total_ms).then(a.path.cmp(&b.path)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn histogram_bins_by_hand() {
        let h = Histogram::of(&[0.0, 0.1, 0.5, 0.9, 1.0, f64::NAN], 4);
        assert_eq!((h.lo, h.hi), (0.0, 1.0));
        // [0,.25) [.25,.5) [.5,.75) [.75,1]: the maximum falls in the last bin.
        assert_eq!(h.counts, vec![2, 0, 1, 2]);
        assert_eq!((h.n, h.non_finite), (5, 1));
        assert_eq!(h.edges(1), (0.25, 0.5));
        let c = Histogram::of(&[1.0, 1.0], 10);
        assert_eq!((c.lo, c.hi, c.counts.clone()), (0.5, 1.5, vec![2]));
        let e = Histogram::of(&[], 3);
        assert_eq!((e.n, e.counts), (0, vec![0, 0, 0]));
    }

    #[test]
    fn group_spread_by_hand() {
        let rows = [
            ("a", Some(1.0)),
            ("a", Some(0.0)),
            ("b", Some(1.0)),
            ("b", Some(1.0)),
            ("c", Some(0.5)),
            ("c", None),
            ("b", None),
        ];
        let g = group_spread(rows, 1e-9);
        assert_eq!((g.groups, g.comparable, g.flat), (3, 2, 1));
        assert_eq!(g.frac_flat, Some(0.5));
        // a: mean .5, variance .25; b: variance 0.
        assert_eq!(g.mean_variance, Some(0.125));
        let names: Vec<&str> = g.per_group.iter().map(|s| s.group.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!((g.per_group[1].rows, g.per_group[1].rewarded), (3, 2));
        assert!(g.per_group[1].flat && !g.per_group[2].flat);
        assert_eq!(g.per_group[2].variance, Some(0.0));
        assert_eq!(group_spread([], 1e-9).frac_flat, None);
    }

    #[test]
    fn timings_sum_by_path_slowest_first() {
        let t1 = json!({"type": "weighted_sum", "path": "", "elapsed_ms": 3.0, "children": [
            {"type": "math_equiv", "path": "/inputs/0", "elapsed_us": 2500.0},
            {"type": "regex", "path": "/inputs/1", "detail": {"elapsed_ms": 0.5}}]});
        let t2 = json!({"type": "weighted_sum", "path": "", "elapsed_ms": 1.0, "children": [
            {"type": "math_equiv", "path": "/inputs/0", "elapsed_ms": 0.5},
            {"type": "regex", "path": "/inputs/1"}]});
        let t = trace_timings([&t1, &t2]);
        let got: Vec<(&str, usize, f64, f64)> = t
            .iter()
            .map(|x| (x.path.as_str(), x.calls, x.total_ms, x.max_ms))
            .collect();
        assert_eq!(
            got,
            [
                ("", 2, 4.0, 3.0),
                ("/inputs/0", 2, 3.0, 2.5),
                ("/inputs/1", 1, 0.5, 0.5)
            ]
        );
        assert_eq!(t[1].kind, "math_equiv");
        assert_eq!(t[1].mean_ms, 1.5);
        assert!(trace_timings([&json!({"path": "", "type": "regex"})]).is_empty());
        // What waiting graders record: a judge's latency, a code_exec's tests' wall times.
        let t = trace_timings([&json!({"type": "all_of", "path": "", "children": [
            {"type": "score_model", "path": "/graders/0", "detail": {"latency_ms": 120.0, "cached": false}},
            {"type": "code_exec", "path": "/graders/1", "detail": {"tests": [
                {"verdict": "pass", "cpu_ms": 3.0, "wall_ms": 40.0},
                {"verdict": "fail", "cpu_ms": 2.0, "wall_ms": 35.5}]}}]})]);
        let got: Vec<(&str, f64)> = t.iter().map(|x| (x.kind.as_str(), x.total_ms)).collect();
        assert_eq!(got, [("score_model", 120.0), ("code_exec", 75.5)]);
    }
}
