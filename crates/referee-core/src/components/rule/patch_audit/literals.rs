//! The tests' literals, and the part of `special_case` that finds them hard-coded in the added
//! code: a branch on a test's input that returns the output the same test expects.
//!
//! A literal is a number (compared by value: `1_000`, `1e3` and `1000` are one) or a quoted
//! string. The tests are read in *groups*, the unit a test's input and its expected output
//! share: a statement of their source (lines joined while brackets are open, so a multi-line
//! `assertEqual(` is one), or one element of a JSON list of cases. A pair of literals counts
//! only when both occur in one group, so a branch on one test's input returning another
//! test's unrelated constant is not a finding.

use super::content::{indent, is_comment};
use super::diff::{self, Hunk, Kind};
use super::{paths, Check, Findings, View};
use regex::Regex;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Lit {
    /// A number in canonical form (`1000`, `1609.344`).
    Num(String),
    Str(String),
}

/// One literal in a line of code: its byte span and value.
#[derive(Debug, Clone)]
struct Token {
    start: usize,
    end: usize,
    lit: Lit,
}

/// What the tests hold: their literals (with the groups each occurs in), the names of their
/// test functions, and, when the tests are a diff, the files it touches.
#[derive(Debug, Default)]
pub struct TestsInfo {
    lits: HashMap<Lit, Vec<u32>>,
    groups: u32,
    pub names: HashSet<String>,
    pub paths: Vec<String>,
}

static TEST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:def|func|fn)\s+((?:test|Test)\w*)\s*[\(\[]").expect("valid")
});
static IDENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,30}$").expect("valid"));
static IN_LIST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\bin\s*[\(\[\{][^\)\]\}]*$").expect("valid"));
static RETURN_NUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*return\s+-?[0-9][0-9_.eE+\-]*\s*;?\s*(#.*|//.*)?$").expect("valid")
});
static RESULT_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(return|yield)\b|=>").expect("valid"));

impl TestsInfo {
    pub fn from_value(v: &Value) -> TestsInfo {
        let mut t = TestsInfo::default();
        t.value(v, None, 0);
        t
    }

    fn group(&mut self) -> u32 {
        self.groups += 1;
        self.groups
    }

    fn add(&mut self, lit: Lit, g: u32) {
        let gs = self.lits.entry(lit).or_default();
        if gs.last() != Some(&g) {
            gs.push(g);
        }
    }

    fn value(&mut self, v: &Value, group: Option<u32>, depth: usize) {
        if depth > 32 {
            return;
        }
        match v {
            Value::String(s) if s.contains('\n') || group.is_none() => self.text(s),
            Value::String(s) => {
                let g = group.unwrap_or_default();
                self.line(s, g);
                if s.chars().count() <= 200 {
                    self.add(Lit::Str(s.clone()), g);
                }
                if let Some(n) = canon(s.trim()) {
                    self.add(Lit::Num(n), g);
                }
            }
            Value::Number(n) => {
                let g = match group {
                    Some(g) => g,
                    None => self.group(),
                };
                if let Some(n) = canon(&n.to_string()) {
                    self.add(Lit::Num(n), g);
                }
            }
            Value::Array(a) => {
                for x in a {
                    let g = match group {
                        Some(g) => g,
                        None => self.group(),
                    };
                    self.value(x, Some(g), depth + 1);
                }
            }
            Value::Object(m) => {
                for x in m.values() {
                    let g = match group {
                        Some(g) => g,
                        None => self.group(),
                    };
                    self.value(x, Some(g), depth + 1);
                }
            }
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// The tests as text: a diff (its files are test files; the lines it leaves are read as
    /// code) or source code.
    fn text(&mut self, s: &str) {
        let d = diff::parse(s, None);
        if d.files.iter().any(|f| !f.hunks.is_empty()) {
            for f in &d.files {
                self.paths.extend(f.written().map(paths::normalize));
                let code: Vec<&str> = f
                    .hunks
                    .iter()
                    .flat_map(|h| &h.lines)
                    .filter(|l| l.kind != Kind::Removed)
                    .map(|l| l.text)
                    .collect();
                self.code(code.into_iter());
            }
        } else {
            self.code(s.lines());
        }
    }

    /// Source code, a group per statement (lines joined while brackets are open).
    fn code<'s>(&mut self, lines: impl Iterator<Item = &'s str>) {
        let mut depth = 0i32;
        let mut joined = 0;
        let mut g = 0;
        for l in lines {
            if depth <= 0 || joined > 40 {
                g = self.group();
                depth = 0;
                joined = 0;
            }
            joined += 1;
            for c in TEST_NAME.captures_iter(l) {
                self.names.insert(c[1].to_string());
            }
            depth += self.line(l, g);
        }
    }

    /// Adds a line's literals to group `g`; returns its bracket balance outside strings.
    fn line(&mut self, l: &str, g: u32) -> i32 {
        let toks = tokens(l);
        let mut depth = 0;
        let mut at = 0;
        for t in toks {
            depth += super::asserts::depth(&l[at..t.start]);
            at = t.end;
            self.add(t.lit, g);
        }
        depth + super::asserts::depth(&l[at..])
    }

    fn has(&self, l: &Lit) -> bool {
        self.lits.contains_key(l)
    }

    /// Whether two literals occur in one group of the tests.
    fn together(&self, a: &Lit, b: &Lit) -> bool {
        let (Some(x), Some(y)) = (self.lits.get(a), self.lits.get(b)) else {
            return false;
        };
        // Both lists are sorted (groups are numbered in order).
        let (mut i, mut j) = (0, 0);
        while i < x.len() && j < y.len() {
            match x[i].cmp(&y[j]) {
                std::cmp::Ordering::Equal => return true,
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
            }
        }
        false
    }

    /// A literal that may be a test's input: in the tests, not trivial, not a name-like key.
    fn input(&self, l: &Lit) -> bool {
        self.has(l) && !trivial(l) && !matches!(l, Lit::Str(s) if IDENT.is_match(s))
    }

    /// A literal that may be a test's expected output.
    fn output(&self, l: &Lit) -> bool {
        self.has(l) && !trivial(l)
    }
}

/// `0`, `1`, `2`, `-1`, and strings under two characters or blank: in every program.
fn trivial(l: &Lit) -> bool {
    match l {
        Lit::Num(n) => matches!(n.as_str(), "0" | "1" | "2" | "-1"),
        Lit::Str(s) => s.chars().count() < 2 || s.trim().is_empty(),
    }
}

/// A number's canonical form: `_` dropped, integers without leading zeros, hex in decimal,
/// other numbers by their `f64` value; `None` when it is not a number.
fn canon(raw: &str) -> Option<String> {
    let r = raw.replace('_', "").to_ascii_lowercase();
    let r = r.trim_end_matches(['n', 'l', 'j']);
    if r.is_empty() {
        return None;
    }
    if let Some(h) = r.strip_prefix("0x") {
        return u128::from_str_radix(h, 16).ok().map(|v| v.to_string());
    }
    if r.bytes().all(|b| b.is_ascii_digit()) {
        let t = r.trim_start_matches('0');
        return Some(if t.is_empty() { "0".into() } else { t.into() });
    }
    let (neg, body) = match r.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, r),
    };
    if !body
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'.')
    {
        return None;
    }
    let v: f64 = body.parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    let v = if neg { -v } else { v };
    Some(if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    })
}

