//! Text primitives with Python's meanings, as IFEval's reference code uses them.

use regex::Regex;
use std::sync::LazyLock;

/// Python's `str.isspace` (Unicode `White_Space` plus the ASCII separators U+001C–U+001F).
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()`.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.split()` (on runs of whitespace, no empty pieces).
pub fn split_ws(s: &str) -> impl DoubleEndedIterator<Item = &str> {
    s.split(is_space).filter(|w| !w.is_empty())
}

/// Titlecase letters (`ǅ`, `ᾈ`, …: general category Lt): cased, but neither upper nor lower
/// case, and Python's `isupper`/`islower` are false for any string holding one.
fn is_title(c: char) -> bool {
    matches!(
        c,
        '\u{1c5}' | '\u{1c8}' | '\u{1cb}' | '\u{1f2}' | '\u{1fbc}' | '\u{1fcc}' | '\u{1ffc}'
    ) || ('\u{1f88}'..='\u{1f8f}').contains(&c)
        || ('\u{1f98}'..='\u{1f9f}').contains(&c)
        || ('\u{1fa8}'..='\u{1faf}').contains(&c)
}

/// Python's `str.isupper()`: at least one cased character and no lower-case or titlecase one.
pub fn is_upper(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_lowercase() || is_title(c) {
            return false;
        }
        cased |= c.is_uppercase();
    }
    cased
}

/// Python's `str.islower()`: at least one cased character and no upper-case or titlecase one.
pub fn is_lower(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_uppercase() || is_title(c) {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

/// A word character as NLTK ≥ 3.10 sees it: its `RegexpTokenizer` compiles with the `regex`
/// module, whose `\w` is Unicode's (letters, combining marks, decimal digits, connector
/// punctuation), the same as Rust's `\w`. (With NLTK ≤ 3.9, Python's `re`, combining marks
/// are not word characters, so a Devanagari word splits at every vowel sign.)
static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\w+").expect("static"));

/// IFEval's `count_words`: the number of `\w+` runs (nltk's `RegexpTokenizer(r"\w+")`), so
/// `don't` is two words and `state-of-the-art` four.
pub fn count_words(s: &str) -> usize {
    if s.is_ascii() {
        let mut n = 0;
        let mut inside = false;
        for b in s.bytes() {
            let w = b.is_ascii_alphanumeric() || b == b'_';
            n += usize::from(w && !inside);
            inside = w;
        }
        return n;
    }
    WORD.find_iter(s).count()
}

/// The words of `s` in all capitals, counted the way `nltk.word_tokenize` (NLTK 3.10) splits
/// them, which IFEval's `capital_word_frequency` uses: whitespace-separated chunks are further
/// split at `, ; : @ # $ % & ? ! * ( ) [ ] { } < > "` (a comma or colon followed by a digit
/// stays, as in `10:30`), at runs of two or more dots, at `--` and at ` `` `, and before the
/// contraction suffixes `n't 's 'm 'd 'll 're 've` (so `DON'T` is two tokens, `DO` and `N'T`,
/// both in capitals). Hyphenated words stay one token. This reproduces the Treebank rules that
/// can change the count; it is not a full port (quote conversion and sentence-final periods do
/// not change it and are not modelled).
pub fn count_capital_words(s: &str) -> usize {
    let mut n = 0;
    for chunk in split_ws(s) {
        let mut start = 0;
        let b = chunk.as_bytes();
        let mut i = 0;
        let mut piece = |p: &str, n: &mut usize| {
            if p.is_empty() {
                return;
            }
            *n += usize::from(is_upper(p));
        };
        while i < b.len() {
            let c = b[i];
            let split_len = match c {
                b';' | b'@' | b'#' | b'$' | b'%' | b'&' | b'?' | b'!' | b'(' | b')' | b'['
                | b']' | b'{' | b'}' | b'<' | b'>' | b'"' | b'*' => 1,
                b',' | b':' if !b.get(i + 1).is_some_and(u8::is_ascii_digit) => 1,
                b'.' if chunk[i..].starts_with("..") => {
                    b[i..].iter().take_while(|&&x| x == b'.').count()
                }
                b'`' if chunk[i..].starts_with("``") => 2,
                b'-' if chunk[i..].starts_with("--") => 2,
                _ => 0,
            };
            if split_len > 0 {
                contraction_split(&chunk[start..i], &mut n, &mut piece);
                i += split_len;
                start = i;
            } else {
                i += 1;
            }
        }
        contraction_split(&chunk[start..], &mut n, &mut piece);
    }
    n
}

fn contraction_split(p: &str, n: &mut usize, piece: &mut impl FnMut(&str, &mut usize)) {
    for suf in ["n't", "'ll", "'re", "'ve", "'s", "'m", "'d"] {
        let Some(cut) = p.len().checked_sub(suf.len()) else {
            continue;
        };
        if cut > 0 && p.is_char_boundary(cut) && p[cut..].eq_ignore_ascii_case(suf) {
            let (a, b) = p.split_at(cut);
            piece(a, n);
            piece(b, n);
            return;
        }
    }
    piece(p, n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(count_words("Hello, world! don't state-of-the-art"), 8);
        assert_eq!(count_words(""), 0);
        assert_eq!(count_words("日本語 テキスト"), 2);
        assert_eq!(count_words("naïve café"), 2);
    }

    #[test]
    fn cases() {
        assert!(is_upper("HELLO 123"));
        assert!(!is_upper("123"));
        assert!(!is_upper("HELLo"));
        assert!(is_lower("hello 123"));
        assert!(!is_lower("..."));
        assert!(!is_upper("\u{1c5}P.S.A") && !is_lower("\u{1c5}abc"));
    }

    #[test]
    fn capitals() {
        assert_eq!(count_capital_words("THIS IS a Test"), 2);
        assert_eq!(count_capital_words("DON'T STOP"), 3);
        assert_eq!(count_capital_words("NASA's AI-DRIVEN (USA) A&B"), 5);
        assert_eq!(count_capital_words("HELLO,WORLD 10:30 AM"), 3);
        assert_eq!(count_capital_words("DON'T```json"), 2);
        assert_eq!(
            count_capital_words("**strong**HELLO,WORLD CAT10:30 A..B"),
            5
        );
    }
}
