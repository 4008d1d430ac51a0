//! METEOR over lowercased [`word_punct`] tokens, with exact and Porter-stem
//! matching only.
//!
//! Anchor: `nltk.translate.meteor_score.single_meteor_score(ref, cand)`
//! (nltk 3.10.4) with its defaults `preprocess=str.lower`,
//! `stemmer=PorterStemmer()`, `alpha=0.9`, `beta=3.0`, `gamma=0.5`. The
//! alignment is nltk's greedy one. Each stage walks the candidate from the end
//! and takes the last unmatched reference token that is equal (stage 1) or
//! has an equal Porter stem (stage 2). Then
//! `fmean = P·R / (α·P + (1-α)·R)`,
//! `penalty = γ·(chunks / matches)^β` and `score = (1 - penalty)·fmean`.
//! The score is 0 when either side has no tokens or nothing matches.
//!
//! **Deviation: no `WordNet` synonym stage.** nltk has a third stage. It
//! matches a leftover candidate token to a leftover reference token when the
//! reference token's Porter stem is a `WordNet` lemma name of the candidate's
//! stem. `WordNet` data is not available here, so that stage is left out.
//! Scores equal nltk's whenever that stage would find nothing. Otherwise they
//! are lower (fewer matches). Test expectations were produced by running nltk
//! with a `WordNet` stub that has no synsets. A second deviation is the tokenizer:
//! `wordpunct_tokenize` rather than `word_tokenize` (see `tokenize.rs`).
//!
//! Cost is linear in the input length apart from stemming the tokens that
//! stage 1 leaves unmatched.

use std::borrow::Cow;

use super::porter::stem;
use super::tokenize::{lowercase, word_punct, FxMap};

const ALPHA: f64 = 0.9;
const BETA: f64 = 3.0;
const GAMMA: f64 = 0.5;

/// METEOR (exact + stem stages, nltk defaults), in `[0, 1]`.
pub fn meteor(candidate: &str, reference: &str) -> f64 {
    meteor_tokens(&word_punct(candidate), &word_punct(reference))
}

