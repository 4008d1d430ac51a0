//! What one row asks to be scored: its responses turned into samples (appended to the batch)
//! and a plan saying which samples are the row's and how its format reads their rewards.

use super::ties::TieKind;
use super::{best_of_n, rewardbench, rewardbench2, scores, steps};
use super::{row_subset, EvalFormat, EvalOptions, Row};
use crate::input::{InputMapping, RowError, RowFormat};
use crate::Sample;
use serde_json::{json, Map, Value};

/// What one row asks to be scored, before scoring.
pub(super) struct Plan {
    pub(super) subset: Option<String>,
    /// The row's responses are `samples[range]`.
    pub(super) range: std::ops::Range<usize>,
    pub(super) kind: PlanKind,
}

pub(super) enum PlanKind {
    Pair,
    Bo4 {
        num_correct: usize,
        ties: Option<(TieKind, String)>,
    },
    Gold(f64),
    BestOf(Vec<bool>),
    Steps(steps::StepLabels),
}

/// Appends a row's responses to the batch as samples, dropping the given fields from the row's
/// `item` (see `response_sample`).
pub(super) type Push<'a> = dyn FnMut(&[&Value], &[&str]) -> Result<(), RowError> + 'a;

pub(super) fn row_err(reason: &'static str, message: impl Into<String>) -> RowError {
    RowError {
        reason,
        message: message.into(),
    }
}

/// The prompt as a conversation, for samples' `messages`: a string is one user turn; a list of
/// messages is kept.
fn conversation(prompt: Option<&Value>, response: &str) -> Option<Value> {
    let mut msgs = match prompt? {
        Value::String(p) => vec![json!({"role": "user", "content": p})],
        Value::Array(m) if m.iter().all(Value::is_object) => m.clone(),
        _ => return None,
    };
    msgs.push(json!({"role": "assistant", "content": response}));
    Some(Value::Array(msgs))
}

/// One response of a preference or best-of-N row as a sample: `item` is the row without its
/// response fields (so `prompt` and every other column are `item.<name>`), the output is the
/// response (text, or chat messages whose last assistant turn is taken), and `messages` is the
/// prompt followed by the response.
fn response_sample(
    row: &Map<String, Value>,
    drop: &[&str],
    response: &Value,
) -> Result<Sample, RowError> {
    let mut m = row.clone();
    for k in drop {
        m.remove(*k);
    }
    m.insert("completion".into(), response.clone());
    let mapping = InputMapping {
        format: RowFormat::Trl,
        ..InputMapping::default()
    };
    let mut s = mapping.sample(Value::Object(m))?;
    if s.messages.is_none() {
        s.messages = conversation(row.get("prompt"), &s.output_text);
    }
    s.group = None;
    Ok(s)
}

fn as_object(row: &Row) -> Result<&Map<String, Value>, RowError> {
    match &row.value {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(row_err(
            "invalid_row",
            format!("line {}: row is not a JSON object", row.line),
        )),
        Err(e) => Err(e.clone()),
    }
}

/// Turns one row into samples and a plan, for the given format.
pub(super) fn plan_row(
    row: &Row,
    format: EvalFormat,
    opts: &EvalOptions,
    samples: &mut Vec<Sample>,
) -> Result<Plan, RowError> {
    let line = row.line;
    let obj = as_object(row)?;
    let value = row.value.as_ref().expect("an object");
    let subset = row_subset(value, &opts.subset);
    let start = samples.len();
    let mut push_all = |responses: &[&Value], drop: &[&str]| -> Result<(), RowError> {
        for r in responses {
            let s = response_sample(obj, drop, r).map_err(|e| RowError {
                reason: e.reason,
                message: format!("line {line}: {}", e.message),
            })?;
            samples.push(s);
        }
        Ok(())
    };
    let kind = match format {
        EvalFormat::RewardBench | EvalFormat::Auto => rewardbench::plan(obj, line, &mut push_all)?,
        EvalFormat::RewardBench2 => {
            rewardbench2::plan(obj, line, subset.as_deref(), &mut push_all)?
        }
        EvalFormat::Scores => scores::plan(value, line, opts, samples)?,
        EvalFormat::BestOfN => best_of_n::plan(value, line, opts, &mut push_all)?,
        EvalFormat::Steps => steps::plan(value, line, opts, &mut push_all)?,
    };
    Ok(Plan {
        subset,
        range: start..samples.len(),
        kind,
    })
}
