//! Set-to-set matching for embedding graders: both texts cut into units (sentences, lines, list
//! items), repeats dropped, then a one-to-one matching over a similarity threshold scored by
//! precision, recall and F1 (report sentences against reference findings), or a Chamfer
//! distance. One to one, so a unit never matches twice.
//!
//! The sentence splitter is written here rather than taken from `unicode-segmentation`: UAX #29
//! sentence bounds break after `Dr.`, `J.` and a line-leading `1.` (it has no abbreviations and
//! no list markers), so it would need the same pass on top. This one is a single linear scan.
//! Everything here takes the policy's text: work is linear in its length, and nothing panics.

use schemars::JsonSchema;
use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;

/// How a text is cut into units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Sentences: split at line breaks, after `。！？｡` (no space needed), and after `.`, `!`,
    /// `?`, `…` (`؟`, `।`, `۔`, `‼`) and any closing quotes or brackets when a space or the
    /// line's end follows. Not after `.`/`…` when the next word starts lower-case, nor after a
    /// few abbreviations (`Mr.`, `Dr.`, `e.g.`, `vs.` ...; `No.`, `Fig.`, `p.` before a number)
    /// or a single capital initial (`J. Smith`). Decimals (`3.14`) have no space after the
    /// period. A list marker at a line's start (`1.`, `-`, `(a)`) is dropped, not a sentence.
    #[default]
    Sentences,
    /// Non-empty lines.
    Lines,
    /// List items: lines starting with a marker (`-`, `*`, `+`, `•` and other bullets, `1.`,
    /// `1)`, `a)`, `(a)`, `(iv)`), the marker removed; an indented line without a marker
    /// continues the unit above; an unindented one is a unit of its own. A text without any
    /// marker is read as lines.
    Items,
}

/// Line breaks: `\n`, `\r` (so `\r\n`), vertical tab, form feed, NEL, U+2028 and U+2029, so a
/// policy cannot hide a break from the splitter, nor smuggle one past it.
fn is_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// The units of a text, in order, trimmed, empty ones dropped (borrowed slices of `text`).
pub fn split(text: &str, unit: Unit) -> Vec<&str> {
    let mut out = Vec::new();
    match unit {
        Unit::Lines => out.extend(lines(text)),
        Unit::Sentences => {
            for line in lines(text) {
                sentences(strip_marker(line), &mut out);
            }
        }
        Unit::Items => items(text, &mut out),
    }
    out
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_break)
        .map(str::trim)
        .filter(|l| !l.is_empty())
}

/// Characters that end a sentence when a space or the line's end follows.
fn is_terminator(c: char) -> bool {
    matches!(
        c,
        '.' | '!' | '?' | '…' | '؟' | '।' | '۔' | '‼' | '⁇' | '⁈' | '⁉'
    ) || is_cjk_terminator(c)
}

/// CJK sentence ends: the next sentence follows without a space.
fn is_cjk_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '｡')
}

/// Closing quotes and brackets, kept with the sentence they end (`He said "no." Then`).
fn is_closer(c: char) -> bool {
    matches!(
        c,
        ')' | ']'
            | '}'
            | '"'
            | '\''
            | '”'
            | '’'
            | '»'
            | '›'
            | '」'
            | '』'
            | '】'
            | '》'
            | '〉'
            | '）'
    )
}

/// Opening quotes and brackets, looked past for the next word's first letter.
fn is_opener(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | '"' | '\'' | '“' | '‘' | '«' | '‹' | '¿' | '¡' | '「' | '『' | '（'
    )
}

/// Words after which a period never ends a sentence (titles and Latin connectives). Kept short
/// on purpose: the lower-case rule covers most others (`etc. and`), and `etc.`, `al.`, `Jr.`
/// often do end sentences.
const ABBREVIATIONS: &[&str] = &["mr", "mrs", "ms", "dr", "prof", "vs", "e.g", "i.e", "cf"];

/// Words after which a period does not end a sentence when a number follows (`No. 5`,
/// `Fig. 2`, `p. 17`): on their own (`The answer is no.`) they end sentences.
const BEFORE_NUMBERS: &[&str] = &["no", "nos", "fig", "figs", "vol", "p", "pp", "eq"];

