//! # numeric
//! *What it scores:* whether the output's final number equals a reference number (GSM8K-style),
//! reading separators, currency, units and percentages, and scoring hedged answers 0.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`); `reference` (template, e.g.
//! `"{{item.answer}}"`: a number, or a GSM8K solution ending in `#### N`); `extract`:
//! - `marked` (default): the answer must be marked. Strong markers: `#### N` (a markdown heading
//!   such as `#### Step 2` or `#### 1. Setup` is not one) and `\boxed{N}` / `\fbox{N}`. Prose
//!   markers: `The (final) answer is N`, `Answer: N`, `Final answer: N` (any case). If any strong
//!   marker holds a number, only strong markers count, else prose markers do. Every marker that
//!   counts must give the same number, and each marked region (a box's contents; otherwise the
//!   rest of the sentence) must hold one number, repeats allowed (`$72 (72 dollars)`). Why:
//!   `#### 3 or 4` and `\boxed{3} \boxed{4}` are hedges, while a model's earlier "the answer
//!   is …" musings are settled by its final box.
//! - `last`: the last number in the text (verl's "flexible" mode). Lenient: any number at the
//!   end wins.
//! - `only`: the whole trimmed input (a trailing `.` allowed) must be one number.
//! - `pattern`: every match of `pattern` (a regex; group `answer`, else group 1) is a marked
//!   region, with the rules of `marked`. Giving `pattern` implies `extract: pattern`.
//!
//! `abs_tol` (default 0) and `rel_tol` (default 1e-9): equal when
//! `|a − b| ≤ max(abs_tol, rel_tol · max(|a|, |b|))`. `percent`: `number` (default: `50%` reads
//! as 50), `fraction` (as 0.5) or `either`.
//!
//! Numbers: ASCII digits; a sign `-`, `+` or `−` (U+2212) right before the digits or the
//! currency; a leading currency `$`, `\$`, `€`, `£`, `¥`, `₹`; thousands groups of exactly three
//! digits after `,`, `{,}`, `\,`, a no-break or thin space (a plain space is not a separator, so
//! `1 234` is two numbers; `1,2,3` is three; a comma is never a decimal point); decimals `1.5`,
//! `.5`; exponents `1.5e3`, `1.5 × 10^3`, `1.5\times10^{3}`, `10^{3}`; a trailing `%` or `\%`.
//! Words after a number (units) are ignored. Not read: fractions (`3/4` is two numbers), number
//! words, `NaN`, `inf`; use a math-equivalence grader for those.
//!
//! *Example:*
//! ```yaml
//! type: numeric
//! reference: "{{item.answer}}"
//! extract: marked
//! abs_tol: 0.01
//! ```
//!
//! *Score and failure modes:* 1 or 0. No marked number, markers that disagree, or a region
//! with two different numbers score 0 (wrong, not a failure), as does a value that overflows
//! (`1e999`). A reference that is not a number fails with `unparseable_reference` (a literal
//! one is a compile error).

