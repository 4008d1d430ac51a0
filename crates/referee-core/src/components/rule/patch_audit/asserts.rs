//! `assert_weakened`: in a test file the patch modifies, assertions removed and not put back,
//! replaced by weaker ones, made unable to fail, or kept from running.
//!
//! Assertions are compared as statements (a line that opens one, joined with the following
//! lines of the same run while brackets are open) with spaces collapsed, so re-indenting or
//! re-wrapping one is no finding. A removed assertion is matched first to the same statement
//! added anywhere in the file, then to an added assertion of its hunk; it is weakened when that
//! one is of lower strength (2: compares a value; 1: only checks existence, truthiness or type;
//! 0: cannot fail), and deleted when nothing is left to match it.

use super::content::{indent, is_comment};
use super::diff::{Hunk, Kind, Line};
use super::{Check, Findings, View};
use regex::{Regex, RegexSet};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::LazyLock;

fn re(p: &str) -> Regex {
    Regex::new(p).expect("valid pattern")
}

/// A statement that asserts (on the trimmed line).
static ASSERT: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        r"^assert\b",
        r"^(self|cls)\.(assert\w*|fail\w*)\s*\(",
        r"^(np\.testing\.|numpy\.testing\.|npt\.)?assert_\w+\s*\(",
        r"^(async\s+)?with\s+(pytest\.(raises|warns|deprecated_call)|self\.assert\w+)\b",
        r"^(await\s+)?expect\s*\(",
        r"^assert(\.\w+)*\s*\(",
        r"^(debug_)?assert(_eq|_ne)?!\s*\(",
        r"^(t|b|tb)\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(",
        r"^(assert|require)\.\w+\s*\(",
        r"^Assert(ions)?\.\w+\s*\(|^assert[A-Z]\w*\s*\(",
    ])
    .expect("valid patterns")
});
static TEST_DEF: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"^\s*(?:async\s+)?def\s+(test\w*)\s*\(|^\s*func\s+(Test\w+)\s*\(|^\s*(?:it|test)\s*\(\s*['"`]([^'"`]+)['"`]"#,
    )
});
static COMPARES: LazyLock<Regex> = LazyLock::new(|| {
    re(r"==|!=|<=|>=|[^-=]>|<[^-]|\bnot\s+in\b|\bin\b|\bis\s+None\b|\bis\s+not\s+(True|False)\b")
});
static EXISTENCE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bis\s+not\s+None\b|!=\s*None\b|\bisinstance\s*\(|\b(assertIsNotNone|assertIsInstance|assertTrue|assertFalse|assertNotNull|toBeDefined|toBeTruthy|toBeFalsy|toBeInstanceOf)\b|\.not\.toBeNull\b|\.not\.toBeUndefined\b",
    )
});
static STRONG_NAMES: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bassert(Equal|NotEqual|Equals|In|NotIn|Raises\w*|AlmostEqual|NotAlmostEqual|Greater\w*|Less\w*|Count\w*|Regex\w*|DictEqual|ListEqual|SetEqual|TupleEqual|MultiLineEqual|SequenceEqual|Is|IsNot|IsNone|Warns\w*|Logs)\b|\bassert_\w+|\bassert_eq!|\bassert_ne!|\bpytest\.raises\b|\.(toBe|toEqual|toStrictEqual|toMatch\w*|toContain\w*|toHaveLength|toThrow\w*|toHaveBeenCalled\w*|toHaveProperty|toBeCloseTo|toBeGreaterThan\w*|toBeLessThan\w*|toBeNull|toBeUndefined|toBeNaN)\s*\(|\bt\.(Error|Errorf|Fatal|Fatalf)\b|\b(assert|require)\.(Equal|NotEqual|Len|Contains|ErrorIs|Exactly|EqualValues|Nil|NoError|Error)\b",
    )
});
static CANNOT_FAIL: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([
        r#"^assert\s*\(?\s*(True|1|not\s+False|not\s+None|not\s+0|"[^"]+"|'[^']+')\s*\)?\s*(,.*)?$"#,
        r"\bor\s+(True|1)\s*\)?\s*(,.*)?$",
        r"\bassertTrue\s*\(\s*(True|1)\s*[,)]|\bassertFalse\s*\(\s*(False|0|None)\s*[,)]",
        r"\bexpect\s*\(\s*(true|1)\s*\)\s*\.\s*(toBe|toEqual|toBeTruthy)\s*\(\s*(true|1)?\s*\)",
        r"^assert(\.ok)?\s*\(\s*(true|1)\s*\)|^assert!\s*\(\s*true\s*[,)]",
    ])
    .expect("valid patterns")
});
static EXCEPT_PASS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*except\b[^:]*:\s*(pass|\.\.\.|continue|return\b.*)?\s*(#.*)?$|\bcatch\s*(\(\s*\w*\s*\))?\s*\{\s*\}",
    )
});
static TRIVIAL_BODY: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*(pass|\.\.\.|continue|return\b.*)\s*(#.*)?$"));
static TRY: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*try\s*(:|\{)"));
static CATCHES_ASSERT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\bexcept\s*\(?[^:]*\bAssertionError\b|\bsuppress\s*\([^)]*\b(AssertionError|Exception|BaseException)\b",
    )
});
static NEVER: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^\s*(if\s+(False|0|None)\s*:|if\s*\(\s*(false|0)\s*\)|while\s+False\s*:)")
});
static SAME_CALL: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(assertEqual|assertEquals|assert_eq!|assert\.equal|assert\.Equal|assertIs)\s*\((.*)\)\s*$")
});
static SAME_EXPECT: LazyLock<Regex> =
    LazyLock::new(|| re(r"expect\s*\((.*)\)\s*\.\s*(toBe|toEqual|toStrictEqual)\s*\((.*)\)\s*$"));
