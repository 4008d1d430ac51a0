//! Text utilities: the reasoning section (`reasoning`), look-alike folding (`fold`), the
//! normalised view the prefilter reads (`normalise`), SQuAD v1.1's answer normalisation and
//! token F1 (`squad`) and the
//! text-similarity metrics for the
//! `text_similarity` grader
//! (`evaluation_metric`: `fuzzy_match`, `bleu`, `gleu`, `meteor`,
//! `rouge_1` ... `rouge_5`, `rouge_l`; `cosine` is out of scope).
//!
//! Every function takes `(candidate, reference)`, where the candidate is the
//! graded text (the grader's `input`). Each returns a finite `f64` in
//! `[0, 1]` and never panics. Each mirrors one Python library as closely as
//! practical:
//!
//! | metric        | anchor (defaults unless stated)                                                   |
//! |---------------|-----------------------------------------------------------------------------------|
//! | `fuzzy_match` | `rapidfuzz.fuzz.ratio(cand, ref) / 100`                                           |
//! | `bleu`        | nltk `sentence_bleu([ref], cand, smoothing_function=SmoothingFunction().method4)` |
//! | `gleu`        | nltk `sentence_gleu([ref], cand)`                                                 |
//! | `meteor`      | nltk `single_meteor_score(ref, cand)`, **without `WordNet` synonym matching**    |
//! | `rouge_n`     | `rouge_score` `RougeScorer(["rougeN"]).score(ref, cand)["rougeN"].fmeasure`        |
//! | `rouge_l`     | `rouge_score` `RougeScorer(["rougeL"]).score(ref, cand)["rougeL"].fmeasure`        |
//!
//! Known deviations are stated in each submodule. The main two: METEOR has
//! no synonym matching, and the nltk metrics tokenize with
//! `wordpunct_tokenize` instead of `word_tokenize`.
//! Test expectations were produced by running nltk 3.10.4, rapidfuzz 3.14.6
//! and rouge-score 0.1.2.

mod bleu;
pub mod fold;
mod fuzzy;
mod lcs;
pub mod matching;
mod meteor;
pub mod normalise;
mod occurrences;
mod porter;
pub mod reasoning;
pub mod restate;
mod rouge;
pub mod squad;
pub mod tokenize;

pub use bleu::{bleu, bleu_tokens, gleu, gleu_tokens};
pub use fuzzy::fuzzy_match;
pub use meteor::{meteor, meteor_tokens};
pub use occurrences::{has_token, token_occurrences, whole_at};
pub use rouge::{rouge_l, rouge_n};
pub use tokenize::{rouge_tokens, word_punct};

#[cfg(test)]
pub(crate) mod test_util {
    /// Minimal deterministic generator (64-bit LCG) for property tests.
    pub(crate) struct Lcg(u64);

    impl Lcg {
        pub(crate) fn new(seed: u64) -> Self {
            Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }

        pub(crate) fn next_u32(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 32) as u32
        }

        /// Uniform-ish in `0..n` (`n > 0`).
        pub(crate) fn below(&mut self, n: usize) -> usize {
            self.next_u32() as usize % n
        }

