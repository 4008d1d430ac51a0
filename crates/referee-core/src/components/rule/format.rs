//! # format
//! *What it scores:* the tag structure of a reasoning output, R1-style: `<think>…</think>`
//! then `<answer>…</answer>`, or your own tags.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`); `style`:
//! - `r1` (default): exactly one `<think>…</think>` followed by exactly one
//!   `<answer>…</answer>`, nothing but whitespace outside them, both contents non-empty;
//! - `think`: exactly one `<think>…</think>` at the start (its contents may be empty) followed by
//!   a non-empty answer text (TRL's `think_format_reward`, plus the non-empty answer);
//! - `tags`: your tags, `tags: [reasoning, answer]`, each exactly once, in that order, with the
//!   rules of `r1` (giving `tags` implies `style: tags`).
//!
//! `strict_newlines` (default false): require open-r1's exact layout,
//! `<think>\n…\n</think>\n<answer>\n…\n</answer>` (one optional final newline), instead of any
//! whitespace. `scoring`: `binary` (default) or `per_tag`: open-r1's `tag_count`, 1/(2·tags)
//! for each of the open and close tag tokens that occurs exactly once (0.25 each for
//! `think`/`answer`; with `strict_newlines` the tokens include their newlines, `<think>\n`,
//! `\n</think>\n`, `\n<answer>\n`, `\n</answer>`). `per_tag` is partial credit for shaping: it
//! checks neither order nor contents.
//!
//! A tag written another way (`<Answer>`, `< answer >`, `<answer id=1>`, `<answer/>`) counts as
//! an occurrence of that tag but never as the tag itself, so it makes the structure fail. If your
//! chat template puts `<think>` in the prompt, grade `input: "<think>{{sample.output_text}}"`.
//!
//! *Example:*
//! ```yaml
//! type: format
//! style: r1
//! strict_newlines: true
//! ```
//!
//! *Score and failure modes:* `binary`: 1 or 0; a missing, repeated, unclosed, misordered or
//! nested tag, text outside the tags, or an empty content scores 0, with the reason in the
//! trace. `per_tag`: a multiple of 1/(2·tags) in [0, 1]. Never fails at runtime; bad tag names
//! are compile errors.

use crate::compile::{sync, At, Compiler};
use crate::components::rule::scan::{is_space, skip_space, Unsure};
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
pub struct FormatSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// `r1` (default), `think`, or `tags`.
    #[serde(default)]
    pub style: Option<FormatStyle>,
    /// `style: tags`: the tag names, in order.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Require open-r1's exact newline layout.
    #[serde(default)]
    pub strict_newlines: bool,
    #[serde(default)]
    pub scoring: FormatScoring,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FormatStyle {
    R1,
    Think,
    Tags,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FormatScoring {
    #[default]
    Binary,
    PerTag,
}

/// At most this many tags (they are tracked on the stack while scoring).
const MAX_TAGS: usize = 8;

pub struct Format {
    input: Template,
    tags: Vec<String>,
    /// `style: think`: one tag, then free answer text.
    think: bool,
    strict: bool,
    scoring: FormatScoring,
    /// Every way of writing any of the tags: `<x>`, `</x>`, `< X attr>`, `<x/>`. The
    /// definition of an occurrence; [`Format::next_tag`] finds the same matches faster and
    /// defers to it where non-ASCII text makes the answer unclear.
    re: Regex,
    /// `per_tag` with `strict_newlines`: the exact open and close token of each tag.
    strict_tokens: Vec<(String, String)>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: FormatSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let style = spec.style.unwrap_or(if spec.tags.is_some() {
        FormatStyle::Tags
    } else {
        FormatStyle::R1
    });
    let tags: Vec<String> = match (style, spec.tags) {
        (FormatStyle::R1, None) => vec!["think".into(), "answer".into()],
        (FormatStyle::Think, None) => vec!["think".into()],
        (FormatStyle::Tags, Some(ts)) => {
            let mut ok = !ts.is_empty() && ts.len() <= MAX_TAGS;
            if !ok {
                cx.err(
                    at,
                    Some("tags"),
                    format!("needs 1 to {MAX_TAGS} tag names, found {}", ts.len()),
                );
            }
            for (i, t) in ts.iter().enumerate() {
                let valid = t.starts_with(|c: char| c.is_ascii_alphabetic())
                    && t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !valid {
                    cx.error(
                        format!("{}/{i}", at.field("tags")),
                        Some(at.kind),
                        format!(
                            "`{t}` is not a tag name (a letter, then letters, digits, `_` or `-`)"
                        ),
                    );
                    ok = false;
                } else if ts[..i].iter().any(|o| o.eq_ignore_ascii_case(t)) {
                    cx.error(
                        format!("{}/{i}", at.field("tags")),
                        Some(at.kind),
                        format!("tag `{t}` is listed twice"),
                    );
                    ok = false;
                }
            }
            if !ok {
                return None;
            }
            ts
        }
        (FormatStyle::Tags, None) => {
            cx.err(
                at,
                Some("tags"),
                "`style: tags` needs `tags`, e.g. `[reasoning, answer]`",
            );
            return None;
        }
        (_, Some(_)) => {
            cx.err(at, Some("tags"), "`tags` is only used with `style: tags`");
            return None;
        }
    };
    let re = cx.regex(&tag_pattern(&tags), at, "tags", false)?;
    let last = tags.len() - 1;
    let think = style == FormatStyle::Think;
    let strict_tokens = tags
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let open = if i == 0 {
                format!("<{t}>\n")
            } else {
                format!("\n<{t}>\n")
            };
            let close = if i == last && !think {
                format!("\n</{t}>")
            } else {
                format!("\n</{t}>\n")
            };
            (open, close)
        })
        .collect();
    Some(sync(Format {
        input: input?,
        tags,
        think,
        strict: spec.strict_newlines,
        scoring: spec.scoring,
        re,
        strict_tokens,
    }))
}

