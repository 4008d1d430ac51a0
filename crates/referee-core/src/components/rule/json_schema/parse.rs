//! Finding the JSON in an answer and parsing it under explicit policies.
//!
//! serde_json alone is lenient where a reward must not be (a duplicated key silently keeps the
//! last value) and strict where users may want leniency (`NaN`). So a candidate is first scanned
//! by [`scan`], a small tokenizer that finds where the value ends, every duplicated key (keys
//! compared after unescaping: `"a"` and `"\u0061"` are the same key) and every bare
//! `NaN`/`Infinity`; serde_json then parses the (possibly rewritten) text.
//!
//! Most answers never take that path: [`parse_fast`] first parses them straight into the tape
//! the validator reads, and hands over to the scanner and serde_json only when the answer breaks
//! a rule or a policy has to decide (see `doc.rs`).

use super::doc::Doc;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

/// Where the JSON is looked for in the answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Extract {
    /// `whole` when the answer is JSON; else, with code fences, the fenced blocks and any object
    /// in the prose around them; else `search`.
    #[default]
    Auto,
    /// The whole answer (surrounding whitespace aside) is one JSON value.
    Whole,
    /// The contents of ```` ```json ```` (or unlabelled) code fences; prose around them is ignored.
    Fenced,
    /// Every top-level JSON object found in the prose (arrays when there is no object).
    Search,
}

/// What to do when several JSON values are found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Multiple {
    /// Several values are an answer that hedges: score 0.
    #[default]
    Reject,
    First,
    Last,
}

/// A key that appears twice in one object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DuplicateKeys {
    /// The JSON is invalid (RFC 8259 says names *should* be unique; parsers disagree on which
    /// value wins, so a duplicate can show the validator one value and the consumer another).
    #[default]
    Reject,
    /// The last value wins (serde_json, Python's `json`, JavaScript).
    LastWins,
}

/// Bare `NaN`, `Infinity`, `-Infinity` (Python's `json.dumps` writes them; JSON does not allow them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NanInfinity {
    /// The JSON is invalid.
    #[default]
    Reject,
    /// Read as `null`, as JavaScript's `JSON.stringify` writes them.
    Null,
}

/// Non-space text after the value (in `whole` mode and inside a fence).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrailingText {
    #[default]
    Reject,
    /// Ignored, like Python's `JSONDecoder.raw_decode`.
    Allow,
}

#[derive(Debug, Clone, Copy)]
pub struct Policies {
    pub extract: Extract,
    pub multiple: Multiple,
    pub duplicate_keys: DuplicateKeys,
    pub nan_infinity: NanInfinity,
    pub trailing_text: TrailingText,
}

#[cfg(test)]
thread_local! {
    /// Tests turn the fast path off to compare it with the path it short-cuts.
    static SLOW_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The fast path (see `doc.rs`): `None` leaves the value to the scanner and serde_json.
fn parse_fast(t: &str) -> Option<(Doc, usize)> {
    #[cfg(test)]
    if SLOW_ONLY.get() {
        return None;
    }
    super::doc::parse_fast(t)
}

/// Why no JSON value could be taken from the answer: the policy's fault, so it scores 0.
#[derive(Debug, Clone, PartialEq)]
pub struct NoJson(pub String);

/// How many `{`/`[` positions `search` tries: bounds the work on hostile text such as
/// thousands of unterminated `{"` openers.
const SEARCH_TRIES: usize = 256;

/// The code fences of a text: for each, the byte range of the whole fence and of its
/// contents. An opening fence is a line of ```` ``` ```` with an empty, `json`, `JSON`, `jsonc` or
/// `json5` info string (spaces around allowed); it closes at the next line starting with
/// ```` ``` ```` (indentation allowed). An unclosed fence is not a fence. A line scanner rather
/// than a capturing regex: this runs on every answer that is not bare JSON.
type Fences = Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>;

/// Blanks for the fences cut out of the prose, pushed in chunks.
const SPACES: &str = "                                                                ";

/// Finds ```` ``` ````; built once, not per answer.
static TICKS: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"```"));