use crate::compile::{sync, At, Compiler, Number};
use crate::components::rule::scan::{
    barriers, boundary_after, boundary_before, lower, skip_space, starts_ci, Grammar, Phrases,
    Unsure,
};
use crate::node::shorten;
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::LazyLock;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumericSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The correct number (template), e.g. `{{item.answer}}`.
    pub reference: String,
    /// How the answer is found in the input (default `marked`).
    #[serde(default)]
    pub extract: Option<NumericExtract>,
    /// `extract: pattern` only: a regex whose group `answer` (else group 1) holds the answer.
    #[serde(default)]
    pub pattern: Option<String>,
    /// Absolute tolerance (default 0).
    #[serde(default)]
    pub abs_tol: Option<Number>,
    /// Relative tolerance (default 1e-9).
    #[serde(default)]
    pub rel_tol: Option<Number>,
    /// How `50%` reads (default `number`: 50).
    #[serde(default)]
    pub percent: PercentMode,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NumericExtract {
    #[default]
    Marked,
    Last,
    Only,
    Pattern,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PercentMode {
    #[default]
    Number,
    Fraction,
    Either,
}

enum Extract {
    Marked,
    Last,
    Only,
    Pattern(Regex, usize),
}

enum Reference {
    Fixed(Num),
    Dynamic(Template),
}

pub struct Numeric {
    input: Template,
    reference: Reference,
    extract: Extract,
    cmp: Cmp,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: NumericSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let mut ok = true;
    let mut tol = |x: Option<Number>, field: &str, default: f64, cx: &mut Compiler| match x {
        None => default,
        Some(Number(t)) if t >= 0.0 => t,
        Some(Number(t)) => {
            cx.err(
                at,
                Some(field),
                format!("a tolerance must be ≥ 0, found {t}"),
            );
            ok = false;
            default
        }
    };
    let cmp = Cmp {
        abs_tol: tol(spec.abs_tol, "abs_tol", 0.0, cx),
        rel_tol: tol(spec.rel_tol, "rel_tol", 1e-9, cx),
        percent: spec.percent,
    };
    let mode = spec.extract.unwrap_or(if spec.pattern.is_some() {
        NumericExtract::Pattern
    } else {
        NumericExtract::Marked
    });
    let extract = match (mode, &spec.pattern) {
        (NumericExtract::Marked, None) => Some(Extract::Marked),
        (NumericExtract::Last, None) => Some(Extract::Last),
        (NumericExtract::Only, None) => Some(Extract::Only),
        (NumericExtract::Pattern, Some(p)) => cx.regex(p, at, "pattern", false).and_then(|re| {
            let group = re
                .capture_names()
                .position(|n| n == Some("answer"))
                .or_else(|| (re.captures_len() > 1).then_some(1));
            if let Some(g) = group {
                Some(Extract::Pattern(re, g))
            } else {
                cx.err(at, Some("pattern"), "the pattern needs a capture group (named `answer`, or group 1) around the number");
                None
            }
        }),
        (NumericExtract::Pattern, None) => {
            cx.err(at, Some("pattern"), "`extract: pattern` needs a `pattern` with a capture group");
            None
        }
        (_, Some(_)) => {
            cx.err(at, Some("pattern"), "`pattern` is only used with `extract: pattern`");
            None
        }
    };
    let reference = cx.template(&spec.reference, at, "reference").and_then(|t| {
        if !t.is_literal() {
            return Some(Reference::Dynamic(t));
        }
        if let Some(n) = parse_reference(t.source()) {
            Some(Reference::Fixed(n))
        } else {
            cx.err(
                at,
                Some("reference"),
                format!("`{}` is not a number", shorten(t.source())),
            );
            None
        }
    });
    let (input, extract, reference) = (input?, extract?, reference?);
    ok.then(|| {
        sync(Numeric {
            input,
            reference,
            extract,
            cmp,
        })
    })
}

impl SyncComponent for Numeric {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let reference = match &self.reference {
            Reference::Fixed(n) => *n,
            Reference::Dynamic(t) => {
                let r = match t.render(s) {
                    Ok(r) => r,
                    Err(m) => return m.outcome(cx),
                };
                match parse_reference(&r) {
                    Some(n) => n,
                    None => {
                        return Outcome::error(
                            "unparseable_reference",
                            format!("reference `{}` is not a number", shorten(&r)),
                        )
                    }
                }
            }
        };
        let (answer, how) = match &self.extract {
            Extract::Marked => match marked(&text, &self.cmp) {
                Ok(x) => x,
                Err(why) => {
                    cx.note(|| why.describe());
                    return Outcome::ok(0.0);
                }
            },
            Extract::Pattern(re, g) => match by_pattern(&text, re, *g, &self.cmp) {
                Ok(x) => x,
                Err(why) => {
                    cx.note(|| why.describe());
                    return Outcome::ok(0.0);
                }
            },
            Extract::Last => {
                let Some(t) = numbers(&text).last() else {
                    cx.note(|| "no number in the text".into());
                    return Outcome::ok(0.0);
                };
                (t.num, "the last number")
            }
            Extract::Only => {
                let Some(n) = lone_number(&text) else {
                    cx.note(|| format!("the input `{}` is not one number", shorten(text.trim())));
                    return Outcome::ok(0.0);
                };
                (n, "the whole input")
            }
        };
        let pass = self.cmp.eq(answer, reference);
        cx.note(|| {
            format!(
                "extracted {} from {how}, reference {}: {}",
                answer.show(),
                reference.show(),
                if pass { "equal" } else { "different" }
            )
        });
        Outcome::bool(pass)
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison

/// A number read from text: its value as written, and whether a `%` followed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Num {
    pub value: f64,
    pub percent: bool,
}

impl Num {
    fn show(self) -> String {
        if self.percent {
            format!("{}%", self.value)
        } else {
            format!("{}", self.value)
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Cmp {
    abs_tol: f64,
    rel_tol: f64,
    percent: PercentMode,
}

impl Cmp {
    /// The values a number may stand for: one, or two for `50%` with `percent: either`.
    fn readings(&self, n: Num) -> [f64; 2] {
        match (n.percent, self.percent) {
            (false, _) | (true, PercentMode::Number) => [n.value, f64::NAN],
            (true, PercentMode::Fraction) => [n.value / 100.0, f64::NAN],
            (true, PercentMode::Either) => [n.value, n.value / 100.0],
        }
    }

    fn close(&self, a: f64, b: f64) -> bool {
        if !a.is_finite() || !b.is_finite() {
            return false;
        }
        let d = (a - b).abs();
        d <= self.abs_tol || d <= self.rel_tol * a.abs().max(b.abs())
    }

    fn eq(&self, a: Num, b: Num) -> bool {
        let (ra, rb) = (self.readings(a), self.readings(b));
        ra.iter().any(|&x| rb.iter().any(|&y| self.close(x, y)))
    }
}

// ---------------------------------------------------------------------------------------------
// Extraction

/// Why no single marked answer was found.
enum NoAnswer {
    Unmarked,
    TooDeep,
    /// Two different numbers: in one region, or from two markers.
    Hedged {
        a: Num,
        b: Num,
        what: &'static str,
    },
}

impl NoAnswer {
    fn describe(&self) -> String {
        match self {
            NoAnswer::Unmarked => {
                "no marked answer (`#### N`, `\\boxed{N}`, `The answer is N`, `Answer: N`)".into()
            }
            NoAnswer::TooDeep => format!("`\\boxed{{}}` nested more than {MAX_BOX_DEPTH} deep"),
            NoAnswer::Hedged { a, b, what } => {
                format!(
                    "{what} give different numbers, {} and {}: a hedge scores 0",
                    a.show(),
                    b.show()
                )
            }
        }
    }
}

/// What one marked region holds.
#[derive(Clone, Copy)]
enum Region {
    Empty,
    One(Num),
    Two(Num, Num),
}

fn region(text: &str, cmp: &Cmp) -> Region {
    let mut it = numbers(text);
    let Some(first) = it.next() else {
        return Region::Empty;
    };
    for t in it {
        if !cmp.eq(first.num, t.num) {
            return Region::Two(first.num, t.num);
        }
    }
    Region::One(first.num)
}

/// The markers of one strength, folded as they are found (no allocation).
#[derive(Default)]
struct Tier {
    first: Option<Num>,
    count: usize,
    hedge: Option<(Num, Num)>,
}

impl Tier {
    fn add(&mut self, r: Region, cmp: &Cmp) {
        match r {
            Region::Empty => {}
            Region::Two(a, b) => {
                self.count += 1;
                self.hedge.get_or_insert((a, b));
            }
            Region::One(n) => {
                self.count += 1;
                match self.first {
                    None => self.first = Some(n),
                    Some(f) if !cmp.eq(f, n) => {
                        self.hedge.get_or_insert((f, n));
                    }
                    Some(_) => {}
                }
            }
        }
    }

    fn answer(&self, what: &'static str) -> Result<Num, NoAnswer> {
        match (self.hedge, self.first) {
            (Some((a, b)), _) => Err(NoAnswer::Hedged { a, b, what }),
            (None, Some(n)) => Ok(n),
            (None, None) => Err(NoAnswer::Unmarked),
        }
    }
}

/// The markers: `####`, and the prose markers. This regex defines them; [`MarkerGrammar`]
/// finds the same matches without walking every byte through it.
static MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"####|(?i:\b(?:the\s+)?(?:final\s+)?answer(?:\s+is\b|\s*\**\s*:))")
        .expect("valid marker regex")
});

/// [`MARKERS`] for [`Phrases`]: every match holds `####` or `answer` (whose `s` may be a
/// long `ſ`, which case-folds to it), and no ASCII punctuation but `#`, `*` and `:`.
struct MarkerGrammar;

impl Grammar for MarkerGrammar {
    fn regex(&self) -> &Regex {
        &MARKERS
    }

    // `&` and `|`, not `&&` and `||`: branch-free, so that the block scan vectorizes.
    #[allow(clippy::needless_bitwise_bool)]
    fn spot(&self, p: u8, c: u8, n1: u8, _: u8, _: u8) -> bool {
        let answer = (lower(c) == b'w') & ((lower(p) == b's') | (p == 0xBF));
        // `##` rather than `####`: one byte stream fewer to load, and `##` is rare anyway.
        let hashes = (c == b'#') & (n1 == b'#');
        answer | hashes
    }

    fn barrier(&self, c: u8) -> bool {
        const BARRIERS: [bool; 256] = barriers(b"#*:");
        BARRIERS[usize::from(c)]
    }

    fn match_at(&self, b: &[u8], p: usize) -> Result<Option<usize>, Unsure> {
        // No non-ASCII character case-folds to `t`, `f` or `a`.
        if !matches!(lower(b[p]), b'#' | b't' | b'f' | b'a') {
            return Ok(None);
        }
        if b[p..].starts_with(b"####") {
            return Ok(Some(p + 4));
        }
        // `\b(?:the\s+)?(?:final\s+)?answer`: each optional word, when present, must be
        // followed by whitespace, as the next word cannot start with its letter instead.
        if b[p] == b'#' || !boundary_before(b, p)? {
            return Ok(None);
        }
        let mut q = p;
        for word in [&b"the"[..], b"final"] {
            if starts_ci(b, q, word)? {
                let r = skip_space(b, q + word.len())?;
                if r == q + word.len() {
                    return Ok(None);
                }
                q = r;
            }
        }
        if !starts_ci(b, q, b"answer")? {
            return Ok(None);
        }
        q += 6;
        // `\s+is\b`, else `\s*\**\s*:`
        let r = skip_space(b, q)?;
        if r > q && starts_ci(b, r, b"is")? && boundary_after(b, r + 2)? {
            return Ok(Some(r + 2));
        }
        let mut r = r;
        while b.get(r) == Some(&b'*') {
            r += 1;
        }
        let r = skip_space(b, r)?;
        Ok((b.get(r) == Some(&b':')).then_some(r + 1))
    }
}

fn marked(text: &str, cmp: &Cmp) -> Result<(Num, &'static str), NoAnswer> {
    const STRONG: &str = "the `####`/`\\boxed{}` markers";
    let b = text.as_bytes();
    let (mut strong, mut prose) = (Tier::default(), Tier::default());
    let mut found = Phrases::new(&MarkerGrammar, text).peekable();
    while let Some((start, end)) = found.next() {
        // A marker's region never runs into the next marker, so scanning stays linear.
        let limit = found.peek().map_or(text.len(), |m| m.0);
        let after = &text[end..limit];
        if b[start] == b'#' {
            // Exactly four hashes, followed on the same line by a number that is not the
            // number of a markdown heading (`#### 1. Setup`).
            if start > 0 && b[start - 1] == b'#' || b.get(end) == Some(&b'#') {
                continue;
            }
            let rest = line_rest(after).trim_start_matches([' ', '\t']);
            let Some(first) = numbers(rest).next() else {
                continue;
            };
            if first.start != 0 || is_heading_number(&rest[first.end..]) {
                continue;
            }
            strong.add(region(clause(rest), cmp), cmp);
        } else {
            prose.add(region(clause(after_marker(after)), cmp), cmp);
        }
    }
    if boxes(text, |inner| strong.add(region(inner, cmp), cmp)).is_err() {
        return Err(NoAnswer::TooDeep);
    }
    if strong.count > 0 {
        strong.answer(STRONG).map(|n| (n, STRONG))
    } else {
        prose
            .answer("the answer markers")
            .map(|n| (n, "the answer markers"))
    }
}

/// `\boxed{…}` / `\fbox{…}` nested deeper than this is not read (the output scores 0).
pub(crate) const MAX_BOX_DEPTH: usize = 16;

/// Calls `f` with the contents of every closed `\boxed{…}` / `\fbox{…}` (brace-matched,
/// `\{` and `\}` escaped), in one pass over the text. `Err` when boxes nest deeper than
/// [`MAX_BOX_DEPTH`]. Unclosed boxes are skipped. Only `\`, `{` and `}` matter, so `memchr3`
/// jumps from one to the next.
pub(crate) fn boxes<'a>(text: &'a str, mut f: impl FnMut(&'a str)) -> Result<(), ()> {
    let b = text.as_bytes();
    // (depth outside the box, start of its contents)
    let mut open = [(0usize, 0usize); MAX_BOX_DEPTH];
    let mut n_open = 0;
    let mut depth = 0usize;
    let mut k = 0;
    while k < b.len() {
        let Some(j) = memchr::memchr3(b'\\', b'{', b'}', &b[k..]) else {
            break;
        };
        k += j;
        match b[k] {
            b'\\' => {
                let rest = &b[k + 1..];
                let name = if rest.starts_with(b"boxed") {
                    5
                } else if rest.starts_with(b"fbox") {
                    4
                } else {
                    k += 2;
                    continue;
                };
                let mut j = k + 1 + name;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if b.get(j) == Some(&b'{') {
                    if n_open == MAX_BOX_DEPTH {
                        return Err(());
                    }
                    open[n_open] = (depth, j + 1);
                    n_open += 1;
                    depth += 1;
                    k = j + 1;
                } else {
                    k = j;
                }
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if n_open > 0 && open[n_open - 1].0 == depth {
                    n_open -= 1;
                    f(&text[open[n_open].1..k]);
                }
            }
            _ => {}
        }
        k += 1;
    }
    Ok(())
}

fn by_pattern(
    text: &str,
    re: &Regex,
    group: usize,
    cmp: &Cmp,
) -> Result<(Num, &'static str), NoAnswer> {
    let mut tier = Tier::default();
    let mut locs = re.capture_locations();
    let mut pos = 0;
    while pos <= text.len() {
        let Some(m) = re.captures_read_at(&mut locs, text, pos) else {
            break;
        };
        if let Some((a, z)) = locs.get(group) {
            tier.add(region(&text[a..z], cmp), cmp);
        }
        pos = if m.end() > m.start() {
            m.end()
        } else {
            m.end() + text[m.end()..].chars().next().map_or(1, char::len_utf8)
        };
    }
    tier.answer("the pattern's matches")
        .map(|n| (n, "the pattern's matches"))
}

/// The text up to the end of its first line.
fn line_rest(s: &str) -> &str {
    s.find('\n').map_or(s, |i| &s[..i])
}

/// Up to the end of the line or of the sentence (`.`, `!`, `?`, `;` before a space or the end;
/// a `.` before a digit is a decimal point).
fn clause(s: &str) -> &str {
    let b = s.as_bytes();
    for (k, &c) in b.iter().enumerate() {
        match c {
            b'\n' => return &s[..k],
            b'.' | b'!' | b'?' | b';' if b.get(k + 1).is_none_or(u8::is_ascii_whitespace) => {
                return &s[..k]
            }
            _ => {}
        }
    }
    s
}

/// The text after a prose marker: markup skipped, and the next non-blank line if the marker
/// ends its line (`Answer:\n72`).
fn after_marker(s: &str) -> &str {
    let t = s.trim_start_matches([' ', '\t', '*', '_', ':']);
    if t.starts_with(['\n', '\r']) {
        t.trim_start()
    } else {
        t
    }
}

/// `1. Setup`, `2) Plan`, `3: Costs`: a numbered heading rather than an answer.
fn is_heading_number(after: &str) -> bool {
    let mut c = after.chars();
    matches!(c.next(), Some('.' | ')' | ':'))
        && c.next().is_some_and(char::is_whitespace)
        && c.as_str().trim_start().starts_with(char::is_alphabetic)
}

/// The input as one number: the whole trimmed text (a final `.` allowed) is one number token.
pub(crate) fn lone_number(text: &str) -> Option<Num> {
    let t = text.trim();
    let t = t.strip_suffix('.').unwrap_or(t);
    let mut it = numbers(t);
    match (it.next(), it.next()) {
        (Some(tok), None) if tok.start == 0 && tok.end == t.len() && tok.num.value.is_finite() => {
            Some(tok.num)
        }
        _ => None,
    }
}

/// A reference: a lone number, or a GSM8K solution whose last `####` line holds one number.
fn parse_reference(text: &str) -> Option<Num> {
    if let Some(n) = lone_number(text) {
        return Some(n);
    }
    let i = text.rfind("####")?;
    let rest = line_rest(&text[i + 4..]);
    match region(
        clause(rest.trim()),
        &Cmp {
            abs_tol: 0.0,
            rel_tol: 0.0,
            percent: PercentMode::Number,
        },
    ) {
        Region::One(n) if n.value.is_finite() => Some(n),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Number scanning

/// One number found in a text, with its byte span (sign and currency included).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tok {
    pub num: Num,
    pub start: usize,
    pub end: usize,
}

/// Every number in `s`, left to right, without allocating.
pub(crate) fn numbers(s: &str) -> Numbers<'_> {
    Numbers { s, i: 0 }
}

pub(crate) struct Numbers<'a> {
    s: &'a str,
    i: usize,
}

