//! # ifeval
//! *What it scores:* whether a response follows verifiable instructions ("answer in fewer than
//! 200 words", "no commas", "wrap the answer in JSON"), with the 25 checkers of Google's IFEval
//! (the same code in lm-evaluation-harness) and the extra constraints open-instruct / Tulu 3
//! train with, read from the dataset row in either the IFEval or the open-instruct format.
//!
//! *Spec:* all fields optional.
//! - `instructions` (template): where the row's instructions are. By default, auto-detected:
//!   the IFEval / Hugging Face format `item.instruction_id_list` (ids) with `item.kwargs` (one
//!   object per id; null kwargs are ignored), else open-instruct's `item.ground_truth` (or
//!   `item.label`): a JSON string **or a Python-literal string** (`str()` of a list, with single
//!   quotes, `None`, `True`) of `[{"instruction_id": [...], "kwargs": [...]}]`, or that dict
//!   alone (several dicts in the list are all checked). A template naming one value may yield
//!   any of these shapes.
//! - `format`: `auto` (default), `ifeval` (only `item.instruction_id_list`/`item.kwargs`) or
//!   `tulu` (only `item.ground_truth`/`item.label`); not allowed together with `instructions`.
//! - `mode`: `strict` (default) checks the response as is; `loose` is IFEval's loose
//!   accuracy: an instruction holds if it holds for any of 8 variants of the response (as is,
//!   without its first line, without its last line, without both; each also with every `*`
//!   removed; each variant stripped).
//! - `reward`: `instruction` (default; the fraction of instructions followed, open-instruct's
//!   RLVR reward and IFEval's instruction-level accuracy) or `prompt` (1 only when every
//!   instruction is followed: IFEval's prompt-level accuracy).
//! - `reasoning`: `strip` (default: only what follows the reasoning section is checked, with
//!   `<answer>` tags removed and the result stripped of surrounding whitespace, as open-instruct
//!   does; an unclosed reasoning section leaves no answer) or `keep`.
//! - `input` (template, default `{{sample.output_text}}`).
//!
//! The 25 checkers follow the reference where it is deterministic. Words are runs of `\w`
//! (`don't` is two); sentences are NLTK Punkt's with its English parameters; paragraphs are
//! split on `***` (`number_paragraphs`) or on blank lines (`nth_paragraph_first_word`); bullets
//! are lines starting with `*` or `-` (exact count); highlights are `*text*` or `**text**`;
//! relations are `less than` (<) and `at least` (≥). The exact rules, and every deviation
//! (no random kwargs; a few exploit fixes such as `[]` not being a placeholder; `whatlang` for
//! language identification), are in `components/rule/ifeval/checks.rs`. The 29 open-instruct
//! ids are checked by `ifeval/tulu.rs`; loose mode applies to them too.
//!
//! *Example:*
//! ```yaml
//! type: ifeval
//! mode: strict
//! reward: instruction
//! ```
//!
//! *Score and failure modes:* `instruction`: in [0, 1]; `prompt`: 1 or 0. An empty answer
//! (after stripping the reasoning) scores 0. The trace lists every instruction with its verdict
//! and a reason ("3 sentences, need at least 5"). Errors (never a silent 0): an id that is
//! neither IFEval's nor open-instruct's (`unknown_instruction`); a kwarg that is missing,
//! of the wrong type, out of range, or not taken by the checker, or a `language` Referee
//! cannot identify (`bad_instruction_kwargs`; the reference would draw a random value or
//! raise); a label that cannot be parsed, or ids and
//! kwargs of different lengths (`bad_instructions`); an empty instruction list
//! (`no_instructions`: the row has nothing to grade, which is a dataset problem, not a 0);
//! no instructions in the row at all (`missing_field`).

mod checks;
mod lang;
mod punkt;
mod pylit;
mod text;
pub mod tulu;

use crate::compile::{sync, At, Compiler};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::reasoning::{unwrap_answer_tags, Answer, Reasoning};
use checks::Check;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

/// `(instruction id, kwargs)` pairs of a row.
type Pairs<'a> = Vec<(&'a str, &'a Map<String, Value>)>;

pub use checks::IDS;

