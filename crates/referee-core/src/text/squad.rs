//! SQuAD v1.1's answer normalisation and metrics, as the official `evaluate-v1.1.py` computes
//! them: `normalize_answer` lower-cases (Python `str.lower`, final sigma included), removes the
//! ASCII punctuation of `string.punctuation`, replaces the whole words `a`, `an`, `the` (the
//! `\b(a|an|the)\b` of Python's `re`, whose word characters are letters, digits and `_`) with a
//! space, and joins the whitespace-separated tokens (Python `str.split()`: Unicode whitespace
//! and the separators U+001C–U+001F) with single spaces. Exact match compares the normalised
//! strings; token F1 intersects the two token multisets (`Counter(a) & Counter(b)`).
//!
//! As in v1.1 (not v2.0), F1 is 0 whenever no token is shared, so two answers that normalise to
//! nothing score F1 0 and exact match 1.
//!
//! Written here rather than taken from a crate: no maintained Rust crate reproduces the script,
//! and it is a few lines. `benches/set_metrics` compares it with the script's functions.

use std::collections::HashMap;
use unicode_general_category::{get_general_category, GeneralCategory as G};

/// Python's `string.punctuation`.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// A word character of Python's `re` on `str` patterns: `str.isalnum()` or `_`.
fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::DecimalNumber
            | G::LetterNumber
            | G::OtherNumber
    )
}

/// Whitespace as Python's `str.split()` reads it.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `normalize_answer(s)` of the official script.
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let chars: Vec<char> = lower.chars().filter(|c| !is_punctuation(*c)).collect();
    // remove_articles: `\b(a|an|the)\b` -> " ", scanning left to right without overlaps.
    let mut out = String::with_capacity(lower.len());
    let mut i = 0;
    while i < chars.len() {
        let before_ok = i == 0 || !is_word(chars[i - 1]);
        if before_ok {
            let len = article_at(&chars[i..]);
            if len > 0 && chars.get(i + len).is_none_or(|c| !is_word(*c)) {
                out.push(' ');
                i += len;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    let mut fixed = String::with_capacity(out.len());
    for w in out.split(is_py_space).filter(|w| !w.is_empty()) {
        if !fixed.is_empty() {
            fixed.push(' ');
        }
        fixed.push_str(w);
    }
    fixed
}

/// The length of the article `a|an|the` at the start of `cs`, the caller checking the word
/// boundary after it. The regex tries `a` first and backtracks to `an` when `a\b` fails; at
/// most one of the two is followed by a boundary, so `an` is taken when it is.
fn article_at(cs: &[char]) -> usize {
    let is = |w: &str| {
        let n = w.chars().count();
        cs.len() >= n && cs.iter().zip(w.chars()).all(|(a, b)| *a == b)
    };
    if is("the") {
        return 3;
    }
    if is("an") && cs.get(2).is_none_or(|c| !is_word(*c)) {
        return 2;
    }
    usize::from(is("a"))
}

/// The normalised answer's tokens.
pub fn tokens(normalised: &str) -> Vec<&str> {
    normalised.split(' ').filter(|t| !t.is_empty()).collect()
}

/// `exact_match_score(prediction, ground_truth)`.
pub fn exact_match(prediction: &str, gold: &str) -> bool {
    normalize_answer(prediction) == normalize_answer(gold)
}

/// `f1_score` on already normalised strings.
pub fn f1_normalised(prediction: &str, gold: &str) -> f64 {
    let p = tokens(prediction);
    let g = tokens(gold);
    let mut counts: HashMap<&str, usize> = HashMap::with_capacity(g.len());
    for t in &g {
        *counts.entry(t).or_default() += 1;
    }
    let mut same = 0usize;
    for t in &p {
        if let Some(c) = counts.get_mut(t) {
            if *c > 0 {
                *c -= 1;
                same += 1;
            }
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / p.len() as f64;
    let recall = same as f64 / g.len() as f64;
    (2.0 * precision * recall) / (precision + recall)
}

/// `f1_score(prediction, ground_truth)`.
pub fn f1(prediction: &str, gold: &str) -> f64 {
    f1_normalised(&normalize_answer(prediction), &normalize_answer(gold))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::Lcg;

    #[test]
    fn normalises_like_the_official_script() {
        // Values from evaluate-v1.1.py's normalize_answer (Python 3.12).
        let cases = [
            ("The Eiffel Tower", "eiffel tower"),
            ("  an apple, a pear & THE banana!  ", "apple pear banana"),
            ("Theatre and the-end", "theatre and theend"),
            ("a", ""),
            ("A.N. other", "other"),
            ("an_a the_", "ana"),
            ("the\u{301} x", "\u{301} x"),
            ("an\u{93e} b", "\u{93e} b"),
            ("Σίσυφος ΟΔΟΣ", "σίσυφος οδος"),
            ("x\u{1f}y\u{a0}z", "x y z"),
            ("the the the", ""),
            ("anthem thereby a1", "anthem thereby a1"),
            ("é the", "é"),
            ("l'the", "lthe"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize_answer(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn f1_and_exact_match() {
        assert!(exact_match("The Denver Broncos", "denver broncos."));
        assert!(!exact_match("Denver", "Denver Broncos"));
        // 1 common token of 1 and 2: P = 1, R = 0.5.
        assert!((f1("Denver", "Denver Broncos") - 2.0 / 3.0).abs() < 1e-12);
        // Counter intersection: "a b b" vs "b b b" share two tokens (articles aside: none here).
        assert!(
            (f1("x y y", "y y y") - 2.0 * (2.0 / 3.0) * (2.0 / 3.0) / (4.0 / 3.0)).abs() < 1e-12
        );
        assert_eq!(f1("the", "a"), 0.0);
        assert!(exact_match("the", "a"));
        assert_eq!(f1("", ""), 0.0);
    }

    #[test]
    fn random_text_never_panics_and_is_idempotent() {
        let mut rng = Lcg::new(7);
        for _ in 0..500 {
            let t = rng.text(40);
            let n = normalize_answer(&t);
            assert_eq!(normalize_answer(&n), n, "{t:?}");
            let f = f1(&t, &rng.text(10));
            assert!((0.0..=1.0).contains(&f));
        }
    }
}
