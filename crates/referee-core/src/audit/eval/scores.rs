//! Scored data (`scores`, with `--gold FIELD`): any row Referee can score, with a gold score;
//! Pearson, Spearman and Kendall tau-b between reward and gold, with bootstrap intervals. When
//! every gold is 0 or 1 (labelled data: a trajectory solved or not, a rollout hacked or not),
//! also how well the reward separates the two: AUROC (the chance a random 1 out-scores a random
//! 0, ties counted half), and, with a reward ≥ `--threshold` read as a predicted 1, the
//! confusion counts, accuracy, precision, recall, F1 and the false-positive rate (the share of
//! 0-labelled rows the spec pays: the hacks that get through).

use super::plan::{row_err, PlanKind};
use super::tally::{head, named, Tally};
use super::{Correlation, EvalOptions, EvalReport};
use crate::audit::stats::{self, kendall_tau_b, pearson, spearman, Bootstrap};
use crate::audit::{num, row_field};
use crate::input::RowError;
use crate::Sample;
use serde_json::{json, Map, Value};

/// The row itself as the sample, mapped like any input row, and its gold score.
pub(super) fn plan(
    value: &Value,
    line: usize,
    opts: &EvalOptions,
    samples: &mut Vec<Sample>,
) -> Result<PlanKind, RowError> {
    let field = opts.gold.as_deref().unwrap_or("gold");
    let gold = match row_field(value, field) {
        None => {
            return Err(row_err(
                "missing_gold",
                format!("line {line}: no gold score `{field}`"),
            ))
        }
        Some(v) => match number(v).filter(|g| g.is_finite()) {
            Some(g) => g,
            None => {
                return Err(row_err(
                    "invalid_gold",
                    format!("line {line}: gold score `{field}` is not a finite number: {v}"),
                ))
            }
        },
    };
    let s = opts.mapping.sample(value.clone()).map_err(|e| RowError {
        reason: e.reason,
        message: format!("line {line}: {}", e.message),
    })?;
    samples.push(s);
    Ok(PlanKind::Gold(gold))
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Keeps the (reward, gold) pair.
pub(super) fn tally(t: &mut Tally, g: f64, rw: &[f64]) {
    t.rewards.push(rw[0]);
    t.golds.push(g);
}

/// Mean reward and gold per subset and overall, and the three correlations.
pub(super) fn report(
    report: &mut EvalReport,
    subset_rows: &[(String, Tally)],
    all: &Tally,
    boot: &Bootstrap,
    threshold: f64,
) {
    let corr = |t: &Tally| Correlation {
        pearson: boot.estimate(&t.rewards, &t.golds, pearson),
        spearman: boot.estimate(&t.rewards, &t.golds, spearman),
        kendall_tau_b: boot.estimate(&t.rewards, &t.golds, kendall_tau_b),
    };
    let means = |m: &mut Map<String, Value>, t: &Tally| {
        m.insert(
            "mean_reward".into(),
            num(stats::ratio(t.rewards.iter().sum(), t.rewards.len())),
        );
        m.insert(
            "mean_gold".into(),
            num(stats::ratio(t.golds.iter().sum(), t.golds.len())),
        );
    };
    for (name, t) in subset_rows {
        let mut m = named(name, t);
        means(&mut m, t);
        let c = corr(t);
        m.insert("pearson".into(), json!(c.pearson));
        m.insert("spearman".into(), json!(c.spearman));
        m.insert("kendall_tau_b".into(), json!(c.kendall_tau_b));
        if let Some(c) = classification(t, threshold) {
            m.insert("classification".into(), Value::Object(c));
        }
        report.subsets.push(m);
    }
    let mut o = head(all);
    means(&mut o, all);
    if let Some(c) = classification(all, threshold) {
        o.insert("classification".into(), Value::Object(c));
    }
    report.overall = o;
    report.correlation = Some(corr(all));
}

/// The binary view of labelled rows (see the module doc); `None` unless every gold is 0 or 1.
fn classification(t: &Tally, threshold: f64) -> Option<Map<String, Value>> {
    if t.golds.is_empty() || t.golds.iter().any(|g| *g != 0.0 && *g != 1.0) {
        return None;
    }
    let (mut tp, mut fp, mut tn, mut fne) = (0usize, 0usize, 0usize, 0usize);
    for (r, g) in t.rewards.iter().zip(&t.golds) {
        match (*r >= threshold, *g == 1.0) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, false) => tn += 1,
            (false, true) => fne += 1,
        }
    }
    let pos: Vec<f64> = t
        .rewards
        .iter()
        .zip(&t.golds)
        .filter(|(_, g)| **g == 1.0)
        .map(|(r, _)| *r)
        .collect();
    let neg: Vec<f64> = t
        .rewards
        .iter()
        .zip(&t.golds)
        .filter(|(_, g)| **g == 0.0)
        .map(|(r, _)| *r)
        .collect();
    let auroc = (!pos.is_empty() && !neg.is_empty()).then(|| {
        let mut wins = 0.0;
        for p in &pos {
            for n in &neg {
                wins += match p.partial_cmp(n) {
                    Some(std::cmp::Ordering::Greater) => 1.0,
                    Some(std::cmp::Ordering::Equal) => 0.5,
                    _ => 0.0,
                };
            }
        }
        wins / (pos.len() * neg.len()) as f64
    });
    let precision = stats::ratio(tp as f64, tp + fp);
    let recall = stats::ratio(tp as f64, tp + fne);
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    let mut m = Map::new();
    m.insert("threshold".into(), num(Some(threshold)));
    m.insert("positives".into(), json!(pos.len()));
    m.insert("negatives".into(), json!(neg.len()));
    m.insert("true_positives".into(), json!(tp));
    m.insert("false_positives".into(), json!(fp));
    m.insert("true_negatives".into(), json!(tn));
    m.insert("false_negatives".into(), json!(fne));
    m.insert(
        "accuracy".into(),
        num(stats::ratio((tp + tn) as f64, t.golds.len())),
    );
    m.insert("precision".into(), num(precision));
    m.insert("recall".into(), num(recall));
    m.insert("f1".into(), num(f1));
    m.insert(
        "false_positive_rate".into(),
        num(stats::ratio(fp as f64, fp + tn)),
    );
    m.insert("auroc".into(), num(auroc));
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labelled_rows_get_the_binary_view() {
        let t = Tally {
            rewards: vec![1.0, 0.8, 0.2, 0.9, 0.0],
            golds: vec![1.0, 1.0, 1.0, 0.0, 0.0],
            ..Tally::default()
        };
        let c = classification(&t, 0.5).unwrap();
        assert_eq!(c["true_positives"], 2);
        assert_eq!(c["false_positives"], 1);
        assert_eq!(c["false_negatives"], 1);
        assert_eq!(c["true_negatives"], 1);
        assert_eq!(c["false_positive_rate"], 0.5);
        // Pairs (pos, neg): 1>0.9, 1>0, 0.8<0.9, 0.8>0, 0.2<0.9, 0.2>0: 4 of 6.
        assert!((c["auroc"].as_f64().unwrap() - 4.0 / 6.0).abs() < 1e-12);
        let graded = Tally {
            rewards: vec![1.0],
            golds: vec![0.5],
            ..Tally::default()
        };
        assert!(
            classification(&graded, 0.5).is_none(),
            "graded scores are not labels"
        );
    }
}
