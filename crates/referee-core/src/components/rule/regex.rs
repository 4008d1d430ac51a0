//! # regex
//! *What it scores:* a regular expression against the input, in one of three modes:
//! `match` (1 when the pattern is found), `forbid` (1 when it is *not* found: banned phrases,
//! "Thought process:" master keys), `extract` (the captured answer must equal `reference`).
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `pattern` (Rust regex syntax,
//! linear time: no backtracking blow-ups on hostile text), `mode` (`match`, default; `forbid`;
//! `extract`), `case_insensitive` (default false). For `extract`: `reference` (template),
//! `group` (capture name or number; default the group named `answer`, else group 1, else the
//! whole match), `occurrence` (`unique`, default: every match must extract the same answer;
//! `first`; `last`), `compare` (`trim`, default; `exact`; `ignore_case`).
//!
//! *Example:*
//! ```yaml
//! type: regex
//! mode: extract
//! pattern: "Answer:\\s*(?P<answer>[^\\n]+)"
//! reference: "{{item.answer}}"
//! ```
//!
//! *Score and failure modes:* 1 or 0. With `occurrence: unique`, two matches extracting
//! different answers score 0 (answer spraying); no match scores 0 (the policy gave no answer:
//! wrong, not a grader failure). A capture group that does not exist in the pattern is a compile
//! error.

use crate::compile::{sync, At, Compiler};
use crate::node::shorten;
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexSpec {
    /// What is searched (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The regular expression.
    pub pattern: String,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub case_insensitive: bool,
    /// `extract` only: what the captured answer must equal.
    #[serde(default)]
    pub reference: Option<String>,
    /// `extract` only: capture group name or number.
    #[serde(default)]
    pub group: Option<GroupRef>,
    /// `extract` only: which match counts.
    #[serde(default)]
    pub occurrence: Occurrence,
    /// `extract` only: how the captured answer is compared with the reference.
    #[serde(default)]
    pub compare: Compare,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Match,
    Forbid,
    Extract,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GroupRef {
    Index(usize),
    Name(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Occurrence {
    #[default]
    Unique,
    First,
    Last,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    #[default]
    Trim,
    Exact,
    IgnoreCase,
}

impl Compare {
    pub fn eq(self, a: &str, b: &str) -> bool {
        match self {
            Compare::Exact => a == b,
            Compare::Trim => a.trim() == b.trim(),
            Compare::IgnoreCase => a.trim().to_lowercase() == b.trim().to_lowercase(),
        }
    }
}

pub struct RegexGrader {
    input: Template,
    re: Regex,
    mode: Mode,
    reference: Option<Template>,
    group: usize,
    occurrence: Occurrence,
    compare: Compare,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: RegexSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let re = cx.regex(&spec.pattern, at, "pattern", spec.case_insensitive)?;
    let mut ok = true;
    let reference = match (&spec.reference, spec.mode) {
        (Some(r), Mode::Extract) => cx.template(r, at, "reference"),
        (None, Mode::Extract) => {
            cx.err(
                at,
                Some("reference"),
                "`mode: extract` needs a `reference` to compare the captured answer with",
            );
            ok = false;
            None
        }
        (Some(_), _) => {
            cx.err(
                at,
                Some("reference"),
                "`reference` is only used with `mode: extract`",
            );
            ok = false;
            None
        }
        (None, _) => None,
    };
    let group = match &spec.group {
        None => re
            .capture_names()
            .position(|n| n == Some("answer"))
            .unwrap_or(usize::from(re.captures_len() > 1)),
        Some(GroupRef::Index(i)) if *i < re.captures_len() => *i,
        Some(GroupRef::Index(i)) => {
            cx.err(
                at,
                Some("group"),
                format!(
                    "the pattern has no capture group {i} (it has {})",
                    re.captures_len() - 1
                ),
            );
            ok = false;
            0
        }
        Some(GroupRef::Name(n)) => {
            if let Some(i) = re.capture_names().position(|x| x == Some(n.as_str())) {
                i
            } else {
                cx.err(
                    at,
                    Some("group"),
                    format!("the pattern has no capture group named `{n}`"),
                );
                ok = false;
                0
            }
        }
    };
    let input = input?;
    ok.then(|| {
        sync(RegexGrader {
            input,
            re,
            mode: spec.mode,
            reference,
            group,
            occurrence: spec.occurrence,
            compare: spec.compare,
        })
    })
}

impl SyncComponent for RegexGrader {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        match self.mode {
            Mode::Match => {
                let found = self.re.is_match(&text);
                cx.note(|| format!("pattern {}", if found { "found" } else { "not found" }));
                Outcome::bool(found)
            }
            Mode::Forbid => {
                let found = self.re.find(&text);
                cx.note(|| match found {
                    Some(m) => format!("forbidden text `{}` found", shorten(m.as_str())),
                    None => "no forbidden text".into(),
                });
                Outcome::bool(found.is_none())
            }
            Mode::Extract => {
                let reference = match self.reference.as_ref().map(|r| r.render(s)) {
                    Some(Ok(r)) => r,
                    Some(Err(m)) => return m.outcome(cx),
                    None => return Outcome::error("internal", "extract without reference"),
                };
                let mut answers = self
                    .re
                    .captures_iter(&text)
                    .filter_map(|c| c.get(self.group).map(|m| m.as_str()));
                let answer = match self.occurrence {
                    Occurrence::First => answers.next(),
                    Occurrence::Last => answers.last(),
                    Occurrence::Unique => {
                        let first = answers.next();
                        if let Some(f) = first {
                            if let Some(other) = answers.find(|a| !self.compare.eq(a, f)) {
                                cx.note(|| {
                                    format!(
                                        "several different answers: `{}` and `{}`",
                                        shorten(f),
                                        shorten(other)
                                    )
                                });
                                return Outcome::ok(0.0);
                            }
                        }
                        first
                    }
                };
                let Some(answer) = answer else {
                    cx.note(|| "no answer found".into());
                    return Outcome::ok(0.0);
                };
                let pass = self.compare.eq(answer, &reference);
                cx.note(|| {
                    format!(
                        "extracted `{}`, reference `{}`: {}",
                        shorten(answer),
                        shorten(&reference),
                        if pass { "equal" } else { "different" }
                    )
                });
                Outcome::bool(pass)
            }
        }
    }
}