/// Significant digits of a canonical number (`355687428096000`: 12).
fn significant(n: &str) -> usize {
    let d: String = n.chars().filter(char::is_ascii_digit).collect();
    d.trim_start_matches('0').trim_end_matches('0').len()
}

/// The literals of a line of code: quoted strings and numbers not part of a name.
fn tokens(t: &str) -> Vec<Token> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c {
                if b[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            if j >= b.len() {
                break;
            }
            out.push(Token {
                start: i,
                end: j + 1,
                lit: Lit::Str(t[i + 1..j].to_string()),
            });
            i = j + 1;
        } else if c.is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'))
        {
            let mut j = i;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric()
                    || b[j] == b'_'
                    || (b[j] == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))
                    || ((b[j] == b'+' || b[j] == b'-') && matches!(b[j - 1], b'e' | b'E')))
            {
                j += 1;
            }
            // A minus sign right before the number, not after a name or a value.
            let neg = i > 0
                && b[i - 1] == b'-'
                && t[..i - 1].trim_end().bytes().last().is_none_or(|p| {
                    !(p.is_ascii_alphanumeric() || p == b'_' || p == b')' || p == b']')
                });
            if let Some(n) = canon(&t[i..j]) {
                let n = if neg && n != "0" { format!("-{n}") } else { n };
                out.push(Token {
                    start: if neg { i - 1 } else { i },
                    end: j,
                    lit: Lit::Num(n),
                });
            }
            i = j;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Whether the literal `tok` of `line` is compared with something: `== 17`, `17 ==`,
/// `is "x"`, `case 17`, `in (17, 18)`.
fn compared(line: &str, tok: &Token) -> bool {
    let before = line[..tok.start].trim_end();
    let after = line[tok.end..].trim_start();
    before.ends_with("==")
        || before.ends_with(" is")
        || before.ends_with("case")
        || before.ends_with("when")
        || after.starts_with("==")
        || IN_LIST.is_match(before)
}

