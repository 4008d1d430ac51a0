//! Fast, exact scanning for the marker regexes of `numeric` and `choice`.
//!
//! Their regexes (case-insensitive phrases such as `the final answer is`) have no literal the
//! regex engine can prefilter on, so `find_iter` walks every byte of every output. They do have
//! a rare *anchor* every match must contain (`answer`, `####`, …), and a set of *barrier*
//! bytes no match can contain (most ASCII punctuation). So [`Phrases`] looks for anchors with a
//! vectorized block scan, takes the barrier-free window around each one, and finds the matches
//! in that window only: by hand ([`Grammar::match_at`], a transcription of the regex) as long as
//! every byte it decides on is ASCII, and with the regex itself from the first position where a
//! non-ASCII byte would decide (Unicode whitespace, word characters and case folding stay the
//! regex's business). The matches are exactly those of `find_iter`: every match lies in some
//! window, and a window's edges look like the start and end of the text to the regex (a barrier
//! is neither a word character nor part of a match).

use regex::Regex;

/// What [`Phrases`] needs to know about a marker regex.
pub(crate) trait Grammar {
    /// The regex that defines the matches.
    fn regex(&self) -> &Regex;
    /// Whether the byte `c` at `i` may be where an anchor is spotted, given the bytes around
    /// it: `p` = `b[i - 1]`, `n1` … `n3` = `b[i + 1]` … `b[i + 3]` (0 past either end). Every
    /// match must contain such a byte; false positives only cost time. Written branch-free
    /// (`&`, `|`) so that the block scan vectorizes.
    fn spot(&self, p: u8, c: u8, n1: u8, n2: u8, n3: u8) -> bool;
    /// An ASCII byte that no match contains, and that is not a word character (so that a
    /// window ending at it looks like the end of the text to `\b`).
    fn barrier(&self, c: u8) -> bool;
    /// The end of the match of the regex that starts at `p`, if one does; `Err(Unsure)` when a
    /// non-ASCII byte is where the answer depends on it. `b` is the text up to the end of the
    /// window. A window may hold several matches; its positions are tried left to right, from
    /// the end of the last match.
    fn match_at(&self, b: &[u8], p: usize) -> Result<Option<usize>, Unsure>;
}

/// The matches of `g.regex()` in `text`, as `(start, end)`, in order, as `find_iter` gives them.
pub(crate) struct Phrases<'a, G: Grammar> {
    g: &'a G,
    text: &'a str,
    /// Where to look for the next anchor.
    pos: usize,
    /// The window being read: where to go on, its end, and whether it is still read by hand
    /// (else by the regex).
    window: Option<(usize, usize, bool)>,
}

impl<'a, G: Grammar> Phrases<'a, G> {
    pub(crate) fn new(g: &'a G, text: &'a str) -> Self {
        Phrases {
            g,
            text,
            pos: 0,
            window: None,
        }
    }
}

impl<G: Grammar> Iterator for Phrases<'_, G> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let b = self.text.as_bytes();
        loop {
            if let Some((cur, end, by_hand)) = &mut self.window {
                let mut found = None;
                if *by_hand {
                    for p in *cur..*end {
                        match self.g.match_at(&b[..*end], p) {
                            Ok(None) => {}
                            Ok(Some(e)) => {
                                found = Some((p, e));
                                break;
                            }
                            Err(Unsure) => {
                                // Every position before `p` has no match: the regex goes on.
                                (*cur, *by_hand) = (p, false);
                                break;
                            }
                        }
                    }
                }
                if !*by_hand {
                    found = self
                        .g
                        .regex()
                        .find_at(&self.text[..*end], *cur)
                        .map(|m| (m.start(), m.end()));
                }
                if let Some((s, e)) = found {
                    *cur = e;
                    return Some((s, e));
                }
                self.pos = *end;
                self.window = None;
            }
            let a = spot(b, self.pos, |p, c, n1, n2, n3| {
                self.g.spot(p, c, n1, n2, n3)
            })?;
            let start = b[self.pos..a]
                .iter()
                .rposition(|&c| self.g.barrier(c))
                .map_or(self.pos, |k| self.pos + k + 1);
            let end = b[a..]
                .iter()
                .position(|&c| self.g.barrier(c))
                .map_or(b.len(), |k| a + k);
            self.window = Some((start, end, true));
        }
    }
}

