//! # squad
//! *What it scores:* an extractive QA answer as SQuAD v1.1's official `evaluate-v1.1.py`
//! scores it: token F1 or exact match after `normalize_answer` (lower-case, ASCII punctuation
//! removed, the articles `a`, `an`, `the` removed as whole words, whitespace collapsed), the
//! best over one or several gold answers.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`: the answer alone; pick it out
//! of a longer text with a template over `output_json`, or grade the extraction with `regex`),
//! `reference` (template: one gold answer; an item field holding a JSON list of answers, or
//! SQuAD's `answers` object `{text: [...], answer_start: [...]}`, gives several), `metric`
//! (`f1`, default; `exact_match`).
//!
//! *Example:*
//! ```yaml
//! type: squad
//! name: squad_f1
//! reference: "{{item.answers}}"
//! metric: f1
//! ```
//!
//! *Score and failure modes:* F1 in [0,1] or exact match 1/0: `max` over the golds of the
//! script's `f1_score` / `exact_match_score`, so padding an answer with every candidate lowers
//! its precision and its F1. As in v1.1, F1 is 0 when no token is shared, even when both
//! answers normalise to nothing (exact match then gives 1). An empty output scores 0 like any
//! wrong answer. A reference list with no answer fails with `empty_reference`; one holding
//! something other than strings or numbers with `unparseable_reference`; a missing field with
//! `missing_field`.

use crate::compile::{sync, At, Compiler};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::squad::{f1_normalised, normalize_answer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SquadSpec {
    /// The answer graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// One gold answer, a JSON list of them, or SQuAD's `answers` object.
    pub reference: String,
    #[serde(default)]
    pub metric: Metric,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    #[default]
    F1,
    ExactMatch,
}

pub struct Squad {
    input: Template,
    reference: Template,
    metric: Metric,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: SquadSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let reference = cx.template(&spec.reference, at, "reference");
    Some(sync(Squad {
        input: input?,
        reference: reference?,
        metric: spec.metric,
    }))
}

/// The gold answers of a reference value.
fn golds(v: &Value) -> Result<Vec<Cow<'_, str>>, Outcome> {
    let list = match v {
        Value::String(s) => return Ok(vec![Cow::Borrowed(s.as_str())]),
        Value::Number(n) => return Ok(vec![Cow::Owned(n.to_string())]),
        Value::Array(a) => a,
        Value::Object(o) => match o.get("text") {
            Some(Value::Array(a)) => a,
            Some(Value::String(s)) => return Ok(vec![Cow::Borrowed(s.as_str())]),
            _ => {
                return Err(Outcome::error(
                    "unparseable_reference",
                    "the reference is an object without a `text` list of answers",
                ))
            }
        },
        other => {
            return Err(Outcome::error(
                "unparseable_reference",
                format!(
                    "the reference is {}, not an answer or a list of them",
                    crate::compile::kind_of(other)
                ),
            ))
        }
    };
    if list.is_empty() {
        return Err(Outcome::error(
            "empty_reference",
            "the reference lists no gold answer",
        ));
    }
    list.iter()
        .map(|g| match g {
            Value::String(s) => Ok(Cow::Borrowed(s.as_str())),
            Value::Number(n) => Ok(Cow::Owned(n.to_string())),
            other => Err(Outcome::error(
                "unparseable_reference",
                format!(
                    "a gold answer is {} `{}`, not text or a number",
                    crate::compile::kind_of(other),
                    shorten(&other.to_string())
                ),
            )),
        })
        .collect()
}

impl SyncComponent for Squad {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let reference = match self.reference.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        let golds = match golds(&reference) {
            Ok(g) => g,
            Err(o) => return o,
        };
        let answer = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let pred = normalize_answer(&answer);
        let mut best = (f64::NEG_INFINITY, 0);
        for (i, g) in golds.iter().enumerate() {
            let g = normalize_answer(g);
            let v = match self.metric {
                Metric::F1 => f1_normalised(&pred, &g),
                Metric::ExactMatch => f64::from(u8::from(pred == g)),
            };
            if v > best.0 {
                best = (v, i);
            }
        }
        cx.note(|| {
            format!(
                "answer `{}` against {} gold answer{}: best `{}`, {} {:.3}",
                shorten(&pred),
                golds.len(),
                if golds.len() == 1 { "" } else { "s" },
                shorten(&golds[best.1]),
                if self.metric == Metric::F1 {
                    "F1"
                } else {
                    "exact match"
                },
                best.0
            )
        });
        Outcome::ok(best.0)
    }
}
