//! Where a value occurs in a text as a whole token: the fuzz corpus aims exploits by it, and
//! `tool_trace` decides by it whether an argument was shown to the agent before it used it.

/// Byte offsets where `needle` occurs as a whole token: not glued to a letter or digit on an
/// alphanumeric edge, and a number not inside a longer number (`4` is not in `14`, `3.4`, `4,000`).
/// Surrounding whitespace of `needle` is ignored; an empty needle occurs nowhere.
pub fn token_occurrences(text: &str, needle: &str) -> Vec<usize> {
    occurrences(text, needle).collect()
}

/// Whether `needle` occurs in `text` as a whole token ([`token_occurrences`]), stopping at the
/// first occurrence.
pub fn has_token(text: &str, needle: &str) -> bool {
    occurrences(text, needle).next().is_some()
}

fn occurrences<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    let needle = needle.trim();
    // The empty needle occurs nowhere (it would occur everywhere).
    (!needle.is_empty())
        .then(|| text.match_indices(needle))
        .into_iter()
        .flatten()
        .map(|(i, _)| i)
        .filter(move |&i| whole_at(text, i, needle))
}

/// Whether the occurrence of `needle` at byte `i` of `text` (`text[i..]` starts with it; the
/// needle trimmed and not empty) is a whole token, as [`token_occurrences`] counts them: for
/// callers that find candidate positions their own way (an index of the text's words).
pub fn whole_at(text: &str, i: usize, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().next_back()) else {
        return false;
    };
    let before = text[..i].chars().next_back();
    let mut after = text[i + needle.len()..].chars();
    let a1 = after.next();
    let a2 = after.next();
    let b2 = text[..i].chars().rev().nth(1);
    let glued_before = first.is_alphanumeric()
        && before.is_some_and(|b| {
            b.is_alphanumeric()
                || (first.is_ascii_digit()
                    && matches!(b, '.' | ',')
                    && b2.is_some_and(|c| c.is_ascii_digit()))
        });
    let glued_after = last.is_alphanumeric()
        && a1.is_some_and(|a| {
            a.is_alphanumeric()
                || (last.is_ascii_digit()
                    && matches!(a, '.' | ',')
                    && a2.is_some_and(|c| c.is_ascii_digit()))
        });
    !glued_before && !glued_after
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_whole_not_inside_longer_tokens() {
        assert!(has_token("tables: T-17, T-18.", "T-17"));
        assert!(!has_token("tables: T-170", "T-17"));
        assert!(
            has_token("order #W123 shipped", "W123"),
            "a sigil is not part of the id"
        );
        assert!(!has_token("party of 2 at 7pm", "7"));
        assert!(!has_token("3.4 and 14", "4"));
        assert!(has_token("{\"id\": 7}", " 7 "), "the needle is trimmed");
        assert!(!has_token("anything", ""));
        assert!(!has_token("", "x"));
        assert_eq!(token_occurrences("é7 7é 7", "7"), vec![8]);
    }
}
