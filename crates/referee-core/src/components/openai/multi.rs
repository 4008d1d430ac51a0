//! # multi
//! *What it scores:* OpenAI's multi grader, accepted verbatim: named sub-graders combined by a
//! `calculate_output` formula over their names (`+ - * / ^`, parentheses, `min max abs floor
//! ceil exp sqrt log`).
//!
//! *Spec:* `graders` (a map from variable name to grader; each name is also the key of that
//! sub-grader in `components`), `calculate_output` (formula).
//!
//! *Example:*
//! ```yaml
//! type: multi
//! graders:
//!   name: {type: text_similarity, input: "{{sample.output_json.name}}", reference: "{{item.name}}", evaluation_metric: fuzzy_match}
//!   email: {type: string_check, input: "{{sample.output_json.email}}", reference: "{{item.email}}", operation: eq}
//! calculate_output: "(name + email) / 2"
//! ```
//!
//! *Score and failure modes:* the formula's value. A formula that divides by zero or takes the
//! log of 0 fails with `non_finite`; a sub-grader that failed without `on_error` fails the
//! node with its reason (OpenAI reports these as errors too). Compile errors: formula syntax,
//! unknown variables (with suggestions), sub-graders named like a formula function.

use crate::compile::{escape, sync, At, Child, Compiler};
use crate::formula::Formula;
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiSpec {
    /// Sub-graders by variable name.
    pub graders: BTreeMap<String, Child>,
    /// The formula combining them.
    pub calculate_output: String,
}

pub struct Multi {
    children: Vec<Node>,
    formula: Formula,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: MultiSpec = cx.spec(v, at)?;
    // Keep the spec's key order (serde_json preserves it) rather than BTreeMap's.
    let order: Vec<&str> = v
        .get("graders")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut children = Vec::new();
    let mut ok = true;
    for name in &order {
        let path = format!("{}/{}", at.field("graders"), escape(name));
        if !is_identifier(name) {
            cx.error(
                path.clone(),
                Some(at.kind),
                format!(
                    "sub-grader name `{name}` is not a formula identifier ([A-Za-z_][A-Za-z0-9_]*)"
                ),
            );
            ok = false;
        }
        match cx.node_named(&spec.graders[*name].0, &path, Some(name)) {
            Some(n) => children.push(n),
            None => ok = false,
        }
    }
    if order.is_empty() {
        cx.err(at, Some("graders"), "needs at least one sub-grader");
        ok = false;
    }
    let formula = match Formula::parse(&spec.calculate_output, &order) {
        Ok(f) => Some(f),
        Err(errs) => {
            for e in errs {
                cx.err(at, Some("calculate_output"), format!("formula error {e}"));
            }
            None
        }
    };
    let formula = formula?;
    ok.then(|| sync(Multi { children, formula }))
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

impl SyncComponent for Multi {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let mut values = [0.0f64; 16];
        let mut heap;
        let vals: &mut [f64] = if self.children.len() <= 16 {
            &mut values[..self.children.len()]
        } else {
            heap = vec![0.0; self.children.len()];
            &mut heap
        };
        let mut st = StatusAcc::default();
        let mut failed = None;
        for (i, c) in self.children.iter().enumerate() {
            let o = c.eval(s, cx);
            if o.usable() {
                st.add(&o);
                vals[i] = o.value;
            } else if failed.is_none() {
                failed = Some(if o.is_error() {
                    crate::components::combinator::propagate(c, o)
                } else {
                    Outcome::error(
                        "invalid_variable",
                        format!(
                            "sub-grader `{}` did not apply, so the formula has no value for it",
                            c.meta.name.as_deref().unwrap_or("?")
                        ),
                    )
                });
            }
        }
        if let Some(o) = failed {
            return o;
        }
        let v = self.formula.eval(vals);
        if !v.is_finite() {
            return Outcome::error("non_finite", format!("calculate_output computed {v}"));
        }
        st.finish(v)
    }
    fn children(&self) -> Vec<&Node> {
        self.children.iter().collect()
    }
}
