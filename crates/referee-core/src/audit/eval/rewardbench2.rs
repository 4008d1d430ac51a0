//! RewardBench 2 (`rewardbench2`): outside Ties, `1/k` when the first chosen completion is at
//! the maximum and `k` completions share it; the Ties subset has its own formula (`ties`).

use super::plan::{row_err, PlanKind, Push};
use super::tally::{head, named, Tally};
use super::ties::{ties_score, TieKind, TIES};
use super::EvalReport;
use crate::audit::{num, stats};
use crate::input::RowError;
use serde_json::{json, Map, Value};

/// A row's completions, chosen then rejected, with how many are correct and, in the Ties
/// subset, which prompt it is for (`ref:<n>` or `tied:<n>`).
pub(super) fn plan(
    obj: &Map<String, Value>,
    line: usize,
    subset: Option<&str>,
    push_all: &mut Push<'_>,
) -> Result<PlanKind, RowError> {
    let (Some(Value::Array(c)), Some(Value::Array(r))) = (obj.get("chosen"), obj.get("rejected"))
    else {
        return Err(row_err(
            "missing_field",
            format!("line {line}: a RewardBench 2 row needs `chosen` and `rejected` lists"),
        ));
    };
    if c.is_empty() {
        return Err(row_err(
            "invalid_row",
            format!("line {line}: `chosen` is empty"),
        ));
    }
    let total = c.len() + r.len();
    let num_correct = match obj.get("num_correct") {
        None | Some(Value::Null) => c.len(),
        Some(v) => match v.as_u64() {
            Some(n) if (n as usize) <= total => n as usize,
            _ => {
                return Err(row_err(
                    "invalid_row",
                    format!(
                        "line {line}: `num_correct` must be a count of at most {total}, found {v}"
                    ),
                ))
            }
        },
    };
    let ties = if subset.is_some_and(|s| s.eq_ignore_ascii_case(TIES)) {
        let id = obj.get("id").map(crate::template::value_text);
        let parsed = id.as_deref().and_then(|id| {
            let (k, p) = id.split_once(':')?;
            let kind = match k {
                "ref" => TieKind::Ref,
                "tied" => TieKind::Tied,
                _ => return None,
            };
            Some((kind, p.to_string()))
        });
        let Some(t) = parsed else {
            return Err(row_err(
                "invalid_ties_id",
                format!(
                    "line {line}: a Ties row's id must be `ref:<n>` or `tied:<n>`, found {}",
                    id.as_deref().unwrap_or("none")
                ),
            ));
        };
        Some(t)
    } else {
        None
    };
    let all: Vec<&Value> = c.iter().chain(r.iter()).collect();
    push_all(&all, &["chosen", "rejected"])?;
    Ok(PlanKind::Bo4 { num_correct, ties })
}

/// A Ties row is kept for the Ties formula; any other gets `best_of_first`'s credit.
pub(super) fn tally(
    t: &mut Tally,
    num_correct: usize,
    ties: Option<&(TieKind, String)>,
    rw: &[f64],
) {
    if let Some((k, p)) = ties {
        t.tie_rows.push((*k, p.clone(), rw.to_vec(), num_correct));
    } else {
        let (credit, k) = best_of_first(rw);
        t.credit += credit;
        if k > 1 {
            t.ties += 1;
        }
    }
}

