//! Set-to-set matching for embedding graders: both texts cut into units (sentences, lines, list
//! items), repeats dropped, then a one-to-one matching over a similarity threshold scored by
//! precision, recall and F1 (report sentences against reference findings), or a Chamfer
//! distance. One to one, so repeating a sentence never matches a reference twice.

use schemars::JsonSchema;
use serde::Deserialize;

/// How a text is cut into units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Sentences: after `.`, `!`, `?`, `…` followed by a space and a word that does not start
    /// lower-case, after `。！？`, and at line breaks; not after a short list of abbreviations,
    /// single initials, or inside numbers.
    #[default]
    Sentences,
    /// Non-empty lines.
    Lines,
    /// List items (`-`, `*`, `•`, `+`, `1.`, `1)`, `(a)` markers removed; unmarked lines
    /// continue the item above). A text without markers is read as lines.
    Items,
}

/// Words after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "dr", "mr", "mrs", "ms", "prof", "st", "fig", "no", "cf", "al",
    "approx", "jr", "sr",
];

/// The units of a text, in order, trimmed, empty ones dropped.
pub fn split(text: &str, unit: Unit) -> Vec<&str> {
    match unit {
        Unit::Lines => lines(text),
        Unit::Sentences => lines(text).into_iter().flat_map(sentences).collect(),
        Unit::Items => items(text),
    }
}

fn lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// The sentences of one line.
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let end = i + c.len_utf8();
        let boundary = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' | '…' => {
                let next = chars.get(k + 1).map(|p| p.1);
                let after = chars.get(k + 2).map(|p| p.1);
                match next {
                    None => true,
                    Some(n) if n.is_whitespace() => {
                        let lower = after.is_some_and(char::is_lowercase);
                        !(lower || c == '.' && abbreviation(&line[start..i]))
                    }
                    _ => false,
                }
            }
            _ => false,
        };
        if boundary {
            let s = line[start..end].trim();
            if !s.is_empty() {
                out.push(s);
            }
            start = end;
        }
    }
    let s = line[start..].trim();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

/// Whether the word before a period is an abbreviation or a single initial.
fn abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("");
    let w = word.to_lowercase();
    (word.chars().count() == 1 && word.chars().all(char::is_uppercase))
        || ABBREVIATIONS.contains(&w.as_str())
}

/// The list marker at the start of a trimmed line, and the text after it.
fn marker(line: &str) -> Option<&str> {
    for m in ["- ", "* ", "• ", "+ "] {
        if let Some(rest) = line.strip_prefix(m) {
            return Some(rest);
        }
    }
    let b = line.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if (1..=3).contains(&digits)
        && matches!(b.get(digits), Some(b'.' | b')'))
        && b.get(digits + 1).is_none_or(|c| *c == b' ')
    {
        return Some(line[digits + 1..].trim_start());
    }
    if b.first() == Some(&b'(') {
        let close = line.find(')')?;
        let inner = &line[1..close];
        if (1..=3).contains(&inner.len()) && inner.chars().all(char::is_alphanumeric) {
            return Some(line[close + 1..].trim_start());
        }
    }
    None
}

fn items(text: &str) -> Vec<&str> {
    if !text.lines().any(|l| marker(l.trim()).is_some()) {
        return lines(text);
    }
    // (start, end) byte ranges of items in `text`; continuation lines extend the last one.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    for raw in text.split_inclusive('\n') {
        let off = at;
        at += raw.len();
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let lstart = off + raw.find(line).unwrap_or(0);
        match marker(line) {
            Some(rest) => {
                let s = lstart + (line.len() - rest.len());
                spans.push((s, lstart + line.len()));
            }
            None => match spans.last_mut() {
                Some(last) => last.1 = lstart + line.len(),
                None => spans.push((lstart, lstart + line.len())),
            },
        }
    }
    spans
        .into_iter()
        .map(|(a, b)| text[a..b].trim())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The key two units are the same under: lower-cased words (look-alikes folded), so spacing,
/// case and punctuation do not make a repeat new.
pub fn unit_key(u: &str) -> String {
    crate::text::restate::words(u).join(" ")
}

/// Units with repeats removed (the first kept), and how many were dropped.
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
    /// (candidate, reference, similarity), each index at most once.
    pub pairs: Vec<(usize, usize, f64)>,
    /// 1 − the mean of the two directions' mean best similarity.
    pub chamfer: f64,
}

