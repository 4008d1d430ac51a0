//! Sentences as IFEval counts them and as `nltk.word_tokenize` (open-instruct's checkers) splits
//! them: NLTK's Punkt sentence tokenizer with its pretrained
//! English parameters (`tokenizers/punkt/english.pickle`, the same data as `punkt_tab/english`).
//!
//! This is the *inference* half of Punkt (Kiss & Strunk 2006) as NLTK ≥ 3.8 runs it: candidate
//! sentence ends are `.`, `?`, `!` followed by other punctuation or by whitespace and a token;
//! each candidate is decided on the previous word, the end character and the next token, with
//! the learned abbreviation list, collocations, frequent sentence starters and orthographic
//! context (how often a word was seen capitalised or lower-cased at the start or middle of a
//! sentence); closing quotes and brackets after a break are moved to the sentence before.
//! The parameters are `punkt_english.txt` (see `benches/ifeval/make_punkt_data.py`), parsed
//! once per process.
//!
//! Deviations: "whitespace" and "word character" follow Rust's Unicode properties where
//! Python's `str` methods use slightly different tables (they differ on a handful of control
//! and combining characters); `\d` is approximated by Unicode numeric characters.

use super::text::is_space;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

const DATA: &str = include_str!("punkt_english.txt");

struct Params {
    abbrev: HashSet<&'static str>,
    starters: HashSet<&'static str>,
    /// 37 pairs: a scan is as fast as a hash.
    colloc: Vec<(&'static str, &'static str)>,
    ortho: HashMap<&'static str, u32>,
}

static PARAMS: LazyLock<Params> = LazyLock::new(|| {
    let mut p = Params {
        abbrev: HashSet::new(),
        starters: HashSet::new(),
        colloc: Vec::new(),
        ortho: HashMap::new(),
    };
    for line in DATA.lines() {
        let mut f = line.split('\t');
        match (f.next(), f.next(), f.next()) {
            (Some("a"), Some(a), None) => {
                p.abbrev.insert(a);
            }
            (Some("s"), Some(s), None) => {
                p.starters.insert(s);
            }
            (Some("c"), Some(a), Some(b)) => {
                p.colloc.push((a, b));
            }
            (Some("o"), Some(k), Some(v)) => {
                p.ortho.insert(k, v.parse().unwrap_or(0));
            }
            _ => {}
        }
    }
    p
});

const BEG_UC: u32 = 1 << 1;
const MID_UC: u32 = 1 << 2;
const UNK_UC: u32 = 1 << 3;
const BEG_LC: u32 = 1 << 4;
const MID_LC: u32 = 1 << 5;
const UNK_LC: u32 = 1 << 6;
const ORTHO_UC: u32 = BEG_UC | MID_UC | UNK_UC;
const ORTHO_LC: u32 = BEG_LC | MID_LC | UNK_LC;

/// Punkt's "non-word" characters: they end a word and may follow a sentence end (NLTK 3.10
/// added the curly quotes and guillemets).
fn non_word(c: char) -> bool {
    matches!(
        c,
        ')' | '"'
            | ';'
            | '}'
            | ']'
            | '*'
            | ':'
            | '@'
            | '\''
            | '('
            | '{'
            | '['
            | '!'
            | '?'
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
    )
}

/// Closing punctuation moved to the sentence before a break.
fn closing(c: char) -> bool {
    matches!(
        c,
        '"' | '\''
            | ')'
            | ']'
            | '}'
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
    )
}

/// Characters a word may not start with.
fn not_word_start(c: char) -> bool {
    matches!(
        c,
        '(' | '"'
            | '`'
            | '{'
            | '['
            | ':'
            | ';'
            | '&'
            | '#'
            | '*'
            | '@'
            | ')'
            | '}'
            | ']'
            | '-'
            | ','
    )
}