/// Accuracy per subset (the Ties formula's parts for Ties), the non-Ties accuracy and the
/// leaderboard `score`, the mean of the subsets' scores.
pub(super) fn report(
    report: &mut EvalReport,
    subset_rows: &[(String, Tally)],
    all: &Tally,
    any_subset: bool,
) {
    let mut scores = Vec::new();
    for (name, t) in subset_rows {
        let mut m = named(name, t);
        if name.eq_ignore_ascii_case(TIES) {
            let tie = ties_score(&t.tie_rows);
            let s = (t.scored > 0).then_some(tie.overall);
            m.insert("accuracy".into(), num(s));
            m.insert("ref_accuracy".into(), num(Some(tie.ref_accuracy)));
            m.insert("tied_accuracy".into(), num(Some(tie.tied_accuracy)));
            m.insert(
                "correctness_preferred".into(),
                num(Some(tie.correctness_preferred)),
            );
            m.insert(
                "correctness_preferred_hard".into(),
                num(Some(tie.correctness_preferred_hard)),
            );
            m.insert(
                "correctness_margin_score".into(),
                num(Some(tie.correctness_margin_score)),
            );
            scores.extend(s);
        } else {
            let a = stats::ratio(t.credit, t.scored);
            m.insert("accuracy".into(), num(a));
            m.insert("ties".into(), json!(t.ties));
            scores.extend(a);
        }
        report.subsets.push(m);
    }
    let non_ties = all.scored - all.tie_rows.len();
    let mut o = head(all);
    o.insert("accuracy".into(), num(stats::ratio(all.credit, non_ties)));
    o.insert("ties".into(), json!(all.ties));
    let score = if any_subset {
        stats::ratio(scores.iter().sum(), scores.len())
    } else if all.tie_rows.is_empty() {
        stats::ratio(all.credit, non_ties)
    } else {
        None
    };
    o.insert("score".into(), num(score));
    report.overall = o;
}

/// RewardBench 2 outside Ties: `1/k` when the first completion is at the maximum and `k`
/// completions share it, else 0 (`reroll_and_score_dataset`). Returns (credit, k).
pub fn best_of_first(scores: &[f64]) -> (f64, usize) {
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let k = scores.iter().filter(|&&s| s == max).count();
    if scores.first() == Some(&max) {
        (stats::tie_credit(1, k), k)
    } else {
        (0.0, k)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{program, rows};
    use super::super::{evaluate, EvalOptions};
    use super::best_of_first;
    use serde_json::Value;

    #[test]
    fn best_of_four_tie_penalty() {
        assert_eq!(best_of_first(&[0.9, 0.1, 0.2, 0.3]), (1.0, 1));
        // Chosen tied with one rejected at the top: 1/2.
        assert_eq!(best_of_first(&[0.9, 0.9, 0.2, 0.3]), (0.5, 2));
        // All four tied: 1/4 (a constant reward is no better than chance).
        assert_eq!(best_of_first(&[1.0, 1.0, 1.0, 1.0]), (0.25, 4));
        // Chosen not at the top: 0, however many tie there.
        assert_eq!(best_of_first(&[0.1, 0.9, 0.9, 0.3]), (0.0, 2));
    }

    #[test]
    fn rewardbench2_rows_that_cannot_be_scored_are_counted() {
        let p = program("{type: string_check, name: good, operation: eq, input: '{{sample.output_text}}', reference: 'good'}");
        let data = rows(concat!(
            r#"{"id": "a", "subset": "Focus", "prompt": "q", "chosen": ["good"], "rejected": ["bad", "bad", "bad"]}"#,
            "\n",
            r#"{"id": "b", "subset": "Focus", "prompt": "q", "chosen": [], "rejected": ["bad"]}"#,
            "\n",
            r#"{"id": "7", "subset": "Ties", "prompt": "q", "chosen": ["good"], "rejected": ["bad"]}"#,
            "\n",
            r#"{"id": "c", "subset": "Focus", "prompt": "q", "chosen": ["good"], "rejected": ["bad"], "num_correct": 5}"#,
            "\n",
        ));
        let r = evaluate(&p, &data, &EvalOptions::default()).unwrap();
        assert_eq!(r.format, "rewardbench2");
        assert_eq!(r.errors, 3);
        assert_eq!(r.errors_by_reason.0["invalid_row"], 2);
        assert_eq!(r.errors_by_reason.0["invalid_ties_id"], 1);
        assert_eq!(r.subsets[0]["subset"], "Focus");
        assert_eq!(r.subsets[0]["accuracy"].as_f64(), Some(1.0));
        // The Ties subset with no scored row has no score (null), not 0.
        assert_eq!(r.subsets[1]["accuracy"], Value::Null);
        assert_eq!(r.overall["score"].as_f64(), Some(1.0));
    }
}