        /// Random text of up to `max_len` characters: words, punctuation,
        /// whitespace, digits, accented and CJK characters, emoji, combining
        /// marks and the odd control character.
        pub(crate) fn text(&mut self, max_len: usize) -> String {
            const POOL: &[&str] = &[
                "a",
                "b",
                "the",
                "cat",
                "Cat",
                "THE",
                " ",
                " ",
                "  ",
                "\n",
                "\t",
                ".",
                ",",
                "!",
                "'",
                "-",
                "_",
                "0",
                "42",
                "é",
                "ß",
                "İ",
                "Σ",
                "日本",
                "語",
                "🦀",
                "\u{301}",
                "\u{0}",
                "running",
                "runs",
                "ran",
                "x",
                "y",
                "…",
                "\u{3000}",
                "क्ष",
            ];
            let n = self.below(max_len + 1);
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(POOL[self.below(POOL.len())]);
            }
            s
        }
    }

    pub(crate) fn assert_close(got: f64, want: f64, tol: f64, what: &str) {
        assert!(
            (got - want).abs() <= tol,
            "{what}: got {got:.17}, want {want:.17} (tolerance {tol:e})"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::{assert_close, Lcg};
    use super::*;

    fn all_metrics(c: &str, r: &str) -> [f64; 10] {
        [
            fuzzy_match(c, r),
            bleu(c, r),
            gleu(c, r),
            meteor(c, r),
            rouge_n(c, r, 1),
            rouge_n(c, r, 2),
            rouge_n(c, r, 3),
            rouge_n(c, r, 4),
            rouge_n(c, r, 5),
            rouge_l(c, r),
        ]
    }

    #[test]
    fn random_inputs_give_finite_scores_in_unit_interval() {
        let mut rng = Lcg::new(2024);
        for i in 0..400 {
            let c = rng.text(if i % 10 == 0 { 300 } else { 30 });
            let r = if i % 7 == 0 { c.clone() } else { rng.text(30) };
            for (k, s) in all_metrics(&c, &r).into_iter().enumerate() {
                assert!(
                    s.is_finite() && (0.0..=1.0).contains(&s),
                    "metric {k}: {c:?} vs {r:?} -> {s}"
                );
            }
        }
    }

    #[test]
    fn identical_texts_score_one() {
        let t = "The quick brown fox jumps over the lazy dog.";
        for (k, s) in all_metrics(t, t).into_iter().enumerate() {
            // METEOR's fragmentation penalty keeps it below 1 even for identical text.
            if k == 3 {
                assert!(s > 0.99, "meteor {s}");
            } else {
                assert!((s - 1.0).abs() < 1e-12, "metric {k}: {s}");
            }
        }
    }

    #[test]
    fn long_inputs_match_anchors() {
        // c = " ".join(f"w{(i*7919)%97}" for i in range(700))
        // r = " ".join(f"w{(i*104729)%89}" for i in range(650))
        // Values from the same anchor calls as the per-metric tests (rapidfuzz
        // fuzz.ratio/100, nltk sentence_bleu method4 / sentence_gleu /
        // single_meteor_score without WordNet, rouge_score rouge1..5 and rougeL).
        // These lengths cross several 64-symbol LCS blocks.
        let c: Vec<String> = (0..700).map(|i| format!("w{}", (i * 7919) % 97)).collect();
        let r: Vec<String> = (0..650)
            .map(|i| format!("w{}", (i * 104_729) % 89))
            .collect();
        let (c, r) = (c.join(" "), r.join(" "));
        let want = [
            0.665_524_462_212_069_4,
            0.003_104_266_544_137_486_4,
            0.225_125_268_432_355_06,
            0.480_152_671_755_725_24,
            0.931_851_851_851_851_9,
            0.0,
            0.0,
            0.0,
            0.0,
            0.182_222_222_222_222_23,
        ];
        for (k, (got, want)) in all_metrics(&c, &r).into_iter().zip(want).enumerate() {
            assert_close(got, want, 1e-9, &format!("metric {k}"));
        }
    }

    #[test]
    fn very_long_inputs_stay_bounded() {
        // 6k tokens (~36k characters) per side. The n-gram metrics and METEOR
        // are linear; the bit-parallel LCS keeps ROUGE-L and fuzzy_match at
        // O(n·m/64) word operations (about 0.35 s in release for 120k characters).
        let words = |step: usize| -> String {
            (0..6_000)
                .map(|i| format!("w{}", (i * step) % 5000))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (c, r) = (words(7919), words(104_729));
        for (k, s) in all_metrics(&c, &r).into_iter().enumerate() {
            assert!(s.is_finite() && (0.0..=1.0).contains(&s), "metric {k}: {s}");
        }
    }

    #[test]
    fn token_entry_points_agree_with_string_entry_points() {
        let (c, r) = ("The cats sat, quietly.", "A cat sat quietly on the mat.");
        let (ct, rt) = (word_punct(c), word_punct(r));
        assert_eq!(bleu_tokens(&ct, &rt), bleu(c, r));
        assert_eq!(gleu_tokens(&ct, &rt), gleu(c, r));
        assert_eq!(meteor_tokens(&ct, &rt), meteor(c, r));
    }

    #[test]
    fn both_empty() {
        // fuzzy: rapidfuzz ratio("", "") == 100; every token metric returns 0 on empty input.
        assert_eq!(
            all_metrics("", ""),
            [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
    }
}