impl Iterator for Numbers<'_> {
    type Item = Tok;
    fn next(&mut self) -> Option<Tok> {
        let b = self.s.as_bytes();
        while self.i < b.len() {
            let i = self.i;
            let c = b[i];
            let starts = c.is_ascii_digit()
                || (c == b'.'
                    && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                    && (i == 0 || !b[i - 1].is_ascii_digit()));
            if starts {
                let t = read_number(self.s, i);
                self.i = t.end;
                return Some(t);
            }
            self.i += 1;
        }
        None
    }
}

/// Thousands separators: only between groups of exactly three digits.
const SEPARATORS: &[&str] = &[",", "{,}", "\\,", "\u{a0}", "\u{202f}", "\u{2009}"];
/// Currency before the digits (longest first).
const CURRENCIES: &[&str] = &["\\$", "$", "€", "£", "¥", "₹"];
/// Signs, and whether they negate.
const SIGNS: &[(&str, bool)] = &[("-", true), ("\u{2212}", true), ("+", false)];
/// What may stand between a mantissa and `10^n`.
const TIMES: &[&str] = &["\\times", "\\cdot", "×", "·", "x", "*"];

fn suffix_len<'a>(b: &[u8], set: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    set.into_iter()
        .find(|p| b.ends_with(p.as_bytes()))
        .map(str::len)
}