/// The sentences of one trimmed line.
fn sentences<'a>(line: &'a str, out: &mut Vec<&'a str>) {
    let mut push = |s: &'a str| {
        let s = s.trim();
        if !s.is_empty() {
            out.push(s);
        }
    };
    let mut start = 0;
    let mut pos = 0;
    while let Some(c) = line[pos..].chars().next() {
        let at = pos;
        pos += c.len_utf8();
        if !is_terminator(c) {
            continue;
        }
        // The whole run (`?!`, `...`, `."`) belongs to this sentence; the scan resumes after it,
        // so a line of dots is still read once.
        let mut cjk = is_cjk_terminator(c);
        let mut dots = matches!(c, '.' | '…');
        let mut single_dot = c == '.';
        let mut closed = false;
        while let Some(d) = line[pos..].chars().next() {
            if is_terminator(d) {
                cjk |= is_cjk_terminator(d);
                dots &= matches!(d, '.' | '…');
                single_dot = false;
            } else if is_closer(d) {
                closed = true;
            } else {
                break;
            }
            pos += d.len_utf8();
        }
        let rest = &line[pos..];
        let boundary = match rest.chars().next() {
            None => true,
            // A quoted CJK sentence inside another (「はい。」と言った。) does not end it.
            Some(n) if cjk => !closed || n.is_whitespace(),
            Some(n) if n.is_whitespace() => {
                let next = rest
                    .trim_start()
                    .trim_start_matches(is_opener)
                    .chars()
                    .next();
                let lower = dots && next.is_some_and(char::is_lowercase);
                !(lower || single_dot && abbreviation(&line[start..at], next))
            }
            Some(_) => false,
        };
        if boundary {
            push(&line[start..pos]);
            start = pos;
        }
    }
    push(&line[start..]);
}

/// Whether the word before a period (`before` ends just before it) is an abbreviation or a
/// single capital initial, given the first character of the next word.
fn abbreviation(before: &str, next: Option<char>) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || is_opener(c))
        .next()
        .unwrap_or("");
    let mut cs = word.chars();
    if let (Some(c), None) = (cs.next(), cs.next()) {
        if c.is_uppercase() {
            return true;
        }
    }
    let is = |list: &[&str]| list.iter().any(|a| a.eq_ignore_ascii_case(word));
    is(ABBREVIATIONS) || next.is_some_and(|n| n.is_ascii_digit()) && is(BEFORE_NUMBERS)
}

/// Bullets that need no space after them: nothing else starts with them.
fn is_bullet(c: char) -> bool {
    matches!(
        c,
        '•' | '◦'
            | '‣'
            | '▪'
            | '▫'
            | '●'
            | '○'
            | '■'
            | '□'
            | '►'
            | '▶'
            | '➤'
            | '·'
            | '∙'
    )
}

/// The text after the list marker at the start of a trimmed line (a suffix of it), if any.
/// ASCII bullets and numbers need a space or the line's end after them, so `-5 °C`, `**bold**`
/// and `3.14` are not markers.
fn marker(line: &str) -> Option<&str> {
    let mut cs = line.chars();
    let first = cs.next()?;
    if is_bullet(first) {
        return Some(cs.as_str().trim_start());
    }
    if matches!(first, '-' | '*' | '+' | '–' | '—') {
        return spaced(cs.as_str());
    }
    let b = line.as_bytes();
    // `1.`, `12)`: up to three digits (`2024.` at a line's start is a year).
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if (1..=3).contains(&digits) && matches!(b.get(digits), Some(b'.' | b')')) {
        return spaced(&line[digits + 1..]);
    }
    // `a)`: one letter (not `a.`, which would take `A. Smith` for a marker).
    if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b')' {
        return spaced(&line[2..]);
    }
    // `(a)`, `(iv)`, `(12)`.
    if b.first() == Some(&b'(') {
        let inner = b[1..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric())
            .count();
        if (1..=4).contains(&inner) && b.get(inner + 1) == Some(&b')') {
            return spaced(&line[inner + 2..]);
        }
    }
    None
}

/// `rest` without its leading space, if it is empty or starts with one.
fn spaced(rest: &str) -> Option<&str> {
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim_start())
}

fn strip_marker(line: &str) -> &str {
    marker(line).unwrap_or(line)
}

fn items<'a>(text: &'a str, out: &mut Vec<&'a str>) {
    if !lines(text).any(|l| marker(l).is_some()) {
        out.extend(lines(text));
        return;
    }
    // Byte ranges of units in `text`; continuation lines extend the last one.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut off = 0;
    for piece in text.split_inclusive(is_break) {
        let raw = piece.strip_suffix(is_break).unwrap_or(piece);
        let at = off;
        off += piece.len();
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let indent = raw.len() - raw.trim_start().len();
        let (start, end) = (at + indent, at + indent + line.len());
        match (marker(line), spans.last_mut()) {
            (Some(rest), _) => spans.push((end - rest.len(), end)),
            (None, Some(last)) if indent > 0 => last.1 = end,
            (None, _) => spans.push((start, end)),
        }
    }
    out.extend(
        spans
            .into_iter()
            .map(|(a, b)| text[a..b].trim())
            .filter(|s| !s.is_empty()),
    );
}