fn fences(text: &str) -> Fences {
    let mut out = Vec::new();
    let b = text.as_bytes();
    // (fence start, contents start, whether its info string says JSON). Fences of other
    // languages are tracked too, so their closing line is not taken for an opening one.
    let mut open: Option<(usize, usize, bool)> = None;
    // Only the lines holding ```` ``` ```` are looked at: found by memmem, not line by line.
    for at in TICKS.find_iter(b) {
        let mut start = at;
        while start > 0 && matches!(b[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        if start > 0 && b[start - 1] != b'\n' {
            continue; // not at the start of its line
        }
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |e| at + e + 1);
        if let Some((f, c, json)) = open.take() {
            if json {
                out.push((f..at + 3, c..start));
            }
        } else if b[end - 1] == b'\n' {
            let info = text[at + 3..end].trim_matches([' ', '\t', '\r', '\n']);
            let json = matches!(info, "" | "json" | "JSON" | "jsonc" | "json5");
            open = Some((start, end, json));
        }
    }
    out
}

/// The JSON value of the answer under the policies, and which mode found it.
pub fn extract(answer: &str, p: Policies) -> Result<(Doc, &'static str), NoJson> {
    let mut mode = match p.extract {
        Extract::Auto => {
            let t = answer.trim();
            // The fast path ends a value where the scanner would: when it parses, the scan
            // would tell nothing more.
            let whole = match parse_fast(t) {
                Some((doc, end)) if end == t.len() => return Ok((doc, "whole")),
                Some(_) => None,
                None => scan(t).ok().filter(|s| s.end == t.len()),
            };
            if let Some(s) = whole {
                return finish(t, &s, p).map(|v| (v, "whole"));
            }
            if TICKS.find(answer.as_bytes()).is_none() {
                Extract::Search
            } else {
                Extract::Auto
            }
        }
        m => m,
    };
    let fences = if matches!(mode, Extract::Fenced | Extract::Auto) {
        fences(answer)
    } else {
        Vec::new()
    };
    if mode == Extract::Auto && fences.is_empty() {
        mode = Extract::Search;
    }
    let mut candidates: Vec<(usize, Result<Doc, NoJson>)> = match mode {
        Extract::Whole => {
            let t = answer.trim();
            if t.is_empty() {
                return Err(NoJson("the answer is empty".into()));
            }
            return parse_whole(t, p).map(|v| (v, "whole"));
        }
        Extract::Fenced => fenced(answer, &fences, p),
        Extract::Search => search(answer, p),
        Extract::Auto => {
            // Fences, plus any JSON in the prose between them: a bare object beside the fenced
            // one is a second answer, not commentary.
            let mut c = fenced(answer, &fences, p);
            let mut outside = String::with_capacity(answer.len());
            let mut last = 0;
            for (whole, _) in &fences {
                outside.push_str(&answer[last..whole.start]);
                let mut n = whole.len();
                while n > 0 {
                    let k = n.min(SPACES.len());
                    outside.push_str(&SPACES[..k]);
                    n -= k;
                }
                last = whole.end;
            }
            outside.push_str(&answer[last..]);
            c.extend(search(&outside, p));
            c.sort_by_key(|(pos, _)| *pos);
            c
        }
    };
    let how = if mode == Extract::Search {
        "search"
    } else {
        "fenced"
    };
    if candidates.is_empty() {
        return Err(NoJson(match mode {
            Extract::Search => "no JSON object or array in the answer".into(),
            _ => "no fenced JSON block in the answer".into(),
        }));
    }
    let i = choose(&candidates, p.multiple, "JSON values")?;
    candidates.swap_remove(i).1.map(|v| (v, how))
}

fn fenced(answer: &str, fences: &Fences, p: Policies) -> Vec<(usize, Result<Doc, NoJson>)> {
    fences
        .iter()
        .map(|(_, c)| {
            let r = parse_whole(answer[c.clone()].trim(), p)
                .map_err(|NoJson(e)| NoJson(format!("in the fenced block: {e}")));
            (c.start, r)
        })
        .collect()
}

/// The index of the value to grade among several.
fn choose<T>(items: &[T], m: Multiple, what: &str) -> Result<usize, NoJson> {
    match (items.len(), m) {
        (0, _) => Err(NoJson(format!("no {what} in the answer"))),
        (1, _) | (_, Multiple::First) => Ok(0),
        (n, Multiple::Last) => Ok(n - 1),
        (n, Multiple::Reject) => Err(NoJson(format!(
            "{n} {what} in the answer (`multiple: reject`)"
        ))),
    }
}

/// One value that must span `t` (trailing text per policy).
fn parse_whole(t: &str, p: Policies) -> Result<Doc, NoJson> {
    let trailing = |end: usize| {
        if !t[end..].trim().is_empty() && p.trailing_text == TrailingText::Reject {
            return Err(NoJson(format!(
                "text after the JSON value: `{}` (`trailing_text: reject`)",
                crate::node::shorten(t[end..].trim())
            )));
        }
        Ok(())
    };
    if let Some((doc, end)) = parse_fast(t) {
        trailing(end)?;
        return Ok(doc);
    }
    let s = scan(t).map_err(NoJson)?;
    trailing(s.end)?;
    finish(&t[..s.end], &s, p)
}

/// Applies the key and NaN policies to a scanned value and parses it (the slow path).
fn finish(text: &str, s: &Scan, p: Policies) -> Result<Doc, NoJson> {
    if let (Some(k), DuplicateKeys::Reject) = (&s.duplicate, p.duplicate_keys) {
        return Err(NoJson(format!(
            "the key `{k}` appears twice in one object (`duplicate_keys: reject`)"
        )));
    }
    let rewritten;
    let text = if s.non_finite.is_empty() {
        text
    } else if p.nan_infinity == NanInfinity::Reject {
        return Err(NoJson(
            "`NaN`/`Infinity` is not JSON (`nan_infinity: reject`)".into(),
        ));
    } else {
        let mut out = String::with_capacity(text.len());
        let mut last = 0;
        for &(a, b) in &s.non_finite {
            out.push_str(&text[last..a]);
            out.push_str("null");
            last = b;
        }
        out.push_str(&text[last..]);
        rewritten = out;
        &rewritten
    };
    serde_json::from_str::<Value>(text)
        .map(|v| Doc::from_value(&v))
        .map_err(|e| NoJson(format!("invalid JSON: {e}")))
}

/// Top-level objects in prose, left to right, each parsed under the policies (a value found
/// inside an earlier one is part of it, even when the outer one breaks a policy: wrapping a
/// valid object in an invalid one must not smuggle it through); arrays only when there is no
/// object, since prose is full of brackets (`see [1]`).
fn search(answer: &str, p: Policies) -> Vec<(usize, Result<Doc, NoJson>)> {
    let objects = search_from(answer, p, '{');
    if objects.is_empty() {
        search_from(answer, p, '[')
    } else {
        objects
    }
}

fn search_from(answer: &str, p: Policies, open: char) -> Vec<(usize, Result<Doc, NoJson>)> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut tries = 0;
    while let Some(off) = answer[i..].find(open) {
        let start = i + off;
        tries += 1;
        if tries > SEARCH_TRIES {
            break;
        }
        if let Some((doc, end)) = parse_fast(&answer[start..]) {
            out.push((start, Ok(doc)));
            i = start + end;
            continue;
        }
        match scan(&answer[start..]) {
            Ok(s) => {
                out.push((start, finish(&answer[start..start + s.end], &s, p)));
                i = start + s.end;
            }
            Err(_) => i = start + 1,
        }
    }
    out
}

