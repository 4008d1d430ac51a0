//! Scored data (`scores`, with `--gold FIELD`): any row Referee can score, with a gold score;
//! Pearson, Spearman and Kendall tau-b between reward and gold, with bootstrap intervals.

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
        report.subsets.push(m);
    }
    let mut o = head(all);
    means(&mut o, all);
    report.overall = o;
    report.correlation = Some(corr(all));
}
