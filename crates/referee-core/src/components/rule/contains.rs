//! # contains
//! *What it scores:* whether the input contains keywords: `all` of them, `any` of them, or
//! `none` of them (banned words).
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `keywords` (a list of strings,
//! or a template that renders to a list or a string, e.g. `"{{item.keywords}}"`), `mode`
//! (`all`, default; `any`; `none`), `case_sensitive` (default false), `whole_word` (default
//! false: match only between word boundaries), `scoring` (`binary`, default; `fraction`: the
//! share of keywords that satisfy the mode, for partial credit).
//!
//! *Example:*
//! ```yaml
//! type: contains
//! keywords: [photosynthesis, chlorophyll]
//! mode: all
//! whole_word: true
//! ```
//!
//! *Score and failure modes:* 1 or 0 (or a fraction). An empty keyword is a compile error, and
//! a keyword list from the item that is empty or holds an empty string fails with
//! `empty_reference`: "" is contained in every text, so it would reward an empty answer.

use crate::compile::{sync, At, Compiler};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::{value_text, Template};
use aho_corasick::AhoCorasick;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContainsSpec {
    /// What is searched (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The keywords: a list, or a template rendering to a list or a string.
    pub keywords: Keywords,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub case_sensitive: bool,
    #[serde(default)]
    pub whole_word: bool,
    #[serde(default)]
    pub scoring: Scoring,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Keywords {
    List(Vec<String>),
    Template(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    All,
    Any,
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    #[default]
    Binary,
    Fraction,
}

enum Kw {
    /// Static keywords, matchers built at compile time.
    Fixed(Vec<Matcher>),
    Dynamic(Template),
}

struct Matcher {
    word: String,
    re: Option<Regex>,
    /// Whole words only, without a compiled regex (keywords that come from the item).
    whole: bool,
    /// Not case-sensitive, fixed keywords: the same test for an ASCII input as it is, so that
    /// it need not be lower-cased (a copy) first.
    folded: Option<Folded>,
}

/// `word` (lower-cased) in the lower-cased ASCII text, tested on the text as it is.
enum Folded {
    /// `word` is not ASCII, so it is never in ASCII text.
    Never,
    /// `word` anywhere, in any ASCII case.
    Substring(AhoCorasick),
    /// `\b word \b`, in any case: on ASCII text, `(?i)` folds exactly the ASCII letters.
    Word(Regex),
}

pub struct Contains {
    input: Template,
    keywords: Kw,
    mode: Mode,
    case_sensitive: bool,
    whole_word: bool,
    scoring: Scoring,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ContainsSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let keywords = match &spec.keywords {
        Keywords::List(ws) => {
            if ws.is_empty() {
                cx.err(at, Some("keywords"), "needs at least one keyword");
                return None;
            }
            let mut ok = true;
            for (i, w) in ws.iter().enumerate() {
                if w.trim().is_empty() {
                    cx.error(
                        format!("{}/{i}", at.field("keywords")),
                        Some(at.kind),
                        "empty keyword: every text contains it",
                    );
                    ok = false;
                }
            }
            if !ok {
                return None;
            }
            Kw::Fixed(
                ws.iter()
                    .map(|w| {
                        matcher(w, spec.case_sensitive, spec.whole_word)
                            .with_folded(spec.case_sensitive)
                    })
                    .collect(),
            )
        }
        Keywords::Template(t) => {
            let t = cx.template(t, at, "keywords")?;
            if t.is_literal() {
                let w = t.source().to_string();
                if w.trim().is_empty() {
                    cx.err(
                        at,
                        Some("keywords"),
                        "empty keyword: every text contains it",
                    );
                    return None;
                }
                Kw::Fixed(vec![matcher(&w, spec.case_sensitive, spec.whole_word)
                    .with_folded(spec.case_sensitive)])
            } else {
                Kw::Dynamic(t)
            }
        }
    };
    Some(sync(Contains {
        input: input?,
        keywords,
        mode: spec.mode,
        case_sensitive: spec.case_sensitive,
        whole_word: spec.whole_word,
        scoring: spec.scoring,
    }))
}

fn matcher(word: &str, case_sensitive: bool, whole_word: bool) -> Matcher {
    let word = if case_sensitive {
        word.to_string()
    } else {
        word.to_lowercase()
    };
    let re = whole_word
        .then(|| Regex::new(&format!(r"\b{}\b", regex::escape(&word))).expect("escaped keyword"));
    Matcher {
        word,
        re,
        whole: false,
        folded: None,
    }
}

/// Whether `c` is a word character for `\b` in ASCII text.
fn ascii_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `word` occurs in `text` between word boundaries, as `\bword\b` would find it.
/// Decided by hand where the bytes at each boundary are ASCII; the regex decides otherwise
/// (Unicode word characters are its business), so the answer is always the regex's.
fn found_whole(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    let (Some(&first), Some(&last)) = (word.as_bytes().first(), word.as_bytes().last()) else {
        return false;
    };
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| i + from) {
        let end = i + word.len();
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(end).copied();
        let edges = [before, Some(first), Some(last), after];
        if edges.iter().flatten().any(|c| !c.is_ascii()) {
            return Regex::new(&format!(r"\b{}\b", regex::escape(word)))
                .is_ok_and(|re| re.is_match(text));
        }
        let boundary = |x: Option<u8>, y: u8| x.is_some_and(ascii_word) != ascii_word(y);
        if boundary(before, first) && boundary(after, last) {
            return true;
        }
        // Overlapping occurrences count too: go on one character later.
        from = i + text[i..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

impl Matcher {
    fn whole(mut self, whole: bool) -> Self {
        self.whole = whole;
        self
    }

    fn found(&self, text: &str) -> bool {
        match &self.re {
            Some(re) => re.is_match(text),
            None if self.whole => found_whole(text, &self.word),
            None => text.contains(&self.word),
        }
    }

    /// Builds [`Folded`], for fixed keywords that are not case-sensitive (at compile time).
    /// Where one cannot be built, the input is lower-cased as before.
    fn with_folded(mut self, case_sensitive: bool) -> Self {
        if case_sensitive {
            return self;
        }
        self.folded = if !self.word.is_ascii() {
            Some(Folded::Never)
        } else if self.re.is_some() {
            Regex::new(&format!(r"(?i)\b{}\b", regex::escape(&self.word)))
                .ok()
                .map(Folded::Word)
        } else {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build([&self.word])
                .ok()
                .map(Folded::Substring)
        };
        self
    }
}

impl Folded {
    fn found(&self, text: &str) -> bool {
        match self {
            Folded::Never => false,
            Folded::Substring(ac) => ac.is_match(text),
            Folded::Word(re) => re.is_match(text),
        }
    }
}

impl SyncComponent for Contains {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let raw = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        // An ASCII input is searched as it is by the fixed keywords' folded matchers.
        let folded = !self.case_sensitive
            && matches!(&self.keywords, Kw::Fixed(ms) if ms.iter().all(|m| m.folded.is_some()))
            && raw.is_ascii();
        let text: Cow<'_, str> = if self.case_sensitive || folded {
            raw
        } else {
            Cow::Owned(raw.to_lowercase())
        };
        let hit = |m: &Matcher| match (&m.folded, folded) {
            (Some(f), true) => f.found(&text),
            _ => m.found(&text),
        };
        let dynamic;
        let matchers: &[Matcher] = match &self.keywords {
            Kw::Fixed(m) => m,
            Kw::Dynamic(t) => {
                let v = match t.render_value(s) {
                    Ok(v) => v,
                    Err(m) => return m.outcome(cx),
                };
                let words: Vec<String> = match &*v {
                    Value::Array(a) => a.iter().map(value_text).collect(),
                    other => vec![value_text(other)],
                };
                if words.is_empty() || words.iter().any(|w| w.trim().is_empty()) {
                    return Outcome::error(
                        "empty_reference",
                        "keyword list is empty or holds an empty keyword",
                    );
                }
                // Keywords from the item change per sample: no regex is built for them here
                // (`whole_word` is checked by hand, see `Matcher::found`).
                dynamic = words
                    .iter()
                    .map(|w| matcher(w, self.case_sensitive, false).whole(self.whole_word))
                    .collect::<Vec<_>>();
                &dynamic
            }
        };
        let found = matchers.iter().filter(|m| hit(m)).count();
        let n = matchers.len();
        let good = if self.mode == Mode::None {
            n - found
        } else {
            found
        };
        cx.note(|| {
            let hits: Vec<&str> = matchers
                .iter()
                .filter(|m| hit(m))
                .map(|m| m.word.as_str())
                .collect();
            format!("{found} of {n} keywords present: {hits:?}")
        });
        match self.scoring {
            Scoring::Fraction => Outcome::ok(good as f64 / n as f64),
            Scoring::Binary => Outcome::bool(match self.mode {
                Mode::All | Mode::None => good == n,
                Mode::Any => good > 0,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-made whole-word test gives exactly what `\bword\b` gives.
    #[test]
    fn found_whole_equals_the_regex() {
        let pieces = [
            "cat", "cats", "a", "_", "-", " ", "c", "é", "ß", "x1", ".", "\u{301}", "aa",
        ];
        let words = ["cat", "a", "aa", "-", "cat-", "é", "a a", "_c"];
        let mut x: u32 = 7;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize
        };
        let res: Vec<Regex> = words
            .iter()
            .map(|w| Regex::new(&format!(r"\b{}\b", regex::escape(w))).unwrap())
            .collect();
        for _ in 0..20_000 {
            let n = next() % 8;
            let text: String = (0..n).map(|_| pieces[next() % pieces.len()]).collect();
            for (w, re) in words.iter().zip(&res) {
                assert_eq!(
                    found_whole(&text, w),
                    re.is_match(&text),
                    "{w:?} in {text:?}"
                );
            }
        }
    }

    /// On ASCII text, the folded matchers agree with lower-casing the text.
    #[test]
    fn folded_matchers_equal_lower_casing() {
        let words = [
            "cat",
            "Cat",
            "CAT",
            "a.b",
            "x_1",
            "</Think>",
            "K",
            "\u{212a}at",
            "\u{17f}un",
            "İx",
            "é",
            "c a",
        ];
        let pieces = [
            "cat", "CAT", "cAt", "a.b", "aXb", "x_1", "</think>", "k", "sun", "ix", " ", "_", "s",
            "at", "un",
        ];
        let mut x: u32 = 17;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize
        };
        for whole_word in [false, true] {
            let ms: Vec<Matcher> = words
                .iter()
                .map(|w| matcher(w, false, whole_word).with_folded(false))
                .collect();
            for _ in 0..5_000 {
                let n = next() % 8;
                let text: String = (0..n).map(|_| pieces[next() % pieces.len()]).collect();
                let lower = text.to_lowercase();
                for m in &ms {
                    let f = m.folded.as_ref().expect("built");
                    assert_eq!(f.found(&text), m.found(&lower), "{:?} in {text:?}", m.word);
                }
            }
        }
    }
}
