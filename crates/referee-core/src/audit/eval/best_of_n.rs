//! Best-of-N (`best-of-n`, with `--correct FIELD`): whether the response the spec ranks first
//! is a correct one, with the oracle (some response is correct) and random (the share of correct
//! responses) baselines next to it.

use super::plan::{row_err, PlanKind, Push};
use super::tally::{head, named, Tally};
use super::{EvalOptions, EvalReport};
use crate::audit::{num, row_field, stats};
use crate::input::RowError;
use serde_json::{json, Map, Value};

/// A row's N responses and which of them are correct (flags, an index, or indices).
pub(super) fn plan(
    value: &Value,
    line: usize,
    opts: &EvalOptions,
    push_all: &mut Push<'_>,
) -> Result<PlanKind, RowError> {
    let field = opts.correct.as_deref().unwrap_or("correct");
    let Some(Value::Array(resps)) = row_field(value, &opts.responses) else {
        return Err(row_err(
            "missing_field",
            format!("line {line}: no list of responses `{}`", opts.responses),
        ));
    };
    if resps.is_empty() {
        return Err(row_err(
            "invalid_row",
            format!("line {line}: `{}` is empty", opts.responses),
        ));
    }
    let n = resps.len();
    let bad = |what: String| row_err("invalid_correct", format!("line {line}: {what}"));
    let correct: Vec<bool> = match row_field(value, field) {
        None => {
            return Err(row_err(
                "missing_correct",
                format!("line {line}: no `{field}` saying which responses are correct"),
            ))
        }
        Some(Value::Array(a)) if a.iter().all(Value::is_boolean) => {
            if a.len() != n {
                return Err(bad(format!(
                    "`{field}` has {} flags for {n} responses",
                    a.len()
                )));
            }
            a.iter().map(|b| b.as_bool() == Some(true)).collect()
        }
        Some(v) => {
            let idx: Vec<Option<u64>> = match v {
                Value::Array(a) => a.iter().map(Value::as_u64).collect(),
                other => vec![other.as_u64()],
            };
            let mut flags = vec![false; n];
            for i in idx {
                match i {
                    Some(i) if (i as usize) < n => flags[i as usize] = true,
                    _ => {
                        return Err(bad(format!(
                            "`{field}` must be booleans, or indices below {n}; found {v}"
                        )))
                    }
                }
            }
            flags
        }
    };
    let drop = [opts.responses.as_str(), field];
    let refs: Vec<&Value> = resps.iter().collect();
    push_all(&refs, &drop)?;
    Ok(PlanKind::BestOf(correct))
}

/// Selection credit (ties as the expected value), plus the oracle and random baselines.
pub(super) fn tally(t: &mut Tally, correct: &[bool], rw: &[f64]) {
    let max = rw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let top: Vec<usize> = (0..rw.len()).filter(|&i| rw[i] == max).collect();
    let right = top.iter().filter(|&&i| correct[i]).count();
    t.credit += stats::tie_credit(right, top.len());
    if top.len() > 1 {
        t.ties += 1;
    }
    let any = correct.iter().filter(|&&c| c).count();
    t.oracle += if any > 0 { 1.0 } else { 0.0 };
    t.random += any as f64 / correct.len() as f64;
}

/// Selection accuracy, oracle and random per subset and overall.
pub(super) fn report(report: &mut EvalReport, subset_rows: &[(String, Tally)], all: &Tally) {
    let fill = |m: &mut Map<String, Value>, t: &Tally| {
        m.insert("accuracy".into(), num(stats::ratio(t.credit, t.scored)));
        m.insert("oracle".into(), num(stats::ratio(t.oracle, t.scored)));
        m.insert("random".into(), num(stats::ratio(t.random, t.scored)));
        m.insert("ties".into(), json!(t.ties));
    };
    for (name, t) in subset_rows {
        let mut m = named(name, t);
        fill(&mut m, t);
        report.subsets.push(m);
    }
    let mut o = head(all);
    fill(&mut o, all);
    report.overall = o;
}
