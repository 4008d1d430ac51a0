//! Where the target starts among the endpoint's tokens of context + target. Computed from what
//! the endpoint returned, never by tokenising here:
//! - when the tokens spell the text sent (after a leading BOS the server adds), their offsets
//!   (the server's `text_offset`, else their running lengths) place the boundary; a token
//!   that starts before the end of the context and ends after it holds both, and the sample
//!   is an error, not a guess;
//! - when they do not spell it (SentencePiece tokens decoded one by one lose their leading
//!   space, half a UTF-8 character shows as U+FFFD), the context's own tokens, from a second
//!   call, must be a prefix of the joint tokens, and the target is the rest.

use crate::judge::PromptTokens;
use std::ops::Range;

/// Why no boundary was found.
#[derive(Debug, Clone, PartialEq)]
pub enum NoBoundary {
    /// The tokens do not spell the text: ask for the context's tokens alone.
    NotSpelled,
    /// A definite failure, with its message.
    Failed(String),
}

/// The target's token range, from the tokens of `text` = context + target, where the context
/// is `context_chars` chars (Unicode scalar values) long.
pub fn by_offsets(
    t: &PromptTokens,
    text: &str,
    context_chars: usize,
) -> Result<Range<usize>, NoBoundary> {
    let skip = spelled_from(t, text).ok_or(NoBoundary::NotSpelled)?;
    let n = t.tokens.len();
    let base = t.offsets.as_ref().map(|o| o[skip]);
    let mut run = 0usize;
    for i in skip..n {
        let len = t.tokens[i].chars().count();
        let start = match (&t.offsets, base) {
            (Some(o), Some(b)) => o[i].checked_sub(b).ok_or(NoBoundary::NotSpelled)?,
            _ => run,
        };
        if start != run {
            // The server's offsets disagree with its own tokens: read them as not spelling it.
            return Err(NoBoundary::NotSpelled);
        }
        if start == context_chars {
            return target(i, n);
        }
        if start < context_chars && context_chars < start + len {
            return Err(NoBoundary::Failed(format!(
                "the endpoint's token {i} {:?} holds the end of the context and the start of the target; end the context on a token boundary (a space or newline before the target)",
                t.tokens[i]
            )));
        }
        run += len;
    }
    Err(NoBoundary::Failed(
        "the target has no tokens of its own".into(),
    ))
}

/// The target's token range when the context's tokens alone are a prefix of the joint ones.
pub fn by_context_tokens(
    joint: &PromptTokens,
    context: &PromptTokens,
) -> Result<Range<usize>, String> {
    let k = context.tokens.len();
    if k == 0 || k > joint.tokens.len() || joint.tokens[..k] != context.tokens[..] {
        let at = joint
            .tokens
            .iter()
            .zip(&context.tokens)
            .position(|(a, b)| a != b)
            .unwrap_or(k.min(joint.tokens.len()));
        return Err(format!(
            "the endpoint tokenises the context differently on its own (from token {at}): a token spans the end of the context and the start of the target; end the context on a token boundary"
        ));
    }
    target(k, joint.tokens.len()).map_err(|e| match e {
        NoBoundary::Failed(m) => m,
        NoBoundary::NotSpelled => unreachable!("target() only fails definitely"),
    })
}

fn target(start: usize, n: usize) -> Result<Range<usize>, NoBoundary> {
    if start < n {
        Ok(start..n)
    } else {
        Err(NoBoundary::Failed(
            "the target has no tokens of its own".into(),
        ))
    }
}

/// The first token of the text when the tokens from there spell it exactly: 0, or 1 when the
/// server put a BOS (a first token without a logprob) before it.
fn spelled_from(t: &PromptTokens, text: &str) -> Option<usize> {
    let spells = |from: usize| {
        let mut rest = text;
        for tok in &t.tokens[from..] {
            rest = rest.strip_prefix(tok.as_str())?;
        }
        rest.is_empty().then_some(from)
    };
    spells(0).or_else(|| {
        (t.tokens.len() > 1 && t.logprobs.first() == Some(&None))
            .then(|| spells(1))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(tokens: &[&str]) -> PromptTokens {
        PromptTokens {
            tokens: tokens.iter().map(ToString::to_string).collect(),
            logprobs: (0..tokens.len()).map(|i| (i > 0).then_some(-1.0)).collect(),
            offsets: None,
        }
    }

    #[test]
    fn spelled_tokens_place_the_boundary_by_offsets() {
        let t = toks(&["Q", ":", " Answer", ":", " Paris"]);
        assert_eq!(by_offsets(&t, "Q: Answer: Paris", 10), Ok(4..5));
        // A BOS before the text, with the server's offsets counting it.
        let mut b = toks(&["<s>", "Q", ":", " Paris"]);
        b.offsets = Some(vec![0, 3, 4, 5]);
        assert_eq!(by_offsets(&b, "Q: Paris", 2), Ok(3..4));
        // Non-ASCII counts in chars, as Python's len does.
        let t = toks(&["é", "t", "é", " x"]);
        assert_eq!(by_offsets(&t, "été x", 3), Ok(3..4));
    }

    #[test]
    fn a_token_across_the_boundary_is_an_error() {
        let t = toks(&["Answer", ":", " Par", "is"]);
        let e = by_offsets(&t, "Answer: Paris", 10).unwrap_err();
        assert!(matches!(e, NoBoundary::Failed(m) if m.contains("token 2")));
        let e = by_offsets(&toks(&["ab"]), "ab", 2).unwrap_err();
        assert!(matches!(e, NoBoundary::Failed(m) if m.contains("no tokens")));
    }

    #[test]
    fn tokens_that_do_not_spell_the_text_need_the_context_alone() {
        // SentencePiece pieces decoded one by one lose their leading space.
        let joint = toks(&["<s>", "Answer", ":", "Paris"]);
        assert_eq!(
            by_offsets(&joint, "Answer: Paris", 7),
            Err(NoBoundary::NotSpelled)
        );
        let ctx = toks(&["<s>", "Answer", ":"]);
        assert_eq!(by_context_tokens(&joint, &ctx), Ok(3..4));
        let other = toks(&["<s>", "Answer", ":P"]);
        assert!(by_context_tokens(&joint, &other)
            .unwrap_err()
            .contains("token 2"));
        assert!(by_context_tokens(&joint, &joint)
            .unwrap_err()
            .contains("no tokens"));
        // Offsets that disagree with the tokens are not trusted.
        let mut t = toks(&["a", " b"]);
        t.offsets = Some(vec![0, 5]);
        assert_eq!(by_offsets(&t, "a b", 1), Err(NoBoundary::NotSpelled));
    }
}