/// `sim`: rows candidate units, columns reference units. NaN counts as no similarity.
pub fn match_sets(sim: &[Vec<f64>], threshold: f64, assign: Assign) -> SetScores {
    let rows = sim.len();
    let cols = sim.iter().map(Vec::len).max().unwrap_or(0);
    let at = |i: usize, j: usize| {
        sim[i]
            .get(j)
            .copied()
            .filter(|x| !x.is_nan())
            .unwrap_or(-1.0)
    };
    if rows == 0 || cols == 0 {
        return SetScores {
            precision: 0.0,
            recall: 0.0,
            f1: 0.0,
            pairs: Vec::new(),
            chamfer: 1.0,
        };
    }
    let mut pairs = match assign {
        Assign::Greedy => {
            let mut all: Vec<(usize, usize, f64)> = (0..rows)
                .flat_map(|i| (0..cols).map(move |j| (i, j)))
                .map(|(i, j)| (i, j, at(i, j)))
                .filter(|p| p.2 >= threshold)
                .collect();
            all.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
            let (mut ru, mut cu) = (vec![false; rows], vec![false; cols]);
            let mut out = Vec::new();
            for (i, j, s) in all {
                if !ru[i] && !cu[j] {
                    ru[i] = true;
                    cu[j] = true;
                    out.push((i, j, s));
                }
            }
            out
        }
        Assign::Optimal => {
            // A pair over the threshold is worth more than any total of similarities below
            // it, so the assignment first maximises the count, then the similarity.
            const SCALE: f64 = 1e6;
            let big = (rows.min(cols) as f64 + 1.0) * 2.0 * SCALE;
            let transpose = rows > cols;
            let (nr, nc) = if transpose {
                (cols, rows)
            } else {
                (rows, cols)
            };
            let w = pathfinding::matrix::Matrix::from_fn(nr, nc, |(x, y)| {
                let (i, j) = if transpose { (y, x) } else { (x, y) };
                let s = at(i, j);
                if s >= threshold {
                    (big + (s + 1.0) * SCALE).round() as i64
                } else {
                    0
                }
            });
            let (_, assignment) = pathfinding::kuhn_munkres::kuhn_munkres(&w);
            assignment
                .into_iter()
                .enumerate()
                .map(|(x, y)| if transpose { (y, x) } else { (x, y) })
                .map(|(i, j)| (i, j, at(i, j)))
                .filter(|p| p.2 >= threshold)
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
    let best_row = (0..rows)
        .map(|i| (0..cols).map(|j| at(i, j)).fold(-1.0, f64::max))
        .sum::<f64>()
        / rows as f64;
    let best_col = (0..cols)
        .map(|j| (0..rows).map(|i| at(i, j)).fold(-1.0, f64::max))
        .sum::<f64>()
        / cols as f64;
    SetScores {
        precision,
        recall,
        f1,
        pairs,
        chamfer: 1.0 - f64::midpoint(best_row, best_col),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sentences_keep_abbreviations_initials_and_numbers() {
        assert_eq!(
            split("The heart is normal. No effusion, e.g. none seen. Dr. Smith agrees! Is it 3.5 cm? Yes", Unit::Sentences),
            ["The heart is normal.", "No effusion, e.g. none seen.", "Dr. Smith agrees!", "Is it 3.5 cm?", "Yes"]
        );
        assert_eq!(
            split("J. Smith wrote it. then more", Unit::Sentences),
            ["J. Smith wrote it. then more"]
        );
        assert_eq!(
            split("肺は正常。心臓も正常。", Unit::Sentences),
            ["肺は正常。", "心臓も正常。"]
        );
        assert_eq!(split("one\ntwo.", Unit::Sentences), ["one", "two."]);
        assert!(split("  \n \t", Unit::Sentences).is_empty());
    }

    #[test]
    fn items_drop_markers_and_join_continuations() {
        let t = "Findings:\n- small effusion\n  on the left\n2) no pneumothorax\n(a) heart normal\n* 1.5 cm nodule";
        assert_eq!(
            split(t, Unit::Items),
            [
                "Findings:",
                "small effusion\n  on the left",
                "no pneumothorax",
                "heart normal",
                "1.5 cm nodule"
            ]
        );
        assert_eq!(split("a\n\nb", Unit::Items), ["a", "b"]);
        assert_eq!(split(" x \n\n y ", Unit::Lines), ["x", "y"]);
    }

    #[test]
    fn repeats_are_dropped_by_their_words() {
        let (u, n) = dedup(&["No effusion.", "no  EFFUSION", "Heart normal."]);
        assert_eq!((u, n), (vec!["No effusion.", "Heart normal."], 1));
    }

    #[test]
    fn optimal_beats_greedy_where_greedy_is_short_sighted() {
        // Greedy takes (0,0) = 0.95 and leaves row 1 with nothing over 0.8.
        let sim = vec![vec![0.95, 0.9], vec![0.85, 0.1]];
        let g = match_sets(&sim, 0.8, Assign::Greedy);
        let o = match_sets(&sim, 0.8, Assign::Optimal);
        assert_eq!(g.pairs, vec![(0, 0, 0.95)]);
        assert_eq!(o.pairs, vec![(0, 1, 0.9), (1, 0, 0.85)]);
        assert_eq!((o.precision, o.recall, o.f1), (1.0, 1.0, 1.0));
        assert_eq!((g.precision, g.recall), (0.5, 0.5));
        // Chamfer: rows' best 0.95, 0.85 → 0.9; columns' best 0.95, 0.9 → 0.925.
        assert!((o.chamfer - (1.0 - 0.9125)).abs() < 1e-12);
    }

    #[test]
    fn empty_sides_and_nan() {
        let e = match_sets(&[], 0.5, Assign::Optimal);
        assert_eq!((e.f1, e.chamfer), (0.0, 1.0));
        let e = match_sets(&[vec![]], 0.5, Assign::Greedy);
        assert_eq!(e.recall, 0.0);
        let n = match_sets(&[vec![f64::NAN, 0.9]], 0.5, Assign::Optimal);
        assert_eq!(n.pairs, vec![(0, 1, 0.9)]);
    }

    fn matrix() -> impl Strategy<Value = Vec<Vec<f64>>> {
        (1usize..7, 1usize..7).prop_flat_map(|(r, c)| {
            prop::collection::vec(prop::collection::vec(-1.0f64..1.0, c), r)
        })
    }

    proptest! {
        #[test]
        fn matchings_are_one_to_one_and_optimal_never_fewer(sim in matrix(), t in -0.5f64..0.9) {
            let g = match_sets(&sim, t, Assign::Greedy);
            let o = match_sets(&sim, t, Assign::Optimal);
            prop_assert!(o.pairs.len() >= g.pairs.len());
            for m in [&g, &o] {
                let mut r: Vec<usize> = m.pairs.iter().map(|p| p.0).collect();
                let mut c: Vec<usize> = m.pairs.iter().map(|p| p.1).collect();
                r.dedup(); c.sort_unstable(); c.dedup();
                prop_assert_eq!(r.len(), m.pairs.len());
                prop_assert_eq!(c.len(), m.pairs.len());
                prop_assert!(m.pairs.iter().all(|p| p.2 >= t));
                for x in [m.precision, m.recall, m.f1] {
                    prop_assert!((0.0..=1.0).contains(&x));
                }
            }
        }

        /// A duplicated row *could* match a second reference, so repeats are dropped before
        /// matching: repeating a sentence leaves the units, hence every score, as they were.
        #[test]
        fn repeating_a_sentence_leaves_the_units_unchanged(
            sents in prop::collection::vec("[A-Z][a-z]{1,8}( [a-z]{1,8}){0,3} [a-z]{9,12}\\.", 1..6),
            k in 0usize..6, times in 1usize..5,
        ) {
            let text = sents.join(" ");
            let (before, _) = dedup(&split(&text, Unit::Sentences));
            let rep = &sents[k % sents.len()];
            let padded = format!("{text}{}", format!(" {rep}").repeat(times));
            let (after, dropped) = dedup(&split(&padded, Unit::Sentences));
            prop_assert_eq!(before, after);
            prop_assert!(dropped >= times);
        }

        #[test]
        fn splitting_never_panics(s in "\\PC{0,200}") {
            for u in [Unit::Sentences, Unit::Lines, Unit::Items] {
                for part in split(&s, u) {
                    prop_assert!(!part.trim().is_empty());
                }
            }
        }
    }
}