/// Where the token starting with the digit at `i` really starts (sign, currency), and its sign.
fn prefix(s: &str, i: usize) -> (usize, bool) {
    let b = s.as_bytes();
    // Every currency and sign ends in `$`, `-`, `+` or a non-ASCII byte: the common case,
    // a digit after a space or a letter, needs no look at the lists.
    if i == 0 || (b[i - 1] < 0x80 && !matches!(b[i - 1], b'$' | b'-' | b'+')) {
        return (i, false);
    }
    let mut j = i;
    let mut currency = false;
    if let Some(l) = suffix_len(&b[..j], CURRENCIES.iter().copied()) {
        j -= l;
        currency = true;
    }
    let mut neg = false;
    if let Some(&(sign, n)) = SIGNS.iter().find(|(sg, _)| b[..j].ends_with(sg.as_bytes())) {
        // A sign, not a binary operator or hyphen: nothing alphanumeric right before it.
        let sign_at = j - sign.len();
        if !s[..sign_at]
            .chars()
            .next_back()
            .is_some_and(char::is_alphanumeric)
        {
            j = sign_at;
            neg = n;
        }
    }
    if !currency {
        if let Some(l) = suffix_len(&b[..j], CURRENCIES.iter().copied()) {
            j -= l;
        }
    }
    (j, neg)
}

