//! # choice
//! *What it scores:* a multiple-choice answer: the option label the output commits to (`B`),
//! compared with the reference label.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`); `reference` (template: the
//! correct label, e.g. `"{{item.answer}}"`; `(B)` and `B.` read as `B` too); `labels` (default
//! `[A, B, C, D]`; any list of letters, digits or alphanumeric words, e.g. `A`…`J` for
//! MMLU-Pro, or a template rendering to a list or to a comma/space separated string);
//! `case_sensitive` (default false).
//!
//! Where the answer is read, strongest first; the first place that yields a label decides:
//! 1. `\boxed{B}` (also `\boxed{\text{(B)}}`), every box in the output;
//! 2. answer phrases: `Answer: B`, `The (correct/final) answer is (B)`, `The correct option is
//!    B`, `答案是B`, with `**B**`, `(B)`, `$B$`, `option B` also read in that position;
//! 3. the last non-empty line, when it is a lone label: `B`, `B.`, `(B)`, `**B**`, or a label
//!    with its option text, `B) 42 m`.
//!
//! Everything found at the deciding place must name one label. A bare letter counts only in
//! those positions, never in running prose, and a lower-case single letter followed by a word
//! (`the answer is a bit tricky`, `i think`) is read as English: `A` and `I` are words too.
//!
//! *Example:*
//! ```yaml
//! type: choice
//! reference: "{{item.answer}}"
//! labels: [A, B, C, D, E, F, G, H, I, J]
//! ```
//!
//! *Score and failure modes:* 1 or 0. Several different labels (`A or B`, `A, B, C, D`,
//! `\boxed{A}\boxed{C}`, `Answer: A … Answer: C`) score 0, as does no answer (noted in the
//! trace). A reference that is not one of the labels fails with `unparseable_reference`; labels
//! from a template that are empty, repeated or not alphanumeric fail with `invalid_labels`
//! (literal ones are checked at compile time).

