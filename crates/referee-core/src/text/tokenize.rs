//! Tokenizers and n-gram bookkeeping shared by the text-similarity metrics.
//!
//! * [`word_punct`] mirrors `nltk.tokenize.wordpunct_tokenize` (nltk 3.10.4):
//!   the pattern `\w+|[^\w\s]+`, with Unicode (UTS#18) `\w` and `\s`, which is
//!   what nltk >= 3.10 gets by compiling through the third-party `regex`
//!   module and what the `regex` crate implements. BLEU, GLEU and METEOR use it.
//!   Deviation: graders built on nltk usually call `nltk.word_tokenize`
//!   (Treebank rules after punkt sentence splitting). Punkt data cannot be
//!   loaded here, and the Treebank rules are long, so this simpler tokenizer
//!   is used instead. It gives the same tokens for plain prose with
//!   punctuation. It differs on contractions (`don't` becomes `don ' t`, not
//!   `do n't`), on decimals and thousands (`3.14` becomes `3 . 14`), on
//!   hyphenated words and on quote normalisation. Older nltk versions
//!   compiled the pattern with the stdlib `re`, whose `\w` leaves out
//!   combining marks, so they split e.g. Devanagari words differently.
//!   Characters assigned in Unicode versions newer than the `regex` crate's
//!   tables are not `\w` here but are in an up-to-date `regex` module.
//! * [`rouge_tokens`] mirrors `rouge_score.tokenize.tokenize` with no stemmer
//!   (the `RougeScorer` default). It lowercases the whole text, treats every
//!   run of characters outside `[a-z0-9]` as a separator, and keeps the
//!   remaining ASCII alphanumeric words. Text without ASCII letters or digits
//!   therefore has no ROUGE tokens. That is the anchor's behaviour, kept on
//!   purpose.
//!
//! [`ngram_overlaps`] computes clipped n-gram matches
//! (`sum(min(count_cand, count_ref))`) for every order at once. It interns
//! n-grams level by level into dense ids, so counting uses flat vectors
//! rather than hash maps of slices.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::LazyLock;

use regex::Regex;

static WORD_PUNCT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\w+|[^\w\s]+").expect("static pattern compiles"));

/// `nltk.tokenize.wordpunct_tokenize`: alternating runs of word characters
/// and runs of other non-space characters. Case is preserved.
pub fn word_punct(text: &str) -> Vec<&str> {
    if text.is_ascii() {
        word_punct_ascii(text)
    } else {
        WORD_PUNCT.find_iter(text).map(|m| m.as_str()).collect()
    }
}

/// ASCII-only fast path of [`word_punct`], with the same classes: `\w` is
/// `[0-9A-Za-z_]` and `\s` is `[\t\n\x0B\x0C\r ]` (Unicode `White_Space`).
fn word_punct_ascii(text: &str) -> Vec<&str> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Space,
        Word,
        Other,
    }
    let class = |b: u8| match b {
        b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ' => Class::Space,
        b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_' => Class::Word,
        _ => Class::Other,
    };
    let bytes = text.as_bytes();
    let mut tokens = Vec::with_capacity(bytes.len() / 4 + 1);
    let mut start = 0;
    let mut current = Class::Space;
    for (i, &b) in bytes.iter().enumerate() {
        let c = class(b);
        if c != current {
            if current != Class::Space {
                tokens.push(&text[start..i]);
            }
            start = i;
            current = c;
        }
    }
    if current != Class::Space {
        tokens.push(&text[start..]);
    }
    tokens
}

/// Lowercases `text` the way Python's `str.lower` does, borrowing when the
/// text is ASCII with no uppercase letters.
pub(crate) fn lowercase(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.to_ascii_lowercase())
        } else {
            Cow::Borrowed(text)
        }
    } else {
        Cow::Owned(text.to_lowercase())
    }
}

/// Splits already-lowercased text into `rouge_score` tokens: maximal runs of
/// `[a-z0-9]`.
pub(crate) fn rouge_split(lowered: &str) -> Vec<&str> {
    lowered
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .collect()
}

