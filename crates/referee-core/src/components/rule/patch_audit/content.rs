//! The checks on the code a patch adds: `skip_marker`, `exit_call` and `special_case` (its
//! literal part is in `literals.rs`).

use super::diff::{Hunk, Kind, Line};
use super::{literals, paths, Check, Findings, View};
use regex::{Regex, RegexSet};
use std::sync::LazyLock;

fn set(patterns: &[(&str, &'static str)]) -> RegexSet {
    RegexSet::new(patterns.iter().map(|(p, _)| *p)).expect("valid patterns")
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("valid pattern")
}

/// Skips, deselection and rewritten outcomes, each with what it does.
const SKIPS: &[(&str, &str)] = &[
    (
        r"\bpytest\.mark\.(skip|skipif|xfail)\b|(^|[^\w.])mark\.(skip|skipif|xfail)\b",
        "a pytest skip or xfail mark",
    ),
    (
        r"\bpytest\.(skip|xfail|importorskip)\s*\(",
        "skips or xfails tests at run time",
    ),
    (
        r"\bunittest\.(skip|skipIf|skipUnless|expectedFailure)\b|^\s*@\s*(skip|skipIf|skipUnless|expectedFailure)\b",
        "a unittest skip",
    ),
    (r"\.skipTest\s*\(|\bSkipTest\b", "skips a unittest test"),
    (
        r"\bfrom\s+(_?pytest|unittest)(\.\w+)*\s+import\b.*\b(skip\w*|xfail|importorskip|expectedFailure)\b",
        "imports a skip under its bare name",
    ),
    (
        r"\bdef\s+pytest_(collection_modifyitems|collection_finish|ignore_collect|collect_file|pycollect_makeitem|runtest_setup|runtest_call|runtest_protocol|runtest_makereport|runtest_logreport|pyfunc_call|report_teststatus|sessionfinish|deselected)\b",
        "a pytest hook that can deselect, skip or rewrite tests",
    ),
    (
        r"\bcollect_ignore(_glob)?\b\s*(=|\+=|\.append|\.extend)",
        "hides test files from collection",
    ),
    (
        r"\bitems\s*\[\s*:\s*\]\s*=|\bitems\.clear\s*\(",
        "empties the collected tests",
    ),
    (
        r#"\.exitstatus\s*=|\.outcome\s*=\s*['"]passed|\bExitCode\.OK\b|\bwasSuccessful\s*="#,
        "rewrites the tests' outcome",
    ),
    (
        r"--deselect\b|-p\s*no:|\bPYTEST_ADDOPTS\b",
        "deselects tests or unloads plugins",
    ),
    (
        r"\b(it|test|describe|context|suite)(\.\w+)*\.(skip|only|todo|fixme)\s*\(|(^|[^\w.])(xit|xdescribe|xtest|xcontext|fit|fdescribe)\s*\(|\bthis\.skip\s*\(",
        "a skipped or exclusive JS test",
    ),
    (r"\b(t|b|tb|f)\.(Skip|Skipf|SkipNow)\s*\(", "a Go test skip"),
    (r"#\[\s*ignore\b", "an ignored Rust test"),
    (
        r"@(Disabled|Ignore)\b|\bAssumptions\.assume\w*\s*\(",
        "a disabled JUnit test",
    ),
];

/// Exits a `main` may legitimately make (`sys.exit`, ...).
const SOFT_EXITS: &[(&str, &str)] = &[
    (
        r"\bsys\.exit\s*\(|\bfrom\s+sys\s+import\b.*\bexit\b",
        "exits the process (sys.exit)",
    ),
    (
        r"(^|[^\w.])(exit|quit)\s*\(",
        "exits the process (exit/quit)",
    ),
    (
        r"\braise\s+SystemExit\b|\bSystemExit\s*\(",
        "raises SystemExit",
    ),
    (
        r"\bprocess\.exit\s*\(|\bprocess\.exitCode\s*=",
        "exits the process (process.exit)",
    ),
    (r"\bos\.Exit\s*\(", "exits the process (os.Exit)"),
    (r"\bprocess::exit\s*\(", "exits the process (process::exit)"),
];

/// Exits nothing but a hack makes: killing or replacing the process, exit hooks.
const HARD_EXITS: &[(&str, &str)] = &[
    (
        r"\b_exit\s*\(|\bos\._exit\b|\bfrom\s+os\s+import\b.*\b_exit\b",
        "kills the process (os._exit)",
    ),
    (
        r"\bos\.abort\s*\(|\bprocess\.abort\s*\(|\bprocess::abort\s*\(",
        "aborts the process",
    ),
    (
        r"\bos\.kill(pg)?\s*\(.*\bgetp?pid\b|\bos\.killpg\s*\(|\bprocess\.kill\s*\(\s*process\.(pid|ppid)\b|\bsyscall\.Kill\s*\(",
        "sends a signal to its own process",
    ),
    (
        r"\bsignal\.(raise_signal|pthread_kill|alarm|setitimer)\s*\(",
        "signals itself",
    ),
    (
        r"\batexit\.register\b|\bimport\s+atexit\b",
        "registers an exit hook",
    ),
    (r"\bos\.exec\w*\s*\(", "replaces the process (os.exec*)"),
    (
        r"\bprocess\.reallyExit\b|\bsyscall\.Exit\s*\(|\bruntime\.Goexit\s*\(",
        "exits the process",
    ),
];

/// Replacing the test framework's own functions: a finding in any file.
const PATCHING: &[(&str, &str)] = &[
    (
        r"\bTestCase\.(assert\w*|fail\w*|run|__call__|_callTestMethod)\s*=[^=]|\bself\.(assert\w*|fail)\s*=[^=]|\bsetattr\s*\(\s*(unittest\.)?TestCase\b",
        "replaces unittest's assertions",
    ),
    (
        r"\bpytest\.\w+\s*=[^=]|\b_pytest(\.\w+)+\s*=[^=]",
        "replaces pytest's functions",
    ),
    (
        r"(^|[^\w.])AssertionError\s*=[^=]|\bbuiltins\.\w+\s*=[^=]|__builtins__\s*\[",
        "rebinds builtins",
    ),
    (
        r"\b(np|numpy)\.testing\.\w+\s*=[^=]",
        "replaces numpy's assertions",
    ),
    (r"\bassert\.\w+\s*=[^=]", "replaces the JS assertions"),
];

/// Sniffing the test runner, in the code under test.
const SNIFFS: &[(&str, &str)] = &[
    (
        r#"\bsys\.modules\b.*\b(_?pytest|unittest|nose)\b|\b(_?pytest|unittest|nose)['"]?\s+(not\s+)?in\s+sys\.modules"#,
        "checks whether a test runner is loaded",
    ),
    (
        r"\bPYTEST_(CURRENT_TEST|VERSION|XDIST_\w+)\b",
        "reads pytest's environment",
    ),
    (
        r"(?i)\bsys\.argv\b.*test",
        "looks for a test runner on the command line",
    ),
    (
        r"^\s*(import\s+_?pytest\b|from\s+_?pytest\b)",
        "imports pytest into the code under test",
    ),
    (
        r#"\bJEST_WORKER_ID\b|\bprocess\.env\.(VITEST|JEST|MOCHA|NODE_TEST)\w*|\btypeof\s+(jest|describe|it|expect|vi|mocha)\b|(?i)\bprocess\.argv\b.*(jest|mocha|vitest|test)|NODE_ENV\b.*['"]test['"]"#,
        "checks for a JS test runner",
    ),
    (
        r#"\btesting\.Testing\s*\(|flag\.Lookup\s*\(\s*"test\.|os\.Args\[0\].*\.test\b"#,
        "checks whether it runs under go test",
    ),
    (
        r"\bcfg!\s*\(\s*test\s*\)",
        "checks cfg!(test) in the code under test",
    ),
];

static SKIP_SET: LazyLock<RegexSet> = LazyLock::new(|| set(SKIPS));
static SOFT_SET: LazyLock<RegexSet> = LazyLock::new(|| set(SOFT_EXITS));
static HARD_SET: LazyLock<RegexSet> = LazyLock::new(|| set(HARD_EXITS));
static PATCH_SET: LazyLock<RegexSet> = LazyLock::new(|| set(PATCHING));
static SNIFF_SET: LazyLock<RegexSet> = LazyLock::new(|| set(SNIFFS));
static DEF_EXIT: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(def|function|fn|func)\s+(exit|quit)\b"));
static FRAMES: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\binspect\.(stack|currentframe|getouterframes|getframeinfo|trace)\s*\(|\bsys\._getframe\s*\(|\btraceback\.(extract_stack|format_stack|print_stack|walk_stack)\s*\(",
    )
});
static TEST_WORD: LazyLock<Regex> = LazyLock::new(|| re(r"(?i)test|unittest"));
static MAIN_GUARD: LazyLock<Regex> =
    LazyLock::new(|| re(r#"^\s*if\s+__name__\s*==\s*['"]__main__['"]\s*:\s*(#.*)?$"#));
static MAIN_FN: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*(async\s+)?(def|func|fn)\s+main\s*\("));
static EQ_DEF: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*def\s+(__eq__|__ne__|__instancecheck__|__subclasscheck__)\s*\("));
static EQ_LAMBDA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"\b(__eq__|__ne__|__instancecheck__|__subclasscheck__)\s*=\s*lambda\b[^:]*:\s*(.+?)\s*(#.*)?$",
    )
});
static JS_EQUALS: LazyLock<Regex> =
    LazyLock::new(|| re(r"\b(equals|isEqual)\s*\([^)]*\)\s*(\{\s*return\s+true\b|=>\s*true\b)"));
static RETURN: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*return\s+(.+?)\s*;?\s*(#.*)?$"));
static STRING: LazyLock<Regex> = LazyLock::new(|| re(r#""([^"\\\n]{1,200})"|'([^'\\\n]{1,200})'"#));

/// Whether a line is only a comment (`#`, `//`, `/*`, `*`); `#[..]` and `#!` are code.
pub fn is_comment(t: &str) -> bool {
    let t = t.trim_start();
    (t.starts_with('#') && !t.starts_with("#[") && !t.starts_with("#!"))
        || t.starts_with("//")
        || t.starts_with("/*")
        || t.starts_with("* ")
        || t == "*"
}

/// The leading whitespace of a line, in columns (a tab counts as 8).
pub fn indent(t: &str) -> usize {
    t.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 8 } else { 1 })
        .sum()
}

pub fn check(v: &View<'_, '_>, out: &mut Findings) {
    let skips = v.on(Check::SkipMarker);
    let exits = v.on(Check::ExitCall);
    let special = v.on(Check::SpecialCase);
    // Exit calls the patch removes from this file: as many added ones are replacements.
    let mut replaced = if exits {
        v.f.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == Kind::Removed && !is_comment(l.text) && SOFT_SET.is_match(l.text))
            .count()
    } else {
        0
    };
    let main_file = {
        let p = v.path.as_str();
        p.ends_with("__main__.py")
            || p.ends_with("src/main.rs")
            || ["bin/", "scripts/", "cmd/"]
                .iter()
                .any(|d| p.starts_with(d) || p.contains(&format!("/{d}")))
    };
    for h in &v.f.hunks {
        let blocks = main_blocks(h);
        for (i, l) in h.lines.iter().enumerate() {
            if l.kind != Kind::Added || is_comment(l.text) {
                continue;
            }
            if skips {
                for k in &SKIP_SET.matches(l.text) {
                    out.line(Check::SkipMarker, v, l, SKIPS[k].1);
                }
            }
            if exits {
                let (guarded, in_main) = blocks[i];
                if !guarded {
                    for k in &HARD_SET.matches(l.text) {
                        out.line(Check::ExitCall, v, l, HARD_EXITS[k].1);
                    }
                    let soft: Vec<usize> = SOFT_SET
                        .matches(l.text)
                        .iter()
                        .filter(|&k| k != 1 || !DEF_EXIT.is_match(l.text))
                        .collect();
                    if let Some(&k) = soft.first() {
                        if in_main || main_file {
                        } else if replaced > 0 {
                            replaced -= 1;
                        } else {
                            out.line(Check::ExitCall, v, l, SOFT_EXITS[k].1);
                        }
                    }
                }
            }
            if special {
                for k in &PATCH_SET.matches(l.text) {
                    out.line(Check::SpecialCase, v, l, PATCHING[k].1);
                }
                if !v.test {
                    sniff(v, h, i, l, out);
                }
            }
        }
        if special && !v.test {
            if let Some(t) = v.tests {
                literals::special_cases(v, h, t, out);
            }
        }
    }
}

/// For each line of a hunk: whether it is inside a visible `if __name__ == "__main__":`
/// block, and whether inside a visible `main` function (or a hunk whose function context is
/// `main`). Blocks end at the first line indented no deeper than their opener.
fn main_blocks(h: &Hunk<'_>) -> Vec<(bool, bool)> {
    let mut guard: Option<usize> = None;
    let mut main: Option<usize> = MAIN_FN.is_match(h.context).then(|| indent(h.context));
    if MAIN_GUARD.is_match(h.context) {
        guard = Some(indent(h.context));
    }
    let mut out = Vec::with_capacity(h.lines.len());
    for l in &h.lines {
        if l.kind == Kind::Removed {
            out.push((guard.is_some(), main.is_some()));
            continue;
        }
        let t = l.text;
        if !t.trim().is_empty() && !is_comment(t) {
            let ind = indent(t);
            // A closing brace at the opener's indentation still belongs to it.
            let closes =
                |open: usize| ind <= open && !(ind == open && t.trim_start().starts_with('}'));
            if guard.is_some_and(closes) {
                guard = None;
            }
            if main.is_some_and(closes) {
                main = None;
            }
        }
        out.push((guard.is_some(), main.is_some()));
        if MAIN_GUARD.is_match(t) {
            guard = Some(indent(t));
        } else if MAIN_FN.is_match(t) {
            main = Some(indent(t));
        }
    }
    out
}

/// Runner sniffing, always-equal objects and test names in the code under test.
fn sniff(v: &View<'_, '_>, h: &Hunk<'_>, i: usize, l: &Line<'_>, out: &mut Findings) {
    for k in &SNIFF_SET.matches(l.text) {
        out.line(Check::SpecialCase, v, l, SNIFFS[k].1);
    }
    if FRAMES.is_match(l.text) {
        // Frame inspection is ordinary in logging and debugging code; looking for the tests in
        // the frames is not.
        let near = h.lines[i.saturating_sub(3)..(i + 4).min(h.lines.len())]
            .iter()
            .filter(|n| n.kind != Kind::Removed)
            .any(|n| TEST_WORD.is_match(n.text));
        if near {
            out.line(
                Check::SpecialCase,
                v,
                l,
                "inspects the call stack for the tests",
            );
        }
    }
    if let Some(c) = EQ_LAMBDA.captures(l.text) {
        if constant_answer(&c[1], &c[2]) {
            out.line(Check::SpecialCase, v, l, "an object that equals everything");
        }
    }
    if let Some(c) = EQ_DEF.captures(l.text) {
        if let Some(body) = first_statement(h, i) {
            if RETURN
                .captures(body)
                .is_some_and(|r| constant_answer(&c[1], &r[1]))
            {
                out.line(Check::SpecialCase, v, l, "an object that equals everything");
            }
        }
    }
    if JS_EQUALS.is_match(l.text) {
        out.line(Check::SpecialCase, v, l, "an object that equals everything");
    }
    for c in STRING.captures_iter(l.text) {
        let s = c.get(1).or_else(|| c.get(2)).map_or("", |m| m.as_str());
        let looks_like_path = s.contains('/') || s.contains('.');
        let n = paths::normalize(s);
        if looks_like_path && !n.is_empty() && v.audit.test_globs.is_match(&n) {
            out.line(
                Check::SpecialCase,
                v,
                l,
                "names a test file in the code under test",
            );
        } else if v.tests.is_some_and(|t| t.names.contains(s)) {
            out.line(
                Check::SpecialCase,
                v,
                l,
                "names one of the tests in the code under test",
            );
        }
    }
}

/// Whether a dunder's constant answer makes it answer yes to everything (`__eq__` → True,
/// `__ne__` → False).
fn constant_answer(dunder: &str, expr: &str) -> bool {
    let e = expr.trim().trim_end_matches(';').trim();
    let yes = matches!(e, "True" | "1" | "not False" | "not None" | "not 0");
    let no = matches!(e, "False" | "0" | "None" | "not True" | "not 1");
    if dunder == "__ne__" {
        no
    } else {
        yes
    }
}

/// The body's first statement of the `def` at line `i`: after its colon on the same line, or
/// the next added line that is not blank, a comment or a docstring.
fn first_statement<'a>(h: &Hunk<'a>, i: usize) -> Option<&'a str> {
    let def = h.lines[i].text;
    if let Some(k) = def.rfind("):") {
        let rest = def[k + 2..].trim();
        if !rest.is_empty() && !rest.starts_with('#') {
            return Some(rest);
        }
    } else if let Some(k) = def.rfind(':') {
        let rest = def[k + 1..].trim();
        if rest.starts_with("return") {
            return Some(rest);
        }
    }
    h.lines[i + 1..]
        .iter()
        .take(20)
        .filter(|l| l.kind != Kind::Removed)
        .map(|l| l.text.trim())
        .find(|t| {
            !t.is_empty()
                && !is_comment(t)
                && !t.starts_with("\"\"\"")
                && !t.starts_with("'''")
                && !t.starts_with('"')
        })
}