use crate::compile::{sync, At, Compiler};
use crate::components::rule::numeric::boxes;
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
use std::borrow::Cow;
use std::sync::LazyLock;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoiceSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The correct label (template), e.g. `{{item.answer}}`.
    pub reference: String,
    /// The option labels (default `[A, B, C, D]`), or a template rendering to them.
    #[serde(default)]
    pub labels: Option<ChoiceLabels>,
    #[serde(default)]
    pub case_sensitive: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ChoiceLabels {
    List(Vec<LabelName>),
    Template(String),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LabelName {
    Text(String),
    Int(u64),
}

enum Labels {
    Fixed(Vec<String>),
    Dynamic(Template),
}

enum Reference {
    Fixed(usize),
    Dynamic(Template),
}

pub struct Choice {
    input: Template,
    labels: Labels,
    reference: Reference,
    case_sensitive: bool,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ChoiceSpec = cx.spec(v, at)?;
    let cs = spec.case_sensitive;
    let input = cx.input(spec.input.as_deref(), at);
    let labels = match spec.labels {
        None => Some(Labels::Fixed(
            ["A", "B", "C", "D"].map(String::from).to_vec(),
        )),
        Some(ChoiceLabels::List(ls)) => {
            let ls: Vec<String> = ls
                .into_iter()
                .map(|l| match l {
                    LabelName::Text(t) => t.trim().to_string(),
                    LabelName::Int(i) => i.to_string(),
                })
                .collect();
            match check_labels(&ls, cs) {
                Ok(()) => Some(Labels::Fixed(ls)),
                Err(e) => {
                    cx.err(at, Some("labels"), e);
                    None
                }
            }
        }
        Some(ChoiceLabels::Template(t)) => cx.template(&t, at, "labels").and_then(|t| {
            if !t.is_literal() {
                return Some(Labels::Dynamic(t));
            }
            let ls: Vec<String> = split_labels(t.source()).map(str::to_string).collect();
            match check_labels(&ls, cs) {
                Ok(()) => Some(Labels::Fixed(ls)),
                Err(e) => {
                    cx.err(at, Some("labels"), e);
                    None
                }
            }
        }),
    };
    let reference = cx.template(&spec.reference, at, "reference");
    let (input, labels, reference) = (input?, labels?, reference?);
    let reference = match (&labels, reference.is_literal()) {
        (Labels::Fixed(ls), true) => {
            if let Found::One(i) = answer_line(reference.source(), ls, cs).0 {
                Reference::Fixed(i)
            } else {
                cx.err(
                    at,
                    Some("reference"),
                    format!(
                        "`{}` is not one of the labels {}",
                        shorten(reference.source()),
                        ls.join(", ")
                    ),
                );
                return None;
            }
        }
        _ => Reference::Dynamic(reference),
    };
    Some(sync(Choice {
        input,
        labels,
        reference,
        case_sensitive: cs,
    }))
}

/// Labels must be non-empty, alphanumeric (they are read as whole words) and distinct.
fn check_labels<L: AsRef<str>>(ls: &[L], cs: bool) -> Result<(), String> {
    if ls.is_empty() {
        return Err("needs at least one label".into());
    }
    for (i, l) in ls.iter().enumerate() {
        let l = l.as_ref();
        if l.is_empty() || !l.chars().all(char::is_alphanumeric) {
            return Err(format!(
                "label `{l}` must be letters and digits only (it is read as a whole word)"
            ));
        }
        if ls[..i].iter().any(|o| same(o.as_ref(), l, cs)) {
            return Err(format!("label `{l}` appears twice"));
        }
    }
    Ok(())
}

fn split_labels(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
}

impl SyncComponent for Choice {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        match &self.labels {
            Labels::Fixed(ls) => self.decide(ls, s, cx),
            Labels::Dynamic(t) => {
                let v = match t.render_value(s) {
                    Ok(v) => v,
                    Err(m) => return m.outcome(cx),
                };
                let ls: Vec<Cow<'_, str>> = match &*v {
                    Value::Array(items) => {
                        let mut out = Vec::with_capacity(items.len());
                        for x in items {
                            match x {
                                Value::String(t) => out.push(Cow::Borrowed(t.trim())),
                                Value::Number(n) => out.push(Cow::Owned(n.to_string())),
                                other => {
                                    return Outcome::error(
                                        "invalid_labels",
                                        format!(
                                            "a label must be text, found {}",
                                            crate::compile::kind_of(other)
                                        ),
                                    )
                                }
                            }
                        }
                        out
                    }
                    Value::String(t) => split_labels(t).map(Cow::Borrowed).collect(),
                    other => {
                        return Outcome::error(
                            "invalid_labels",
                            format!(
                                "labels must be a list, found {}",
                                crate::compile::kind_of(other)
                            ),
                        )
                    }
                };
                if let Err(e) = check_labels(&ls, self.case_sensitive) {
                    return Outcome::error("invalid_labels", e);
                }
                self.decide(&ls, s, cx)
            }
        }
    }
}

