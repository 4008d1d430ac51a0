//! Lists read from a policy's text or a row's field, for `set_match` and `ranking`: a JSON
//! array, lines, list items, a delimiter, or every match of a regex. Shared spec types and the
//! reader; the graders decide what an unreadable list means on each side.

use crate::compile::{At, Compiler};
use crate::template::Template;
use crate::text::matching::{split, Unit};
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// How a text is read as a list.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ExtractSpec {
    /// The whole text is one JSON array (strings and numbers; other elements are items that
    /// match nothing).
    #[default]
    Json,
    /// One item per non-empty line.
    Lines,
    /// Markdown or numbered list items (`-`, `*`, `1.`, `(a)` ...), markers removed; a text
    /// without markers is read as lines.
    List,
    /// Items separated by this string (`{delimiter: ","}`).
    Delimiter(String),
    /// Every match of this regex (`{regex: "<li>(.*?)</li>"}`): the group named `item`, else
    /// group 1, else the whole match.
    Regex(String),
}

/// What a list grader reads, compiled: the graded text and the reference, how each is read as
/// a list, and the most items either may hold.
pub struct Sides {
    pub input: Template,
    pub reference: Template,
    pub extract: Extract,
    pub reference_extract: Extract,
    pub max_items: usize,
}

impl Sides {
    /// The fields `set_match` and `ranking` share (`input`, `reference`, `extract`,
    /// `reference_extract`, default: as `extract`; `max_items`), every bad one reported.
    pub fn compile(
        cx: &mut Compiler,
        at: &At,
        input: Option<&str>,
        reference: &str,
        extract: &ExtractSpec,
        reference_extract: Option<&ExtractSpec>,
        max_items: Option<usize>,
    ) -> Option<Sides> {
        let input = cx.input(input, at);
        let reference = cx.template(reference, at, "reference");
        let extract_c = Extract::compile(extract, cx, at, "extract");
        let reference_extract = Extract::compile(
            reference_extract.unwrap_or(extract),
            cx,
            at,
            "reference_extract",
        );
        if max_items == Some(0) {
            cx.err(at, Some("max_items"), "`max_items` must be at least 1");
            return None;
        }
        Some(Sides {
            input: input?,
            reference: reference?,
            extract: extract_c?,
            reference_extract: reference_extract?,
            max_items: max_items.unwrap_or(MAX_ITEMS),
        })
    }
}

/// A compiled [`ExtractSpec`].
pub enum Extract {
    Json,
    Lines,
    List,
    Delimiter(String),
    Regex(Regex, usize),
}

impl Extract {
    pub fn compile(spec: &ExtractSpec, cx: &mut Compiler, at: &At, field: &str) -> Option<Self> {
        Some(match spec {
            ExtractSpec::Json => Extract::Json,
            ExtractSpec::Lines => Extract::Lines,
            ExtractSpec::List => Extract::List,
            ExtractSpec::Delimiter(d) if d.is_empty() => {
                cx.err(at, Some(field), "the delimiter is empty");
                return None;
            }
            ExtractSpec::Delimiter(d) => Extract::Delimiter(d.clone()),
            ExtractSpec::Regex(p) => {
                let re = cx.regex(p, at, field, false)?;
                let group = re
                    .capture_names()
                    .position(|n| n == Some("item"))
                    .unwrap_or(usize::from(re.captures_len() > 1));
                Extract::Regex(re, group)
            }
        })
    }

    fn describe(&self) -> &'static str {
        match self {
            Extract::Json => "a JSON array",
            Extract::Lines => "lines",
            Extract::List => "list items",
            Extract::Delimiter(_) => "delimited items",
            Extract::Regex(..) => "regex matches",
        }
    }
}

/// One list element: its text (trimmed), or, for a JSON element that is neither a string nor
/// a number, its compact JSON with `scalar: false`.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub text: String,
    pub scalar: bool,
}

/// Reads `v` as a list: a JSON array as it is, a string with `ex`. Items are trimmed and empty
/// ones dropped. `Err` says why it is not a list.
pub fn read(v: &Value, ex: &Extract) -> Result<Vec<Item>, String> {
    match v {
        Value::Array(a) => Ok(elements(a)),
        Value::String(s) => read_text(s, ex),
        other => Err(format!(
            "expected {}, found {}",
            ex.describe(),
            crate::compile::kind_of(other)
        )),
    }
}

fn elements(a: &[Value]) -> Vec<Item> {
    a.iter()
        .filter_map(|e| match e {
            Value::String(s) => text_item(s),
            Value::Number(n) => Some(Item {
                text: n.to_string(),
                scalar: true,
            }),
            other => Some(Item {
                text: other.to_string(),
                scalar: false,
            }),
        })
        .collect()
}

fn text_item(s: &str) -> Option<Item> {
    let t = s.trim();
    (!t.is_empty()).then(|| Item {
        text: t.to_string(),
        scalar: true,
    })
}

fn read_text(s: &str, ex: &Extract) -> Result<Vec<Item>, String> {
    Ok(match ex {
        Extract::Json => match serde_json::from_str::<Value>(s.trim()) {
            Ok(Value::Array(a)) => elements(&a),
            Ok(other) => {
                return Err(format!(
                    "expected a JSON array, found {}",
                    crate::compile::kind_of(&other)
                ))
            }
            Err(e) => return Err(format!("not JSON: {e}")),
        },
        Extract::Lines => split(s, Unit::Lines)
            .into_iter()
            .filter_map(text_item)
            .collect(),
        Extract::List => split(s, Unit::Items)
            .into_iter()
            .filter_map(text_item)
            .collect(),
        Extract::Delimiter(d) => s.split(d.as_str()).filter_map(text_item).collect(),
        Extract::Regex(re, g) => re
            .captures_iter(s)
            .filter_map(|c| c.get(*g).and_then(|m| text_item(m.as_str())))
            .collect(),
    })
}

/// `max_items` default: lists longer than this are not matched.
pub const MAX_ITEMS: usize = 1000;

/// At most this many items of each kind are listed in a trace's detail.
pub const SHOWN: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(r: Result<Vec<Item>, String>) -> Vec<String> {
        r.unwrap().into_iter().map(|i| i.text).collect()
    }

    #[test]
    fn reads_every_shape() {
        let s = |t: &str| Value::String(t.into());
        assert_eq!(
            texts(read(&s(r#" ["a", " b ", 3, ""] "#), &Extract::Json)),
            ["a", "b", "3"]
        );
        assert_eq!(
            texts(read(&s("a\n\n b \r\nc"), &Extract::Lines)),
            ["a", "b", "c"]
        );
        assert_eq!(
            texts(read(&s("- a\n- b\n1. c"), &Extract::List)),
            ["a", "b", "c"]
        );
        assert_eq!(
            texts(read(&s("a, b,,c,"), &Extract::Delimiter(",".into()))),
            ["a", "b", "c"]
        );
        let re = Regex::new("<(?P<item>[^>]*)>").unwrap();
        assert_eq!(
            texts(read(&s("<x> <y> <>"), &Extract::Regex(re, 1))),
            ["x", "y"]
        );
        let items = read(&json!(["a", {"x": 1}, [1], null, true]), &Extract::Json).unwrap();
        assert_eq!(items.iter().filter(|i| !i.scalar).count(), 4);
    }

    #[test]
    fn non_lists_are_errors() {
        assert!(read(&json!("{\"a\": 1}"), &Extract::Json).is_err());
        assert!(read(&json!("[1,"), &Extract::Json).is_err());
        assert!(read(&json!(5), &Extract::Lines).is_err());
    }
}
