//! Whether a text restates a reference: the reference's words, in order and contiguous, among
//! the text's words, after look-alike folding ([`super::fold`]), lower-casing, and with
//! punctuation, markup and spacing ignored. Whole words only, so a reference "4" is not found in
//! "14". Used where a copy of the reference must not pay: a likelihood reward's context that
//! already holds the answer, an embedding grader's candidate that pastes the reference.

/// The words of a text as compared: folded, lower-cased, split on anything not alphanumeric.
pub fn words(text: &str) -> Vec<String> {
    super::fold::fold(text)
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// See the module docs. A reference without words (only symbols) is never found.
pub fn restates(text: &str, reference: &str) -> bool {
    let needle = words(reference);
    if needle.is_empty() {
        return false;
    }
    let hay = words(text);
    hay.windows(needle.len()).any(|w| w == needle.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_in_order_whatever_the_spacing_and_case() {
        assert!(restates(
            "So the answer is: PARIS, France.",
            "Paris, France"
        ));
        assert!(restates("x = 4.", "4"));
        assert!(!restates("x = 14", "4"));
        assert!(!restates("France, Paris", "Paris France"));
        assert!(restates("the cat\n\n  sat", "The cat sat"));
        // Look-alike letters and invisible characters do not hide a copy.
        assert!(restates("Pаr\u{200b}is", "Paris"));
        assert!(!restates("anything", "+ -"));
    }
}