impl Choice {
    fn decide<L: AsRef<str>>(&self, labels: &[L], s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let cs = self.case_sensitive;
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let reference = match &self.reference {
            Reference::Fixed(i) => *i,
            Reference::Dynamic(t) => {
                let r = match t.render(s) {
                    Ok(r) => r,
                    Err(m) => return m.outcome(cx),
                };
                if let Found::One(i) = answer_line(&r, labels, cs).0 {
                    i
                } else {
                    let all: Vec<&str> = labels.iter().map(AsRef::as_ref).collect();
                    return Outcome::error(
                        "unparseable_reference",
                        format!(
                            "reference `{}` is not one of the labels {}",
                            shorten(&r),
                            all.join(", ")
                        ),
                    );
                }
            }
        };
        let (found, place) = extract(&text, labels, cs);
        let name = |i: usize| labels[i].as_ref();
        match found {
            Found::Nothing => {
                cx.note(|| format!("no answer found ({place}); reference {}", name(reference)));
                Outcome::ok(0.0)
            }
            Found::Many(a, b) => {
                cx.note(|| {
                    format!(
                        "several answers in {place}: {} and {}; a hedge scores 0",
                        name(a),
                        name(b)
                    )
                });
                Outcome::ok(0.0)
            }
            Found::One(i) => {
                let pass = i == reference;
                cx.note(|| {
                    format!(
                        "answer {} from {place}, reference {}: {}",
                        name(i),
                        name(reference),
                        if pass { "equal" } else { "different" }
                    )
                });
                Outcome::bool(pass)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Extraction

/// The labels one place names: none, one, or two different ones (a hedge).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Found {
    Nothing,
    One(usize),
    Many(usize, usize),
}

impl Found {
    fn add(self, f: Found) -> Found {
        match (self, f) {
            (Found::Many(..), _) | (_, Found::Nothing) => self,
            (Found::Nothing, _) | (_, Found::Many(..)) => f,
            (Found::One(a), Found::One(b)) if a == b => self,
            (Found::One(a), Found::One(b)) => Found::Many(a, b),
        }
    }
}

/// The answer phrases. This regex defines them; [`PhraseGrammar`] finds the same matches
/// without walking every byte through it.
static PHRASES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
          \b(?:(?:final|correct|right|best)\s+)?answer
            (?:\s+(?:is|would\s+be|should\s+be|will\s+be)\b\s*:?|\s*\**\s*[:：])
        | \b(?:final|correct|right|best)\s+(?:option|choice)
            (?:\s+(?:is|would\s+be|should\s+be|will\s+be)\b\s*:?|\s*\**\s*[:：])
        | 答案\s*(?:是|为|：|:)",
    )
    .expect("valid phrase regex")
});

/// [`PHRASES`] for [`Phrases`]: every match holds `answer` (whose `s` may be a long `ſ`,
/// which case-folds to it), `option`, `choice` or `答案`, and no ASCII punctuation but `*`
/// and `:`.
struct PhraseGrammar;

/// The words that may come before `answer`, `option` or `choice`.
const ADJECTIVES: [&[u8]; 4] = [b"final", b"correct", b"right", b"best"];

impl Grammar for PhraseGrammar {
    fn regex(&self) -> &Regex {
        &PHRASES
    }

    // `&` and `|`, not `&&` and `||`: branch-free, so that the block scan vectorizes.
    #[allow(clippy::needless_bitwise_bool)]
    fn spot(&self, p: u8, c: u8, n1: u8, _: u8, _: u8) -> bool {
        // The middle of each word, so that three byte streams suffice.
        let answer = (lower(c) == b'w') & ((lower(p) == b's') | (p == 0xBF));
        let option = (lower(c) == b'p') & (lower(p) == b'o') & (lower(n1) == b't');
        let choice = (lower(c) == b'h') & (lower(p) == b'c') & (lower(n1) == b'o');
        // 答 is E7 AD 94.
        let da = (c == 0xE7) & (n1 == 0xAD);
        answer | option | choice | da
    }

    fn barrier(&self, c: u8) -> bool {
        const BARRIERS: [bool; 256] = barriers(b"*:");
        BARRIERS[usize::from(c)]
    }

    fn match_at(&self, b: &[u8], p: usize) -> Result<Option<usize>, Unsure> {
        // `\b(?:(?:final|correct|right|best)\s+)?answer SUFFIX`, then
        // `\b(?:final|correct|right|best)\s+(?:option|choice) SUFFIX`, then `答案…`, which is
        // left to the regex. No non-ASCII character case-folds to `a`, `f`, `c`, `r` or `b`.
        if b[p..].starts_with("答".as_bytes()) {
            return Err(Unsure);
        }
        if !matches!(lower(b[p]), b'a' | b'f' | b'c' | b'r' | b'b') || !boundary_before(b, p)? {
            return Ok(None);
        }
        // The adjectives start with different letters: at most one is here.
        for adj in ADJECTIVES {
            if starts_ci(b, p, adj)? {
                let q = skip_space(b, p + adj.len())?;
                if q > p + adj.len() {
                    for noun in [&b"answer"[..], b"option", b"choice"] {
                        if starts_ci(b, q, noun)? {
                            return phrase_suffix(b, q + noun.len());
                        }
                    }
                }
                return Ok(None);
            }
        }
        if starts_ci(b, p, b"answer")? {
            return phrase_suffix(b, p + 6);
        }
        Ok(None)
    }
}

