//! Finding the final answer in a completion. Linear scans over bytes (no regex backtracking, no
//! recursion), so a megabyte of `\boxed{` costs a megabyte of work.
//!
//! The last marker wins (self-correction), but markers written back to back form one answer
//! list, so `\boxed{1}, \boxed{2}` is a hedge rather than "the last box is 2".

use crate::options::ExtractMode;
use std::ops::Range;

/// Where an answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    Boxed,
    AnswerPhrase,
    Hashes,
    LastNumber,
    Whole,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Boxed => "boxed",
            Source::AnswerPhrase => "answer phrase",
            Source::Hashes => "####",
            Source::LastNumber => "last number",
            Source::Whole => "whole input",
        }
    }
}

/// The extracted answer: one part, or several written back to back (a list or a hedge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extraction {
    pub source: Source,
    /// Byte range in the completion covering all parts.
    pub span: Range<usize>,
    pub parts: Vec<String>,
    /// The answer is followed by a question mark (`Maybe it is \boxed{4}?`): not an answer.
    pub questioned: bool,
}

impl Extraction {
    pub fn text(&self) -> String {
        self.parts.join(" | ")
    }
}

#[derive(Debug, Clone)]
struct Marker {
    source: Source,
    /// Whole marker, for nesting and adjacency.
    outer: Range<usize>,
    /// The answer inside it.
    inner: Range<usize>,
}

/// Extracts the answer from `text` per `mode`. `None` when nothing is marked.
pub fn extract(text: &str, mode: ExtractMode) -> Option<Extraction> {
    extract_limited(text, mode, usize::MAX)
}

pub(crate) fn extract_limited(
    text: &str,
    mode: ExtractMode,
    max_bytes: usize,
) -> Option<Extraction> {
    let (text, offset) = if text.len() > max_bytes {
        let mut cut = text.len() - max_bytes;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        (&text[cut..], cut)
    } else {
        (text, 0)
    };
    let shift = |r: Range<usize>| r.start + offset..r.end + offset;
    match mode {
        ExtractMode::Bare => {
            let t = text.trim();
            if t.is_empty() {
                return None;
            }
            let st = text.len() - text.trim_start().len();
            Some(Extraction {
                source: Source::Whole,
                span: shift(st..st + t.len()),
                parts: vec![t.to_string()],
                questioned: false,
            })
        }
        ExtractMode::Markers {
            boxed,
            answer_phrase,
            hashes,
            last_number,
        } => {
            let mut ms = Vec::new();
            if boxed {
                find_boxes(text, &mut ms);
            }
            if answer_phrase {
                find_phrases(text, &mut ms);
            }
            if hashes {
                find_hashes(text, &mut ms);
            }
            let mut ms = drop_enclosing(text, ms);
            // "I am confident the answer is correct." after a box is talk about the answer.
            if let Some(last_box) = ms.iter().rposition(|m| m.source == Source::Boxed) {
                let box_end = ms[last_box].outer.end;
                ms.retain(|m| {
                    m.source != Source::AnswerPhrase
                        || m.outer.start < box_end
                        || has_value(&text[m.inner.clone()])
                        || !is_talk(&text[m.inner.clone()])
                });
            }
            if let Some(ex) = group_last(text, &ms) {
                return Some(Extraction {
                    span: shift(ex.span),
                    ..ex
                });
            }
            if last_number {
                if let Some(r) = find_last_number(text) {
                    return Some(Extraction {
                        source: Source::LastNumber,
                        span: shift(r.clone()),
                        parts: vec![text[r].to_string()],
                        questioned: false,
                    });
                }
            }
            None
        }
    }
}