/// The 25 IFEval instruction ids, followed by the open-instruct ids ([`tulu::IDS`]).
pub fn known_ids() -> Vec<&'static str> {
    checks::IDS.iter().chain(tulu::IDS).copied().collect()
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IfevalSpec {
    /// What is checked (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// Where the row's instructions are (default: auto-detected, see `format`).
    #[serde(default)]
    pub instructions: Option<String>,
    /// `auto` (default), `ifeval` or `tulu`.
    #[serde(default)]
    pub format: Format,
    /// `strict` (default) or `loose`.
    #[serde(default)]
    pub mode: Mode,
    /// `instruction` (default: the fraction followed) or `prompt` (all must hold).
    #[serde(default)]
    pub reward: RewardKind,
    /// `strip` (default) or `keep` the reasoning section.
    #[serde(default)]
    pub reasoning: Reasoning,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    #[default]
    Auto,
    Ifeval,
    Tulu,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Strict,
    Loose,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardKind {
    #[default]
    Instruction,
    Prompt,
}

pub struct Ifeval {
    input: Template,
    instructions: Option<Template>,
    format: Format,
    mode: Mode,
    reward: RewardKind,
    reasoning: Reasoning,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: IfevalSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let instructions = spec
        .instructions
        .as_deref()
        .map(|t| cx.template(t, at, "instructions"));
    let mut ok = true;
    if spec.instructions.is_some() && spec.format != Format::Auto {
        cx.err(
            at,
            Some("format"),
            "`format` chooses where the instructions are by default; with `instructions` given it is not used",
        );
        ok = false;
    }
    let instructions = match instructions {
        Some(None) => return None,
        Some(Some(t)) => Some(t),
        None => None,
    };
    let input = input?;
    ok.then(|| {
        sync(Ifeval {
            input,
            instructions,
            format: spec.format,
            mode: spec.mode,
            reward: spec.reward,
            reasoning: spec.reasoning,
        })
    })
}

/// One instruction of a row, ready to run.
enum Inst<'a> {
    Ifeval(Check),
    /// An open-instruct id, checked by [`tulu::check`].
    Tulu(&'a Map<String, Value>),
}

struct Failure {
    reason: &'static str,
    message: String,
}

fn fail(reason: &'static str, message: impl Into<String>) -> Failure {
    Failure {
        reason,
        message: message.into(),
    }
}

/// The kwargs of an instruction stored as null or absent.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

/// The `(id, kwargs)` pairs of one constraint dict (`instruction_id_list` or `instruction_id`
/// with `kwargs`), borrowed from the row.
fn pairs_of<'a>(d: &'a Map<String, Value>, out: &mut Pairs<'a>) -> Result<(), Failure> {
    let ids = d
        .get("instruction_id_list")
        .or_else(|| d.get("instruction_id"))
        .ok_or_else(|| {
            fail(
                "bad_instructions",
                "no `instruction_id_list` or `instruction_id`",
            )
        })?;
    let ids: Vec<&str> = match ids {
        Value::String(s) => vec![s.as_str()],
        Value::Array(a) => a
            .iter()
            .map(|v| {
                v.as_str().ok_or_else(|| {
                    fail(
                        "bad_instructions",
                        format!("instruction id {v} is not a string"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        other => {
            return Err(fail(
                "bad_instructions",
                format!("instruction ids must be a list, found {other}"),
            ))
        }
    };
    let kwargs: Vec<&Map<String, Value>> = match d.get("kwargs") {
        None | Some(Value::Null) => vec![&*EMPTY; ids.len()],
        Some(Value::Object(m)) if ids.len() == 1 => vec![m],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::Null => Ok(&*EMPTY),
                Value::Object(m) => Ok(m),
                other => Err(fail(
                    "bad_instruction_kwargs",
                    format!("kwargs must be objects, found {other}"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(fail(
                "bad_instruction_kwargs",
                format!("kwargs must be a list, found {other}"),
            ))
        }
    };
    if kwargs.len() != ids.len() {
        return Err(fail(
            "bad_instructions",
            format!("{} instruction ids but {} kwargs", ids.len(), kwargs.len()),
        ));
    }
    out.extend(ids.into_iter().zip(kwargs));
    Ok(())
}

/// `v` with every label string (JSON or a Python literal) parsed, borrowed when there is none.
fn parse_labels(v: &Value, depth: u8) -> Result<Cow<'_, Value>, Failure> {
    match v {
        Value::String(s) if depth < 3 => {
            let parsed = serde_json::from_str::<Value>(s)
                .or_else(|_| pylit::parse(s))
                .map_err(|e| {
                    fail(
                        "bad_instructions",
                        format!("the instructions label is neither JSON nor a Python literal: {e}"),
                    )
                })?;
            Ok(Cow::Owned(parse_labels(&parsed, depth + 1)?.into_owned()))
        }
        Value::Array(a) if depth < 3 && a.iter().any(Value::is_string) => {
            Ok(Cow::Owned(Value::Array(
                a.iter()
                    .map(|x| parse_labels(x, depth + 1).map(Cow::into_owned))
                    .collect::<Result<_, _>>()?,
            )))
        }
        _ => Ok(Cow::Borrowed(v)),
    }
}

/// Reads the instructions from a value of any accepted shape (labels already parsed).
fn pairs_from<'a>(v: &'a Value, out: &mut Pairs<'a>, depth: u8) -> Result<(), Failure> {
    match v {
        Value::Array(a) if depth < 3 => {
            for x in a {
                pairs_from(x, out, depth + 1)?;
            }
            Ok(())
        }
        Value::Object(d) => pairs_of(d, out),
        other => Err(fail(
            "bad_instructions",
            format!(
                "expected a list of {{\"instruction_id\", \"kwargs\"}} objects, found {}",
                crate::compile::kind_of(other)
            ),
        )),
    }
}

impl Ifeval {
    /// Where the row's instructions are.
    fn locate<'a>(&'a self, s: &'a Sample, cx: &mut ScoreCtx) -> Result<Cow<'a, Value>, Outcome> {
        if let Some(t) = &self.instructions {
            return t.render_value(s).map_err(|m| m.outcome(cx));
        }
        let item = s.item.as_object();
        let get = |k: &str| item.and_then(|o| o.get(k)).filter(|v| !v.is_null());
        match (self.format, get("instruction_id_list")) {
            (Format::Auto | Format::Ifeval, Some(_)) => return Ok(Cow::Borrowed(&s.item)),
            (Format::Ifeval, None) => {
                return Err(Outcome::error(
                    "missing_field",
                    "the row has no instructions: expected `item.instruction_id_list`",
                ))
            }
            _ => {}
        }
        match get("ground_truth").or_else(|| get("label")) {
            Some(gt) => Ok(Cow::Borrowed(gt)),
            None => Err(Outcome::error(
                "missing_field",
                if self.format == Format::Tulu {
                    "the row has no instructions: expected `item.ground_truth` or `item.label`"
                } else {
                    "the row has no instructions: expected `item.instruction_id_list` (IFEval) or `item.ground_truth` / `item.label` (open-instruct)"
                },
            )),
        }
    }
}

/// IFEval's loose variants of a response (each stripped; empty ones never pass).
fn loose_variants(r: &str) -> Vec<Cow<'_, str>> {
    let lines: Vec<&str> = r.split('\n').collect();
    let n = lines.len();
    let join = |a: usize, b: usize| -> String {
        if a >= b {
            String::new()
        } else {
            text::strip(&lines[a..b].join("\n")).to_string()
        }
    };
    let first = join(1, n);
    let last = join(0, n.saturating_sub(1));
    let both = join(1, n.saturating_sub(1));
    let nostar = |s: &str| s.replace('*', "");
    vec![
        Cow::Borrowed(r),
        Cow::Owned(nostar(r)),
        Cow::Owned(nostar(&first)),
        Cow::Owned(nostar(&last)),
        Cow::Owned(nostar(&both)),
        Cow::Owned(first),
        Cow::Owned(last),
        Cow::Owned(both),
    ]
}

impl SyncComponent for Ifeval {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let raw = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let located = match self.locate(s, cx) {
            Ok(v) => v,
            Err(o) => return o,
        };
        let labels = match parse_labels(&located, 0) {
            Ok(v) => v,
            Err(f) => return Outcome::error(f.reason, f.message),
        };
        let mut pairs: Pairs<'_> = Vec::new();
        if let Err(f) = pairs_from(&labels, &mut pairs, 0) {
            return Outcome::error(f.reason, f.message);
        }
        if pairs.is_empty() {
            return Outcome::error("no_instructions", "the row's instruction list is empty");
        }
        let mut insts = Vec::with_capacity(pairs.len());
        for (id, kw) in &pairs {
            match checks::build(id, kw) {
                Some(Ok(c)) => insts.push(Inst::Ifeval(c)),
                Some(Err(e)) => return Outcome::error("bad_instruction_kwargs", e),
                // Any other id goes to the open-instruct checkers. They are asked once with
                // an empty response, so an unknown id or bad kwargs is an error even when the
                // answer turns out empty (and is then never checked).
                None => match tulu::check(id, kw, "") {
                    Some(Ok(_)) => insts.push(Inst::Tulu(kw)),
                    Some(Err(e)) => return Outcome::error("bad_instruction_kwargs", e),
                    None => {
                        return Outcome::error(
                            "unknown_instruction",
                            format!(
                                "unknown instruction id `{id}`{}",
                                crate::compile::did_you_mean(id, &known_ids())
                            ),
                        )
                    }
                },
            }
        }

        // No `<`, no tags: skip the tag scans (most outputs of non-reasoning models).
        let answer = if raw.contains('<') {
            self.reasoning.apply(&raw)
        } else {
            Answer {
                text: &raw,
                stripped: false,
                unclosed: false,
            }
        };
        let unwrapped = if self.reasoning == Reasoning::Strip {
            unwrap_answer_tags(answer.text)
        } else {
            Cow::Borrowed(answer.text)
        };
        let changed = answer.stripped || unwrapped.len() != answer.text.len();
        let text: &str = if changed {
            text::strip(&unwrapped)
        } else {
            &unwrapped
        };
        let explain = cx.explaining();
        let n = insts.len();
        let mut verdicts: Vec<(bool, Option<String>)> = Vec::with_capacity(n);
        if text::strip(text).is_empty() {
            verdicts.resize(n, (false, explain.then(|| "empty answer".to_string())));
        } else {
            let variants = match self.mode {
                Mode::Strict => vec![Cow::Borrowed(text)],
                Mode::Loose => loose_variants(text),
            };
            let mut memo = checks::Memo::default();
            for ((id, _), inst) in pairs.iter().zip(&insts) {
                // A failure is explained by the first variant tried (the answer as it is).
                let mut v: (bool, Option<String>) = (false, None);
                let mut first_why = None;
                for r in &variants {
                    if text::strip(r).is_empty() {
                        continue;
                    }
                    v = match inst {
                        Inst::Ifeval(c) => c.eval(r, explain, &mut memo),
                        Inst::Tulu(kw) => match tulu::check(id, kw, r) {
                            Some(Ok(b)) => (b, None),
                            Some(Err(e)) => return Outcome::error("bad_instruction_kwargs", e),
                            None => {
                                return Outcome::error(
                                    "unknown_instruction",
                                    format!("unknown instruction id `{id}`"),
                                )
                            }
                        },
                    };
                    if v.0 {
                        break;
                    }
                    if first_why.is_none() {
                        first_why = v.1.take();
                    }
                }
                if !v.0 {
                    v.1 = first_why;
                }
                verdicts.push(v);
            }
        }
        let passed = verdicts.iter().filter(|v| v.0).count();
        let value = match self.reward {
            RewardKind::Prompt => f64::from(u8::from(passed == n)),
            RewardKind::Instruction => passed as f64 / n as f64,
        };
        cx.note(|| {
            let mut s = format!(
                "{passed}/{n} instructions followed ({})",
                if self.mode == Mode::Loose {
                    "loose"
                } else {
                    "strict"
                }
            );
            for ((id, _), (pass, why)) in pairs.iter().zip(&verdicts) {
                if !pass {
                    let _ = match why.as_deref() {
                        Some(w) if !w.is_empty() => write!(s, "; `{id}` failed: {w}"),
                        _ => write!(s, "; `{id}` failed"),
                    };
                }
            }
            if answer.unclosed {
                s.push_str("; reasoning never closed: no answer");
            } else if answer.stripped {
                s.push_str("; reasoning section removed");
            }
            s
        });
        cx.detail(|| {
            json!({
                "instructions": pairs.iter().zip(&verdicts).map(|((id, _), (pass, why))| {
                    json!({"id": id, "pass": pass, "why": why})
                }).collect::<Vec<_>>()
            })
        });
        Outcome::ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Program;

    fn score(spec: &str, item: Value, out: &str) -> f64 {
        let p = Program::compile_str(spec).unwrap();
        p.score(&Sample::new(out, item)).reward.unwrap()
    }

    #[test]
    fn both_formats() {
        let ife = json!({"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"],
                         "kwargs": [{"num_words": null}, {}]});
        let r = score("type: ifeval", ife.clone(), "<<T>> hello world");
        assert_eq!(r, 1.0);
        let r = score("type: ifeval", ife, "hello, world");
        assert_eq!(r, 0.0);
        let tulu = json!({"ground_truth": "[{'instruction_id': ['punctuation:no_comma', 'detectable_format:title'], 'kwargs': [None, None]}]"});
        let r = score("type: ifeval", tulu, "hello, <<world>>");
        assert_eq!(r, 0.5);
    }

    #[test]
    fn loose_variants_are_eight() {
        let v = loose_variants("Sure!\n*a*\nbye");
        assert_eq!(v.len(), 8);
        assert_eq!(v[7], "*a*");
        assert_eq!(v[4], "a");
    }
}