/// `(?:\s+(?:is|would\s+be|should\s+be|will\s+be)\b\s*:?|\s*\**\s*[:：])` at `q`.
fn phrase_suffix(b: &[u8], q: usize) -> Result<Option<usize>, Unsure> {
    let r = skip_space(b, q)?;
    if r > q {
        let mut verb = None;
        if starts_ci(b, r, b"is")? {
            verb = Some(r + 2);
        } else {
            for w in [&b"would"[..], b"should", b"will"] {
                if starts_ci(b, r, w)? {
                    let t = skip_space(b, r + w.len())?;
                    if t > r + w.len() && starts_ci(b, t, b"be")? {
                        verb = Some(t + 2);
                    }
                    break;
                }
            }
        }
        if let Some(v) = verb {
            if boundary_after(b, v)? {
                let e = skip_space(b, v)?;
                return Ok(Some(if b.get(e) == Some(&b':') { e + 1 } else { e }));
            }
        }
    }
    let mut r = r;
    while b.get(r) == Some(&b'*') {
        r += 1;
    }
    // A `：` is not ASCII, so `skip_space` has left it to the regex.
    let r = skip_space(b, r)?;
    Ok((b.get(r) == Some(&b':')).then_some(r + 1))
}

/// How far after an answer phrase the label may be.
const WINDOW: usize = 256;

fn extract<L: AsRef<str>>(text: &str, labels: &[L], cs: bool) -> (Found, &'static str) {
    let mut found = Found::Nothing;
    if boxes(text, |inner| {
        found = found.add(box_labels(inner, labels, cs));
    })
    .is_err()
    {
        return (Found::Nothing, "`\\boxed{}` nested too deep");
    }
    if found != Found::Nothing {
        return (found, "`\\boxed{}`");
    }
    for (_, end) in Phrases::new(&PhraseGrammar, text) {
        found = found.add(answer_after(window(text, end), labels, cs));
    }
    if found != Found::Nothing {
        return (found, "the answer phrases");
    }
    let t = text.trim_end();
    let last = t.rfind('\n').map_or(t, |i| &t[i + 1..]);
    (answer_line(last, labels, cs).0, "the final line")
}

/// Up to `WINDOW` bytes of `s` from `p`, cut at a char boundary.
fn window(s: &str, p: usize) -> &str {
    let mut e = (p + WINDOW).min(s.len());
    while !s.is_char_boundary(e) {
        e -= 1;
    }
    &s[p..e]
}

/// Every label word inside a box (LaTeX command names like `\text` are not words).
fn box_labels<L: AsRef<str>>(inner: &str, labels: &[L], cs: bool) -> Found {
    let mut found = Found::Nothing;
    let mut prev: Option<char> = None;
    for (i, c) in inner.char_indices() {
        if c.is_alphanumeric() && !prev.is_some_and(|p| p.is_alphanumeric() || p == '\\') {
            if let Some((l, _)) = label_at(inner, i, labels, cs) {
                found = found.add(Found::One(l));
            }
        }
        prev = Some(c);
    }
    found
}

/// The label right after an answer phrase, and whether a list of labels follows it.
fn answer_after<L: AsRef<str>>(w: &str, labels: &[L], cs: bool) -> Found {
    let q = skip_open_words(w, skip_open(w, 0, true));
    let Some((first, end)) = label_at(w, q, labels, cs) else {
        return Found::Nothing;
    };
    let (q, _) = skip_close(w, end);
    match list_next(w, q, first, labels, cs) {
        Some(other) => Found::Many(first, other),
        None => Found::One(first),
    }
}

