//! Token spans of step rewards: where each step's credit lands in the policy's tokens.
//!
//! A trainer that gives rewards per token (verl's token-level reward tensor) needs the last
//! token of each step, and the char spans a step component gives are into the decoded text.
//! The caller gives the completion's tokens one of two ways:
//! - `completion_ids` plus a tokenizer (`--tokenizer tokenizer.json`, the `tokenizers` crate,
//!   HuggingFace's own, so the ids decode as the trainer's fast tokenizer decodes them, special
//!   tokens skipped as TRL and verl decode completions). Each step boundary is found by bisecting
//!   over decoded prefixes, which holds for every decoder (byte-level BPE whose characters span
//!   tokens, SentencePiece's leading space) without knowing how it works;
//! - `token_offsets`: each token's `[start, end)` char offsets into the output, as a fast
//!   tokenizer's `return_offsets_mapping` gives them.
//!
//! A step covers the tokens that overlap its chars: `token_start..token_end`, so its last token
//! is `token_end - 1`. When the tokens cannot be placed (ids that decode to another text, no
//! tokenizer, offsets out of the text), the result says why in `token_error` and the step
//! rewards keep their char spans: the reward itself is unaffected, and nothing is placed on a
//! guessed token.

use super::StepReward;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// A tokenizer loaded once from a `tokenizer.json` (no hub, no network).
pub struct Tokenizer(tokenizers::Tokenizer);

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tokenizer")
    }
}

impl Tokenizer {
    pub fn from_file(path: &Path) -> Result<Self, String> {
        tokenizers::Tokenizer::from_file(path)
            .map(Tokenizer)
            .map_err(|e| format!("cannot load tokenizer {}: {e}", path.display()))
    }

    /// The text of `ids`, special tokens skipped.
    fn decode(&self, ids: &[u32]) -> Result<String, String> {
        self.0
            .decode(ids, true)
            .map_err(|e| format!("`completion_ids` do not decode: {e}"))
    }
}

/// The completion's tokens, as the row gave them.
#[derive(Debug, Clone, PartialEq)]
pub enum Tokens {
    /// `completion_ids`: token ids, placed with a tokenizer.
    Ids(Vec<u32>),
    /// `token_offsets`: `[start, end)` char offsets of each token into the output.
    Offsets(Vec<(usize, usize)>),
}

impl Tokens {
    /// `completion_ids` from a row: a list of non-negative integers.
    pub fn ids(v: &Value) -> Result<Self, String> {
        let a = v
            .as_array()
            .ok_or("`completion_ids` must be a list of token ids")?;
        a.iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| format!("`completion_ids[{i}]` is not a token id: {x}"))
            })
            .collect::<Result<_, _>>()
            .map(Tokens::Ids)
    }

    /// `token_offsets` from a row: a list of `[start, end]` char offsets, in order.
    pub fn offsets(v: &Value) -> Result<Self, String> {
        let a = v
            .as_array()
            .ok_or("`token_offsets` must be a list of [start, end] pairs")?;
        let mut out = Vec::with_capacity(a.len());
        let mut last = 0;
        for (i, x) in a.iter().enumerate() {
            let pair = x.as_array().filter(|p| p.len() == 2).and_then(|p| {
                Some((
                    usize::try_from(p[0].as_u64()?).ok()?,
                    usize::try_from(p[1].as_u64()?).ok()?,
                ))
            });
            let Some((s, e)) = pair.filter(|(s, e)| s <= e) else {
                return Err(format!(
                    "`token_offsets[{i}]` is not a [start, end] pair with start <= end: {x}"
                ));
            };
            if s < last {
                return Err(format!(
                    "`token_offsets[{i}]` starts at {s}, before the token before it ends ({last})"
                ));
            }
            last = e;
            out.push((s, e));
        }
        Ok(Tokens::Offsets(out))
    }
}

/// Sets `token_start`/`token_end` on the step rewards that are spans of `output` (not a turn's
/// or another input's); an error says why none is set.
pub fn place(
    steps: &mut [StepReward],
    output: &str,
    tokens: &Tokens,
    tokenizer: Option<&Tokenizer>,
) -> Result<(), String> {
    let on_output: Vec<usize> = (0..steps.len()).filter(|&i| steps[i].on_output).collect();
    if on_output.is_empty() {
        return if steps.is_empty() {
            Ok(())
        } else {
            Err("the steps are not spans of the output (turns, or another `input`): token spans are only given for the output's steps".into())
        };
    }
    let spans: Vec<(usize, usize)> = match tokens {
        Tokens::Offsets(o) => {
            let len = output.chars().count();
            if let Some((i, (_, e))) = o.iter().enumerate().find(|(_, (_, e))| *e > len) {
                return Err(format!(
                    "`token_offsets[{i}]` ends at {e}, past the output's {len} chars"
                ));
            }
            let mut out = Vec::with_capacity(on_output.len());
            for &i in &on_output {
                out.push(by_offsets(o, steps[i].start, steps[i].end)?);
            }
            out
        }
        Tokens::Ids(ids) => {
            let tok = tokenizer.ok_or(
                "`completion_ids` were given but no tokenizer: pass --tokenizer tokenizer.json (or give token_offsets)",
            )?;
            let mut p = Prefixes::new(tok, ids, output)?;
            let mut out = Vec::with_capacity(on_output.len());
            for &i in &on_output {
                let (a, b) = (steps[i].start, steps[i].end);
                if b <= a {
                    return Err(format!("step at chars {a}..{b} is empty"));
                }
                out.push((p.token_at(a)?, p.token_at(b - 1)? + 1));
            }
            out
        }
    };
    for (&i, (a, b)) in on_output.iter().zip(spans) {
        steps[i].token_start = Some(a);
        steps[i].token_end = Some(b);
    }
    Ok(())
}