static BARE_RETURN: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*return\s*;?\s*$"));

/// An assertion statement of the diff.
struct Stmt<'a> {
    kind: Kind,
    text: String,
    at: Line<'a>,
    hunk: usize,
}

fn asserts(t: &str) -> bool {
    let t = t.trim_start();
    !is_comment(t) && ASSERT.is_match(t)
}

fn collapse(t: &str) -> String {
    t.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches([';', ','])
        .to_string()
}

/// Brackets opened minus closed: where a statement continues on the next line.
pub(super) fn depth(t: &str) -> i32 {
    t.bytes()
        .map(|b| match b {
            b'(' | b'[' | b'{' => 1,
            b')' | b']' | b'}' => -1,
            _ => 0,
        })
        .sum()
}

/// The assertion statements of a hunk's added and removed lines.
fn statements<'a>(h: &Hunk<'a>, hunk: usize, out: &mut Vec<Stmt<'a>>) {
    let ls = &h.lines;
    let mut i = 0;
    while i < ls.len() {
        let l = ls[i];
        if l.kind == Kind::Context || !asserts(l.text) {
            i += 1;
            continue;
        }
        let mut text = l.text.trim().to_string();
        let mut d = depth(l.text);
        let mut j = i + 1;
        while (d > 0 || text.ends_with('\\')) && j < ls.len() && ls[j].kind == l.kind && j - i < 20
        {
            text.push(' ');
            text.push_str(ls[j].text.trim());
            d += depth(ls[j].text);
            j += 1;
        }
        out.push(Stmt {
            kind: l.kind,
            text: collapse(&text),
            at: l,
            hunk,
        });
        i = j;
    }
}

/// 2: compares a value; 1: only existence, truthiness or type; 0: cannot fail.
fn strength(s: &str) -> u8 {
    if cannot_fail(s) {
        0
    } else if EXISTENCE.is_match(s)
        && !STRONG_NAMES.is_match(s)
        && !COMPARES.is_match(&EXISTENCE.replace_all(s, ""))
    {
        // `assertTrue(a == b)` still compares; `assert x is not None` does not.
        1
    } else if STRONG_NAMES.is_match(s) || COMPARES.is_match(s) {
        2
    } else {
        1
    }
}

fn cannot_fail(s: &str) -> bool {
    CANNOT_FAIL.is_match(s) || tuple_assert(s) || same_sides(s)
}