/// A line that is a lone label: `B`, `B.`, `(B)`, `**B**`, `B) option text`. Also returns
/// whether it was.
fn answer_line<L: AsRef<str>>(line: &str, labels: &[L], cs: bool) -> (Found, bool) {
    let line = line.trim();
    let mut q = 0;
    while line[q..].starts_with(['#', '>']) {
        q += 1;
    }
    // `Option B` is an answer line, `Option (A) says …` is prose: a skipped word allows no text.
    let bare = skip_open(line, q, false);
    let (found, words) = if let Some(f) = label_at(line, bare, labels, cs) {
        (Some(f), false)
    } else {
        let worded = skip_open_words(line, bare);
        // The same position was just tried.
        let found = (worded > bare)
            .then(|| label_at(line, worded, labels, cs))
            .flatten();
        (found, true)
    };
    let Some((first, end)) = found else {
        return (Found::Nothing, false);
    };
    let (q, closed) = skip_close(line, end);
    if let Some(other) = list_next(line, q, first, labels, cs) {
        return (Found::Many(first, other), true);
    }
    let rest = line[q..].trim_matches(|c: char| c.is_whitespace() || "*_`$.!)]}".contains(c));
    let option_text =
        closed && !words && rest.len() <= OPTION_TEXT && !enumerates(rest, labels, cs);
    if rest.is_empty() || option_text {
        (Found::One(first), true)
    } else {
        (Found::Nothing, false)
    }
}

/// The longest option text a final answer line may echo after its label (`B) 42 meters`);
/// a longer line is prose about an option, not an answer.
const OPTION_TEXT: usize = 200;

/// Whether `s` names an option the way a list of options does, `(B)` or `B)`: then a line
/// `(A) is small. (B) is large.` is a discussion of the options, not the answer A.
fn enumerates<L: AsRef<str>>(s: &str, labels: &[L], cs: bool) -> bool {
    s.char_indices().any(|(i, c)| {
        c.is_alphanumeric()
            && label_at(s, i, labels, cs).is_some_and(|(_, end)| {
                s[..i].ends_with(['(', '[']) || s[end..].starts_with([')', ']'])
            })
    })
}

/// The label word starting at byte `q`, if it is one: not inside a word or a LaTeX command,
/// and not an English `a`/`i` followed by another word.
fn label_at<L: AsRef<str>>(s: &str, q: usize, labels: &[L], cs: bool) -> Option<(usize, usize)> {
    if s[..q]
        .chars()
        .next_back()
        .is_some_and(|c| c.is_alphanumeric() || c == '\\')
    {
        return None;
    }
    // The word's end: by bytes while they are ASCII, by chars past the first that is not.
    let b = &s.as_bytes()[q..];
    let len = match b.iter().position(|c| !c.is_ascii_alphanumeric()) {
        Some(k) if b[k] < 0x80 => k,
        _ => s[q..]
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(s.len() - q),
    };
    if len == 0 {
        return None;
    }
    let tok = &s[q..q + len];
    let idx = labels.iter().position(|l| same(l.as_ref(), tok, cs))?;
    let mut cs_ = tok.chars();
    let single_lower = matches!((cs_.next(), cs_.next()), (Some(c), None) if c.is_lowercase());
    if single_lower && word_follows(&s[q + len..]) {
        return None;
    }
    Some((idx, q + len))
}

fn same(a: &str, b: &str, cs: bool) -> bool {
    if cs {
        a == b
    } else if a.is_ascii() && b.is_ascii() {
        a.eq_ignore_ascii_case(b)
    } else {
        a.chars()
            .flat_map(char::to_lowercase)
            .eq(b.chars().flat_map(char::to_lowercase))
    }
}

/// Whether `s` starts with spaces and then a word.
fn word_follows(s: &str) -> bool {
    let t = s.trim_start_matches([' ', '\t']);
    t.len() < s.len() && t.starts_with(char::is_alphabetic)
}

/// Skips what may open an answer: spaces, markup, `(`, `\text{`.
fn skip_open(s: &str, mut q: usize, newlines: bool) -> usize {
    const OPENERS: &[&str] = &[
        "\\text{",
        "\\textbf{",
        "\\mathrm{",
        "\\mathbf{",
        "\\boxed{",
        "\\(",
    ];
    'outer: loop {
        let r = &s[q..];
        let Some(c) = r.chars().next() else { break };
        if c == ' ' || c == '\t' || (newlines && c.is_whitespace()) || "*_`$\"'([{".contains(c) {
            q += c.len_utf8();
            continue;
        }
        if c != '\\' {
            break; // every opener starts with `\`
        }
        for o in OPENERS {
            if r.starts_with(o) {
                q += o.len();
                continue 'outer;
            }
        }
        break;
    }
    q
}

