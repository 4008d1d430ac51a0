//! Step-labelled data (`steps`): ProcessBench rows `{problem, steps: [..], label}` (`label` the
//! 0-based index of the first wrong step, -1 when every step is right; Zheng et al. 2024, arXiv
//! 2412.06559), optionally with per-step labels `step_labels` (PRM800K-style ratings: `1`/`true`
//! right, `-1`/`false` wrong, `0` neutral, counted as right as ProcessBench's conversion does).
//!
//! The row's steps are joined with blank lines into the output, and the spec's first step
//! component (`each_step`, `prm`, `step_judge`) must cut it into the same steps (the default
//! `split: paragraphs` does; a row whose steps do not come back one for one is an error,
//! `step_count_mismatch`, never a silent misalignment). A step is predicted wrong when its score
//! is below `--threshold` (default 0.5); the predicted first error is the first such step (a
//! repeated step scores 0 and counts as wrong).
//!
//! Reported as ProcessBench does: accuracy on the rows with an error (the first error found at
//! the labelled step), accuracy on the rows without one (no error predicted), and their harmonic
//! mean `f1`; with `step_labels`, step-level precision, recall and F1 for finding wrong steps.

use super::plan::{row_err, PlanKind, Push};
use super::tally::{head, named, Tally};
use super::{EvalOptions, EvalReport};
use crate::audit::{num, row_field};
use crate::input::RowError;
use crate::node::Trace;
use serde_json::{json, Map, Value};

/// What a step-labelled row says.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StepLabels {
    pub(super) n: usize,
    /// The first wrong step, `None` when every step is right.
    pub(super) first_error: Option<usize>,
    /// Per step, right (`true`) or wrong, when the row has them.
    pub(super) steps: Option<Vec<bool>>,
}

/// The row's steps as one output, and its labels.
pub(super) fn plan(
    value: &Value,
    line: usize,
    opts: &EvalOptions,
    push_all: &mut Push<'_>,
) -> Result<PlanKind, RowError> {
    let label_field = opts.gold.as_deref().unwrap_or("label");
    let Some(Value::Array(steps)) = row_field(value, "steps") else {
        return Err(row_err(
            "missing_field",
            format!("line {line}: no list of `steps`"),
        ));
    };
    let texts: Option<Vec<&str>> = steps.iter().map(Value::as_str).collect();
    let Some(texts) = texts.filter(|t| !t.is_empty()) else {
        return Err(row_err(
            "invalid_row",
            format!("line {line}: `steps` must be a non-empty list of strings"),
        ));
    };
    let n = texts.len();
    let bad = |what: String| row_err("invalid_gold", format!("line {line}: {what}"));
    let first_error = match row_field(value, label_field).and_then(Value::as_i64) {
        Some(-1) => None,
        Some(k) if (0..n as i64).contains(&k) => Some(k as usize),
        Some(k) => {
            return Err(bad(format!(
                "`{label_field}` {k} is not -1 or a step below {n}"
            )))
        }
        None => {
            return Err(row_err(
                "missing_gold",
                format!("line {line}: no first-error `{label_field}` (an integer, -1 for none)"),
            ))
        }
    };
    let per_step = match row_field(value, "step_labels") {
        None => None,
        Some(Value::Array(a)) if a.len() == n => {
            let flags: Option<Vec<bool>> = a
                .iter()
                .map(|x| match x {
                    Value::Bool(b) => Some(*b),
                    Value::Number(v) => v.as_i64().filter(|i| (-1..=1).contains(i)).map(|i| i >= 0),
                    _ => None,
                })
                .collect();
            Some(flags.ok_or_else(|| bad("`step_labels` must be booleans or -1/0/1".into()))?)
        }
        Some(_) => return Err(bad(format!("`step_labels` must list {n} labels"))),
    };
    let joined = Value::String(texts.join("\n\n"));
    push_all(&[&joined], &["steps", label_field, "step_labels"])?;
    Ok(PlanKind::Steps(StepLabels {
        n,
        first_error,
        steps: per_step,
    }))
}

/// The per-step scores of the first step component in a result's trace (`detail.steps`).
pub(super) fn step_scores(trace: Option<&Trace>) -> Option<Vec<Option<f64>>> {
    fn find(t: &Trace) -> Option<Vec<Option<f64>>> {
        if let Some(steps) = t
            .detail
            .as_ref()
            .and_then(|d| d.get("steps"))
            .and_then(Value::as_array)
        {
            return Some(
                steps
                    .iter()
                    .map(|s| s.get("value").and_then(Value::as_f64))
                    .collect(),
            );
        }
        t.children.iter().find_map(find)
    }
    find(trace?)
}

/// Adds one row: predicted vs labelled first error, and per-step verdicts.
pub(super) fn tally(t: &mut Tally, labels: &StepLabels, scores: &[Option<f64>], threshold: f64) {
    let wrong: Vec<bool> = scores
        .iter()
        .map(|v| v.is_none_or(|v| v < threshold - 1e-9))
        .collect();
    let predicted = wrong.iter().position(|w| *w);
    if labels.first_error.is_some() {
        t.step_err_rows += 1;
        t.credit += f64::from(u8::from(predicted == labels.first_error));
    } else {
        t.step_ok_rows += 1;
        t.oracle += f64::from(u8::from(predicted.is_none()));
    }
    if let Some(gold) = &labels.steps {
        for (g, w) in gold.iter().zip(&wrong) {
            match (!g, *w) {
                (true, true) => t.step_tp += 1,
                (false, true) => t.step_fp += 1,
                (true, false) => t.step_fn += 1,
                (false, false) => {}
            }
        }
    }
}