/// `assert (x == y, "message")`: a non-empty tuple, always true.
fn tuple_assert(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("assert") else {
        return false;
    };
    let rest = rest.trim();
    if rest.len() < 2 || !rest.starts_with('(') || !rest.ends_with(')') {
        return false;
    }
    let inner = &rest[1..rest.len() - 1];
    // The parentheses must enclose the whole expression, with a comma at their top level.
    let mut d = 0;
    let mut comma = false;
    for c in inner.chars() {
        match c {
            '(' | '[' | '{' => d += 1,
            ')' | ']' | '}' => {
                d -= 1;
                if d < 0 {
                    return false;
                }
            }
            ',' if d == 0 => comma = true,
            _ => {}
        }
    }
    comma
}

/// `assert x == x`, `assertEqual(a, a)`, `assert_eq!(a, a)`, `expect(a).toBe(a)`.
fn same_sides(s: &str) -> bool {
    let strip = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    if let Some(rest) = s.strip_prefix("assert ") {
        let rest = rest.split(", ").next().unwrap_or(rest);
        if let Some((a, b)) = split_top(rest, "==") {
            return !a.trim().is_empty() && strip(a) == strip(b);
        }
    }
    if let Some(c) = SAME_CALL.captures(s) {
        let args = &c[2];
        if let Some((a, b)) = split_top(args, ",") {
            let b = split_top(b, ",").map_or(b, |(x, _)| x);
            return strip(a) == strip(b) && !a.trim().is_empty();
        }
    }
    if let Some(c) = SAME_EXPECT.captures(s) {
        return strip(&c[1]) == strip(&c[3]) && !c[1].trim().is_empty();
    }
    false
}