/// A number's digits normalised for `f64::from_str`, on the stack unless the number is huge.
/// A plain integer (an optional `-`, then digits) is also accumulated as it is pushed, so that
/// the common case skips the float parser.
struct Digits {
    stack: [u8; 48],
    len: usize,
    heap: Vec<u8>,
    /// Only digits after an optional leading `-` so far; then `int` is their value (while
    /// there are at most [`EXACT_DIGITS`] of them) and `count` how many there are.
    plain: bool,
    int: u64,
    count: usize,
}

/// Integers of up to 15 digits are below 2^53, so `int as f64` is exact, the same value
/// `f64::from_str` gives.
const EXACT_DIGITS: usize = 15;

impl Digits {
    fn new() -> Self {
        Digits {
            stack: [0; 48],
            len: 0,
            heap: Vec::new(),
            plain: true,
            int: 0,
            count: 0,
        }
    }
    fn push(&mut self, c: u8) {
        if c.is_ascii_digit() {
            if self.count < EXACT_DIGITS {
                self.int = self.int * 10 + u64::from(c - b'0');
            }
            self.count += 1;
        } else if !(c == b'-' && self.len == 0) {
            self.plain = false;
        }
        if self.heap.is_empty() && self.len < self.stack.len() {
            self.stack[self.len] = c;
            self.len += 1;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.stack[..self.len]);
            }
            self.heap.push(c);
        }
    }
    fn extend(&mut self, cs: &[u8]) {
        for &c in cs {
            self.push(c);
        }
    }
    /// [`Digits::extend`] for a run of ASCII digits: one copy while it fits on the stack.
    fn extend_digits(&mut self, ds: &[u8]) {
        if !self.heap.is_empty() || self.len + ds.len() > self.stack.len() {
            return self.extend(ds);
        }
        for &d in ds {
            if self.count < EXACT_DIGITS {
                self.int = self.int * 10 + u64::from(d - b'0');
            }
            self.count += 1;
        }
        self.stack[self.len..self.len + ds.len()].copy_from_slice(ds);
        self.len += ds.len();
    }
    fn value(&self) -> f64 {
        if self.plain && (1..=EXACT_DIGITS).contains(&self.count) {
            let v = self.int as f64;
            return if self.stack[0] == b'-' { -v } else { v };
        }
        let bytes = if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap[..]
        };
        std::str::from_utf8(bytes)
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

