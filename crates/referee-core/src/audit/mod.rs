//! Audits of a reward spec as a whole, rather than of one sample: how well it ranks preference
//! pairs and agrees with human scores (`eval`), how it differs from another spec or a label
//! column (`compare`), and how it can be gamed (`fuzz`, `perturb`). The shells read files and
//! print; the computation is here, so the CLI, the server and Python report the same numbers
//! (DESIGN.md §4).
//!
//! Every audit follows one rule about failures: a response the spec could not score (status
//! `error`, or no reward) is **counted** as an error of its row, with its reason, and the row is
//! left out of the metric it cannot enter. It is never scored 0 and never dropped unseen: the
//! reports carry `errors` next to every `n`.

pub mod compare;
pub mod eval;
pub mod fuzz;
pub mod params;
pub mod perturb;
pub mod stats;

use crate::input::{get_path, RowError};
use crate::{ScoreResult, Status};
use serde_json::{Map, Value};

/// One input row, or why the line could not be one (bad JSON), with its 1-based line number.
#[derive(Debug, Clone)]
pub struct Row {
    pub line: usize,
    pub value: Result<Value, RowError>,
}

/// Splits a data file into rows: a JSON array of rows, or JSON Lines (blank lines are not rows).
/// A line that is not JSON becomes an error row, counted by the audit, never skipped.
pub fn read_rows(text: &str) -> Vec<Row> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(trimmed) {
            return items
                .into_iter()
                .enumerate()
                .map(|(i, v)| Row {
                    line: i + 1,
                    value: Ok(v),
                })
                .collect();
        }
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Row {
            line: i + 1,
            value: serde_json::from_str(l).map_err(|e| RowError {
                reason: "invalid_json",
                message: format!("line {}: line is not valid JSON: {e}", i + 1),
            }),
        })
        .collect()
}

/// Why a response has no usable reward: a stable reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Unscored {
    pub reason: String,
    pub message: String,
}

/// The reward a result can be compared by, or why there is none. An `error` status is an error
/// even when the spec's `on_error` gave it a value: a failure must not win or lose a comparison
/// as if it had been scored. `not_applicable` without a reward, and a non-finite reward, are
/// errors too (reasons `not_applicable`, `non_finite_reward`).
pub fn usable_reward(r: &ScoreResult) -> Result<f64, Unscored> {
    match (&r.status, r.reward) {
        (Status::Error(f), _) => Err(Unscored {
            reason: f.reason.to_string(),
            message: f.message.clone(),
        }),
        (_, Some(v)) if v.is_finite() => Ok(v),
        (_, Some(v)) => Err(Unscored {
            reason: "non_finite_reward".into(),
            message: format!("the reward is {v}"),
        }),
        (Status::NotApplicable, None) => Err(Unscored {
            reason: "not_applicable".into(),
            message: "the spec did not apply to this response (no reward)".into(),
        }),
        (Status::Ok, None) => Err(Unscored {
            reason: "no_reward".into(),
            message: "the result has no reward".into(),
        }),
    }
}

/// A field of a row by dotted path, looked up at the top level and then under `item` (so the
/// same `--gold answer.score` works on flat rows and on Referee's `{item, sample}` rows).
pub fn row_field<'a>(row: &'a Value, path: &str) -> Option<&'a Value> {
    get_path(row, path)
        .filter(|v| !v.is_null())
        .or_else(|| row.get("item").and_then(|i| get_path(i, path)))
        .filter(|v| !v.is_null())
}

/// The subset a row belongs to: the field's text, or `None`.
pub fn row_subset(row: &Value, field: &str) -> Option<String> {
    row_field(row, field).map(crate::template::value_text)
}

/// Counts of errors by reason, for the reports' `errors_by_reason`.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(transparent)]
pub struct Reasons(pub std::collections::BTreeMap<String, usize>);

impl Reasons {
    pub fn add(&mut self, reason: &str) {
        *self.0.entry(reason.to_string()).or_default() += 1;
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A JSON number, or `null` for an undefined metric (never a made-up 0).
pub(crate) fn num(v: Option<f64>) -> Value {
    v.and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// An object with the given keys in order.
pub(crate) fn obj(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_from_jsonl_and_arrays() {
        let rows = read_rows("{\"a\":1}\n\n{bad\n{\"a\":2}\n");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].line, 1);
        assert_eq!(rows[1].line, 3);
        assert_eq!(rows[1].value.as_ref().unwrap_err().reason, "invalid_json");
        assert_eq!(rows[2].value.as_ref().unwrap()["a"], 2);
        let rows = read_rows("[{\"a\":1}, {\"a\":2}]");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].line, 2);
    }

    #[test]
    fn fields_under_item_too() {
        let row = json!({"item": {"gold": 0.5, "subset": "math"}, "score": 2});
        assert_eq!(row_field(&row, "gold"), Some(&json!(0.5)));
        assert_eq!(row_field(&row, "score"), Some(&json!(2)));
        assert_eq!(row_subset(&row, "subset").as_deref(), Some("math"));
        assert_eq!(row_field(&row, "missing"), None);
    }

    #[test]
    fn failures_are_never_rewards() {
        let mut r = ScoreResult::input_error("missing_field", "no gold".into());
        r.reward = Some(0.0); // as if `on_error: 0`
        assert_eq!(usable_reward(&r).unwrap_err().reason, "missing_field");
        r.status = Status::Ok;
        r.reward = Some(f64::NAN);
        assert_eq!(usable_reward(&r).unwrap_err().reason, "non_finite_reward");
        r.reward = None;
        r.status = Status::NotApplicable;
        assert_eq!(usable_reward(&r).unwrap_err().reason, "not_applicable");
        r.status = Status::Ok;
        r.reward = Some(0.25);
        assert_eq!(usable_reward(&r), Ok(0.25));
    }
}
