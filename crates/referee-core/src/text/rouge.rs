//! ROUGE-N and ROUGE-L F-measures over `rouge_score` tokens.
//!
//! Anchor: Google's `rouge_score` 0.1.2,
//! `RougeScorer([f"rouge{n}", "rougeL"]).score(target=reference,
//! prediction=candidate)[...].fmeasure`. The defaults are `use_stemmer=False`
//! and the default tokenizer, which lowercases, splits on anything outside
//! `[a-z0-9]` and drops empty tokens (see `tokenize.rs`).
//!
//! * ROUGE-N: overlap = `sum(min(count_ref, count_cand))` over n-grams,
//!   `P = overlap / max(#cand n-grams, 1)`, `R = overlap / max(#ref n-grams, 1)`.
//! * ROUGE-L: `P = LCS / #cand`, `R = LCS / #ref`, and 0 when either side has
//!   no tokens.
//! * `F = 2PR / (P + R)`, or 0 when `P + R = 0`. Both-empty inputs score 0, as
//!   in `rouge_score`. Text with no ASCII letters or digits has no tokens and
//!   scores 0, as in the anchor.
//!
//! `n = 0` is not a ROUGE type and scores 0. The LCS is bit-parallel, so
//! ROUGE-L costs `O(n·⌈m/64⌉)` in token counts (m the shorter) instead of
//! the anchor's `O(n·m)` table. Inputs are not capped.

use super::lcs::lcs_len;
use super::tokenize::{lowercase, ngram_overlaps, ngram_total, rouge_split};

/// ROUGE-N F-measure, in `[0, 1]`.
pub fn rouge_n(candidate: &str, reference: &str, n: usize) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let (cand_text, ref_text) = (lowercase(candidate), lowercase(reference));
    let (cand, refr) = (rouge_split(&cand_text), rouge_split(&ref_text));
    if n > cand.len().min(refr.len()) {
        // One side has no n-grams, so the overlap and the F-measure are 0.
        return 0.0;
    }
    let overlap = ngram_overlaps(&cand, &refr, n)[n - 1] as f64;
    let precision = overlap / ngram_total(cand.len(), n).max(1) as f64;
    let recall = overlap / ngram_total(refr.len(), n).max(1) as f64;
    fmeasure(precision, recall)
}

/// ROUGE-L (sentence-level LCS, not `rougeLsum`) F-measure, in `[0, 1]`.
pub fn rouge_l(candidate: &str, reference: &str) -> f64 {
    let (cand_text, ref_text) = (lowercase(candidate), lowercase(reference));
    let (cand, refr) = (rouge_split(&cand_text), rouge_split(&ref_text));
    if cand.is_empty() || refr.is_empty() {
        return 0.0;
    }
    let lcs = lcs_len(&cand, &refr) as f64;
    fmeasure(lcs / cand.len() as f64, lcs / refr.len() as f64)
}

/// `rouge_score.scoring.fmeasure`.
fn fmeasure(precision: f64, recall: f64) -> f64 {
    if precision + recall > 0.0 {
        (2.0 * precision * recall / (precision + recall)).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::assert_close;

    const TOL: f64 = 1e-9;

    // Expected values: rouge_score 0.1.2,
    //   RougeScorer(["rouge1", ..., "rouge5", "rougeL"]).score(reference, candidate)[t].fmeasure

    #[test]
    fn matches_rouge_score() {
        // (candidate, reference, [rouge1, rouge2, rouge3, rouge4, rouge5, rougeL])
        let cases: &[(&str, &str, [f64; 6])] = &[
            // RougeScorer([...]).score('There is a cat on the mat.', 'The cat is on the mat.')
            (
                "The cat is on the mat.",
                "There is a cat on the mat.",
                [
                    0.769_230_769_230_769_2,
                    0.363_636_363_636_363_6,
                    0.222_222_222_222_222_24,
                    0.0,
                    0.0,
                    0.615_384_615_384_615_3,
                ],
            ),
            // RougeScorer([...]).score('the quick brown dog jumps on the log', 'the quick brown fox jumps over the lazy dog')
            (
                "the quick brown fox jumps over the lazy dog",
                "the quick brown dog jumps on the log",
                [
                    0.705_882_352_941_176_5,
                    0.266_666_666_666_666_66,
                    0.153_846_153_846_153_83,
                    0.0,
                    0.0,
                    0.588_235_294_117_647_1,
                ],
            ),
            // RougeScorer([...]).score('cafe deja vu naive', 'Café déjà vu, naïve!')
            (
                "Café déjà vu, naïve!",
                "cafe deja vu naive",
                [0.2, 0.0, 0.0, 0.0, 0.0, 0.2],
            ),
            // RougeScorer([...]).score('hello world', 'hello')
            (
                "hello",
                "hello world",
                [
                    0.666_666_666_666_666_6,
                    0.0,
                    0.0,
                    0.0,
                    0.0,
                    0.666_666_666_666_666_6,
                ],
            ),
            // RougeScorer([...]).score('the cat', 'the the the the')
            (
                "the the the the",
                "the cat",
                [
                    0.333_333_333_333_333_3,
                    0.0,
                    0.0,
                    0.0,
                    0.0,
                    0.333_333_333_333_333_3,
                ],
            ),
            // RougeScorer([...]).score('a b c d e f', 'A B C D E F')
            ("A B C D E F", "a b c d e f", [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
            // RougeScorer([...]).score('u v w x y z', 'x y z w v u')
            (
                "x y z w v u",
                "u v w x y z",
                [1.0, 0.400_000_000_000_000_1, 0.25, 0.0, 0.0, 0.5],
            ),
            // RougeScorer([...]).score('日本語', '日本語')
            ("日本語", "日本語", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
            // RougeScorer([...]).score('its 3 45 pm the usa won 2 1', "It's 3:45pm; the U.S.A. won 2-1!")
            (
                "It's 3:45pm; the U.S.A. won 2-1!",
                "its 3 45 pm the usa won 2 1",
                [0.5, 0.222_222_222_222_222_24, 0.125, 0.0, 0.0, 0.5],
            ),
        ];
        for &(c, r, want) in cases {
            for n in 1..=5 {
                assert_close(
                    rouge_n(c, r, n),
                    want[n - 1],
                    TOL,
                    &format!("rouge{n} {c:?} vs {r:?}"),
                );
            }
            assert_close(
                rouge_l(c, r),
                want[5],
                TOL,
                &format!("rougeL {c:?} vs {r:?}"),
            );
        }
    }

    #[test]
    fn edge_cases() {
        for n in 1..=5 {
            assert_eq!(rouge_n("", "", n), 0.0);
            assert_eq!(rouge_n("a", "", n), 0.0);
            assert_eq!(rouge_n("", "a", n), 0.0);
        }
        assert_eq!(rouge_n("a b", "a b", 0), 0.0);
        // Candidate shorter than n: RougeScorer(["rouge3"]).score("a b c", "a b")["rouge3"].fmeasure == 0.0
        assert_eq!(rouge_n("a b", "a b c", 3), 0.0);
        assert_eq!(rouge_n("a b", "a b", usize::MAX), 0.0);
        assert_eq!(rouge_l("", ""), 0.0);
        assert_eq!(rouge_l("a", ""), 0.0);
        assert_eq!(rouge_l("", "a"), 0.0);
    }
}