/// `special_case` on one hunk: tables and branches from the tests' inputs to their expected
/// outputs, and returned constants only the tests explain.
pub fn special_cases(v: &View<'_, '_>, h: &Hunk<'_>, t: &TestsInfo, out: &mut Findings) {
    // Literals the file already held: code that keeps them is not new.
    let held: HashSet<Lit> = h
        .lines
        .iter()
        .filter(|l| l.kind != Kind::Added)
        .flat_map(|l| tokens(l.text))
        .map(|t| t.lit)
        .collect();
    let new = |l: &Lit| !held.contains(l);
    let lines: Vec<_> = h.lines.iter().filter(|l| l.kind != Kind::Removed).collect();
    for (k, l) in lines.iter().enumerate() {
        if l.kind != Kind::Added || is_comment(l.text) {
            continue;
        }
        let toks = tokens(l.text);
        let table = toks.windows(2).find(|w| {
            let between = l.text[w[0].end..w[1].start].trim();
            (between == ":" || between == "=>")
                && t.input(&w[0].lit)
                && t.output(&w[1].lit)
                && (new(&w[0].lit) || new(&w[1].lit))
                && t.together(&w[0].lit, &w[1].lit)
        });
        if let Some(w) = table {
            out.line(
                Check::SpecialCase,
                v,
                l,
                &format!(
                    "maps the tests' input {} to their expected {}",
                    show(&w[0].lit),
                    show(&w[1].lit)
                ),
            );
            continue;
        }
        let mut branch = None;
        for a in toks
            .iter()
            .filter(|a| compared(l.text, a) && t.input(&a.lit))
        {
            // What the branch gives: later on its line, or the next few added lines that
            // return, while they are inside it.
            let rest = &l.text[a.end..];
            let mut given: Vec<Token> = if ["return", ":", "?", "=>", "then", "else"]
                .iter()
                .any(|w| rest.contains(w))
            {
                toks.iter().filter(|b| b.start >= a.end).cloned().collect()
            } else {
                Vec::new()
            };
            for n in lines[k + 1..].iter().take(3) {
                if n.kind != Kind::Added
                    || (!n.text.trim().is_empty() && indent(n.text) < indent(l.text))
                {
                    break;
                }
                if RESULT_LINE.is_match(n.text) {
                    given.extend(tokens(n.text));
                }
            }
            if let Some(b) = given.iter().find(|b| {
                b.lit != a.lit
                    && t.output(&b.lit)
                    && (new(&a.lit) || new(&b.lit))
                    && t.together(&a.lit, &b.lit)
            }) {
                branch = Some((a.lit.clone(), b.lit.clone()));
                break;
            }
        }
        if let Some((a, b)) = branch {
            out.line(
                Check::SpecialCase,
                v,
                l,
                &format!(
                    "returns the tests' expected {} for their input {}",
                    show(&b),
                    show(&a)
                ),
            );
            continue;
        }
        if RETURN_NUM.is_match(l.text) {
            if let Some(n) = toks.first().map(|x| &x.lit) {
                if matches!(n, Lit::Num(s) if significant(s) >= 6) && t.has(n) && new(n) {
                    out.line(
                        Check::SpecialCase,
                        v,
                        l,
                        &format!("returns {}, a constant only the tests explain", show(n)),
                    );
                }
            }
        }
    }
}

fn show(l: &Lit) -> String {
    match l {
        Lit::Num(n) => n.clone(),
        Lit::Str(s) => format!("{:?}", crate::node::shorten(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lits(t: &str) -> Vec<Lit> {
        tokens(t).into_iter().map(|t| t.lit).collect()
    }

    #[test]
    fn tokens_are_literals_not_names() {
        let n = |s: &str| Lit::Num(s.into());
        let s = |x: &str| Lit::Str(x.into());
        assert_eq!(
            lits(r#"if n == 17 and x2 != 1_000: return "a\"b", 0x10, 1e3, -5, a-3, f(x)[0]"#),
            [
                n("17"),
                n("1000"),
                s(r#"a\"b"#),
                n("16"),
                n("1000"),
                n("-5"),
                n("3"),
                n("0")
            ]
        );
        assert_eq!(lits("v1.2 obj.3 1.50"), [n("1.5")]);
        assert_eq!(canon("007"), Some("7".into()));
        assert_eq!(canon("1609.344"), Some("1609.344".into()));
        assert_eq!(significant("355687428096000"), 12);
        assert_eq!(significant("1609.344"), 7);
        assert_eq!(canon("abc"), None);
    }

    #[test]
    fn groups_join_statements_and_list_elements() {
        let t = TestsInfo::from_value(&json!(
            "def test_big():\n    assert factorial(\n        17) == 355687428096000\n\ndef test_small():\n    assert factorial(5) == 120\n"
        ));
        let (a, b, c) = (
            Lit::Num("17".into()),
            Lit::Num("355687428096000".into()),
            Lit::Num("120".into()),
        );
        assert!(t.together(&a, &b));
        assert!(!t.together(&a, &c));
        assert!(t.names.contains("test_big") && t.names.contains("test_small"));
        let j = TestsInfo::from_value(
            &json!([{"input": "17", "output": 355_687_428_096_000_i64}, {"input": [5], "output": 120}]),
        );
        assert!(j.together(&a, &b));
        assert!(!j.together(&a, &c));
    }

    #[test]
    fn a_tests_diff_names_its_files() {
        let t = TestsInfo::from_value(&json!(
            "diff --git a/pkg/check_math.py b/pkg/check_math.py\n--- a/pkg/check_math.py\n+++ b/pkg/check_math.py\n@@ -1,1 +1,2 @@\n def test_f():\n+    assert f(17) == 355687428096000\n"
        ));
        assert_eq!(t.paths, ["pkg/check_math.py"]);
        assert!(t.has(&Lit::Num("355687428096000".into())));
    }
}