/// Splits at the first `sep` outside brackets and quotes.
fn split_top<'s>(s: &'s str, sep: &str) -> Option<(&'s str, &'s str)> {
    let b = s.as_bytes();
    let mut d = 0i32;
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'(' | b'[' | b'{' => d += 1,
                b')' | b']' | b'}' => d -= 1,
                _ if d == 0 && b[i..].starts_with(sep.as_bytes()) => {
                    return Some((&s[..i], &s[i + sep.len()..]));
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

pub fn check(v: &View<'_, '_>, out: &mut Findings) {
    let mut stmts = Vec::new();
    for (k, h) in v.f.hunks.iter().enumerate() {
        statements(h, k, &mut stmts);
        kept_from_running(v, h, out);
    }
    // The same statement added back (re-indented, moved) puts a removed one back. Indexes by
    // text, and per hunk the added statements in order, so a diff of many assertions stays linear.
    let mut added_by_text: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut added_by_hunk: HashMap<usize, VecDeque<usize>> = HashMap::new();
    for (j, s) in stmts.iter().enumerate().rev() {
        if s.kind == Kind::Added {
            added_by_text.entry(s.text.as_str()).or_default().push(j);
        }
    }
    for (j, s) in stmts.iter().enumerate() {
        if s.kind == Kind::Added {
            added_by_hunk.entry(s.hunk).or_default().push_back(j);
        }
    }
    let mut used = vec![false; stmts.len()];
    let mut weakened = vec![false; stmts.len()];
    for i in 0..stmts.len() {
        if stmts[i].kind != Kind::Removed {
            continue;
        }
        if let Some(j) = added_by_text
            .get_mut(stmts[i].text.as_str())
            .and_then(Vec::pop)
        {
            used[j] = true;
            used[i] = true;
        }
    }
    for i in 0..stmts.len() {
        if stmts[i].kind != Kind::Removed || used[i] {
            continue;
        }
        let queue = added_by_hunk.get_mut(&stmts[i].hunk);
        let partner = queue.and_then(|q| {
            while let Some(j) = q.pop_front() {
                if !used[j] {
                    return Some(j);
                }
            }
            None
        });
        match partner {
            Some(j) => {
                used[j] = true;
                if strength(&stmts[j].text) < strength(&stmts[i].text) {
                    weakened[j] = true;
                    out.line(
                        Check::AssertWeakened,
                        v,
                        &stmts[j].at,
                        &format!(
                            "weakens the assertion `{}`",
                            crate::node::shorten(&stmts[i].text)
                        ),
                    );
                }
            }
            None => out.line(
                Check::AssertWeakened,
                v,
                &stmts[i].at,
                "deletes an assertion",
            ),
        }
    }
    for (j, s) in stmts.iter().enumerate() {
        if s.kind == Kind::Added && !weakened[j] && cannot_fail(&s.text) {
            out.line(
                Check::AssertWeakened,
                v,
                &s.at,
                "an assertion that cannot fail",
            );
        }
    }
    removed_tests(v, out);
}

/// Added code that keeps assertions from running or from failing.
fn kept_from_running(v: &View<'_, '_>, h: &Hunk<'_>, out: &mut Findings) {
    let ls: Vec<&Line<'_>> = h.lines.iter().filter(|l| l.kind != Kind::Removed).collect();
    // The innermost `try` seen: whether the patch added it, and whether an assertion followed.
    let mut open_try: Option<(bool, bool)> = None;
    for (i, l) in ls.iter().enumerate() {
        let t = l.text;
        if is_comment(t) {
            continue;
        }
        if TRY.is_match(t) {
            open_try = Some((l.kind == Kind::Added, false));
        } else if asserts(t) {
            if let Some(o) = open_try.as_mut() {
                o.1 = true;
            }
        }
        if l.kind != Kind::Added {
            continue;
        }
        if CATCHES_ASSERT.is_match(t) {
            out.line(Check::AssertWeakened, v, l, "catches assertion failures");
            continue;
        }
        if EXCEPT_PASS.is_match(t) {
            let inline = !t.trim_end().ends_with(':') || t.contains('{');
            let body_trivial =
                inline || ls.get(i + 1).is_some_and(|n| TRIVIAL_BODY.is_match(n.text));
            if body_trivial && open_try == Some((true, true)) {
                out.line(
                    Check::AssertWeakened,
                    v,
                    l,
                    "swallows the failures of assertions",
                );
            }
        }
        if NEVER.is_match(t) {
            out.line(
                Check::AssertWeakened,
                v,
                l,
                "keeps the code below it from running",
            );
        }
        if BARE_RETURN.is_match(t) {
            let ind = indent(t);
            let later = ls[i + 1..]
                .iter()
                .take(50)
                .take_while(|n| n.text.trim().is_empty() || indent(n.text) >= ind)
                .any(|n| indent(n.text) == ind && asserts(n.text));
            if later {
                out.line(Check::AssertWeakened, v, l, "returns before the assertions");
            }
        }
    }
}

/// Test functions the patch removes and does not add back.
fn removed_tests(v: &View<'_, '_>, out: &mut Findings) {
    let name = |t: &str| {
        TEST_DEF.captures(t).and_then(|c| {
            c.get(1)
                .or_else(|| c.get(2))
                .or_else(|| c.get(3))
                .map(|m| m.as_str().to_string())
        })
    };
    let lines = || v.f.hunks.iter().flat_map(|h| &h.lines);
    let added: HashSet<String> = lines()
        .filter(|l| l.kind == Kind::Added)
        .filter_map(|l| name(l.text))
        .collect();
    for l in lines().filter(|l| l.kind == Kind::Removed) {
        if let Some(n) = name(l.text) {
            if !added.contains(&n) {
                out.line(
                    Check::AssertWeakened,
                    v,
                    l,
                    &format!("removes the test `{n}`"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strength_orders_assertions() {
        assert_eq!(strength("assert f(2) == 4"), 2);
        assert_eq!(strength("assert f(2) is not None"), 1);
        assert_eq!(strength("assert f(2)"), 1);
        assert_eq!(strength("assert isinstance(r, int)"), 1);
        assert_eq!(strength("self.assertEqual(f(2), 4)"), 2);
        assert_eq!(strength("self.assertIsNotNone(f(2))"), 1);
        assert_eq!(strength("expect(f(2)).toBe(4)"), 2);
        assert_eq!(strength("expect(f(2)).toBeDefined()"), 1);
        assert_eq!(strength("assert_eq!(f(2), 4)"), 2);
        for s in [
            "assert True",
            "assert 1",
            "assert f(2) == 4 or True",
            "assert (f(2) == 4, \"f is wrong\")",
            "assert f(2) == f(2)",
            "self.assertEqual(x, x)",
            "self.assertTrue(True)",
            "expect(true).toBe(true)",
            "expect(x).toEqual(x)",
            "assert!(true)",
            "assert_eq!(a, a)",
            "assert \"always\"",
        ] {
            assert_eq!(strength(s), 0, "{s}");
        }
        assert!(!tuple_assert("assert (a == b)"));
        assert!(!tuple_assert("assert (a) == (b, c)"));
        assert!(!same_sides("assert f(1) == f(2)"));
    }
}