/// `rouge_score.tokenize.tokenize(text, stemmer=None)`: lowercase, then
/// maximal runs of `[a-z0-9]`.
pub fn rouge_tokens(text: &str) -> Vec<String> {
    rouge_split(&lowercase(text))
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// `FxHash` (the rustc hasher): fast and good enough for short token keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(buf));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Id given to candidate symbols that never occur in the reference.
pub(crate) const ABSENT: u32 = u32::MAX;

/// Maps `reference` symbols to dense ids `0..k` and `candidate` symbols to the
/// same ids, or [`ABSENT`] when the reference lacks them. Returns
/// `(candidate_ids, reference_ids, k)`.
pub(crate) fn intern_pair<T: Hash + Eq>(
    candidate: &[T],
    reference: &[T],
) -> (Vec<u32>, Vec<u32>, usize) {
    let mut vocab: FxMap<&T, u32> = FxMap::default();
    vocab.reserve(reference.len());
    let ref_ids: Vec<u32> = reference
        .iter()
        .map(|t| {
            let next = vocab.len() as u32;
            *vocab.entry(t).or_insert(next)
        })
        .collect();
    let cand_ids = candidate
        .iter()
        .map(|t| vocab.get(t).copied().unwrap_or(ABSENT))
        .collect();
    (cand_ids, ref_ids, vocab.len())
}

/// Clipped n-gram matches for orders `1..=max_n`: element `n - 1` is
/// `sum over n-grams g of min(count_candidate(g), count_reference(g))`.
pub(crate) fn ngram_overlaps<T: Hash + Eq>(
    candidate: &[T],
    reference: &[T],
    max_n: usize,
) -> Vec<usize> {
    let mut out = vec![0; max_n];
    if max_n == 0 || candidate.is_empty() || reference.is_empty() {
        return out;
    }
    let (cand_tok, ref_tok, vocab) = intern_pair(candidate, reference);
    let mut cand = cand_tok.clone();
    let mut refr = ref_tok.clone();
    let mut k = vocab;
    let mut counts: Vec<u32> = Vec::new();
    let mut pairs: FxMap<u64, u32> = FxMap::default();
    for n in 1..=max_n {
        if n > 1 {
            if cand_tok.len() < n || ref_tok.len() < n {
                break;
            }
            // Extend every (n-1)-gram id with the token that follows it.
            pairs.clear();
            refr.truncate(ref_tok.len() + 1 - n);
            for (i, id) in refr.iter_mut().enumerate() {
                let key = (u64::from(*id) << 32) | u64::from(ref_tok[i + n - 1]);
                let next = pairs.len() as u32;
                *id = *pairs.entry(key).or_insert(next);
            }
            cand.truncate(cand_tok.len() + 1 - n);
            for (i, id) in cand.iter_mut().enumerate() {
                let tok = cand_tok[i + n - 1];
                *id = if *id == ABSENT || tok == ABSENT {
                    ABSENT
                } else {
                    let key = (u64::from(*id) << 32) | u64::from(tok);
                    pairs.get(&key).copied().unwrap_or(ABSENT)
                };
            }
            k = pairs.len();
        }
        counts.clear();
        counts.resize(k, 0);
        for &id in &refr {
            counts[id as usize] += 1;
        }
        let mut matched = 0;
        for &id in &cand {
            if id != ABSENT && counts[id as usize] > 0 {
                counts[id as usize] -= 1;
                matched += 1;
            }
        }
        out[n - 1] = matched;
        // A match of order n implies a match of its prefix of order n - 1,
        // so once an order has none, no higher order has any.
        if matched == 0 {
            break;
        }
    }
    out
}

/// Number of n-grams of order `n` in a sequence of `len` tokens.
#[inline]
pub(crate) fn ngram_total(len: usize, n: usize) -> usize {
    (len + 1).saturating_sub(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::Lcg;

    #[test]
    fn word_punct_matches_nltk() {
        // nltk 3.10.4: wordpunct_tokenize("Don't stop... 3.14, naïve café! नमस्ते")
        // -> ['Don', "'", 't', 'stop', '...', '3', '.', '14', ',', 'naïve', 'café', '!', 'नमस्ते']
        assert_eq!(
            word_punct("Don't stop... 3.14, naïve café! नमस्ते"),
            vec![
                "Don",
                "'",
                "t",
                "stop",
                "...",
                "3",
                ".",
                "14",
                ",",
                "naïve",
                "café",
                "!",
                "नमस्ते"
            ]
        );
        assert!(word_punct("").is_empty());
        assert!(word_punct(" \t\n ").is_empty());
        // wordpunct_tokenize("a_b--c\u{3000}d") -> ['a_b', '--', 'c', 'd']
        assert_eq!(word_punct("a_b--c\u{3000}d"), vec!["a_b", "--", "c", "d"]);
    }

    #[test]
    fn ascii_fast_path_agrees_with_the_regex() {
        let mut rng = Lcg::new(9);
        for _ in 0..2000 {
            let len = rng.below(24);
            let text: String = (0..len).map(|_| char::from(rng.below(128) as u8)).collect();
            let via_regex: Vec<&str> = WORD_PUNCT.find_iter(&text).map(|m| m.as_str()).collect();
            assert_eq!(word_punct_ascii(&text), via_regex, "{text:?}");
        }
    }

    #[test]
    fn rouge_tokens_match_rouge_score() {
        // rouge_score.tokenize.tokenize("Hello, WORLD! It's 2024 -- café Ｋ\u{212A}", None)
        // -> ['hello', 'world', 'it', 's', '2024', 'caf', 'k']  (U+212A KELVIN SIGN lowercases to 'k')
        assert_eq!(
            rouge_tokens("Hello, WORLD! It's 2024 -- café Ｋ\u{212A}"),
            vec!["hello", "world", "it", "s", "2024", "caf", "k"]
        );
        // rouge_score.tokenize.tokenize("日本語 ÄÖÜ", None) -> []
        assert!(rouge_tokens("日本語 ÄÖÜ").is_empty());
    }

    fn counts<'a>(s: &[&'a str], n: usize) -> HashMap<Vec<&'a str>, usize> {
        let mut m: HashMap<Vec<&str>, usize> = HashMap::new();
        if s.len() >= n {
            for w in s.windows(n) {
                *m.entry(w.to_vec()).or_default() += 1;
            }
        }
        m
    }

    fn naive_overlap(c: &[&str], r: &[&str], n: usize) -> usize {
        let (cc, rc) = (counts(c, n), counts(r, n));
        cc.iter()
            .map(|(g, &x)| x.min(rc.get(g).copied().unwrap_or(0)))
            .sum()
    }

    #[test]
    fn ngram_overlaps_match_naive_counting() {
        let mut rng = Lcg::new(5);
        let words = ["a", "b", "c", "d", "the"];
        for round in 0..400 {
            let lc = rng.below(14);
            let lr = rng.below(if round % 2 == 0 { 14 } else { 4 });
            let c: Vec<&str> = (0..lc).map(|_| words[rng.below(words.len())]).collect();
            let r: Vec<&str> = (0..lr).map(|_| words[rng.below(words.len())]).collect();
            let got = ngram_overlaps(&c, &r, 6);
            for n in 1..=6 {
                assert_eq!(got[n - 1], naive_overlap(&c, &r, n), "{c:?} {r:?} n={n}");
            }
        }
    }
}