/// What [`scan`] learns about the value at the start of a text.
#[derive(Debug, Default)]
struct Scan {
    /// Byte offset just past the value.
    end: usize,
    duplicate: Option<String>,
    /// Byte ranges of bare `NaN`/`Infinity`/`-Infinity` tokens.
    non_finite: Vec<(usize, usize)>,
}

/// The keys seen in one object: a short list (most objects have a few keys), a set past that.
#[derive(Default)]
struct Keys<'a> {
    list: Vec<Cow<'a, str>>,
    set: std::collections::HashSet<Cow<'a, str>>,
}

impl<'a> Keys<'a> {
    /// Adds a key; returns it (owned) when it was already there.
    fn insert(&mut self, k: Cow<'a, str>) -> Option<String> {
        const SMALL: usize = 16;
        if self.set.is_empty() {
            if self.list.contains(&k) {
                return Some(k.into_owned());
            }
            self.list.push(k);
            if self.list.len() > SMALL {
                self.set.extend(self.list.drain(..));
            }
            None
        } else if self.set.contains(&k) {
            Some(k.into_owned())
        } else {
            self.set.insert(k);
            None
        }
    }
}

/// serde_json's nesting limit: deeper input is invalid anyway, and the scanner's stack stays small.
const MAX_DEPTH: usize = 128;