/// Bytes per step of the block scan.
const BLOCK: usize = 32;

/// The first `i ≥ from` where `hit(b[i-1], b[i], b[i+1], b[i+2], b[i+3])` holds (0 past the
/// ends). Blocks of [`BLOCK`] positions are tested at once, branch-free, so the compiler
/// vectorizes the test (it does for scalar arguments, not for an array); only a block with a
/// hit is searched one position at a time. Blocks at the edges are copied into a zero-padded
/// buffer, so they take the same path.
fn spot(b: &[u8], from: usize, hit: impl Fn(u8, u8, u8, u8, u8) -> bool) -> Option<usize> {
    // The positions `i..i + BLOCK` (those before `b.len()`), given `b[i - 1..i + BLOCK + 3]`.
    let block = |w: &[u8; BLOCK + 4], i: usize| {
        // The five byte streams as separate arrays: the form the vectorizer handles well.
        let lane = |k: usize| -> &[u8; BLOCK] { w[k..k + BLOCK].try_into().expect("block size") };
        let (w0, w1, w2, w3, w4) = (lane(0), lane(1), lane(2), lane(3), lane(4));
        let mut any = 0u8;
        for j in 0..BLOCK {
            any |= u8::from(hit(w0[j], w1[j], w2[j], w3[j], w4[j]));
        }
        if any == 0 {
            return None;
        }
        (0..BLOCK.min(b.len() - i))
            .find(|&j| hit(w0[j], w1[j], w2[j], w3[j], w4[j]))
            .map(|j| i + j)
    };
    // `pad[k]` is `b[i + k - 1]`, 0 where that is out of `b`.
    let padded = |i: usize| {
        let mut pad = [0u8; BLOCK + 4];
        let (lo, hi) = (i.saturating_sub(1), (i + BLOCK + 3).min(b.len()));
        let at = lo + 1 - i;
        pad[at..at + hi - lo].copy_from_slice(&b[lo..hi]);
        pad
    };
    let mut i = from;
    if i == 0 && !b.is_empty() {
        if let Some(k) = block(&padded(0), 0) {
            return Some(k);
        }
        i = BLOCK;
    }
    while i + BLOCK + 3 <= b.len() {
        let w = b[i - 1..i + BLOCK + 3].try_into().expect("block size");
        if let Some(k) = block(w, i) {
            return Some(k);
        }
        i += BLOCK;
    }
    if i < b.len() {
        return block(&padded(i), i);
    }
    None
}

/// `c` lower-cased if it is an ASCII letter (and some punctuation moved, which callers compare
/// with letters only).
pub(crate) const fn lower(c: u8) -> u8 {
    c | 0x20
}

/// ASCII `\s`: tab, newline, vertical tab, form feed, carriage return, space.
pub(crate) const fn is_space(c: u8) -> bool {
    c == b' ' || c.wrapping_sub(b'\t') < 5
}

/// ASCII `\w`: letters, digits, `_`.
pub(crate) const fn is_word(c: u8) -> bool {
    lower(c).wrapping_sub(b'a') < 26 || c.wrapping_sub(b'0') < 10 || c == b'_'
}

/// The barrier bytes of a grammar whose matches contain no ASCII punctuation but `allowed`:
/// every ASCII byte that is not a word byte, whitespace or in `allowed`. A table, as the
/// windows are found by testing bytes one at a time.
pub(crate) const fn barriers(allowed: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x80 {
        t[c] = !is_word(c as u8) && !is_space(c as u8);
        c += 1;
    }
    let mut k = 0;
    while k < allowed.len() {
        t[allowed[k] as usize] = false;
        k += 1;
    }
    t
}

/// A non-ASCII byte is where a hand matcher's answer depends on it: ask the regex.
pub(crate) struct Unsure;