/// Trailing characters that do not make a unit new: sentence ends, separators, closing quotes.
/// Not `+`, `-`, `%` or brackets (`HER2+` and `HER2-` are different findings).
fn is_trailing(c: char) -> bool {
    c.is_whitespace()
        || is_terminator(c)
        || matches!(
            c,
            ',' | ';'
                | ':'
                | '、'
                | '，'
                | '；'
                | '：'
                | '"'
                | '\''
                | '”'
                | '’'
                | '»'
                | '」'
                | '』'
        )
}

/// The key two units are "the same" under: NFKC (full-width forms fold to ASCII), lower-cased,
/// whitespace collapsed to single spaces, trailing punctuation dropped. Only those, so units that
/// differ by a sign or a digit stay apart.
pub fn unit_key(u: &str) -> String {
    let folded: String = u.nfkc().flat_map(char::to_lowercase).collect();
    let mut key = String::with_capacity(folded.len());
    for w in folded.split_whitespace() {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(w);
    }
    let kept = key.trim_end_matches(is_trailing).len();
    key.truncate(kept);
    key
}

/// Units with repeats removed (first occurrence kept), and how many were dropped. Done before
/// matching because one to one is not enough on its own: a repeated sentence is a second row
/// that can take a second reference it also resembles.
pub fn dedup<'a>(units: &[&'a str]) -> (Vec<&'a str>, usize) {
    let mut seen = std::collections::HashSet::new();
    let kept: Vec<&str> = units
        .iter()
        .copied()
        .filter(|u| seen.insert(unit_key(u)))
        .collect();
    let dropped = units.len() - kept.len();
    (kept, dropped)
}

/// How units are paired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Assign {
    /// The most pairs over the threshold, then the largest total similarity (Kuhn–Munkres).
    #[default]
    Optimal,
    /// Pairs taken by descending similarity (ties: lower indices first).
    Greedy,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SetScores {
    /// Matched / candidate units.
    pub precision: f64,
    /// Matched / reference units.
    pub recall: f64,
    pub f1: f64,
    /// (candidate, reference, similarity), each index at most once, in candidate order.
    pub pairs: Vec<(usize, usize, f64)>,
    /// 1 − the mean of (the candidates' mean best similarity to any reference) and (the
    /// references' mean best similarity to any candidate); in [0, 2].
    pub chamfer: f64,
}

/// Similarity resolution of the optimal assignment's integer weights.
const SCALE: f64 = 1e6;

