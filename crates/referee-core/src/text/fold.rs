//! Look-alike folding: a text as a reader sees it, for rules that look for words a hostile writer
//! wants to hide from them (`claim_check`'s success phrases, the identifiers it quotes).
//!
//! A policy that learns a rule searches for "booked" can write `bооked` (Cyrillic `о`),
//! `ｂｏｏｋｅｄ`, `𝐛𝐨𝐨𝐤𝐞𝐝` or `boo\u{200b}ked`: a reader (or a judge) reads "booked", a regex
//! does not. [`fold`] undoes what can be undone without guessing:
//! - **NFKC**: compatibility forms become the letters they stand for (full-width and
//!   mathematical letters, ligatures, circled and super-script digits);
//! - **invisible characters** (Unicode's default-ignorable code points: zero-width spaces and
//!   joiners, the soft hyphen, bidi controls, tag characters) are removed;
//! - **look-alike letters**: in a word that mixes ASCII letters with letters of another script,
//!   each non-ASCII letter whose UTS #39 confusable prototype is one ASCII letter or digit is
//!   read as it (`bооked` → `booked`); a word with no ASCII letter is folded only when *every*
//!   letter has an ASCII-letter look-alike (`ѕеոt` all in Cyrillic and Armenian would be one)
//!   and most of the text's letters are ASCII, so text written in its own script (`Ваш столик
//!   забронирован`) stays as it is. Punctuation look-alikes of ASCII punctuation are read as it
//!   (`didn’t` → `didn't`).
//!
//! Case is kept (rules match case-insensitively). Not undone: look-alikes made of several ASCII
//! letters (`rn` for `m`), accented letters (`bóoked`), and whole words in another script that
//! merely sound alike. Pure-ASCII text is returned as it is, without a copy.

use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;

/// The text as a reader sees it (see the module doc).
pub fn fold(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let nfkc: String = text.nfkc().collect();
    // Whole words in another script are read as Latin only in a text that is mostly Latin.
    let (mut ascii, mut other) = (0usize, 0usize);
    for c in nfkc.chars().filter(|c| c.is_alphabetic()) {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    let latin_text = ascii > other;
    let mut out = String::with_capacity(nfkc.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| flush(word, out, latin_text);
    for c in nfkc.chars() {
        if c.is_ascii() {
            if c.is_ascii_alphanumeric() {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
            continue;
        }
        match prototype(c) {
            Prototype::Invisible => {}
            _ if c.is_alphanumeric() => word.push(c),
            Prototype::Ascii(p) if p.is_ascii_punctuation() => {
                flush(&mut word, &mut out);
                out.push(p);
            }
            _ => {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
    }
    flush(&mut word, &mut out);
    Cow::Owned(out)
}

enum Prototype {
    /// A default-ignorable code point: it renders as nothing.
    Invisible,
    /// Its confusable prototype is this one ASCII character.
    Ascii(char),
    Other,
}

fn prototype(c: char) -> Prototype {
    let mut buf = [0u8; 4];
    let mut sk = unicode_security::skeleton(c.encode_utf8(&mut buf));
    match (sk.next(), sk.next()) {
        (None, _) => Prototype::Invisible,
        (Some(p), None) if p.is_ascii() => Prototype::Ascii(p),
        _ => Prototype::Other,
    }
}

/// The ASCII letter or digit a non-ASCII letter is mistaken for, if any.
fn latin(c: char) -> Option<char> {
    match prototype(c) {
        // The prototype of `I` and `1` is `l`: an upper-case look-alike of it is read as `I`.
        Prototype::Ascii('l') if c.is_uppercase() => Some('I'),
        Prototype::Ascii(p) if p.is_ascii_alphanumeric() => Some(p),
        _ => None,
    }
}

/// Writes one word, its look-alike letters read as ASCII when the word is a disguise: it mixes
/// ASCII letters with look-alikes, or (in a mostly Latin text) it is all look-alikes.
fn flush(word: &mut String, out: &mut String, latin_text: bool) {
    if word.is_ascii() {
        out.push_str(word);
    } else {
        let mixed = word.chars().any(|c| c.is_ascii_alphabetic());
        let disguise = mixed
            || (latin_text
                && word
                    .chars()
                    .all(|c| latin(c).is_some_and(|p| p.is_ascii_alphabetic())));
        if disguise {
            out.extend(word.chars().map(|c| latin(c).unwrap_or(c)));
        } else {
            out.push_str(word);
        }
    }
    word.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disguised_words_are_read_as_written() {
        for (disguised, plain) in [
            ("b\u{43e}\u{43e}ked", "booked"),
            ("\u{ff42}\u{ff4f}\u{ff4f}\u{ff4b}\u{ff45}\u{ff44}", "booked"),
            (
                "\u{1d41b}\u{1d428}\u{1d428}\u{1d424}\u{1d41e}\u{1d41d}",
                "booked",
            ),
            ("boo\u{200b}ked", "booked"),
            ("bo\u{ad}ok\u{2060}ed", "booked"),
            ("\u{455}\u{435}nt", "sent"),
            ("PASS\u{406}NG", "PASSING"),
            ("didn\u{2019}t", "didn't"),
            ("\u{440}\u{430}\u{455}\u{455}\u{435}d", "passed"),
            (
                "Your table is \u{432}\u{43e}\u{43e}\u{43a}\u{435}\u{434}",
                "Your table is \u{432}\u{43e}\u{43e}\u{43a}\u{435}\u{434}",
            ),
            ("All tests \u{440}\u{430}\u{455}\u{455}", "All tests pass"),
        ] {
            assert_eq!(fold(disguised), plain, "{disguised:?}");
        }
    }

    #[test]
    fn text_in_its_own_script_is_kept() {
        for t in [
            "забронировано",
            "Ваш столик забронирован",
            "予約しました",
            "réservé",
            "straße",
        ] {
            assert_eq!(fold(t), t);
        }
        assert!(matches!(fold("plain ascii"), Cow::Borrowed(_)));
    }
}