/// The regex of every way of writing any of `tags`.
fn tag_pattern(tags: &[String]) -> String {
    let names: Vec<String> = tags.iter().map(|t| regex::escape(t)).collect();
    format!(r"(?i)<\s*/?\s*(?:{})(?:[\s/][^<>\n]*)?>", names.join("|"))
}

/// What was seen of one tag: occurrences of its open and close forms, and where the exact
/// `<tag>` / `</tag>` were.
#[derive(Clone, Copy, Default)]
struct Seen {
    opens: usize,
    closes: usize,
    /// Whether each occurrence was written exactly.
    exact_open: bool,
    exact_close: bool,
    open: (usize, usize),
    close: (usize, usize),
}

impl SyncComponent for Format {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let mut seen = [Seen::default(); MAX_TAGS];
        let mut from = 0;
        while let Some((start, end)) = self.next_tag(&text, from) {
            let (i, close, exact) = self.classify(&text[start..end]);
            let x = &mut seen[i];
            if close {
                x.closes += 1;
                x.exact_close = exact && x.closes == 1;
                x.close = (start, end);
            } else {
                x.opens += 1;
                x.exact_open = exact && x.opens == 1;
                x.open = (start, end);
            }
            from = end;
        }
        let seen = &seen[..self.tags.len()];
        match self.scoring {
            FormatScoring::PerTag => {
                let share = 1.0 / (2 * self.tags.len()) as f64;
                let mut good = 0usize;
                for (i, x) in seen.iter().enumerate() {
                    let (so, sc) = &self.strict_tokens[i];
                    let open = x.opens == 1
                        && x.exact_open
                        && (!self.strict || text.matches(so.as_str()).count() == 1);
                    let close = x.closes == 1
                        && x.exact_close
                        && (!self.strict || text.matches(sc.as_str()).count() == 1);
                    good += usize::from(open) + usize::from(close);
                }
                cx.note(|| {
                    format!(
                        "{good} of {} tag tokens occur exactly once",
                        2 * self.tags.len()
                    )
                });
                Outcome::ok(good as f64 * share)
            }
            FormatScoring::Binary => match self.check(&text, seen) {
                Ok(()) => {
                    cx.note(|| "well formed".into());
                    Outcome::ok(1.0)
                }
                Err(why) => {
                    cx.note(|| self.describe(&why));
                    Outcome::ok(0.0)
                }
            },
        }
    }
}

impl Format {
    /// A tag occurrence → (tag index, is a close tag, written exactly `<tag>` / `</tag>`).
    fn classify(&self, m: &str) -> (usize, bool, bool) {
        let inner = m[1..].trim_start();
        let close = inner.starts_with('/');
        let name = inner.trim_start_matches('/').trim_start();
        let i = self
            .tags
            .iter()
            .position(|t| {
                name.len() >= t.len()
                    && name.as_bytes()[..t.len()].eq_ignore_ascii_case(t.as_bytes())
                    && !name[t.len()..]
                        .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            })
            .unwrap_or(0);
        let t = &self.tags[i];
        let exact = if close {
            m.len() == t.len() + 3 && &m[2..m.len() - 1] == t && m.starts_with("</")
        } else {
            m.len() == t.len() + 2 && &m[1..m.len() - 1] == t
        };
        (i, close, exact)
    }