fn digits_end(b: &[u8], mut k: usize) -> usize {
    while k < b.len() && b[k].is_ascii_digit() {
        k += 1;
    }
    k
}

/// Reads the number whose first digit (or leading `.`) is at `i`.
fn read_number(s: &str, i: usize) -> Tok {
    let b = s.as_bytes();
    let (start, neg) = prefix(s, i);
    let mut digits = Digits::new();
    if neg {
        digits.push(b'-');
    }
    let mut k = digits_end(b, i);
    digits.extend_digits(&b[i..k]);
    let int_len = k - i;
    if (1..=3).contains(&int_len) {
        let mut sep: Option<&str> = None;
        loop {
            let rest = &b[k..];
            let found = match sep {
                Some(sp) => rest.starts_with(sp.as_bytes()).then_some(sp),
                None => SEPARATORS
                    .iter()
                    .copied()
                    .find(|sp| rest.starts_with(sp.as_bytes())),
            };
            let Some(sp) = found else { break };
            let group = k + sp.len();
            if digits_end(b, group) == group + 3 {
                digits.extend_digits(&b[group..group + 3]);
                k = group + 3;
                sep = Some(sp);
            } else {
                break;
            }
        }
    }
    let mut fraction = false;
    if b.get(k) == Some(&b'.') && b.get(k + 1).is_some_and(u8::is_ascii_digit) {
        let frac_end = digits_end(b, k + 1);
        digits.extend(&b[k..frac_end]);
        k = frac_end;
        fraction = true;
    }
    if let Some((end, exp)) = exponent(b, k) {
        digits.push(b'e');
        digits.extend(exp);
        k = end;
    } else if let Some((end, exp)) = times_ten(b, k) {
        digits.push(b'e');
        digits.extend(exp);
        k = end;
    } else if !fraction && &b[i..k] == b"10" {
        // A bare power of ten: `10^3`, `10^{-2}`.
        if let Some((end, exp)) = power(b, k) {
            digits = Digits::new();
            digits.extend(if neg { b"-1e" } else { b"1e" });
            digits.extend(exp);
            k = end;
        }
    }
    let mut percent = false;
    let pct = if b.get(k) == Some(&b' ') { k + 1 } else { k };
    if b[pct.min(b.len())..].starts_with(b"%") {
        percent = true;
        k = pct + 1;
    } else if b[pct.min(b.len())..].starts_with(b"\\%") {
        percent = true;
        k = pct + 2;
    }
    Tok {
        num: Num {
            value: digits.value(),
            percent,
        },
        start,
        end: k,
    }
}

/// `e5`, `E-3`, `e+10` at `k`: the end and the exponent text (sign and digits).
fn exponent(b: &[u8], k: usize) -> Option<(usize, &[u8])> {
    if !matches!(b.get(k), Some(b'e' | b'E')) {
        return None;
    }
    let ds = if matches!(b.get(k + 1), Some(b'+' | b'-')) {
        k + 2
    } else {
        k + 1
    };
    let e = digits_end(b, ds);
    (e > ds).then(|| (e, &b[k + 1..e]))
}

/// ` × 10^3`, `\times 10^{-2}`, `*10^5` at `k`.
fn times_ten(b: &[u8], k: usize) -> Option<(usize, &[u8])> {
    let skip = |mut k: usize| {
        while b.get(k) == Some(&b' ') {
            k += 1;
        }
        k
    };
    let k = skip(k);
    // Every entry of TIMES starts with one of these bytes (`×` is C3 97, `·` C2 B7).
    if !matches!(b.get(k), Some(b'\\' | b'x' | b'*' | 0xC2 | 0xC3)) {
        return None;
    }
    let t = TIMES
        .iter()
        .find(|t| b[k.min(b.len())..].starts_with(t.as_bytes()))?;
    let k = skip(k + t.len());
    if !b[k.min(b.len())..].starts_with(b"10") {
        return None;
    }
    power(b, k + 2)
}