/// The tokens overlapping chars `a..b`.
fn by_offsets(o: &[(usize, usize)], a: usize, b: usize) -> Result<(usize, usize), String> {
    let first = o.partition_point(|&(_, e)| e <= a);
    let end = o.partition_point(|&(s, _)| s < b);
    if first >= end {
        return Err(format!(
            "no token of `token_offsets` covers the step at chars {a}..{b}"
        ));
    }
    Ok((first, end))
}

/// How far decoded prefixes of the ids reach into the output, computed when a bisection asks
/// (and kept).
struct Prefixes<'a> {
    tok: &'a Tokenizer,
    ids: &'a [u32],
    output: &'a str,
    lens: HashMap<usize, usize>,
}

impl<'a> Prefixes<'a> {
    /// Checks that the ids decode to exactly `output` before anything is placed.
    fn new(tok: &'a Tokenizer, ids: &'a [u32], output: &'a str) -> Result<Self, String> {
        let vocab = tok.0.get_vocab_size(true);
        if let Some((i, id)) = ids.iter().enumerate().find(|(_, &id)| id as usize >= vocab) {
            return Err(format!(
                "`completion_ids[{i}]` = {id} is not in the tokenizer's vocabulary ({vocab} tokens)"
            ));
        }
        let full = tok.decode(ids)?;
        if full != output {
            let at = full
                .chars()
                .zip(output.chars())
                .take_while(|(x, y)| x == y)
                .count();
            return Err(format!(
                "`completion_ids` decode to a different text than the output (they first differ at char {at}; decoded {} chars, output {})",
                full.chars().count(),
                output.chars().count()
            ));
        }
        let mut lens = HashMap::new();
        lens.insert(0, 0);
        lens.insert(ids.len(), full.chars().count());
        Ok(Prefixes {
            tok,
            ids,
            output,
            lens,
        })
    }

    /// The chars of the output that `ids[..k]` decode to: the common prefix, so a character
    /// whose bytes are not all decoded yet (a byte-level prefix ends in U+FFFD) is not counted
    /// until its last token.
    fn len(&mut self, k: usize) -> Result<usize, String> {
        if let Some(&n) = self.lens.get(&k) {
            return Ok(n);
        }
        let text = self.tok.decode(&self.ids[..k])?;
        let mut same = text
            .bytes()
            .zip(self.output.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        while !self.output.is_char_boundary(same) {
            same -= 1;
        }
        let n = self.output[..same].chars().count();
        self.lens.insert(k, n);
        Ok(n)
    }

    /// The token that completes char `c`: the first `k` whose prefix `ids[..=k]` decodes past
    /// `c`.
    fn token_at(&mut self, c: usize) -> Result<usize, String> {
        let (mut lo, mut hi) = (1, self.ids.len());
        if self.len(hi)? <= c {
            return Err(format!("char {c} is past the decoded ids"));
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.len(mid)? > c {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(lo - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn step(start: usize, end: usize) -> StepReward {
        StepReward {
            start,
            end,
            value: 1.0,
            component: Arc::from("s"),
            turn: None,
            on_output: true,
            token_start: None,
            token_end: None,
        }
    }

    #[test]
    fn offsets_give_the_overlapping_tokens() {
        // "ab cd\n\nef": tokens "ab", " cd", "\n\n", "ef"
        let t = Tokens::offsets(&json!([[0, 2], [2, 5], [5, 7], [7, 9]])).unwrap();
        let mut st = vec![step(0, 5), step(7, 9)];
        place(&mut st, "ab cd\n\nef", &t, None).unwrap();
        assert_eq!(
            st.iter()
                .map(|s| (s.token_start, s.token_end))
                .collect::<Vec<_>>(),
            vec![(Some(0), Some(2)), (Some(3), Some(4))]
        );
    }

    #[test]
    fn bad_offsets_are_refused_with_their_index() {
        for (v, want) in [
            (json!([[0, 2], [1, 3]]), "token_offsets[1]` starts at 1"),
            (json!([[2, 1]]), "token_offsets[0]` is not"),
            (json!([[0, -1]]), "token_offsets[0]` is not"),
            (json!("0-3"), "must be a list"),
        ] {
            let e = Tokens::offsets(&v).unwrap_err();
            assert!(e.contains(want), "{e}");
        }
        let t = Tokens::offsets(&json!([[0, 2], [2, 40]])).unwrap();
        let e = place(&mut [step(0, 2)], "abcd", &t, None).unwrap_err();
        assert!(e.contains("past the output's 4 chars"), "{e}");
    }

    #[test]
    fn ids_need_a_tokenizer_and_steps_of_the_output() {
        let t = Tokens::ids(&json!([1, 2])).unwrap();
        let e = place(&mut [step(0, 2)], "ab", &t, None).unwrap_err();
        assert!(e.contains("no tokenizer"), "{e}");
        let mut turn = step(0, 2);
        turn.on_output = false;
        let e = place(&mut [turn], "ab", &t, None).unwrap_err();
        assert!(e.contains("not spans of the output"), "{e}");
        assert!(place(&mut [], "ab", &t, None).is_ok());
        assert!(Tokens::ids(&json!([1, -2])).unwrap_err().contains("[1]"));
        assert!(Tokens::ids(&json!([1, 1.5])).is_err());
    }
}