    /// The next tag occurrence at or after `from`: the span of the next match of `re`, with
    /// `from` a match end (or 0). Candidates are found with `memchr`, and ASCII ones are
    /// matched by hand; where a non-ASCII character decides (Unicode whitespace, a `K` or `ſ`
    /// that folds to a tag letter), `re` answers from that `<` on. Every occurrence starts with
    /// `<`, and each `<` passed over was rejected for certain, so the two agree.
    fn next_tag(&self, text: &str, mut from: usize) -> Option<(usize, usize)> {
        let b = text.as_bytes();
        while let Some(k) = memchr::memchr(b'<', &b[from..]) {
            let p = from + k;
            match self.tag_at(b, p) {
                Ok(Some(end)) => return Some((p, end)),
                Ok(None) => from = p + 1,
                Err(Unsure) => return self.re.find_at(text, p).map(|m| (m.start(), m.end())),
            }
        }
        None
    }

    /// Where the match of `re` at the `<` at `p` ends, if there is one, decided on ASCII
    /// bytes; `Err(Unsure)` when a non-ASCII byte is where the answer depends on it.
    fn tag_at(&self, b: &[u8], p: usize) -> Result<Option<usize>, Unsure> {
        // `<\s*/?\s*`
        let mut q = skip_space(b, p + 1)?;
        if b.get(q) == Some(&b'/') {
            q = skip_space(b, q + 1)?;
        }
        for t in &self.tags {
            let t = t.as_bytes();
            let rest = &b[q..];
            // A non-ASCII byte where a tag letter is due may be a `K` or `ſ` (case folding).
            let mismatch = t
                .iter()
                .zip(rest)
                .position(|(x, y)| !x.eq_ignore_ascii_case(y));
            match mismatch {
                Some(i) if rest[i] >= 0x80 => return Err(Unsure),
                Some(_) => continue,
                None if rest.len() < t.len() => continue,
                None => {}
            }
            // `(?:[\s/][^<>\n]*)?>`
            let a = q + t.len();
            match b.get(a) {
                Some(b'>') => return Ok(Some(a + 1)),
                Some(&c) if c == b'/' || is_space(c) => {
                    if let Some(k) = memchr::memchr3(b'<', b'>', b'\n', &b[a + 1..]) {
                        if b[a + 1 + k] == b'>' {
                            return Ok(Some(a + 2 + k));
                        }
                    }
                }
                Some(&c) if c >= 0x80 => return Err(Unsure),
                _ => {}
            }
        }
        Ok(None)
    }

    /// The binary structure check; `Err` says what is wrong (described only when explaining).
    fn check<'t>(&self, text: &'t str, seen: &[Seen]) -> Result<(), Flaw<'t>> {
        for (i, x) in seen.iter().enumerate() {
            for (close, n, exact) in [
                (false, x.opens, x.exact_open),
                (true, x.closes, x.exact_close),
            ] {
                if n == 0 {
                    return Err(Flaw::Missing(i, close));
                }
                if n > 1 {
                    return Err(Flaw::Repeated(i, close, n));
                }
                if !exact {
                    return Err(Flaw::Written(i, close));
                }
            }
        }
        let mut pos = 0;
        for (i, x) in seen.iter().enumerate() {
            let (o, c) = (x.open, x.close);
            if o.0 < pos {
                return Err(Flaw::Order(i));
            }
            let gap = &text[pos..o.0];
            let gap_ok = if self.strict {
                gap == if i == 0 { "" } else { "\n" }
            } else {
                gap.trim().is_empty()
            };
            if !gap_ok {
                return Err(Flaw::Before(i, gap));
            }
            if c.0 < o.1 {
                return Err(Flaw::CloseFirst(i));
            }
            let content = &text[o.1..c.0];
            if self.strict
                && !(content.len() >= 2 && content.starts_with('\n') && content.ends_with('\n'))
            {
                return Err(Flaw::StrictContents(i));
            }
            if content.trim().is_empty() && !self.think {
                return Err(Flaw::Empty(i));
            }
            pos = c.1;
        }
        let tail = &text[pos..];
        if self.think {
            if self.strict && !tail.starts_with('\n') {
                return Err(Flaw::NoNewlineAfterThink);
            }
            if tail.trim().is_empty() {
                return Err(Flaw::NoAnswer);
            }
        } else {
            let stray = if self.strict {
                !(tail.is_empty() || tail == "\n")
            } else {
                !tail.trim().is_empty()
            };
            if stray {
                return Err(Flaw::After(tail));
            }
        }
        Ok(())
    }

    /// The reason for the trace.
    fn describe(&self, flaw: &Flaw<'_>) -> String {
        let tag = |i: usize, close: bool| {
            let t = &self.tags[i];
            if close {
                format!("</{t}>")
            } else {
                format!("<{t}>")
            }
        };
        match *flaw {
            Flaw::Missing(i, close) => format!("`{}` is missing", tag(i, close)),
            Flaw::Repeated(i, close, n) => format!("`{}` occurs {n} times", tag(i, close)),
            Flaw::Written(i, close) => format!("`{}` is written another way", tag(i, close)),
            Flaw::Order(i) => format!("`{}` is out of order or nested", tag(i, false)),
            Flaw::Before(i, gap) if self.strict => format!(
                "strict layout: expected {} before `{}`, found `{}`",
                if i == 0 { "nothing" } else { "one newline" },
                tag(i, false),
                shorten(gap)
            ),
            Flaw::Before(i, gap) => format!(
                "text outside the tags before `{}`: `{}`",
                tag(i, false),
                shorten(gap.trim())
            ),
            Flaw::CloseFirst(i) => {
                format!("`{}` comes before `{}`", tag(i, true), tag(i, false))
            }
            Flaw::StrictContents(i) => format!(
                "strict layout: `{}` contents must start and end with a newline",
                tag(i, false)
            ),
            Flaw::Empty(i) => format!("`{}` is empty", tag(i, false)),
            Flaw::NoNewlineAfterThink => {
                "strict layout: expected a newline after `</think>`".into()
            }
            Flaw::NoAnswer => "no answer after `</think>`".into(),
            Flaw::After(tail) if self.strict => {
                format!(
                    "strict layout: text after the last tag: `{}`",
                    shorten(tail)
                )
            }
            Flaw::After(tail) => format!(
                "text outside the tags after the last one: `{}`",
                shorten(tail.trim())
            ),
        }
    }
}