/// `^3`, `^{-2}`, `^{+4}` at `k`: the end and the exponent text. A unicode minus is not
/// accepted here (rare, and it would need rewriting).
fn power(b: &[u8], k: usize) -> Option<(usize, &[u8])> {
    if b.get(k) != Some(&b'^') {
        return None;
    }
    let brace = b.get(k + 1) == Some(&b'{');
    let s = if brace { k + 2 } else { k + 1 };
    let ds = if matches!(b.get(s), Some(b'+' | b'-')) {
        s + 1
    } else {
        s
    };
    let e = digits_end(b, ds);
    if e == ds {
        return None;
    }
    if brace {
        (b.get(e) == Some(&b'}')).then(|| (e + 1, &b[s..e]))
    } else {
        Some((e, &b[s..e]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(s: &str) -> Vec<f64> {
        numbers(s).map(|t| t.num.value).collect()
    }

    #[test]
    fn reads_number_syntax() {
        assert_eq!(vals("1,234,567"), [1_234_567.0]);
        assert_eq!(vals("1,2,3"), [1.0, 2.0, 3.0]);
        assert_eq!(vals("1,2345"), [1.0, 2345.0]);
        assert_eq!(vals("1234,567"), [1234.0, 567.0]);
        assert_eq!(vals("1,234.5"), [1234.5]);
        assert_eq!(vals("1 234"), [1.0, 234.0]);
        assert_eq!(
            vals("1\u{a0}234 and 5\u{202f}000\u{202f}000"),
            [1234.0, 5_000_000.0]
        );
        assert_eq!(vals("1{,}234 1\\,000"), [1234.0, 1000.0]);
        assert_eq!(vals("1,000 000"), [1000.0, 0.0]);
        assert_eq!(vals("3,5"), [3.0, 5.0]);
        assert_eq!(vals("-5 +6 −7 5-3 x-2"), [-5.0, 6.0, -7.0, 5.0, 3.0, 2.0]);
        assert_eq!(vals("$72.00 -$5 $-6 \\$7 €8"), [72.0, -5.0, -6.0, 7.0, 8.0]);
        assert_eq!(vals(".5 and 0.25."), [0.5, 0.25]);
        assert_eq!(vals("1.2.3"), [1.2, 3.0]);
        assert_eq!(vals("1.5e3 2E-2 3e"), [1500.0, 0.02, 3.0]);
        assert_eq!(
            vals("1.5 × 10^3, 2\\times10^{-2}, 10^{3}, 4 * 10^2"),
            [1500.0, 0.02, 1000.0, 400.0]
        );
        assert_eq!(vals("72 dollars, 3rd, H2O"), [72.0, 3.0, 2.0]);
        assert_eq!(vals("NaN inf infinity"), Vec::<f64>::new());
        assert_eq!(vals("７２"), Vec::<f64>::new());
    }

    #[test]
    fn percent_and_spans() {
        let t: Vec<Tok> = numbers("about -$1,200.50% and 7 \\% ok").collect();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].num.value, t[0].num.percent), (-1200.5, true));
        assert_eq!(
            &"about -$1,200.50% and 7 \\% ok"[t[0].start..t[0].end],
            "-$1,200.50%"
        );
        assert!(t[1].num.percent);
    }

    #[test]
    fn huge_numbers_do_not_panic() {
        let big = "9".repeat(5000);
        let v = vals(&big);
        assert_eq!(v.len(), 1);
        assert!(v[0].is_infinite());
        assert!(vals("1e999")[0].is_infinite());
        assert!(vals("1e99999999999999999999999")[0].is_infinite());
        let tiny = format!("0.{}1", "0".repeat(400));
        assert_eq!(vals(&tiny), [0.0]);
    }

    /// The integer fast path of [`Digits`] gives what `f64::from_str` gives.
    #[test]
    fn integer_fast_path_equals_the_parser() {
        let mut x: u64 = 3;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 20) as usize + 1;
            let mut t = String::new();
            if x % 3 == 0 {
                t.push('-');
            }
            for k in 0..n {
                t.push(char::from(b'0' + ((x >> (k * 3)) % 10) as u8));
            }
            let mut d = Digits::new();
            d.extend(t.as_bytes());
            let want: f64 = t.parse().unwrap();
            assert_eq!(d.value().to_bits(), want.to_bits(), "{t}");
            // The same digits pushed as runs, the way `read_number` does.
            let mut e = Digits::new();
            let ds = t.strip_prefix('-').map_or(t.as_str(), |rest| {
                e.push(b'-');
                rest
            });
            let (a, z) = ds.as_bytes().split_at(ds.len() / 2);
            e.extend_digits(a);
            e.extend_digits(z);
            assert_eq!(e.value().to_bits(), want.to_bits(), "{t} in runs");
        }
        let long = "1234567890".repeat(7);
        let mut d = Digits::new();
        d.extend_digits(&long.as_bytes()[..45]);
        d.extend_digits(&long.as_bytes()[45..]);
        assert_eq!(d.value(), long.parse::<f64>().unwrap());
        for t in [
            "0",
            "-0",
            "007",
            "999999999999999",
            "9999999999999999",
            "-1e3",
            "1.5",
        ] {
            let mut d = Digits::new();
            d.extend(t.as_bytes());
            assert_eq!(
                d.value().to_bits(),
                t.parse::<f64>().unwrap().to_bits(),
                "{t}"
            );
        }
    }

    #[test]
    fn lone_numbers() {
        assert_eq!(lone_number(" $72.00. ").map(|n| n.value), Some(72.0));
        assert_eq!(lone_number("-1,234").map(|n| n.value), Some(-1234.0));
        assert_eq!(lone_number("72 dollars"), None);
        assert_eq!(lone_number("1 234"), None);
        assert_eq!(lone_number(""), None);
        assert_eq!(lone_number("1e999"), None);
    }

    #[test]
    fn references() {
        assert_eq!(parse_reference("72").map(|n| n.value), Some(72.0));
        assert_eq!(
            parse_reference("Natalia sold 48/2 = 24 clips.\n#### 72").map(|n| n.value),
            Some(72.0)
        );
        assert_eq!(parse_reference("seventy-two"), None);
        assert_eq!(parse_reference("3/4"), None);
    }

    #[test]
    fn tolerance_and_percent() {
        let c = Cmp {
            abs_tol: 0.0,
            rel_tol: 1e-9,
            percent: PercentMode::Either,
        };
        let n = |v| Num {
            value: v,
            percent: false,
        };
        let p = |v| Num {
            value: v,
            percent: true,
        };
        assert!(c.eq(p(50.0), n(0.5)) && c.eq(p(50.0), n(50.0)) && !c.eq(p(50.0), n(5.0)));
        assert!(!c.eq(n(f64::INFINITY), n(f64::INFINITY)));
        assert!(!c.eq(n(53607.0), n(53608.0)));
        let f = Cmp {
            percent: PercentMode::Fraction,
            ..c
        };
        assert!(f.eq(p(50.0), n(0.5)) && !f.eq(p(50.0), n(50.0)));
    }

    #[test]
    fn markers() {
        let c = Cmp {
            abs_tol: 0.0,
            rel_tol: 1e-9,
            percent: PercentMode::Number,
        };
        let v = |t: &str| marked(t, &c).ok().map(|x| x.0.value);
        assert_eq!(v("so 8*9=72\n#### 72"), Some(72.0));
        assert_eq!(v("#### 3 or 4"), None);
        assert_eq!(v("#### 3\n#### 4"), None);
        assert_eq!(v("#### Step 1\nwork\n#### 1. Setup\n#### 72"), Some(72.0));
        assert_eq!(v("##### 5\nThe answer is 6."), Some(6.0));
        assert_eq!(
            v("The answer is 5... no. The final answer is \\boxed{6}"),
            Some(6.0)
        );
        assert_eq!(v("The answer is 5. Answer: 6"), None);
        assert_eq!(v("\\boxed{\\frac{1}{2}}"), None);
        assert_eq!(
            v("\\boxed{72\\text{ dollars}} and \\boxed{$72}"),
            Some(72.0)
        );
        assert_eq!(v("**Answer:**\n\n 1,234."), Some(1234.0));
        assert_eq!(v("The answer is $72. Because 8 times 9 is 72."), Some(72.0));
        assert_eq!(v("\\boxed{72"), None);
        assert_eq!(v("72"), None);
    }

    /// [`MarkerGrammar`] finds exactly the matches of [`MARKERS`], Unicode corner cases included.
    #[test]
    fn marker_scan_equals_the_regex() {
        let pieces = [
            "####",
            "#",
            "##",
            "the",
            "The ",
            "THE",
            "final",
            "Final ",
            "answer",
            "ANSWER",
            "an",
            "\u{17f}wer",
            "swer",
            "is",
            "IS",
            "i\u{17f}",
            "isn't",
            " ",
            " ",
            "  ",
            "\n",
            "\t",
            "\u{a0}",
            "\u{3000}",
            "*",
            "**",
            ":",
            "x",
            "é",
            "7",
            ".",
            ",",
            "_",
            "-",
            "$",
            "the answer is ",
            "Final Answer: ",
            "answer**:",
            "#### 72\n",
        ];
        let found = super::super::scan::assert_same_as_regex(
            &MarkerGrammar,
            &pieces,
            9,
            "So the answer is 72, and #### 72. Then: the FINAL answer:7 ",
        );
        assert!(found > 50_000, "{found}");
    }

    #[test]
    fn linear_on_hostile_input() {
        let c = Cmp {
            abs_tol: 0.0,
            rel_tol: 1e-9,
            percent: PercentMode::Number,
        };
        let many = "1,".repeat(200_000);
        assert_eq!(numbers(&many).count(), 200_000);
        let boxes = "\\boxed{".repeat(50_000);
        assert!(marked(&boxes, &c).is_err());
        let hashes = "####".repeat(50_000);
        assert!(marked(&hashes, &c).is_err());
    }
}