/// Scans one JSON value (leading whitespace allowed) without building it. Lenient about
/// everything serde_json checks afterwards; exact about where the value ends.
fn scan(t: &str) -> Result<Scan, String> {
    let b = t.as_bytes();
    let mut s = Scan::default();
    // One entry per open container: `Some(keys)` for an object, `None` for an array.
    let mut stack: Vec<Option<Keys<'_>>> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    loop {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        if i >= b.len() {
            return Err("the JSON value is not closed".into());
        }
        let c = b[i];
        match c {
            b'{' | b'[' => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("nested deeper than {MAX_DEPTH}"));
                }
                stack.push((c == b'{').then(Default::default));
                expect_key = c == b'{';
                i += 1;
                continue;
            }
            b'}' | b']' => {
                match stack.pop() {
                    Some(Some(_)) if c == b'}' => {}
                    Some(None) if c == b']' => {}
                    _ => return Err(format!("unexpected `{}`", c as char)),
                }
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return Err("a string is not closed".into());
                }
                i += 1;
                if expect_key {
                    let raw = &t[start + 1..i - 1];
                    // Unescaped only when it has escapes: most keys are compared as slices.
                    let key: Cow<'_, str> = if raw.contains('\\') {
                        Cow::Owned(
                            serde_json::from_str(&t[start..i])
                                .map_err(|e| format!("bad key: {e}"))?,
                        )
                    } else {
                        Cow::Borrowed(raw)
                    };
                    if let Some(Some(keys)) = stack.last_mut() {
                        if let Some(dup) = keys.insert(key) {
                            s.duplicate.get_or_insert(dup);
                        }
                    }
                    expect_key = false;
                    continue;
                }
            }
            b',' => {
                expect_key = matches!(stack.last(), Some(Some(_)));
                i += 1;
                continue;
            }
            b':' => {
                i += 1;
                continue;
            }
            _ => {
                // A number, literal or bare word: runs to the next delimiter.
                let start = i;
                while i < b.len()
                    && !matches!(
                        b[i],
                        b',' | b'}'
                            | b']'
                            | b':'
                            | b' '
                            | b'\t'
                            | b'\n'
                            | b'\r'
                            | b'"'
                            | b'{'
                            | b'['
                    )
                {
                    i += 1;
                }
                if matches!(&t[start..i], "NaN" | "Infinity" | "-Infinity") {
                    s.non_finite.push((start, i));
                }
            }
        }
        if stack.is_empty() {
            s.end = i;
            return Ok(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pol() -> Policies {
        Policies {
            extract: Extract::Auto,
            multiple: Multiple::Reject,
            duplicate_keys: DuplicateKeys::Reject,
            nan_infinity: NanInfinity::Reject,
            trailing_text: TrailingText::Reject,
        }
    }

    fn get(t: &str, p: Policies) -> Result<Value, String> {
        extract(t, p)
            .map(|(v, _)| v.root().value())
            .map_err(|NoJson(m)| m)
    }

    #[test]
    fn modes() {
        let p = pol();
        assert_eq!(get(" {\"a\": 1} ", p).unwrap(), serde_json::json!({"a": 1}));
        assert_eq!(
            get("Here:\n```json\n{\"a\": 2}\n```\nDone.", p).unwrap(),
            serde_json::json!({"a": 2})
        );
        assert_eq!(
            get("The result is {\"a\": 3} as asked.", p).unwrap(),
            serde_json::json!({"a": 3})
        );
        assert!(get("two: {\"a\": 1} and {\"a\": 2}", p)
            .unwrap_err()
            .contains("2 JSON values"));
        let last = Policies {
            multiple: Multiple::Last,
            ..pol()
        };
        assert_eq!(
            get("{\"a\": 1} then {\"a\": 2}", last).unwrap(),
            serde_json::json!({"a": 2})
        );
        // A valid object inside one that breaks a policy is not an answer of its own.
        assert!(get(r#"x {"a": {"b": 1}, "a": 2}"#, p)
            .unwrap_err()
            .contains("twice"));
        assert!(get("no json here", p).is_err());
        assert!(get("", p).is_err());
    }

    #[test]
    fn strictness() {
        let p = pol();
        assert!(get(r#"{"a": 1, "\u0061": 2}"#, p)
            .unwrap_err()
            .contains("twice"));
        let lw = Policies {
            duplicate_keys: DuplicateKeys::LastWins,
            ..pol()
        };
        assert_eq!(
            get(r#"{"a": 1, "a": 2}"#, lw).unwrap(),
            serde_json::json!({"a": 2})
        );
        // The same key in two different objects is fine.
        assert!(get(r#"[{"a": 1}, {"a": 2}]"#, p).is_ok());
        assert!(get(r#"{"x": NaN}"#, p).unwrap_err().contains("NaN"));
        let null = Policies {
            nan_infinity: NanInfinity::Null,
            ..pol()
        };
        assert_eq!(
            get(r#"{"x": NaN, "y": [-Infinity, "NaN"]}"#, null).unwrap(),
            serde_json::json!({"x": null, "y": [null, "NaN"]})
        );
        assert!(get(
            r#"{"a": 1} trailing"#,
            Policies {
                extract: Extract::Whole,
                ..pol()
            }
        )
        .unwrap_err()
        .contains("after the JSON"));
        let allow = Policies {
            extract: Extract::Whole,
            trailing_text: TrailingText::Allow,
            ..pol()
        };
        assert_eq!(
            get(r#"{"a": 1} trailing"#, allow).unwrap(),
            serde_json::json!({"a": 1})
        );
    }

    /// What `extract` gives, comparable across the two paths.
    fn both(t: &str, p: Policies) -> [Result<(Value, &'static str), String>; 2] {
        [false, true].map(|slow| {
            SLOW_ONLY.set(slow);
            let r = extract(t, p)
                .map(|(d, m)| (d.root().value(), m))
                .map_err(|NoJson(m)| m);
            SLOW_ONLY.set(false);
            r
        })
    }

    fn all_policies() -> Vec<Policies> {
        let mut out = Vec::new();
        for extract in [
            Extract::Auto,
            Extract::Whole,
            Extract::Fenced,
            Extract::Search,
        ] {
            for multiple in [Multiple::Reject, Multiple::First, Multiple::Last] {
                for duplicate_keys in [DuplicateKeys::Reject, DuplicateKeys::LastWins] {
                    for nan_infinity in [NanInfinity::Reject, NanInfinity::Null] {
                        for trailing_text in [TrailingText::Reject, TrailingText::Allow] {
                            out.push(Policies {
                                extract,
                                multiple,
                                duplicate_keys,
                                nan_infinity,
                                trailing_text,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// The edges the fast parser adds, under every policy: the same value, or the same refusal
    /// with the same message, as the scanner + serde_json path it short-cuts.
    #[test]
    fn fast_path_agrees_with_the_slow_path_on_edges() {
        let deep = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
        let cases = [
            r#"{"a": 1}"#.to_string(),
            r#"{"k\u0065y": 1, "key": 2}"#.to_string(),
            r#"{"k\u0065y": 1, "kez": "\u00e9\n\"\\\/"}"#.to_string(),
            r#"{"a": "\ud800"}"#.to_string(),
            r#"{"a": "\udc00"}"#.to_string(),
            r#"{"a": "\ud83e\udd80"}"#.to_string(),
            r#"{"a": "\ud800\u0041"}"#.to_string(),
            r#"{"\ud800": 1}"#.to_string(),
            "[1e400, -1E-400, -0, 0.0, 123456789012345678901234567890, 1.0e+2]".to_string(),
            "1e400".to_string(),
            "-0".to_string(),
            "[01]".to_string(),
            "[1.]".to_string(),
            "{\"a\": \"\u{1}\"}".to_string(),
            r#"{"a": NaN, "b": -Infinity}"#.to_string(),
            r#"{"a": 1, "a": 2}"#.to_string(),
            r#"{"$serde_json::private::Number": "12"}"#.to_string(),
            r#"{"a": tru}"#.to_string(),
            "12abc".to_string(),
            "\"s\" tail".to_string(),
            "true false".to_string(),
            deep(99),
            deep(100),
            deep(101),
            deep(127),
            deep(128),
            deep(129),
            format!("Sure:\n```json\n{}\n```\nand {{\"b\": 2}}", r#"{"a": 1}"#),
            "Here {\"a\": 1} and [2] then {\"a\": 1, \"a\": 3}".to_string(),
            "```json\n{\"a\": 1} trailing\n```".to_string(),
            "x {\"a\": [1, 2} y {\"b\": 1}".to_string(),
            "é {\"é\": \"ü\"} ü".to_string(),
        ];
        for t in &cases {
            for p in all_policies() {
                let [fast, slow] = both(t, p);
                assert_eq!(fast, slow, "{t:?} under {p:?}");
            }
        }
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn scalar() -> impl Strategy<Value = String> {
            let atoms = [
                "null",
                "true",
                "false",
                "tru",
                "nul",
                "NaN",
                "Infinity",
                "-Infinity",
                "0",
                "-0",
                "1",
                "-1",
                "01",
                "1.",
                "1.5",
                "-2.25e-3",
                "1e400",
                "-1E-400",
                "1E+2",
                ".5",
                "+1",
                "0.0",
                "1.0",
                "123456789012345678901234567890",
                "18446744073709551616",
                "-",
                "1e",
                "--1",
            ];
            let chars = [
                "a",
                "b",
                "é",
                "\\u0061",
                "\\ud800",
                "\\udc00",
                "\\ud83e\\udd80",
                "\\n",
                "\\\"",
                "\\\\",
                "\\/",
                "\\x",
                "\\u12",
                "\u{1}",
                " ",
                "{",
                "}",
                "[",
                ",",
                ":",
                "`",
            ];
            prop_oneof![
                proptest::sample::select(atoms.to_vec()).prop_map(str::to_string),
                proptest::collection::vec(proptest::sample::select(chars.to_vec()), 0..5)
                    .prop_map(|c| format!("\"{}\"", c.concat())),
            ]
        }

        fn value() -> impl Strategy<Value = String> {
            let keys = [
                "\"a\"",
                "\"b\"",
                "\"\\u0061\"",
                "\"é\"",
                "\"\"",
                "\"a\\n\"",
                "\"$serde_json::private::Number\"",
                "a",
            ];
            let ws = [""; 1]
                .into_iter()
                .chain([" ", "\n", "\t", "  \r\n"])
                .collect::<Vec<_>>();
            let ws2 = ws.clone();
            scalar().prop_recursive(5, 48, 6, move |inner| {
                let ws = ws2.clone();
                prop_oneof![
                    (
                        proptest::collection::vec(inner.clone(), 0..6),
                        proptest::sample::select(ws.clone()),
                        any::<bool>()
                    )
                        .prop_map(|(items, w, comma)| {
                            let mut s = format!("[{w}{}", items.join(&format!(",{w}")));
                            if comma && !items.is_empty() {
                                s.push(',');
                            }
                            s + "]"
                        }),
                    (
                        proptest::collection::vec(
                            (proptest::sample::select(keys.to_vec()), inner),
                            0..6
                        ),
                        proptest::sample::select(ws.clone())
                    )
                        .prop_map(|(members, w)| {
                            let m: Vec<String> = members
                                .iter()
                                .map(|(k, v)| format!("{k}{w}:{w}{v}"))
                                .collect();
                            format!("{{{w}{}{w}}}", m.join(","))
                        }),
                ]
            })
        }

        fn answer() -> impl Strategy<Value = String> {
            let around = [
                "",
                " ",
                "Sure: ",
                "\n```json\n",
                "\n```\n",
                " tail",
                "```",
                "x ",
            ];
            proptest::collection::vec(
                prop_oneof![
                    3 => value(),
                    1 => proptest::sample::select(around.to_vec()).prop_map(str::to_string)
                ],
                1..5,
            )
            .prop_map(|parts| parts.concat())
        }

        fn policies() -> impl Strategy<Value = Policies> {
            proptest::sample::select(all_policies())
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

            /// The fast parser's contract, on its own: when it answers, the scanner ends the
            /// value at the same place with nothing to report, and serde_json reads the same value.
            #[test]
            fn fast_parser_matches_serde_json(t in value()) {
                if let Some((doc, end)) = super::super::super::doc::parse_fast(&t) {
                    let s = scan(&t).expect("the scanner accepts it too");
                    prop_assert_eq!(s.end, end);
                    prop_assert!(s.duplicate.is_none() && s.non_finite.is_empty());
                    let v: Value = serde_json::from_str(&t[..end]).expect("serde_json accepts it");
                    prop_assert_eq!(doc.root().value(), v);
                }
            }

            /// Whole answers under every policy: the fast path never changes what `extract` gives.
            #[test]
            fn extract_is_unchanged_by_the_fast_path(t in answer(), p in policies()) {
                let [fast, slow] = both(&t, p);
                prop_assert_eq!(fast, slow);
            }
        }
    }

    #[test]
    fn fence_lines() {
        let t =
            "a\n```json\n{\"a\": 1}\n```\nb\n  ```\n[2]\n  ``` tail\n```python\nx\n```\n```\nopen";
        let f: Vec<&str> = fences(t).into_iter().map(|(_, c)| &t[c]).collect();
        assert_eq!(f, vec!["{\"a\": 1}\n", "[2]\n"]);
    }

    #[test]
    fn scanner_ends() {
        assert_eq!(scan(r#"{"a": "}"} x"#).unwrap().end, 10);
        assert_eq!(scan(r#"[1, [2, {"b": "\""}]]"#).unwrap().end, 21);
        assert!(scan(r#"{"a": 1"#).is_err());
        assert!(scan(&"[".repeat(200)).is_err());
        assert_eq!(scan("42 ").unwrap().end, 2);
    }

    #[test]
    fn hostile_search_is_bounded() {
        let t = "{\"".repeat(50_000);
        let started = std::time::Instant::now();
        assert!(get(
            &t,
            Policies {
                extract: Extract::Search,
                ..pol()
            }
        )
        .is_err());
        assert!(started.elapsed().as_secs() < 5);
    }
}