/// What makes a structure fail (`binary` scoring), by tag index; `close` picks `</tag>`.
enum Flaw<'t> {
    Missing(usize, bool),
    Repeated(usize, bool, usize),
    Written(usize, bool),
    Order(usize),
    /// Text before the open tag (the gap).
    Before(usize, &'t str),
    CloseFirst(usize),
    StrictContents(usize),
    Empty(usize),
    NoNewlineAfterThink,
    NoAnswer,
    /// Text after the last tag (the tail).
    After(&'t str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;
    use serde_json::json;

    fn score(spec: &Value, out: &str) -> f64 {
        Program::compile(spec)
            .unwrap()
            .score(&Sample::new(out, json!({})))
            .reward
            .unwrap()
    }

    #[test]
    fn r1_structure() {
        let r1 = || json!({"type": "format"});
        assert_eq!(score(&r1(), "<think>hm</think>\n<answer>4</answer>"), 1.0);
        assert_eq!(score(&r1(), "  <think>hm</think><answer>4</answer>\n"), 1.0);
        for bad in [
            "",
            "<think>hm</think>",
            "<answer>4</answer><think>hm</think>",
            "<think>hm<answer>4</answer></think>",
            "<think>hm</think><answer>4</answer><answer>5</answer>",
            "<think>hm</think><answer> </answer>",
            "<think></think><answer>4</answer>",
            "x<think>hm</think><answer>4</answer>",
            "<think>hm</think>so<answer>4</answer>",
            "<think>hm</think><answer>4</answer>bye",
            "<think>hm</think><Answer>4</answer>",
            "<think>hm</think><answer id=1>4</answer>",
            "<think>hm</think><answer>4",
            "<think>hm</think><answer>4</answer></answer>",
            "<think>a</think><think>b</think><answer>4</answer>",
        ] {
            assert_eq!(score(&r1(), bad), 0.0, "{bad:?}");
        }
    }

    #[test]
    fn strict_newlines() {
        let s = || json!({"type": "format", "strict_newlines": true});
        assert_eq!(
            score(&s(), "<think>\nhm\n</think>\n<answer>\n4\n</answer>"),
            1.0
        );
        assert_eq!(
            score(&s(), "<think>\nhm\n</think>\n<answer>\n4\n</answer>\n"),
            1.0
        );
        assert_eq!(
            score(&s(), "<think>hm</think>\n<answer>\n4\n</answer>"),
            0.0
        );
        assert_eq!(
            score(&s(), "<think>\nhm\n</think>\n\n<answer>\n4\n</answer>"),
            0.0
        );
        assert_eq!(
            score(&s(), " <think>\nhm\n</think>\n<answer>\n4\n</answer>"),
            0.0
        );
        assert_eq!(
            score(&s(), "<think>\n</think>\n<answer>\n4\n</answer>"),
            0.0
        );
    }

    #[test]
    fn per_tag_matches_open_r1() {
        let p = || json!({"type": "format", "scoring": "per_tag", "strict_newlines": true});
        assert_eq!(
            score(&p(), "<think>\nhm\n</think>\n<answer>\n4\n</answer>"),
            1.0
        );
        assert_eq!(score(&p(), "<think>\nhm\n</think>\n"), 0.5);
        assert_eq!(score(&p(), "<think>hm</think><answer>4</answer>"), 0.0);
        let q = || json!({"type": "format", "scoring": "per_tag"});
        assert_eq!(score(&q(), "<answer>4</answer><think>hm</think>"), 1.0);
        assert_eq!(
            score(
                &q(),
                "<think>hm</think><answer>4</answer><answer>5</answer>"
            ),
            0.5
        );
        assert_eq!(
            score(
                &json!({"type": "format", "tags": ["a", "b", "c"], "scoring": "per_tag"}),
                "<a>x</a><b>"
            ),
            0.5
        );
    }

    #[test]
    fn think_style() {
        let t = || json!({"type": "format", "style": "think"});
        assert_eq!(score(&t(), "<think>hm</think>The answer is 4."), 1.0);
        assert_eq!(score(&t(), "<think></think>4"), 1.0);
        assert_eq!(score(&t(), "<think>hm</think>  "), 0.0);
        assert_eq!(score(&t(), "4<think>hm</think>4"), 0.0);
        assert_eq!(score(&t(), "<think>hm<think>x</think>4"), 0.0);
        assert_eq!(score(&t(), "<think>hm</think>4</think>"), 0.0);
    }

    #[test]
    fn custom_tags() {
        let c = || json!({"type": "format", "tags": ["reasoning", "answer"]});
        assert_eq!(
            score(&c(), "<reasoning>r</reasoning><answer>a</answer>"),
            1.0
        );
        assert_eq!(score(&c(), "<think>r</think><answer>a</answer>"), 0.0);
        assert_eq!(
            score(
                &c(),
                "<reasoning>r</reasoning><reasoning-x>a</reasoning-x><answer>a</answer>"
            ),
            0.0
        );
    }

    /// `next_tag` finds exactly the matches of the tag regex, Unicode corner cases included.
    #[test]
    fn tag_scan_equals_the_regex() {
        let pieces = [
            "<",
            "<",
            "/",
            ">",
            " ",
            "\n",
            "\t",
            "x",
            "=1",
            "é",
            "<think>",
            "</think>",
            "<THINK",
            "< / Think >",
            "<thin\u{212a}>",
            "<an\u{17f}wer>",
            "<think\u{a0}x>",
            "<\u{3000}think>",
            "</\u{85}think>",
            "<think/>",
            "<think id=1>",
            "<think\n>",
            "<answer>",
            "</answer",
            "<a>",
            "<ab",
            "<b-c ",
            "</a\n",
            "<a\u{a0}",
            "think",
            "answer",
            "\u{17f}",
            "\u{212a}",
            "\u{a0}",
        ];
        let mut x: u32 = 5;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as usize
        };
        let mut found = 0;
        for tags in [
            vec!["think"],
            vec!["think", "answer"],
            vec!["a", "ab", "b-c"],
        ] {
            let tags: Vec<String> = tags.into_iter().map(String::from).collect();
            let f = Format {
                input: Template::output_text(),
                re: Regex::new(&tag_pattern(&tags)).unwrap(),
                tags,
                think: false,
                strict: false,
                scoring: FormatScoring::Binary,
                strict_tokens: Vec::new(),
            };
            for _ in 0..20_000 {
                let n = next() % 12;
                let text: String = (0..n).map(|_| pieces[next() % pieces.len()]).collect();
                let want: Vec<(usize, usize)> =
                    f.re.find_iter(&text)
                        .map(|m| (m.start(), m.end()))
                        .collect();
                let mut got = Vec::new();
                let mut from = 0;
                while let Some(m) = f.next_tag(&text, from) {
                    got.push(m);
                    from = m.1;
                }
                assert_eq!(got, want, "{text:?} with {:?}", f.tags);
                found += want.len();
            }
        }
        assert!(found > 50_000, "{found}");
    }

    #[test]
    fn linear_on_hostile_input() {
        let many = "<think>".repeat(100_000);
        assert_eq!(score(&json!({"type": "format"}), &many), 0.0);
        assert_eq!(
            score(&json!({"type": "format", "scoring": "per_tag"}), &many),
            0.0
        );
    }
}
