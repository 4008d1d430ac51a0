//! Longest-common-subsequence length, used by `fuzzy_match` (on characters)
//! and ROUGE-L (on tokens).
//!
//! Uses the bit-parallel algorithm of Allison–Dix / Hyyrö (the one rapidfuzz
//! uses). The shorter sequence is the bit pattern. The longer one is scanned
//! once per 64-symbol block of the pattern, and a carry bit per text position
//! links the blocks. Time is `O(n·⌈m/64⌉)` and memory `O(n + m)` for lengths
//! `n >= m`, with no `n·m` table. The result is exactly the classic dynamic
//! programming value. A common prefix and suffix are stripped first, as
//! rapidfuzz does, which makes identical and near-identical inputs cheap.

use std::hash::Hash;

use super::tokenize::{intern_pair, ABSENT};

/// Length of a longest common subsequence of `a` and `b`.
pub(crate) fn lcs_len<T: Hash + Eq>(a: &[T], b: &[T]) -> usize {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let (pattern, text) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if pattern.is_empty() {
        return prefix + suffix;
    }
    let (text_ids, pattern_ids, symbols) = intern_pair(text, pattern);
    prefix + suffix + lcs_ids(&pattern_ids, &text_ids, symbols)
}

/// Bit-parallel LCS over dense ids. `pattern` ids are `< symbols`; `text` ids
/// are `< symbols` or [`ABSENT`].
fn lcs_ids(pattern: &[u32], text: &[u32], symbols: usize) -> usize {
    // Slot `symbols` holds the (always empty) mask of ABSENT.
    let slot = |id: u32| if id == ABSENT { symbols } else { id as usize };
    let mut masks = vec![0u64; symbols + 1];
    let mut lcs = 0usize;
    if pattern.len() <= 64 {
        for (bit, &id) in pattern.iter().enumerate() {
            masks[slot(id)] |= 1 << bit;
        }
        let mut v = !0u64;
        for &id in text {
            let u = v & masks[slot(id)];
            v = v.wrapping_add(u) | (v & !u);
        }
        let valid = low_bits(pattern.len());
        return (!v & valid).count_ones() as usize;
    }
    let mut carries = vec![false; text.len()];
    for block in pattern.chunks(64) {
        for (bit, &id) in block.iter().enumerate() {
            masks[slot(id)] |= 1 << bit;
        }
        let mut v = !0u64;
        for (&id, carry) in text.iter().zip(carries.iter_mut()) {
            let u = v & masks[slot(id)];
            let (sum, c1) = v.overflowing_add(u);
            let (sum, c2) = sum.overflowing_add(u64::from(*carry));
            *carry = c1 || c2;
            v = sum | (v & !u);
        }
        lcs += (!v & low_bits(block.len())).count_ones() as usize;
        for &id in block {
            masks[slot(id)] = 0;
        }
    }
    lcs
}

/// A mask of the lowest `n` bits, `1 <= n <= 64`.
fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        !0
    } else {
        (1u64 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::test_util::Lcg;

    fn naive(a: &[u8], b: &[u8]) -> usize {
        let mut prev = vec![0usize; b.len() + 1];
        for &x in a {
            let mut cur = vec![0usize; b.len() + 1];
            for (j, &y) in b.iter().enumerate() {
                cur[j + 1] = if x == y {
                    prev[j] + 1
                } else {
                    prev[j + 1].max(cur[j])
                };
            }
            prev = cur;
        }
        prev[b.len()]
    }

    #[test]
    fn matches_dynamic_programming_across_block_sizes() {
        let mut rng = Lcg::new(7);
        for round in 0..400 {
            let alphabet = 2 + (round % 5) as u8;
            let la = rng.below(if round % 3 == 0 { 300 } else { 70 });
            let lb = rng.below(if round % 4 == 0 { 300 } else { 70 });
            let a: Vec<u8> = (0..la)
                .map(|_| b'a' + rng.below(alphabet as usize) as u8)
                .collect();
            let b: Vec<u8> = (0..lb)
                .map(|_| b'a' + rng.below(alphabet as usize) as u8)
                .collect();
            assert_eq!(lcs_len(&a, &b), naive(&a, &b), "{a:?} {b:?}");
        }
    }

    #[test]
    fn edge_cases() {
        assert_eq!(lcs_len::<u8>(&[], &[]), 0);
        assert_eq!(lcs_len(b"abc", b""), 0);
        assert_eq!(lcs_len(b"abc", b"abc"), 3);
        assert_eq!(lcs_len(b"abc", b"xyz"), 0);
        let long: Vec<u8> = (0..200).map(|i| b'a' + (i % 26) as u8).collect();
        assert_eq!(lcs_len(&long, &long), 200);
        // 64- and 128-symbol patterns exercise the exact block boundaries.
        let p64: Vec<u8> = (0..64).map(|i| (i % 7) as u8).collect();
        let p128: Vec<u8> = (0..128).map(|i| (i % 5) as u8).collect();
        let t: Vec<u8> = (0..150).map(|i| (i % 3) as u8).collect();
        assert_eq!(lcs_len(&p64, &t), naive(&p64, &t));
        assert_eq!(lcs_len(&p128, &t), naive(&p128, &t));
    }
}
