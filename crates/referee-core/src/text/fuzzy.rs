//! `fuzzy_match`: normalized Indel similarity of the raw strings, compared
//! character by character (Unicode scalar values, like Python `str`).
//!
//! Anchor: `rapidfuzz.fuzz.ratio(candidate, reference) / 100` (rapidfuzz
//! 3.x, default `processor=None`, so no lowercasing or trimming), which equals
//! `rapidfuzz.distance.Indel.normalized_similarity`. The score is
//! `1 - (len_a + len_b - 2·LCS) / (len_a + len_b)`, i.e. `2·LCS / (len_a +
//! len_b)`. Two empty strings score 1.0 and one empty string scores 0.0,
//! as in rapidfuzz.
//!
//! Why `ratio`: the `OpenAI` graders guide says only "fuzzy string match, using
//! rapidfuzz" and does not name the scorer. `fuzz.ratio` is rapidfuzz's basic,
//! symmetric similarity. `fuzz.WRatio` is a heuristic blend of partial and
//! token-sorted ratios with length-dependent weights. It gives a candidate
//! that is merely contained in the reference a high score:
//! `WRatio("Paris", "The capital of France is Paris.")` is 90, where `ratio`
//! gives 27.8. The `fuzzy_match` helper in the openai/evals repository is a
//! boolean substring test after normalisation, not rapidfuzz, so it is not
//! used either. This is a judgement call: if the hosted grader uses another
//! scorer, scores will differ.
//!
//! Cost: `O(n·⌈m/64⌉)` for character lengths `n >= m` (bit-parallel LCS, the
//! same bound as rapidfuzz). There is no cap, because a cap would change the
//! score.

use super::lcs::lcs_len;

/// `rapidfuzz.fuzz.ratio(candidate, reference) / 100`, in `[0, 1]`.
pub fn fuzzy_match(candidate: &str, reference: &str) -> f64 {
    let (len_sum, lcs) = if candidate.is_ascii() && reference.is_ascii() {
        (
            candidate.len() + reference.len(),
            lcs_len(candidate.as_bytes(), reference.as_bytes()),
        )
    } else {
        let a: Vec<char> = candidate.chars().collect();
        let b: Vec<char> = reference.chars().collect();
        (a.len() + b.len(), lcs_len(&a, &b))
    };
    if len_sum == 0 {
        return 1.0;
    }
    let distance = len_sum - 2 * lcs;
    1.0 - distance as f64 / len_sum as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::{assert_close, Lcg};

    const TOL: f64 = 1e-9;

    #[test]
    fn matches_rapidfuzz_ratio() {
        // Expected values: rapidfuzz 3.14.6, fuzz.ratio(candidate, reference) / 100.
        let cases: &[(&str, &str, f64)] = &[
            // fuzz.ratio('this is a test', 'this is a test!') / 100
            ("this is a test", "this is a test!", 0.965_517_241_379_310_3),
            // fuzz.ratio('The capital of France is Paris.', 'Paris') / 100
            (
                "The capital of France is Paris.",
                "Paris",
                0.277_777_777_777_777_8,
            ),
            // fuzz.ratio('kitten', 'sitting') / 100
            ("kitten", "sitting", 0.615_384_615_384_615_4),
            // fuzz.ratio('Paris', 'paris') / 100
            ("Paris", "paris", 0.8),
            // fuzz.ratio('naïve café', 'naive cafe') / 100
            ("naïve café", "naive cafe", 0.8),
            // fuzz.ratio('日本語のテキスト', '日本語テキスト') / 100
            (
                "日本語のテキスト",
                "日本語テキスト",
                0.933_333_333_333_333_2,
            ),
            // fuzz.ratio('abc', 'xyz') / 100
            ("abc", "xyz", 0.0),
            // fuzz.ratio('🦀 crab', '🦀 crabs') / 100
            ("🦀 crab", "🦀 crabs", 0.923_076_923_076_923),
            // fuzz.ratio('é', 'é') / 100
            ("e\u{301}", "é", 0.0),
        ];
        for &(c, r, want) in cases {
            assert_close(fuzzy_match(c, r), want, TOL, &format!("{c:?} vs {r:?}"));
        }
    }

    #[test]
    fn empty_inputs() {
        // fuzz.ratio("", "") == 100.0; fuzz.ratio("a", "") == 0.0; fuzz.ratio("", "a") == 0.0
        assert_eq!(fuzzy_match("", ""), 1.0);
        assert_eq!(fuzzy_match("a", ""), 0.0);
        assert_eq!(fuzzy_match("", "a"), 0.0);
    }

    #[test]
    fn long_inputs_cross_block_boundaries() {
        // a = "ab" * 500, b = "ba" * 480 + "c" * 7
        // fuzz.ratio(a, b) / 100 == 0.9761057447890188
        let a = "ab".repeat(500);
        let b = "ba".repeat(480) + &"c".repeat(7);
        assert_close(fuzzy_match(&a, &b), 0.976_105_744_789_018_8, TOL, "long");
        let big = "x".repeat(100_000);
        assert_eq!(fuzzy_match(&big, &big), 1.0);
    }

    #[test]
    fn symmetric_and_bounded() {
        let mut rng = Lcg::new(11);
        for _ in 0..300 {
            let a = rng.text(40);
            let b = rng.text(40);
            let s = fuzzy_match(&a, &b);
            assert!((0.0..=1.0).contains(&s), "{a:?} {b:?} -> {s}");
            assert_eq!(s, fuzzy_match(&b, &a));
        }
    }
}