/// `\s` in NLTK's Punkt patterns, which NLTK 3.10 compiles with the `regex` module: Unicode
/// `White_Space`, without the ASCII separators U+001C–U+001F that `str.isspace` adds.
fn is_re_ws(c: char) -> bool {
    c.is_whitespace()
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// `[^\W\d]`: a word character that is not a digit.
fn is_alpha(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !is_digit(c)
}

/// The length in bytes of the multi-character punctuation (`--…`, `..…`, `. . .`) at the
/// start of `s`, if any.
fn multi_char(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let run = |ch: u8| b.iter().take_while(|&&x| x == ch).count();
    match b.first() {
        Some(b'-') if run(b'-') >= 2 => Some(run(b'-')),
        Some(b'.') if run(b'.') >= 2 => Some(run(b'.')),
        Some(b'.') => {
            // (?:\.\s){2,}\.
            let mut reps = Vec::new();
            let mut i = 0;
            while s[i..].starts_with('.') {
                let Some(c) = s[i + 1..].chars().next() else {
                    break;
                };
                if !is_re_ws(c) {
                    break;
                }
                i += 1 + c.len_utf8();
                reps.push(i);
            }
            let r = reps.len();
            if r >= 2 && s[reps[r - 1]..].starts_with('.') {
                Some(reps[r - 1] + 1)
            } else if r >= 3 {
                Some(reps[r - 2] + 1)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Punkt's word tokenizer over one line (no newlines).
fn word_tokenize(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        let c = rest.chars().next().unwrap_or(' ');
        if let Some(n) = multi_char(rest) {
            out.push(&rest[..n]);
            i += n;
            continue;
        }
        if is_re_ws(c) {
            i += c.len_utf8();
            continue;
        }
        if not_word_start(c) {
            out.push(&rest[..c.len_utf8()]);
            i += c.len_utf8();
            continue;
        }
        // \S+? until a word end.
        let mut j = c.len_utf8();
        loop {
            let tail = &rest[j..];
            let Some(d) = tail.chars().next() else { break };
            if is_re_ws(d) || non_word(d) || multi_char(tail).is_some() {
                break;
            }
            if d == ',' {
                let after = &tail[1..];
                match after.chars().next() {
                    None => break,
                    Some(e) if is_re_ws(e) || non_word(e) || multi_char(after).is_some() => break,
                    _ => {}
                }
            }
            j += d.len_utf8();
        }
        out.push(&rest[..j]);
        i += j;
    }
    out
}

/// A Punkt token and its annotations (NLTK's `PunktToken`; the flags mirror its attributes).
#[allow(clippy::struct_excessive_bools)]
struct Tok<'a> {
    text: &'a str,
    ty: Cow<'a, str>,
    period_final: bool,
    first_upper: bool,
    first_lower: bool,
    is_ellipsis: bool,
    is_initial: bool,
    sentbreak: bool,
    abbr: bool,
    ellipsis: bool,
}

/// `^-?[\.,]?\d[\d,\.-]*\.?$`
fn is_numeric_type(s: &str) -> bool {
    let mut cs = s.chars().peekable();
    if cs.peek() == Some(&'-') {
        cs.next();
    }
    if matches!(cs.peek(), Some('.' | ',')) {
        cs.next();
    }
    match cs.next() {
        Some(c) if is_digit(c) => {}
        _ => return false,
    }
    // [\d,\.-]*\.? : the optional final dot is covered by the class.
    cs.all(|c| is_digit(c) || matches!(c, ',' | '.' | '-'))
}

impl<'a> Tok<'a> {
    fn new(tok: &'a str) -> Tok<'a> {
        let lower: Cow<'a, str> = if tok.chars().any(char::is_uppercase) {
            Cow::Owned(tok.to_lowercase())
        } else {
            Cow::Borrowed(tok)
        };
        let ty = if is_numeric_type(&lower) {
            Cow::Borrowed("##number##")
        } else {
            lower
        };
        let first = tok.chars().next().unwrap_or(' ');
        let mut cs = tok.chars();
        let is_initial =
            matches!((cs.next(), cs.next(), cs.next()), (Some(a), Some('.'), None) if is_alpha(a));
        Tok {
            period_final: tok.ends_with('.'),
            first_upper: first.is_uppercase(),
            first_lower: first.is_lowercase(),
            is_ellipsis: tok.len() >= 2 && tok.bytes().all(|b| b == b'.'),
            is_initial,
            text: tok,
            ty,
            sentbreak: false,
            abbr: false,
            ellipsis: false,
        }
    }

    fn type_no_period(&self) -> &str {
        if self.ty.len() > 1 && self.ty.ends_with('.') {
            &self.ty[..self.ty.len() - 1]
        } else {
            &self.ty
        }
    }

    fn type_no_sentperiod(&self) -> &str {
        if self.sentbreak {
            self.type_no_period()
        } else {
            &self.ty
        }
    }
}

/// `Some(true)`, `Some(false)` or `None` ("unknown").
fn ortho_heuristic(t: &Tok<'_>) -> Option<bool> {
    if matches!(t.text, ";" | ":" | "," | "." | "!" | "?") {
        return Some(false);
    }
    let oc = PARAMS
        .ortho
        .get(t.type_no_sentperiod())
        .copied()
        .unwrap_or(0);
    if t.first_upper && oc & ORTHO_LC != 0 && oc & MID_UC == 0 {
        return Some(true);
    }
    if t.first_lower && (oc & ORTHO_UC != 0 || oc & BEG_LC == 0) {
        return Some(false);
    }
    None
}

fn first_pass(t: &mut Tok<'_>) {
    let p = &*PARAMS;
    if matches!(t.text, "." | "?" | "!") {
        t.sentbreak = true;
    } else if t.is_ellipsis {
        t.ellipsis = true;
    } else if t.period_final && !t.text.ends_with("..") {
        let stem = t.text[..t.text.len() - 1].to_lowercase();
        let last = stem.rsplit('-').next().unwrap_or("");
        if p.abbrev.contains(stem.as_str()) || p.abbrev.contains(last) {
            t.abbr = true;
        } else {
            t.sentbreak = true;
        }
    }
}

fn second_pass(t1: &mut Tok<'_>, t2: &Tok<'_>) {
    let p = &*PARAMS;
    if !t1.period_final {
        return;
    }
    let typ = t1.type_no_period();
    let next_typ = t2.type_no_sentperiod();
    let initial = t1.is_initial;
    let number = typ == "##number##";
    if p.colloc.iter().any(|&(a, b)| a == typ && b == next_typ) {
        t1.sentbreak = false;
        t1.abbr = true;
        return;
    }
    if (t1.abbr || t1.ellipsis) && !initial {
        if ortho_heuristic(t2) == Some(true) {
            t1.sentbreak = true;
            return;
        }
        if t2.first_upper && p.starters.contains(next_typ) {
            t1.sentbreak = true;
            return;
        }
    }
    if initial || number {
        let s = ortho_heuristic(t2);
        if s == Some(false) {
            t1.sentbreak = false;
            t1.abbr = true;
            return;
        }
        if s.is_none()
            && initial
            && t2.first_upper
            && p.ortho.get(next_typ).copied().unwrap_or(0) & ORTHO_LC == 0
        {
            t1.sentbreak = false;
            t1.abbr = true;
        }
    }
}

/// Whether a sentence break falls inside `context` before its last token.
fn contains_sentbreak(context: &str) -> bool {
    let mut toks: Vec<Tok> = context
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .flat_map(word_tokenize)
        .map(Tok::new)
        .collect();
    for t in &mut toks {
        first_pass(t);
    }
    let n = toks.len();
    for i in 0..n {
        if i + 1 < n {
            let (a, b) = toks.split_at_mut(i + 1);
            second_pass(&mut a[i], &b[0]);
        }
        if toks[i].sentbreak && i + 1 < n {
            return true;
        }
    }
    false
}

fn last_ascii_ws(s: &str) -> usize {
    s.bytes()
        .rposition(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .unwrap_or(0)
}

/// A candidate sentence end at `at` (the byte of `.`, `?` or `!`).
struct Cand {
    at: usize,
    /// End of the lookahead (`after_tok`).
    after_end: usize,
    next_tok: Option<usize>,
}

fn candidates(text: &str) -> Vec<Cand> {
    let mut out = Vec::new();
    for (i, c) in text.char_indices() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let rest = &text[i + 1..];
        let Some(d) = rest.chars().next() else {
            continue;
        };
        if non_word(d) {
            out.push(Cand {
                at: i,
                after_end: i + 1 + d.len_utf8(),
                next_tok: None,
            });
        } else if is_re_ws(d) {
            let ws = rest
                .char_indices()
                .find(|(_, c)| !is_re_ws(*c))
                .map(|(j, _)| j);
            let Some(ws) = ws else { continue };
            let tok_end = rest[ws..]
                .char_indices()
                .find(|(_, c)| is_re_ws(*c))
                .map_or(rest.len(), |(j, _)| ws + j);
            out.push(Cand {
                at: i,
                after_end: i + 1 + tok_end,
                next_tok: Some(i + 1 + ws),
            });
        }
    }
    out
}

/// The number of sentences NLTK's `PunktSentenceTokenizer.tokenize` finds in `text`.
pub fn count_sentences(text: &str) -> usize {
    sentences(text).len()
}

/// NLTK's `PunktSentenceTokenizer.tokenize(text)`: the sentences, as slices of `text`.
pub fn sentences(text: &str) -> Vec<&str> {
    // _match_potential_end_contexts + _slices_from_text
    let mut slices: Vec<(usize, usize)> = Vec::new();
    let mut last_break = 0;
    let mut prev: Option<(Cand, (usize, usize))> = None;
    let mut decide = |c: &Cand, word: (usize, usize), last_break: &mut usize| {
        // The previous word ends where the candidate starts: the context is one slice.
        debug_assert_eq!(word.1, c.at);
        if contains_sentbreak(&text[word.0..c.after_end]) {
            slices.push((*last_break, c.at + 1));
            *last_break = c.next_tok.unwrap_or(c.at + 1);
        }
    };
    for c in candidates(text) {
        let (pstart, pstop) = prev.as_ref().map_or((0, 0), |p| p.1);
        let before = &text[pstop..c.at];
        let mut idx = last_ascii_ws(before);
        if idx != 0 {
            idx += pstop + 1;
        } else {
            idx = pstart;
        }
        let word = (idx, c.at);
        if let Some((pc, pw)) = prev.take() {
            if pw.1 <= word.0 {
                decide(&pc, pw, &mut last_break);
            }
        }
        prev = Some((c, word));
    }
    if let Some((pc, pw)) = prev.take() {
        decide(&pc, pw, &mut last_break);
    }
    let end = text.trim_end_matches(is_space).len();
    slices.push((last_break, end.max(last_break)));
    // _realign_boundaries: closing quotes and brackets that open a sentence move to the one
    // before it.
    let mut out = Vec::with_capacity(slices.len());
    let mut realign = 0;
    for k in 0..slices.len() {
        let s1 = (slices[k].0 + realign, slices[k].1);
        let piece = text.get(s1.0..s1.1).unwrap_or("");
        let Some(&s2) = slices.get(k + 1) else {
            if !piece.is_empty() {
                out.push(piece);
            }
            continue;
        };
        if let Some(m_end) = realignment(&text[s2.0..s2.1.max(s2.0)]) {
            let kept = text[s2.0..s2.0 + m_end].trim_end_matches(is_space).len();
            out.push(&text[s1.0.min(s2.0 + kept)..s2.0 + kept]);
            realign = m_end;
        } else {
            realign = 0;
            if !piece.is_empty() {
                out.push(piece);
            }
        }
    }
    out
}

/// `["')\]}‘’“”«»]+?(?:\s+|(?=--)|$)` matched at the start of `s`: the end of the match.
fn realignment(s: &str) -> Option<usize> {
    let mut n = 0;
    for c in s.chars() {
        if !closing(c) {
            break;
        }
        n += c.len_utf8();
        let rest = &s[n..];
        let ws: usize = rest
            .chars()
            .take_while(|c| is_re_ws(*c))
            .map(char::len_utf8)
            .sum();
        if ws > 0 {
            return Some(n + ws);
        }
        if rest.starts_with("--") || rest.is_empty() {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_match_nltk() {
        // Expected values checked against NLTK 3.10.4's `sent_tokenize`.
        assert_eq!(
            sentences("Mr. Brown met Dr. Smith. They talked."),
            vec!["Mr. Brown met Dr. Smith.", "They talked."]
        );
        assert_eq!(
            sentences("It costs 5. then more."),
            vec!["It costs 5. then more."]
        );
        assert_eq!(
            sentences("He lives in the U.S. The weather is fine."),
            vec!["He lives in the U.S.", "The weather is fine."]
        );
        assert_eq!(
            sentences("J. R. Tolkien wrote. Fine!"),
            vec!["J. R. Tolkien wrote.", "Fine!"]
        );
        assert_eq!(
            sentences("He said \"Stop.\" Then left."),
            vec!["He said \"Stop.\"", "Then left."]
        );
        assert_eq!(sentences("Why? Because."), vec!["Why?", "Because."]);
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn params_load() {
        assert_eq!(PARAMS.abbrev.len(), 156);
        assert_eq!(PARAMS.starters.len(), 39);
        assert_eq!(PARAMS.colloc.len(), 37);
        assert_eq!(PARAMS.ortho.len(), 20366);
    }

    #[test]
    fn tokenizer() {
        assert_eq!(word_tokenize("Hello, world."), vec!["Hello", ",", "world."]);
        assert_eq!(
            word_tokenize("wait... what?!"),
            vec!["wait", "...", "what", "?", "!"]
        );
        assert_eq!(
            word_tokenize("(e.g. Mr. Smith)"),
            vec!["(", "e.g.", "Mr.", "Smith", ")"]
        );
    }

    #[test]
    fn counts() {
        assert_eq!(count_sentences(""), 0);
        assert_eq!(count_sentences("   "), 0);
        assert_eq!(count_sentences("One sentence"), 1);
        assert_eq!(count_sentences("Hello world. How are you? Fine!"), 3);
        assert_eq!(count_sentences("Mr. Smith went to Washington. He left."), 2);
        assert_eq!(count_sentences("It costs 3.5 dollars. Cheap."), 2);
        assert_eq!(count_sentences("He said \"Stop.\" Then he left."), 2);
        assert_eq!(count_sentences("What?! Really... yes."), 2);
        assert_eq!(count_sentences("First line.\nSecond line.\n\nThird."), 3);
        assert_eq!(count_sentences("See e.g. the docs. Done."), 3);
        assert_eq!(count_sentences("what?\" vs.\tetc.\u{201d}\tIt A. "), 4);
    }
}