/// `sim`: rows = candidate units, columns = reference units (rows may be ragged: a missing cell
/// is no similarity). Values are clamped to [-1, 1]; NaN and infinities are no similarity: never
/// matched, and -1 in the Chamfer distance. A pair matches when its similarity >= `threshold`
/// (a NaN threshold matches nothing). One to one. Optimal is O(n³) in the larger side: callers
/// bound the unit counts (the grader's `max_units`).
pub fn match_sets(sim: &[Vec<f64>], threshold: f64, assign: Assign) -> SetScores {
    let rows = sim.len();
    let cols = sim.iter().map(Vec::len).max().unwrap_or(0);
    if rows == 0 || cols == 0 {
        return SetScores {
            precision: 0.0,
            recall: 0.0,
            f1: 0.0,
            pairs: Vec::new(),
            chamfer: 1.0,
        };
    }
    let at = |i: usize, j: usize| {
        sim[i]
            .get(j)
            .copied()
            .filter(|x| x.is_finite())
            .map(|x| x.clamp(-1.0, 1.0))
    };
    let hit = |i: usize, j: usize| at(i, j).filter(|s| *s >= threshold);
    let mut pairs = match assign {
        Assign::Greedy => {
            let mut all: Vec<(usize, usize, f64)> = (0..rows)
                .flat_map(|i| (0..cols).map(move |j| (i, j)))
                .filter_map(|(i, j)| hit(i, j).map(|s| (i, j, s)))
                .collect();
            all.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
            let (mut used_r, mut used_c) = (vec![false; rows], vec![false; cols]);
            let mut out = Vec::new();
            for (i, j, s) in all {
                if !used_r[i] && !used_c[j] {
                    used_r[i] = true;
                    used_c[j] = true;
                    out.push((i, j, s));
                }
            }
            out
        }
        Assign::Optimal => {
            // A matched pair weighs more than any total of similarities (each at most
            // 2·SCALE, at most min(rows, cols) of them), so the maximum-weight assignment has
            // the most pairs first and the largest similarity second. Pairs under the threshold
            // weigh 0 and are dropped after. The largest total, (m + 1)·2·SCALE·m, fits i64 for
            // any m whose matrix fits in memory.
            let m = rows.min(cols) as f64;
            let big = (m + 1.0) * 2.0 * SCALE;
            // kuhn_munkres wants rows <= columns.
            let flip = rows > cols;
            let (nr, nc) = if flip { (cols, rows) } else { (rows, cols) };
            let w = pathfinding::matrix::Matrix::from_fn(nr, nc, |(x, y)| {
                let (i, j) = if flip { (y, x) } else { (x, y) };
                hit(i, j).map_or(0, |s| (big + (s + 1.0) * SCALE).round() as i64)
            });
            let (_, assignment) = pathfinding::kuhn_munkres::kuhn_munkres(&w);
            assignment
                .into_iter()
                .enumerate()
                .map(|(x, y)| if flip { (y, x) } else { (x, y) })
                .filter_map(|(i, j)| hit(i, j).map(|s| (i, j, s)))
                .collect()
        }
    };
    pairs.sort_by_key(|p| p.0);
    let precision = pairs.len() as f64 / rows as f64;
    let recall = pairs.len() as f64 / cols as f64;
    let f1 = if pairs.is_empty() {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    let best = |s: Option<f64>| s.unwrap_or(-1.0);
    let rows_best = (0..rows)
        .map(|i| (0..cols).map(|j| best(at(i, j))).fold(-1.0, f64::max))
        .sum::<f64>()
        / rows as f64;
    let cols_best = (0..cols)
        .map(|j| (0..rows).map(|i| best(at(i, j))).fold(-1.0, f64::max))
        .sum::<f64>()
        / cols as f64;
    SetScores {
        precision,
        recall,
        f1,
        pairs,
        chamfer: 1.0 - f64::midpoint(rows_best, cols_best),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::assert_close;
    use proptest::prelude::*;

    fn s(t: &str) -> Vec<&str> {
        split(t, Unit::Sentences)
    }

    #[test]
    fn sentences_end_at_terminators_followed_by_space() {
        assert_eq!(
            s("The heart is normal. No effusion! Is it? Yes"),
            ["The heart is normal.", "No effusion!", "Is it?", "Yes"]
        );
        assert_eq!(
            s("Wait?! Really... Well… No. Done."),
            ["Wait?!", "Really...", "Well…", "No.", "Done."]
        );
        assert_eq!(
            s(r#"He said "stop." Then he left. (It was late.) Fine"#),
            [
                r#"He said "stop.""#,
                "Then he left.",
                "(It was late.)",
                "Fine"
            ]
        );
        assert_eq!(
            s("one\ntwo.\r\nthree\rfour\u{2028}five"),
            ["one", "two.", "three", "four", "five"]
        );
        assert_eq!(
            s("Is this Arabic؟ नमस्ते। Yes"),
            ["Is this Arabic؟", "नमस्ते।", "Yes"]
        );
    }

    #[test]
    fn sentences_keep_abbreviations_and_initials() {
        assert_eq!(
            s("Dr. Smith and Mr. Jones agree. Ms. Lee, e.g. Here, i.e. There, vs. Them. Cf. Fig. 2 and No. 5. Page p. 17."),
            ["Dr. Smith and Mr. Jones agree.", "Ms. Lee, e.g. Here, i.e. There, vs. Them.", "Cf. Fig. 2 and No. 5.", "Page p. 17."]
        );
        // `etc.`, `no.` end sentences unless the next word is lower-case (or, for `no.`, a number).
        assert_eq!(
            s("Apples, pears etc. and more. Pears etc. The end. The answer is no. Next one."),
            [
                "Apples, pears etc. and more.",
                "Pears etc.",
                "The end.",
                "The answer is no.",
                "Next one."
            ]
        );
        assert_eq!(
            s("J. Smith wrote it. (J. R. R. Tolkien did not.) He reads. then stops"),
            [
                "J. Smith wrote it.",
                "(J. R. R. Tolkien did not.)",
                "He reads. then stops"
            ]
        );
    }

    #[test]
    fn sentences_keep_decimals_versions_and_urls() {
        assert_eq!(
            s("It measures 3.14 cm. Version 1.2.3 ships at example.com today. Cost $4.50."),
            [
                "It measures 3.14 cm.",
                "Version 1.2.3 ships at example.com today.",
                "Cost $4.50."
            ]
        );
    }

    #[test]
    fn sentences_drop_list_markers_at_a_line_start() {
        assert_eq!(
            s("1. The heart is normal. Lungs clear.\n2) No effusion.\n- Small nodule.\n(a) Bones fine.\n3."),
            ["The heart is normal.", "Lungs clear.", "No effusion.", "Small nodule.", "Bones fine."]
        );
        // Not markers: a year, a negative number, bold text.
        assert_eq!(s("2024. It rained."), ["2024.", "It rained."]);
        assert_eq!(s("-5 °C today. **Cold.**"), ["-5 °C today.", "**Cold.**"]);
    }

    #[test]
    fn sentences_split_cjk_without_spaces() {
        assert_eq!(s("肺は正常。心臓も正常。"), ["肺は正常。", "心臓も正常。"]);
        assert_eq!(
            s("你好！你好吗？我很好。"),
            ["你好！", "你好吗？", "我很好。"]
        );
        assert_eq!(
            s("正常。Normal. 異常なし｡"),
            ["正常。", "Normal.", "異常なし｡"]
        );
        // A quoted sentence inside another does not end it.
        assert_eq!(
            s("「はい。」と言った。次。"),
            ["「はい。」と言った。", "次。"]
        );
    }

    #[test]
    fn empty_and_blank_texts_have_no_units() {
        for t in ["", " ", "\n\n", " \t\r\n\u{3000} ", "\u{2029}"] {
            for u in [Unit::Sentences, Unit::Lines, Unit::Items] {
                assert!(split(t, u).is_empty(), "{t:?} {u:?}");
            }
        }
        // A lone marker is no unit either.
        assert!(split("-\n1.\n•", Unit::Items).is_empty());
        assert!(split("- \n 1.", Unit::Sentences).is_empty());
    }

    #[test]
    fn lines_are_the_non_empty_trimmed_lines() {
        assert_eq!(
            split(" x. y \n\n z\r\n- w", Unit::Lines),
            ["x. y", "z", "- w"]
        );
    }

    #[test]
    fn items_drop_every_kind_of_marker() {
        let t = "- dash\n* star\n+ plus\n• bullet\n●tight\n1. one\n12) twelve\nb) bee\n(a) paren\n(iv) roman\n— em dash";
        assert_eq!(
            split(t, Unit::Items),
            [
                "dash", "star", "plus", "bullet", "tight", "one", "twelve", "bee", "paren",
                "roman", "em dash"
            ]
        );
    }

    #[test]
    fn items_join_indented_continuations_only() {
        let t = "Findings:\n- small effusion\n  on the left\n\n    and more\n2) no pneumothorax\nImpression: stable\n  overall\n* 1.5 cm nodule";
        assert_eq!(
            split(t, Unit::Items),
            [
                "Findings:",
                "small effusion\n  on the left\n\n    and more",
                "no pneumothorax",
                "Impression: stable\n  overall",
                "1.5 cm nodule"
            ]
        );
        // A marker with its text on the next, indented, line.
        assert_eq!(split("-\n  item\n- two", Unit::Items), ["item", "two"]);
        // Nested items are items.
        assert_eq!(split("- a\n  - b\n  c", Unit::Items), ["a", "b\n  c"]);
    }

    #[test]
    fn items_without_markers_are_lines() {
        assert_eq!(
            split("a\n\n  b\n-5 °C\n**c**", Unit::Items),
            ["a", "b", "-5 °C", "**c**"]
        );
    }

    #[test]
    fn unit_keys_ignore_case_spacing_and_trailing_punctuation_only() {
        assert_eq!(
            unit_key("  No   pleural\teffusion.  "),
            "no pleural effusion"
        );
        assert_eq!(unit_key("NO PLEURAL EFFUSION!?"), "no pleural effusion");
        assert_eq!(unit_key("Ｎｏ　effusion。"), "no effusion");
        assert_eq!(unit_key(r#"He said "no.""#), unit_key(r#"He said "no"."#));
        assert_ne!(unit_key("HER2+"), unit_key("HER2-"));
        assert_ne!(unit_key("3.5 cm"), unit_key("35 cm"));
        assert_ne!(unit_key("No, effusion"), unit_key("No effusion"));
        assert_eq!(unit_key("..."), "");
    }

    #[test]
    fn dedup_keeps_first_occurrences() {
        let (u, n) = dedup(&[
            "No effusion.",
            "Heart normal.",
            "no  EFFUSION",
            "Heart normal!",
            "x",
        ]);
        assert_eq!((u, n), (vec!["No effusion.", "Heart normal.", "x"], 2));
        assert_eq!(dedup(&[]), (vec![], 0));
    }

    #[test]
    fn optimal_gets_more_pairs_where_greedy_is_short_sighted() {
        // Greedy takes (0,0) = 0.95 and leaves row 1 with nothing over 0.8.
        let sim = vec![vec![0.95, 0.9], vec![0.85, 0.1]];
        let g = match_sets(&sim, 0.8, Assign::Greedy);
        let o = match_sets(&sim, 0.8, Assign::Optimal);
        assert_eq!(g.pairs, vec![(0, 0, 0.95)]);
        assert_eq!((g.precision, g.recall, g.f1), (0.5, 0.5, 0.5));
        assert_eq!(o.pairs, vec![(0, 1, 0.9), (1, 0, 0.85)]);
        assert_eq!((o.precision, o.recall, o.f1), (1.0, 1.0, 1.0));
    }

    #[test]
    fn optimal_breaks_count_ties_by_total_similarity() {
        // Both assignments have two pairs; greedy's sums 1.65, the crossed one 1.8.
        let sim = vec![vec![0.95, 0.9], vec![0.9, 0.7]];
        assert_eq!(
            match_sets(&sim, 0.5, Assign::Greedy).pairs,
            vec![(0, 0, 0.95), (1, 1, 0.7)]
        );
        assert_eq!(
            match_sets(&sim, 0.5, Assign::Optimal).pairs,
            vec![(0, 1, 0.9), (1, 0, 0.9)]
        );
        // Greedy ties go to lower indices.
        let tie = vec![vec![0.9, 0.9], vec![0.9, 0.9]];
        assert_eq!(
            match_sets(&tie, 0.5, Assign::Greedy).pairs,
            vec![(0, 0, 0.9), (1, 1, 0.9)]
        );
    }

    #[test]
    fn thresholds_are_inclusive_and_cut_pairs() {
        // 3 candidates, 2 references.
        let sim = vec![vec![0.9, 0.2], vec![0.3, 0.7], vec![0.1, 0.1]];
        for a in [Assign::Optimal, Assign::Greedy] {
            let m = match_sets(&sim, 0.7, a);
            assert_eq!(m.pairs, vec![(0, 0, 0.9), (1, 1, 0.7)]);
            assert_close(m.precision, 2.0 / 3.0, 1e-15, "precision");
            assert_eq!(m.recall, 1.0);
            assert_close(m.f1, 0.8, 1e-15, "f1");
            let m = match_sets(&sim, 0.71, a);
            assert_eq!(m.pairs, vec![(0, 0, 0.9)]);
            assert_close(
                m.f1,
                2.0 * (1.0 / 3.0) * 0.5 / (1.0 / 3.0 + 0.5),
                1e-15,
                "f1",
            );
            assert!(match_sets(&sim, 0.95, a).pairs.is_empty());
            assert_eq!(match_sets(&sim, 0.95, a).f1, 0.0);
            assert!(match_sets(&sim, f64::NAN, a).pairs.is_empty());
            // Every pair qualifies at -1; still one to one.
            assert_eq!(match_sets(&sim, -1.0, a).pairs.len(), 2);
        }
    }

    #[test]
    fn empty_sides_score_zero_with_chamfer_one() {
        let empty = SetScores {
            precision: 0.0,
            recall: 0.0,
            f1: 0.0,
            pairs: vec![],
            chamfer: 1.0,
        };
        for a in [Assign::Optimal, Assign::Greedy] {
            assert_eq!(match_sets(&[], 0.5, a), empty);
            assert_eq!(match_sets(&[vec![], vec![]], 0.5, a), empty);
        }
    }

    #[test]
    fn chamfer_worked_by_hand() {
        // Rows' best: 0.8, 0.5 → 0.65. Columns' best: 0.5, 0.8, 0.3 → 1.6 / 3.
        let sim = vec![vec![0.2, 0.8, -0.4], vec![0.5, 0.1, 0.3]];
        let m = match_sets(&sim, 0.9, Assign::Optimal);
        assert_close(
            m.chamfer,
            1.0 - f64::midpoint(0.65, 1.6 / 3.0),
            1e-12,
            "chamfer",
        );
        assert!(m.pairs.is_empty());
        // Identical sets: distance 0. Opposite ones: 2.
        let id = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        assert_close(
            match_sets(&id, 0.9, Assign::Greedy).chamfer,
            0.0,
            1e-15,
            "identical",
        );
        assert_close(
            match_sets(&[vec![-1.0]], 0.9, Assign::Greedy).chamfer,
            2.0,
            1e-15,
            "opposite",
        );
    }

    #[test]
    fn nan_infinite_out_of_range_and_ragged_cells() {
        for a in [Assign::Optimal, Assign::Greedy] {
            let m = match_sets(&[vec![f64::NAN, 0.9]], -1.0, a);
            assert_eq!(m.pairs, vec![(0, 1, 0.9)]);
            // NaN counts -1 in the Chamfer distance: rows' best 0.9; columns' -1, 0.9.
            assert_close(
                m.chamfer,
                1.0 - f64::midpoint(0.9, -0.1 / 2.0),
                1e-12,
                "chamfer",
            );
            let m = match_sets(&[vec![f64::INFINITY, f64::NEG_INFINITY]], -1.0, a);
            assert!(m.pairs.is_empty());
            assert_eq!(m.chamfer, 2.0);
            // Out of range values are clamped (cosines round to 1.0000000002).
            assert_eq!(match_sets(&[vec![1.5]], 1.0, a).pairs, vec![(0, 0, 1.0)]);
            // A short row has no similarity to the missing columns.
            let m = match_sets(&[vec![0.9], vec![0.8, 0.85]], 0.8, a);
            assert_eq!(m.recall, 1.0);
            assert_eq!(m.pairs.len(), 2);
        }
    }

    #[test]
    fn a_repeated_row_can_take_a_second_reference_hence_dedup() {
        // One to one alone does not stop a repeat from raising recall when the unit resembles
        // two references: the second copy takes the second one. Deduplicating units first does.
        let one = match_sets(&[vec![0.9, 0.9]], 0.8, Assign::Optimal);
        let two = match_sets(&[vec![0.9, 0.9], vec![0.9, 0.9]], 0.8, Assign::Optimal);
        assert_eq!((one.recall, two.recall), (0.5, 1.0));
        let (u, n) = dedup(&split("No effusion. No effusion.", Unit::Sentences));
        assert_eq!((u.len(), n), (1, 1));
    }

    #[test]
    fn hostile_long_texts_split_in_linear_time() {
        let started = std::time::Instant::now();
        let texts = [
            ".".repeat(300_000),
            "a. ".repeat(100_000),
            "e.g. ".repeat(60_000),
            "1. x\n".repeat(60_000),
            "-\n  ".repeat(75_000),
            format!("{}{}", " ".repeat(300_000), ". a"),
            "。」".repeat(50_000),
        ];
        let mut units = 0;
        for t in &texts {
            for u in [Unit::Sentences, Unit::Lines, Unit::Items] {
                units += split(t, u).len();
            }
        }
        assert!(units > 100_000);
        // Linear is well under a second even unoptimised; quadratic would take minutes.
        assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    }

    /// Offsets of `part` within `text`: every unit must be a slice of the text.
    fn range_in(text: &str, part: &str) -> (usize, usize) {
        let start = part.as_ptr() as usize - text.as_ptr() as usize;
        assert!(start + part.len() <= text.len());
        (start, start + part.len())
    }

    fn matrix() -> impl Strategy<Value = Vec<Vec<f64>>> {
        (1usize..6, 1usize..6).prop_flat_map(|(r, c)| {
            prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![-1.0f64..=1.0, (0u8..=4).prop_map(|k| f64::from(k) / 4.0)],
                    c,
                ),
                r,
            )
        })
    }

    /// Brute force over every one-to-one assignment: the most pairs over the threshold, then
    /// the largest total similarity.
    fn brute(sim: &[Vec<f64>], t: f64) -> (usize, f64) {
        fn go(
            sim: &[Vec<f64>],
            t: f64,
            i: usize,
            used: &mut Vec<bool>,
            acc: (usize, f64),
            best: &mut (usize, f64),
        ) {
            if i == sim.len() {
                if acc.0 > best.0 || acc.0 == best.0 && acc.1 > best.1 {
                    *best = acc;
                }
                return;
            }
            go(sim, t, i + 1, used, acc, best);
            for j in 0..used.len() {
                let s = sim[i][j];
                if !used[j] && s >= t {
                    used[j] = true;
                    go(sim, t, i + 1, used, (acc.0 + 1, acc.1 + s), best);
                    used[j] = false;
                }
            }
        }
        let mut best = (0, 0.0);
        go(
            sim,
            t,
            0,
            &mut vec![false; sim[0].len()],
            (0, 0.0),
            &mut best,
        );
        best
    }

    fn check_scores(sim: &[Vec<f64>], t: f64, m: &SetScores) -> Result<(), TestCaseError> {
        let mut r: Vec<usize> = m.pairs.iter().map(|p| p.0).collect();
        let mut c: Vec<usize> = m.pairs.iter().map(|p| p.1).collect();
        r.sort_unstable();
        r.dedup();
        c.sort_unstable();
        c.dedup();
        prop_assert_eq!(r.len(), m.pairs.len());
        prop_assert_eq!(c.len(), m.pairs.len());
        for &(i, j, s) in &m.pairs {
            prop_assert!(s >= t, "{s} < {t}");
            prop_assert_eq!(s, sim[i][j].clamp(-1.0, 1.0));
        }
        for x in [m.precision, m.recall, m.f1] {
            prop_assert!((0.0..=1.0).contains(&x), "{x}");
        }
        prop_assert!((0.0..=2.0).contains(&m.chamfer), "{}", m.chamfer);
        Ok(())
    }

    proptest! {
        #[test]
        fn optimal_is_the_best_assignment_and_greedy_never_beats_it(sim in matrix(), t in -0.5f64..1.0) {
            let g = match_sets(&sim, t, Assign::Greedy);
            let o = match_sets(&sim, t, Assign::Optimal);
            check_scores(&sim, t, &g)?;
            check_scores(&sim, t, &o)?;
            prop_assert!(o.pairs.len() >= g.pairs.len());
            let (count, total) = brute(&sim, t);
            prop_assert_eq!(o.pairs.len(), count);
            let got: f64 = o.pairs.iter().map(|p| p.2).sum();
            prop_assert!((got - total).abs() < 1e-5, "total {got} vs best {total}");
            // Greedy is maximal: no qualifying pair is left with both sides free.
            for (i, row) in sim.iter().enumerate() {
                for (j, &x) in row.iter().enumerate() {
                    let free = !g.pairs.iter().any(|p| p.0 == i || p.1 == j);
                    prop_assert!(!(free && x >= t));
                }
            }
        }

        /// One more row (a repeat or anything else) adds at most one pair; through `dedup` a
        /// repeated sentence adds no row at all, so recall cannot rise.
        #[test]
        fn duplicating_a_row_adds_at_most_one_pair(sim in matrix(), k in 0usize..6, t in -0.5f64..1.0) {
            let mut dup = sim.clone();
            dup.push(sim[k % sim.len()].clone());
            let before = match_sets(&sim, t, Assign::Optimal);
            let after = match_sets(&dup, t, Assign::Optimal);
            prop_assert!(after.pairs.len() <= before.pairs.len() + 1);
            prop_assert!(after.pairs.len() >= before.pairs.len());
        }

        #[test]
        fn repeating_a_sentence_never_raises_recall(
            // The last word is longer than any abbreviation, so every sentence ends.
            sents in prop::collection::vec("[A-Z][a-z]{1,8}( [a-z]{1,8}){0,3} [a-z]{7,10}[.!?]", 1..6),
            refs in prop::collection::vec("[A-Z][a-z]{1,8}( [a-z]{1,8}){0,3}[.]", 1..6),
            k in 0usize..6, times in 1usize..4, shout in any::<bool>(), t in 0.0f64..1.0,
        ) {
            // Similarity from the words' overlap: a deterministic stand-in for embeddings.
            let words = |u: &str| unit_key(u).split(' ').map(str::to_owned).collect::<std::collections::BTreeSet<_>>();
            let score = |text: &str, refs: &[&str]| {
                let (units, _) = dedup(&split(text, Unit::Sentences));
                let sim: Vec<Vec<f64>> = units.iter().map(|a| refs.iter().map(|b| {
                    let (x, y) = (words(a), words(b));
                    x.intersection(&y).count() as f64 / x.union(&y).count() as f64
                }).collect()).collect();
                (units.len(), match_sets(&sim, t, Assign::Optimal).recall)
            };
            let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
            let text = sents.join(" ");
            let rep = &sents[k % sents.len()];
            let rep = if shout { rep.to_uppercase() } else { rep.clone() };
            let padded = format!("{text}{}", format!("  {rep}").repeat(times));
            let (n0, r0) = score(&text, &refs);
            let (n1, r1) = score(&padded, &refs);
            prop_assert_eq!(n0, n1);
            prop_assert_eq!(r1, r0);
        }

        #[test]
        fn any_matrix_and_threshold_is_scored_without_panic(
            sim in prop::collection::vec(prop::collection::vec(prop::num::f64::ANY, 0..5), 0..5),
            t in prop::num::f64::ANY,
        ) {
            for a in [Assign::Optimal, Assign::Greedy] {
                let m = match_sets(&sim, t, a);
                for x in [m.precision, m.recall, m.f1] {
                    prop_assert!((0.0..=1.0).contains(&x), "{x}");
                }
                prop_assert!((0.0..=2.0).contains(&m.chamfer), "{}", m.chamfer);
                for &(i, j, s) in &m.pairs {
                    prop_assert!(s.is_finite() && s >= t);
                    prop_assert!(sim[i].get(j).is_some_and(|x| x.is_finite()));
                }
            }
        }

        #[test]
        fn units_are_ordered_non_empty_trimmed_slices(s in "(\\PC|[\\n\\r .!?。…(a)1\\-*•\"」])*") {
            for u in [Unit::Sentences, Unit::Lines, Unit::Items] {
                let mut end = 0;
                for part in split(&s, u) {
                    prop_assert!(!part.is_empty() && part.trim() == part, "{part:?}");
                    let (a, b) = range_in(&s, part);
                    prop_assert!(a >= end, "{u:?}: units overlap or go back in {s:?}");
                    end = b;
                    if u != Unit::Items {
                        prop_assert!(!part.contains(is_break), "{part:?}");
                    }
                }
            }
        }
    }
}