/// Matching braces for the whole text in one pass: (open, close) pairs sorted by open. One
/// pass keeps `\boxed{` repeated 100,000 times linear instead of quadratic.
fn brace_pairs(b: &[u8]) -> Vec<(usize, usize)> {
    let mut stack = Vec::new();
    let mut pairs = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => stack.push(i),
            b'}' => {
                if let Some(o) = stack.pop() {
                    pairs.push((o, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    pairs.sort_unstable();
    pairs
}

fn find_boxes(t: &str, out: &mut Vec<Marker>) {
    let b = t.as_bytes();
    let mut pairs: Option<Vec<(usize, usize)>> = None;
    let mut from = 0;
    while let Some(k) = t[from..].find('\\') {
        let i = from + k;
        from = i + 1;
        let name_len = if b[i + 1..].starts_with(b"boxed") {
            5
        } else if b[i + 1..].starts_with(b"fbox") {
            4
        } else {
            continue;
        };
        let mut j = i + 1 + name_len;
        if b.get(j).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        while b.get(j) == Some(&b' ') {
            j += 1;
        }
        if b.get(j) == Some(&b'{') {
            let pairs = pairs.get_or_insert_with(|| brace_pairs(b));
            let close = pairs
                .binary_search_by_key(&j, |p| p.0)
                .ok()
                .map(|k| pairs[k].1);
            if let Some(end) = close {
                out.push(Marker {
                    source: Source::Boxed,
                    outer: i..end + 1,
                    inner: j + 1..end,
                });
            }
        } else if j > i + 1 + name_len {
            // `\boxed 5`: up to the next `$`, line end or sentence end (`\boxed 4 or 5` is a
            // hedge, not 4).
            let st = j;
            let stop = plain_sentence_end(t, st);
            while j < stop && !matches!(b[j], b'$' | b'\n') {
                j += 1;
            }
            if j > st {
                out.push(Marker {
                    source: Source::Boxed,
                    outer: i..j,
                    inner: st..j,
                });
            }
        }
    }
}

fn find_phrases(t: &str, out: &mut Vec<Marker>) {
    let lower = t.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut from = 0;
    while let Some(k) = lower[from..].find("answer") {
        let i = from + k;
        from = i + 6;
        if i > 0 && b[i - 1].is_ascii_alphanumeric() {
            continue;
        }
        let mut j = i + 6;
        let skip = |j: &mut usize| {
            while *j < b.len() && matches!(b[*j], b' ' | b'*' | b'_' | b'\t') {
                *j += 1;
            }
        };
        skip(&mut j);
        let colon = b.get(j) == Some(&b':');
        if colon {
            j += 1;
        } else if lower[j..].starts_with("is")
            && !b.get(j + 2).is_some_and(u8::is_ascii_alphanumeric)
        {
            j += 2;
            // "the answer is: 5".
            if b.get(j) == Some(&b':') {
                j += 1;
            }
        } else {
            continue;
        }
        skip(&mut j);
        // The answer may be on the next line ("**Final Answer:**\n\n72").
        while j < b.len() && matches!(b[j], b'\n' | b'\r' | b' ' | b'*') {
            j += 1;
        }
        let mut st = j;
        let mut end = sentence_end(t, st);
        // "Answer: The largest $n$ is 34." — the answer is what follows the last ` is `.
        // Only after `Answer:`, and not when what precedes holds a value or a condition of its
        // own ("either 3 or it is 4", "undefined because the denominator is 0").
        if colon && b.get(st).is_some_and(u8::is_ascii_alphabetic) {
            if let Some(k) = lower[st..end].rfind(" is ") {
                let lead = &lower[st..st + k];
                let blocked = [
                    "or", "and", "because", "unless", "if", "when", "since", "except", "not",
                ];
                if !lead.bytes().any(|c| c.is_ascii_digit())
                    && !lead
                        .split(|c: char| !c.is_ascii_alphabetic())
                        .any(|w| blocked.contains(&w))
                {
                    st += k + 4;
                }
            }
        }
        // "The answer is 5, which is the number of apples": the explanation is not the answer.
        // Not when the explanation offers another value ("4, as 3 is also possible").
        if b.get(st) != Some(&b'$') {
            let cut = EXPLANATIONS
                .iter()
                .filter_map(|c| lower[st..end].find(c))
                .min();
            if let Some(k) = cut {
                if !hedges(&lower[st + k..end]) {
                    end = st + k;
                }
            }
        }
        let inner = trim_range(t, st..end);
        if inner.is_empty() {
            continue;
        }
        out.push(Marker {
            source: Source::AnswerPhrase,
            outer: i..end,
            inner,
        });
    }
}

/// Where an explanation starts after an answer ("5, which is", "4 (because").
const EXPLANATIONS: [&str; 16] = [
    ", which",
    ", because",
    " because",
    ", since",
    " since ",
    " (since",
    " (because",
    ", as ",
    " as there",
    ", so ",
    " which ",
    ", i.e",
    " i.e.",
    " —",
    " -- ",
    "; ",
];

/// An explanation that offers another value: "3 is also possible", "or 5", "maybe".
fn hedges(expl: &str) -> bool {
    expl.split(|c: char| !c.is_ascii_alphabetic()).any(|w| {
        matches!(
            w,
            "or" | "also" | "maybe" | "might" | "possibly" | "perhaps" | "either"
        )
    })
}

/// End of the answer after a phrase: the end of a `$..$` span that starts it, else the end of
/// the sentence or line.
fn sentence_end(t: &str, st: usize) -> usize {
    let b = t.as_bytes();
    let mut math_end = None;
    if b.get(st) == Some(&b'$') {
        let dbl = b.get(st + 1) == Some(&b'$');
        let open = if dbl { 2 } else { 1 };
        let close = if dbl { "$$" } else { "$" };
        if let Some(k) = t[st + open..].find(close) {
            math_end = Some(st + open + k + open);
        }
    } else if t[st..].starts_with("\\(") || t[st..].starts_with("\\[") {
        let close = if t[st..].starts_with("\\(") {
            "\\)"
        } else {
            "\\]"
        };
        if let Some(k) = t[st + 2..].find(close) {
            math_end = Some(st + 2 + k + 2);
        }
    }
    let end = plain_sentence_end(t, math_end.unwrap_or(st));
    match math_end {
        // `$1$ or $2$`: the answer goes on, and is a hedge. `$5$ because ...` ends at the `$`.
        Some(m) => {
            let rest = t[m..end].trim_start().to_ascii_lowercase();
            // More math or another number in the same sentence: the whole sentence is the
            // answer (`$3$ (or $4$)`, `$3$ but $4$ is also possible`), never just the first.
            // A box in that first span is the answer whatever follows.
            let boxed = t[st..m].contains("\\boxed") || t[st..m].contains("\\fbox");
            let more_values = rest.contains('$') || rest.bytes().any(|c| c.is_ascii_digit());
            let explained = EXPLANATIONS.iter().any(|c| {
                rest.starts_with(c.trim_start()) || (" ".to_string() + &rest).starts_with(c)
            }) && !hedges(&rest);
            let goes_on = !boxed
                && !explained
                && (more_values
                    || [
                        "or ",
                        "or$",
                        "and ",
                        ",",
                        ";",
                        "\\text{ or",
                        "\\text{or",
                        "/",
                        "\\pm",
                        "±",
                    ]
                    .iter()
                    .any(|c| rest.starts_with(c)));
            if goes_on {
                end
            } else {
                m
            }
        }
        None => end,
    }
}

fn plain_sentence_end(t: &str, st: usize) -> usize {
    let b = t.as_bytes();
    let mut i = st;
    let mut depth = 0i32;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'\n' if depth <= 0 => return i,
            b'.' if depth <= 0 => {
                let next = b.get(i + 1).copied().unwrap_or(b' ');
                if next.is_ascii_whitespace() || next == b'*' {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

fn trim_range(t: &str, r: Range<usize>) -> Range<usize> {
    let s = &t[r.clone()];
    let trimmed_start = s.len() - s.trim_start().len();
    let mut end = r.end;
    let mut st = r.start + trimmed_start;
    // Trailing sentence punctuation and markdown.
    while end > st && matches!(t.as_bytes()[end - 1], b' ' | b'.' | b'*' | b'\r' | b'\t') {
        end -= 1;
    }
    while st < end && t.as_bytes()[st] == b'*' {
        st += 1;
    }
    st..end
}

fn find_hashes(t: &str, out: &mut Vec<Marker>) {
    let b = t.as_bytes();
    let mut line_start = 0;
    while line_start < b.len() {
        let line_end = t[line_start..]
            .find('\n')
            .map_or(b.len(), |k| line_start + k);
        let line = &t[line_start..line_end];
        if line.starts_with("####") && !line.starts_with("#####") {
            let rest = line[4..].trim_start();
            let first = rest
                .trim_start_matches(['$', '\\'])
                .as_bytes()
                .first()
                .copied();
            // A markdown heading (`#### Step 2`) is not an answer.
            if first.is_some_and(|c| !c.is_ascii_alphabetic()) {
                let st = line_end - line[4..].trim_start().len();
                let inner = trim_range(t, st..line_end);
                if !inner.is_empty() {
                    out.push(Marker {
                        source: Source::Hashes,
                        outer: line_start..line_end,
                        inner,
                    });
                }
            }
        }
        line_start = line_end + 1;
    }
}

/// Drops markers that contain another marker (a phrase around a box keeps the box).
fn drop_enclosing(t: &str, mut ms: Vec<Marker>) -> Vec<Marker> {
    ms.sort_by_key(|m| (m.outer.start, std::cmp::Reverse(m.outer.end)));
    let mut keep: Vec<Marker> = Vec::with_capacity(ms.len());
    for m in ms {
        // Inside the previous kept marker: the inner one replaces it (boxes inside boxes keep
        // the outer box, whose content is the nested box). A phrase keeps its box only when
        // the box is all it says: in `The answer is 3 or \boxed{4}` the phrase is the answer.
        if let Some(last) = keep.last() {
            if m.outer.start >= last.outer.start && m.outer.end <= last.outer.end {
                if last.source == Source::Boxed && m.source == Source::Boxed {
                    continue;
                }
                if matches!(last.source, Source::AnswerPhrase | Source::Hashes)
                    && m.source == Source::Boxed
                    && !only_wrapping(t, last.inner.clone(), m.outer.clone())
                {
                    continue;
                }
                keep.pop();
            } else if m.outer.start < last.outer.end {
                // Overlap without nesting: keep the later one.
                keep.pop();
            }
        }
        keep.push(m);
    }
    keep
}

/// Whether the phrase's answer `inner` is the box `boxed` and nothing else but delimiters.
fn only_wrapping(t: &str, inner: Range<usize>, boxed: Range<usize>) -> bool {
    // Delimiters and words ("therefore", "because it satisfies both"), but no other value and
    // no `or`/`and`: `3 or \boxed{4}` is a hedge.
    let wrap = |s: &str| {
        let s = s.trim_matches(|c: char| c.is_whitespace() || "$()[]*.:\\".contains(c));
        !has_value(s)
            && !s
                .to_ascii_lowercase()
                .split(|c: char| !c.is_ascii_alphabetic())
                .any(|w| {
                    matches!(
                        w,
                        "or" | "and"
                            | "either"
                            | "not"
                            | "never"
                            | "most"
                            | "least"
                            | "less"
                            | "more"
                            | "than"
                            | "except"
                            | "unless"
                            | "instead"
                    )
                })
    };
    inner.start <= boxed.start
        && boxed.end <= inner.end
        && wrap(&t[inner.start..boxed.start])
        && wrap(&t[boxed.end..inner.end])
}

/// "correct", "consistent with the constraints": words about an answer, not an answer.
fn is_talk(s: &str) -> bool {
    let first = s
        .trim_start_matches(|c: char| !c.is_ascii_alphabetic())
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(
        first.as_str(),
        "correct"
            | "incorrect"
            | "right"
            | "wrong"
            | "consistent"
            | "valid"
            | "reasonable"
            | "plausible"
            | "above"
            | "as"
            | "boxed"
            | "given"
            | "shown"
            | "indeed"
            | "confirmed"
            | "verified"
            | "the"
            | "this"
            | "that"
            | "also"
            | "clear"
            | "clearly"
            | "obvious"
            | "final"
            | "in"
            | "at"
            | "now"
            | "still"
            | "therefore"
            | "thus"
    )
}

/// Text that holds a value: a digit or math.
fn has_value(s: &str) -> bool {
    s.bytes()
        .any(|c| c.is_ascii_digit() || matches!(c, b'$' | b'\\' | b'=' | b'^'))
}

/// Text between two markers that makes them one answer list. Punctuation, `$`, `\quad`,
/// `and`, `or` always do; so does any short stretch of words inside one sentence (`or maybe`,
/// `(if n is odd)`, `/`). A sentence break or a correction ("No wait", "actually") separates
/// them: the later answer replaces the earlier one.
fn is_connector(gap: &str, conditional: bool) -> bool {
    if is_list_punctuation(gap) {
        return true;
    }
    let raw = gap.trim().trim_matches('$');
    // A sentence ends at `.`, `!` or `?` followed by a capital or a line break (`i.e. with`
    // and `$2!$,` do not end one), or at a blank line.
    let b = raw.as_bytes();
    let sentence_break = raw.contains("\n\n")
        || raw.ends_with(['.', '!', '?'])
        || b.windows(3).any(|w| {
            matches!(w[0], b'.' | b'!' | b'?')
                && w[1].is_ascii_whitespace()
                && (w[2].is_ascii_uppercase() || w[2] == b'\n')
        })
        || b.windows(2)
            .any(|w| matches!(w[0], b'.' | b'!' | b'?') && w[1] == b'\n');
    // A correction opens the gap ("No wait", "Actually", "Hmm") or says so ("rechecking ...
    // gives", "is incorrect, the correct answer is"); a gap that also says "or", "also", "if"
    // or "when" still lists alternatives.
    let g = raw
        .trim_start_matches(|c: char| c.is_whitespace() || ",;:.(-—".contains(c))
        .to_ascii_lowercase();
    let listing = g
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| matches!(w, "or" | "also" | "if" | "when" | "otherwise" | "else"));
    let says_so = [
        "recheck",
        "re-check",
        "incorrect",
        "wrong",
        "mistake",
        "correct answer",
        "no wait",
        "i made",
    ]
    .iter()
    .any(|w| g.contains(w));
    let correction = [
        "wait",
        "actually",
        "correction",
        "sorry",
        "oops",
        "hmm",
        "no,",
        "no ",
        "no.",
        "let me",
        "i made",
        "that's wrong",
        "that is wrong",
        "recheck",
        "re-check",
    ]
    .iter()
    .any(|w| g.starts_with(w))
        || says_so;
    let correction = correction && !listing && !conditional;
    g.len() <= 300 && !sentence_break && !correction
}

fn is_list_punctuation(gap: &str) -> bool {
    let mut s = gap.trim();
    if s.len() > 40 {
        return false;
    }
    loop {
        let before = s.len();
        s = s.trim_start_matches([' ', ',', ';', '$', '\n', '.', '&', '(', ')', '\\', '*']);
        for w in [
            "quad",
            "qquad",
            "text{ or }",
            "text{ and }",
            "text{or}",
            "text{and}",
            "or ",
            "and ",
            "or",
            "and",
            ",",
            "\\",
        ] {
            if let Some(r) = s.strip_prefix(w) {
                s = r;
            }
        }
        if s.is_empty() {
            return true;
        }
        if s.len() == before {
            return false;
        }
    }
}

fn group_last(t: &str, ms: &[Marker]) -> Option<Extraction> {
    let last = ms.last()?;
    // `\boxed{3} (actually \boxed{4} when n is even)`: a condition after the last answer makes
    // the earlier one an alternative, not a mistake.
    let tail_end = plain_sentence_end(t, last.outer.end);
    let conditional = t[last.outer.end..tail_end]
        .to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| matches!(w, "when" | "if" | "otherwise" | "else" | "unless"));
    let mut first = ms.len() - 1;
    while first > 0 {
        let prev = &ms[first - 1];
        let gap = &t[prev.outer.end..ms[first].outer.start];
        if is_connector(gap, conditional) {
            first -= 1;
        } else {
            break;
        }
    }
    let group = &ms[first..];
    let after = t[last.outer.end..]
        .trim_start_matches(|c: char| c.is_whitespace() || "$})]*\\".contains(c));
    Some(Extraction {
        source: last.source,
        span: group[0].outer.start..last.outer.end,
        parts: group
            .iter()
            .map(|m| t[m.inner.clone()].trim().to_string())
            .collect(),
        questioned: after.starts_with('?'),
    })
}

/// The last number, or the last `$..$` span, whichever ends later (lenient mode only).
fn find_last_number(t: &str) -> Option<Range<usize>> {
    let b = t.as_bytes();
    let mut i = b.len();
    while i > 0 {
        i -= 1;
        if b[i].is_ascii_digit() {
            let end = i + 1;
            let mut st = i;
            while st > 0
                && (b[st - 1].is_ascii_digit()
                    || (matches!(b[st - 1], b'.' | b',') && st >= 2 && b[st - 2].is_ascii_digit()))
            {
                st -= 1;
            }
            if st > 0 && b[st - 1] == b'-' {
                st -= 1;
            }
            if let Some(m) = last_math_span(t) {
                if m.end >= end {
                    return Some(m);
                }
            }
            return Some(st..end);
        }
    }
    last_math_span(t)
}

fn last_math_span(t: &str) -> Option<Range<usize>> {
    let close = t.rfind('$')?;
    let open = t[..close].rfind('$')?;
    (close > open + 1).then_some(open + 1..close)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(t: &str) -> Option<Vec<String>> {
        extract(t, ExtractMode::STRICT).map(|e| e.parts)
    }

    #[test]
    fn last_marker_wins_and_adjacent_markers_group() {
        assert_eq!(
            parts(r"\boxed{8}. No wait: \boxed{9}"),
            Some(vec!["9".into()])
        );
        assert_eq!(
            parts(r"\boxed{8}, \boxed{9}"),
            Some(vec!["8".into(), "9".into()])
        );
        assert_eq!(parts(r"\boxed{\boxed{7}}"), Some(vec![r"\boxed{7}".into()]));
        assert_eq!(parts(r"\boxed{7"), None);
        assert_eq!(parts("48 + 24 = 72"), None);
    }

    #[test]
    fn phrases_and_hashes() {
        assert_eq!(
            parts("Final Answer: The final answer is $5$. I hope it is correct."),
            Some(vec!["$5$".into()])
        );
        assert_eq!(
            parts("The answer is $1$ or $2$."),
            Some(vec!["$1$ or $2$".into()])
        );
        assert_eq!(parts("#### Step 2\nso\n#### 72"), Some(vec!["72".into()]));
    }

    #[test]
    fn brace_matching_is_linear_on_unclosed_boxes() {
        let t = r"\boxed{".repeat(100_000);
        let start = std::time::Instant::now();
        assert_eq!(parts(&t), None);
        assert!(start.elapsed().as_millis() < 500);
    }
}
