//! # string_check
//! *What it scores:* OpenAI's string check, accepted verbatim: `eq` (exactly equal), `ne` (not
//! equal), `like` (input contains reference), `ilike` (contains, ignoring case).
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `reference` (template),
//! `operation` (`eq`, `ne`, `like`, `ilike`).
//!
//! *Example:*
//! ```yaml
//! type: string_check
//! name: exact
//! input: "{{sample.output_text}}"
//! reference: "{{item.label}}"
//! operation: eq
//! ```
//!
//! *Score and failure modes:* 1 or 0. A reference that renders empty under `like`/`ilike`
//! fails with `empty_reference` (every text contains "", the classic empty-answer hack's
//! mirror image); a template field missing from the item fails with `missing_field`.

use crate::compile::{sync, At, Compiler};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::{render_pair, Template};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StringCheckSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// What it is compared with.
    pub reference: String,
    pub operation: Operation,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    Eq,
    Ne,
    Like,
    Ilike,
}

pub struct StringCheck {
    input: Template,
    reference: Template,
    op: Operation,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: StringCheckSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let reference = cx.template(&spec.reference, at, "reference");
    Some(sync(StringCheck {
        input: input?,
        reference: reference?,
        op: spec.operation,
    }))
}

impl SyncComponent for StringCheck {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let (input, reference) = match render_pair(&self.input, &self.reference, s) {
            Ok(pair) => pair,
            Err(m) => return m.outcome(cx),
        };
        let pass = match self.op {
            Operation::Eq => input == reference,
            Operation::Ne => input != reference,
            Operation::Like | Operation::Ilike if reference.is_empty() => {
                return Outcome::error(
                    "empty_reference",
                    "reference rendered empty; every text contains the empty string",
                )
            }
            Operation::Like => input.contains(&*reference),
            Operation::Ilike => input.to_lowercase().contains(&reference.to_lowercase()),
        };
        cx.note(|| {
            format!(
                "input `{}` {:?} reference `{}`: {pass}",
                shorten(&input),
                self.op,
                shorten(&reference)
            )
            .to_lowercase()
        });
        Outcome::bool(pass)
    }
}