/// [`meteor`] on pre-tokenized input. Tokens are lowercased here.
pub fn meteor_tokens(candidate: &[&str], reference: &[&str]) -> f64 {
    if candidate.is_empty() || reference.is_empty() {
        return 0.0;
    }
    let hyp: Vec<(usize, Cow<'_, str>)> =
        candidate.iter().map(|t| lowercase(t)).enumerate().collect();
    let refr: Vec<(usize, Cow<'_, str>)> =
        reference.iter().map(|t| lowercase(t)).enumerate().collect();

    let mut matches = Vec::new();
    let (hyp_left, ref_left) = match_stage(&hyp, &refr, &mut matches);
    if !hyp_left.is_empty() && !ref_left.is_empty() {
        let stem_all =
            |rest: &[usize], words: &[(usize, Cow<'_, str>)]| -> Vec<(usize, Cow<'static, str>)> {
                rest.iter()
                    .map(|&k| (words[k].0, Cow::Owned(stem(&words[k].1))))
                    .collect()
            };
        let hyp_stems = stem_all(&hyp_left, &hyp);
        let ref_stems = stem_all(&ref_left, &refr);
        match_stage(&hyp_stems, &ref_stems, &mut matches);
    }
    if matches.is_empty() {
        return 0.0;
    }
    matches.sort_unstable();

    let m = matches.len() as f64;
    let precision = m / candidate.len() as f64;
    let recall = m / reference.len() as f64;
    let fmean = (precision * recall) / (ALPHA * precision + (1.0 - ALPHA) * recall);
    let chunks = 1 + matches
        .windows(2)
        .filter(|w| !(w[1].0 == w[0].0 + 1 && w[1].1 == w[0].1 + 1))
        .count();
    let frag = chunks as f64 / m;
    let penalty = GAMMA * frag.powf(BETA);
    ((1.0 - penalty) * fmean).clamp(0.0, 1.0)
}

/// One alignment stage of nltk's `_match_enums`. Candidate words are visited
/// from last to first; each takes the highest-positioned unmatched reference
/// word with the same text. Pushes `(candidate_pos, reference_pos)` pairs and
/// returns the indices (into `hyp` and `refr`) left unmatched.
fn match_stage(
    hyp: &[(usize, Cow<'_, str>)],
    refr: &[(usize, Cow<'_, str>)],
    matches: &mut Vec<(usize, usize)>,
) -> (Vec<usize>, Vec<usize>) {
    const NONE: usize = usize::MAX;
    // For each distinct reference word, a stack of its unmatched positions:
    // `top[word]` is the highest one and `below[j]` the next lower after `j`.
    let mut top: FxMap<&str, usize> = FxMap::default();
    top.reserve(refr.len());
    let mut below = vec![NONE; refr.len()];
    for (j, (_, word)) in refr.iter().enumerate() {
        if let Some(prev) = top.insert(word.as_ref(), j) {
            below[j] = prev;
        }
    }
    let mut hyp_matched = vec![false; hyp.len()];
    let mut ref_matched = vec![false; refr.len()];
    for (i, (pos, word)) in hyp.iter().enumerate().rev() {
        if let Some(head) = top.get_mut(word.as_ref()) {
            let j = *head;
            if j != NONE {
                *head = below[j];
                hyp_matched[i] = true;
                ref_matched[j] = true;
                matches.push((*pos, refr[j].0));
            }
        }
    }
    let unmatched = |flags: Vec<bool>| -> Vec<usize> {
        flags
            .into_iter()
            .enumerate()
            .filter_map(|(k, matched)| (!matched).then_some(k))
            .collect()
    };
    (unmatched(hyp_matched), unmatched(ref_matched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::assert_close;

    const TOL: f64 = 1e-9;

    // Expected values: nltk 3.10.4
    //   single_meteor_score(wp(ref), wp(cand), wordnet=NoSynsets())
    // where wp = nltk.tokenize.wordpunct_tokenize and NoSynsets().synsets(w) == [].

    #[test]
    fn matches_nltk_without_wordnet() {
        let cases: &[(&str, &str, f64)] = &[
            // single_meteor_score: 'The cat is on the mat.' vs 'There is a cat on the mat.'
            ("The cat is on the mat.", "There is a cat on the mat.", 0.712_025_316_455_696_2),
            // single_meteor_score: 'running cats jumped quickly' vs 'the cat runs and jumps quick'
            ("running cats jumped quickly", "the cat runs and jumps quick", 0.258_620_689_655_172_4),
            // single_meteor_score: 'Paris' vs 'Paris'
            ("Paris", "Paris", 0.5),
            // single_meteor_score: 'It is a guide to action which ensures that the military always obeys the commands of the party' vs 'It is a guide to action that ensures that the military will forever heed Party commands'
            ("It is a guide to action which ensures that the military always obeys the commands of the party", "It is a guide to action that ensures that the military will forever heed Party commands", 0.694_444_444_444_444_5),
            // single_meteor_score: 'The big dog barked' vs 'the large dog barked' (big/large: no synonym stage)
            ("The big dog barked", "the large dog barked", 0.638_888_888_888_888_8),
            // single_meteor_score: 'Naïve CAFÉ owners' vs 'naïve café owner'
            ("Naïve CAFÉ owners", "naïve café owner", 0.981_481_481_481_481_5),
            // single_meteor_score: 'the the the' vs 'the cat the'
            ("the the the", "the cat the", 0.333_333_333_333_333_3),
            // single_meteor_score: 'Generously, she agreed.' vs 'She agrees generous'
            ("Generously, she agreed.", "She agrees generous", 0.798_611_111_111_111_2),
        ];
        for &(c, r, want) in cases {
            assert_close(meteor(c, r), want, TOL, &format!("meteor {c:?} vs {r:?}"));
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(meteor("", ""), 0.0);
        assert_eq!(meteor("a", ""), 0.0);
        assert_eq!(meteor("", "a"), 0.0);
        assert_eq!(meteor("x y", "a b"), 0.0);
    }
}