/// Whether `b[p..]` starts with the lower-case ASCII `word` in any case, as `(?i)` reads it:
/// `Err(Unsure)` where a non-ASCII byte stands for an `s` or `k` (`ſ` and the Kelvin sign
/// case-fold to them; no other non-ASCII character folds to an ASCII letter).
pub(crate) fn starts_ci(b: &[u8], p: usize, word: &[u8]) -> Result<bool, Unsure> {
    for (k, &w) in word.iter().enumerate() {
        match b.get(p + k) {
            Some(c) if c.eq_ignore_ascii_case(&w) => {}
            Some(&c) if c >= 0x80 && matches!(w, b's' | b'k') => return Err(Unsure),
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// Skips ASCII `\s*` from `p`; `Err(Unsure)` when it stops at a non-ASCII byte, which may be
/// Unicode whitespace.
pub(crate) fn skip_space(b: &[u8], mut p: usize) -> Result<usize, Unsure> {
    while p < b.len() && is_space(b[p]) {
        p += 1;
    }
    if b.get(p).is_some_and(|&c| c >= 0x80) {
        return Err(Unsure);
    }
    Ok(p)
}

/// `\b` at `p` before a word byte: whether the byte before `p` is not a word byte;
/// `Err(Unsure)` when it is not ASCII (Unicode word characters are the regex's business).
pub(crate) fn boundary_before(b: &[u8], p: usize) -> Result<bool, Unsure> {
    match p.checked_sub(1).map(|k| b[k]) {
        None => Ok(true),
        Some(c) if c >= 0x80 => Err(Unsure),
        Some(c) => Ok(!is_word(c)),
    }
}

/// `\b` at `p` after a word byte: whether the byte at `p` is not a word byte (or the end);
/// `Err(Unsure)` when it is not ASCII.
pub(crate) fn boundary_after(b: &[u8], p: usize) -> Result<bool, Unsure> {
    match b.get(p) {
        None => Ok(true),
        Some(&c) if c >= 0x80 => Err(Unsure),
        Some(&c) => Ok(!is_word(c)),
    }
}

/// Test support: checks that [`Phrases`] gives exactly `g.regex().find_iter` on 100,000 random
/// texts glued from `pieces` (xorshift from `seed`) and on `long` repeated 50 times (which
/// crosses the block scan's blocks). Returns how many matches the random texts held.
#[cfg(test)]
pub(crate) fn assert_same_as_regex<G: Grammar>(
    g: &G,
    pieces: &[&str],
    seed: u32,
    long: &str,
) -> usize {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as usize
    };
    let regex_matches = |t: &str| -> Vec<(usize, usize)> {
        g.regex()
            .find_iter(t)
            .map(|m| (m.start(), m.end()))
            .collect()
    };
    let mut found = 0;
    for _ in 0..100_000 {
        let n = next() % 16;
        let text: String = (0..n).map(|_| pieces[next() % pieces.len()]).collect();
        let want = regex_matches(&text);
        let got: Vec<(usize, usize)> = Phrases::new(g, &text).collect();
        assert_eq!(got, want, "{text:?}");
        found += want.len();
    }
    let long = long.repeat(50);
    assert_eq!(
        Phrases::new(g, &long).collect::<Vec<_>>(),
        regex_matches(&long)
    );
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_scan_finds_every_hit() {
        let text: Vec<u8> = (0..300u32).map(|i| (i * 7 % 26) as u8 + b'a').collect();
        let hits: Vec<usize> = (0..text.len()).filter(|&i| text[i] == b'q').collect();
        let mut got = Vec::new();
        let mut from = 0;
        while let Some(i) = spot(&text, from, |_, c, _, _, _| c == b'q') {
            got.push(i);
            from = i + 1;
        }
        assert_eq!(got, hits);
        // The bytes around a position, 0 past the ends.
        let is = |w: [u8; 5]| move |p, c, n1, n2, n3| [p, c, n1, n2, n3] == w;
        assert_eq!(spot(b"ab", 0, is([0, b'a', b'b', 0, 0])), Some(0));
        assert_eq!(spot(b"ab", 0, is([b'a', b'b', 0, 0, 0])), Some(1));
        assert_eq!(spot(b"", 0, |_, _, _, _, _| true), None);
    }
}