/// Skips `option`, `choice` or `letter` (then what `skip_open` skips), as in `option (B)`.
fn skip_open_words(s: &str, q: usize) -> usize {
    let r = &s[q..];
    for w in ["option", "choice", "letter"] {
        if starts_word(r, w) && r[w.len()..].starts_with([' ', '(']) {
            return skip_open(s, q + w.len(), false);
        }
    }
    q
}

/// Skips what may close an answer (`)`, `.`, `**`, `}`); `true` when anything was skipped.
fn skip_close(s: &str, mut q: usize) -> (usize, bool) {
    let start = q;
    while let Some(c) = s[q..].chars().next() {
        if !")]}*_`$\"'.:".contains(c) {
            break;
        }
        q += c.len_utf8();
    }
    (q, q > start)
}

/// Whether `s` starts with `word` (ASCII, any case) as a whole word.
fn starts_word(s: &str, word: &str) -> bool {
    let (b, w) = (s.as_bytes(), word.as_bytes());
    b.len() >= w.len()
        && b[..w.len()].eq_ignore_ascii_case(w)
        && !s[w.len()..].starts_with(|c: char| c.is_alphanumeric())
}

/// After a label at `q`: another, different label joined by `,`, `/`, `&`, `or`, `and` (a
/// list or a hedge), if there is one.
fn list_next<L: AsRef<str>>(
    s: &str,
    mut q: usize,
    first: usize,
    labels: &[L],
    cs: bool,
) -> Option<usize> {
    loop {
        let rest = &s[q..];
        let trimmed = rest.trim_start_matches([' ', '\t']);
        let mut p = q + (rest.len() - trimmed.len());
        let mut punct = true;
        if trimmed.starts_with([',', '/', '&', '|', ';', '+']) {
            p += 1;
        } else {
            punct = false;
            p += ["and/or", "or", "and"]
                .iter()
                .find(|w| starts_word(trimmed, w))?
                .len();
        }
        if punct {
            // `A, B, or C`
            let rest2 = &s[p..];
            let trimmed2 = rest2.trim_start_matches([' ', '\t']);
            if let Some(w) = ["and/or", "or", "and"]
                .iter()
                .find(|w| starts_word(trimmed2, w))
            {
                p += rest2.len() - trimmed2.len() + w.len();
                punct = false;
            }
        }
        let p = skip_open(s, p, false);
        let (idx, end) = label_at(s, p, labels, cs)?;
        // `A, I think` is not a list; `A, B or C` and `A or B maybe` are.
        if punct {
            let after = s[end..].trim_start_matches([' ', '\t']);
            if word_follows(&s[end..]) && !["or", "and"].iter().any(|w| starts_word(after, w)) {
                return None;
            }
        }
        if idx != first {
            return Some(idx);
        }
        q = skip_close(s, end).0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABCD: &[&str] = &["A", "B", "C", "D"];
    const AJ: &[&str] = &["A", "B", "C", "D", "E", "F", "G", "H", "I", "J"];

    fn got(text: &str, labels: &[&str]) -> Option<&'static str> {
        match extract(text, labels, false).0 {
            Found::One(i) => Some(AJ[i]),
            Found::Many(..) => Some("many"),
            Found::Nothing => None,
        }
    }

    #[test]
    fn explicit_answers() {
        for t in [
            "Answer: B",
            "so the answer is (B).",
            "The correct answer is **B**",
            "\\boxed{B}",
            "$\\boxed{\\text{(B)}}$",
            "**Answer:** B) 42 meters",
            "answer: b",
            "The correct option is option B",
            "The answer is:\n\nB",
            "答案是B",
            "B",
            " (B) ",
            "work...\nB.",
            "work...\n**B**",
            "work...\nB) 42 meters",
            "work...\nOption B",
            "The answer is B, because A is wrong.",
            "The answer is B (not A).",
            "Answer: B, I think.",
        ] {
            assert_eq!(got(t, AJ), Some("B"), "{t:?}");
        }
    }

    #[test]
    fn hedges_and_lists() {
        for t in [
            "Answer: A or B",
            "The answer is A, B, C, D",
            "The answer is A, B, or C.",
            "\\boxed{A}\\boxed{C}",
            "\\boxed{A \\text{ or } B}",
            "Answer: A\nAnswer: C",
            "A, B, C, D",
            "A or B",
            "(A) and (B)",
            "Answer: A/B",
            "The answer is A or B maybe",
        ] {
            assert_eq!(got(t, ABCD), Some("many"), "{t:?}");
        }
        assert_eq!(got("\\boxed{A}\\boxed{A}", ABCD), Some("A"));
        assert_eq!(got("Answer: A, A", ABCD), Some("A"));
    }

    #[test]
    fn english_words_are_not_labels() {
        for t in [
            "A cat sat on a mat.",
            "The answer is a bit tricky.",
            "I think so",
            "A B C D",
            "ABCD",
            "Option A is plausible, but (C) is wrong.",
            "Option (A) says the mat is red, which is wrong.",
            "(A) is too small. (B) ignores friction. (C) fits. (D) is a unit error.",
            "work\n(A) says the mat is red, which is wrong, and this line goes on and on for quite a while longer than any option text would, because it is a paragraph of reasoning about the option rather than an answer to the question; so it must not count.",
            "",
            "The answer is not clear",
            "\\textbf{} \\text",
        ] {
            assert_eq!(got(t, AJ), None, "{t:?}");
        }
        assert_eq!(got("The answer is E", ABCD), None);
    }

    #[test]
    fn strongest_place_wins() {
        assert_eq!(got("Answer: A\nActually \\boxed{C}", ABCD), Some("C"));
        assert_eq!(got("I'd say A.\nAnswer: C", ABCD), Some("C"));
    }

    #[test]
    fn reference_lines() {
        assert_eq!(answer_line("(B)", ABCD, false).0, Found::One(1));
        assert_eq!(answer_line("b.", ABCD, false).0, Found::One(1));
        assert_eq!(answer_line("b", ABCD, true).0, Found::Nothing);
        assert_eq!(answer_line("E", ABCD, false).0, Found::Nothing);
        assert_eq!(answer_line("", ABCD, false).0, Found::Nothing);
    }

    #[test]
    fn labels_are_checked() {
        assert!(check_labels(&["A", "B"], false).is_ok());
        assert!(check_labels(&["1", "2", "yes", "α"], false).is_ok());
        assert!(check_labels::<&str>(&[], false).is_err());
        assert!(check_labels(&["A", "a"], false).is_err());
        assert!(check_labels(&["A", "a"], true).is_ok());
        assert!(check_labels(&["A)", "B"], false).is_err());
        assert!(check_labels(&[""], false).is_err());
    }

    /// [`PhraseGrammar`] finds exactly the matches of [`PHRASES`], Unicode corner cases
    /// included.
    #[test]
    fn phrase_scan_equals_the_regex() {
        let pieces = [
            "answer",
            "ANSWER",
            "an",
            "\u{17f}wer",
            "final",
            "Correct",
            "right",
            "best",
            "be\u{17f}t",
            "option",
            "Choice",
            "is",
            "IS",
            "i\u{17f}",
            "would",
            "should",
            "will",
            "be",
            "Be",
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
            "：",
            "答案",
            "答",
            "是",
            "为",
            "x",
            "é",
            "7",
            ".",
            ",",
            "_",
            "(B)",
            "the answer is ",
            "Final Answer: ",
            "answer**:",
            "best option would be ",
        ];
        let found = super::super::scan::assert_same_as_regex(
            &PhraseGrammar,
            &pieces,
            13,
            "So the answer is (B), the best choice. Final answer: C; 答案是D. ",
        );
        assert!(found > 30_000, "{found}");
    }

    #[test]
    fn linear_on_hostile_input() {
        let many = "Answer: (((((".repeat(40_000);
        assert_eq!(got(&many, ABCD), None);
        let list = "A, ".repeat(100_000);
        assert_eq!(got(&list, ABCD), None);
        let boxes = "\\boxed{A} ".repeat(50_000);
        assert_eq!(got(&boxes, ABCD), Some("A"));
    }
}