fn metrics(t: &Tally) -> Map<String, Value> {
    let mut m = Map::new();
    let ratio = |a: f64, b: usize| (b > 0).then(|| a / b as f64);
    let err_acc = ratio(t.credit, t.step_err_rows);
    let ok_acc = ratio(t.oracle, t.step_ok_rows);
    let f1 = match (err_acc, ok_acc) {
        (Some(a), Some(b)) if a + b > 0.0 => Some(2.0 * a * b / (a + b)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    m.insert("error_rows".into(), json!(t.step_err_rows));
    m.insert("correct_rows".into(), json!(t.step_ok_rows));
    m.insert("error_accuracy".into(), num(err_acc));
    m.insert("correct_accuracy".into(), num(ok_acc));
    m.insert("f1".into(), num(f1));
    let (tp, fp, fn_) = (t.step_tp as f64, t.step_fp as f64, t.step_fn as f64);
    if tp + fp + fn_ > 0.0 {
        let p = (tp + fp > 0.0).then(|| tp / (tp + fp));
        let r = (tp + fn_ > 0.0).then(|| tp / (tp + fn_));
        let sf1 = match (p, r) {
            (Some(p), Some(r)) if p + r > 0.0 => Some(2.0 * p * r / (p + r)),
            _ => Some(0.0),
        };
        m.insert("step_precision".into(), num(p));
        m.insert("step_recall".into(), num(r));
        m.insert("step_f1".into(), num(sf1));
    }
    m
}

pub(super) fn report(report: &mut EvalReport, subsets: &[(String, Tally)], all: &Tally) {
    report.overall = head(all);
    report.overall.extend(metrics(all));
    report.subsets = subsets
        .iter()
        .map(|(name, t)| {
            let mut m = named(name, t);
            m.extend(metrics(t));
            m
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{close, program, rows};
    use super::super::{evaluate, EvalFormat, EvalOptions};

    const SPEC: &str = "{type: each_step, grader: {type: regex, mode: forbid, pattern: wrong}}";

    #[test]
    fn processbench_rows_give_first_error_accuracy_and_f1() {
        let data = rows(concat!(
            // error at step 1, found there
            r#"{"problem": "p", "steps": ["ok", "wrong", "ok"], "label": 1, "subset": "gsm8k"}"#,
            "\n",
            // error at step 2, predicted at step 0
            r#"{"problem": "p", "steps": ["wrong", "ok", "bad"], "label": 2, "subset": "gsm8k"}"#,
            "\n",
            // no error, none predicted
            r#"{"problem": "p", "steps": ["ok", "fine"], "label": -1, "subset": "math"}"#,
            "\n",
            // no error, one predicted
            r#"{"problem": "p", "steps": ["ok", "wrong"], "label": -1, "subset": "math"}"#,
            "\n",
            // label out of range, and a row whose steps the spec cuts differently
            r#"{"problem": "p", "steps": ["ok"], "label": 4}"#,
            "\n",
            r#"{"problem": "p", "steps": ["a\n\nb", "c"], "label": -1}"#,
            "\n",
        ));
        let r = evaluate(&program(SPEC), &data, &EvalOptions::default()).unwrap();
        assert_eq!(r.format, "steps");
        assert_eq!(r.errors, 2);
        assert_eq!(r.errors_by_reason.0["invalid_gold"], 1);
        assert_eq!(r.errors_by_reason.0["step_count_mismatch"], 1);
        close(r.overall["error_accuracy"].as_f64().unwrap(), 0.5);
        close(r.overall["correct_accuracy"].as_f64().unwrap(), 0.5);
        close(r.overall["f1"].as_f64().unwrap(), 0.5);
        assert_eq!(r.subsets.len(), 3);
        assert_eq!(r.subsets[1]["subset"], "gsm8k");
        close(r.subsets[1]["error_accuracy"].as_f64().unwrap(), 0.5);
    }

    #[test]
    fn per_step_labels_give_step_precision_and_recall() {
        let data = rows(concat!(
            r#"{"steps": ["ok", "wrong", "wrong"], "label": 1, "step_labels": [1, -1, 0]}"#,
            "\n",
            r#"{"steps": ["wrong", "ok"], "label": 0, "step_labels": [false, false]}"#,
            "\n",
        ));
        let opts = EvalOptions {
            format: EvalFormat::Steps,
            ..EvalOptions::default()
        };
        let r = evaluate(&program(SPEC), &data, &opts).unwrap();
        // Wrong steps found: (row 1) step 1 tp, step 2 fp; (row 2) step 0 tp, step 1 fn.
        close(r.overall["step_precision"].as_f64().unwrap(), 2.0 / 3.0);
        close(r.overall["step_recall"].as_f64().unwrap(), 2.0 / 3.0);
        close(r.overall["error_accuracy"].as_f64().unwrap(), 1.0);
        assert!(r.overall["f1"].is_null(), "no error-free row: no F1");
    }

    #[test]
    fn a_spec_without_steps_is_an_error_per_row_not_a_score() {
        let data = rows(r#"{"steps": ["ok"], "label": -1}"#);
        let r = evaluate(
            &program("{type: const, value: 1}"),
            &data,
            &EvalOptions::default(),
        )
        .unwrap();
        assert_eq!(r.errors_by_reason.0["no_step_component"], 1);
    }
}
