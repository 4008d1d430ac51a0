//! The 29 instruction checkers that open-instruct's `IFEvalG` registry (Tulu 3 RLVR and
//! IFBench-style training constraints) adds to Google IFEval's 25.
//!
//! The `ifeval` component calls [`check`] with one instruction id, its kwargs and the response
//! (thinking section already stripped). `None`: the id is not one of [`IDS`]. `Some(Err(msg))`:
//! the kwargs are missing or ill-typed for that id, so the instruction cannot be scored.
//! `Some(Ok(followed))` otherwise.
//!
//! The semantics are those of the reference `check_following` bodies
//! (`open_instruct/IFEvalG/instructions.py`, read at open-instruct `42c6d0de`), quirks
//! included, so that a policy trained against open-instruct and scored here sees the same
//! reward; each checker's doc comment states its exact rule and the quirks a reader would not
//! expect. Rules shared by every checker:
//! - **kwargs.** A `null` value counts as absent (open-instruct drops `None` kwargs before
//!   `build_description`). Where the reference would draw a *random* value for an absent kwarg,
//!   this is an error instead: a reward must not be a coin toss. The reference also redraws a
//!   value that is present but falsy (`if not n:`), so a `0` count is random there; here `0` is
//!   taken literally (documented per checker). A non-null kwarg the instruction does not take is an
//!   error (Python raises `TypeError`). Numbers must be integers (`3.0` is accepted as 3);
//!   booleans and numeric strings are not numbers.
//! - **The response is stripped** (Python `str.strip()`) before any checker sees it, as
//!   open-instruct's `remove_thinking_section` strips the answer (it also drops `<answer>` tags
//!   and `<|assistant|>`: that is the calling component's business). **A blank response**
//!   follows no instruction, as open-instruct's verifier scores an empty answer 0 before running
//!   any checker; this closes every checker a blank text meets vacuously (`square_brackets`,
//!   `punctuation_dot`, `first_word_sent`, …).
//! - **Text primitives** are Python's: "split on whitespace" is `str.split()`, "strip" is
//!   `str.strip()` (both with Python's whitespace, which adds U+001C..U+001F to Unicode's),
//!   "lowercase" is `str.lower()` (full Unicode lowercasing), "word character" is Python's `\w`
//!   (`[\p{L}\p{N}_]`: letters, numbers, underscore; *not* combining marks).
//! - **Keyword counts** are `len(re.findall(keyword, response, re.IGNORECASE))`: the keyword is a
//!   *regular expression* matched anywhere (no word boundaries: `cat` is counted in `category`).
//!   It is compiled with Rust's `regex`, whose syntax agrees with Python's for words and simple
//!   patterns; a pattern it cannot compile (look-around, back-references) is a kwargs error, as a
//!   pattern Python cannot compile crashes the reference.
//! - **Sentences** (`split_into_sentences`) are open-instruct's regex splitter, ported rule for
//!   rule. **Words** for four checkers (`count_unique`, `counting_composition`,
//!   `keyword_specific_position`, `start_end`) are NLTK's `word_tokenize`: Punkt sentence
//!   splitting (`punkt.rs`, the same code and English model that count IFEval's sentences),
//!   then the NLTK (improved Treebank) word tokenizer, ported step for step. NLTK 3.10 compiles
//!   its tokenizer patterns with the third-party `regex` engine, whose `\w`/`\s` are Rust's
//!   (marks are word characters), so the port uses Rust's classes there; NLTK before 3.10 used
//!   Python's `re`, which differs only next to combining marks. Measured with
//!   `benches/ifeval/tulu_agreement.py` against NLTK 3.10.4 and open-instruct's checkers, on
//!   generated texts rich in initials, abbreviations, quotes and odd Unicode: all 1,500 texts
//!   tokenize identically and all 7,350 checker verdicts agree (`--per-id 150 --texts 1500
//!   --seed 5`).

#![allow(
    clippy::unnecessary_wraps,
    reason = "every checker has the dispatch table's signature, errors or not"
)]

use super::text::{split_ws, strip};
use regex::{Regex, RegexBuilder};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// The instruction ids handled here, exactly as in open-instruct's `INSTRUCTION_DICT`.
pub const IDS: &[&str] = &[
    "copy:copy",
    "copy:copying_multiple",
    "copy:copying_simple",
    "copy:repeat_phrase",
    "count:count_increment_word",
    "count:count_unique",
    "count:counting_composition",
    "count:lowercase_counting",
    "detectable_format:bigram_wrapping",
    "detectable_format:sentence_hyphens",
    "detectable_format:square_brackets",
    "first_word:first_word_answer",
    "first_word:first_word_sent",
    "keywords:exclude_word_harder",
    "keywords:keyword_specific_position",
    "keywords:no_adjacent_consecutive",
    "keywords:palindrome",
    "keywords:start_end",
    "keywords:word_count_different_numbers",
    "keywords:word_once",
    "last_word:last_word_answer",
    "last_word:last_word_sent",
    "letters:letter_counting",
    "letters:letter_counting2",
    "new:copy_span_idx",
    "paragraphs:paragraphs",
    "paragraphs:paragraphs2",
    "punctuation:punctuation_dot",
    "punctuation:punctuation_exclamation",
];

type Checker = fn(&Args, &str) -> Result<bool, String>;

/// Checks `response` against instruction `id` with its `kwargs`.
///
/// `None`: `id` is not one of [`IDS`]. `Err(msg)`: the kwargs are missing/ill-typed for this id.
/// The response is stripped first (as open-instruct strips the answer), and a blank response
/// never follows an instruction.
pub fn check(
    id: &str,
    kwargs: &Map<String, Value>,
    response: &str,
) -> Option<Result<bool, String>> {
    let (takes, checker): (&[&str], Checker) = match id {
        "copy:copy" | "copy:copying_simple" => (&["prompt_to_repeat"], copy),
        "copy:copying_multiple" => (&["prompt_to_repeat", "N"], copying_multiple),
        "copy:repeat_phrase" => (&["phrase", "small_n"], repeat_phrase),
        "count:count_increment_word" => (&["keyword1", "keyword2"], count_increment_word),
        "count:count_unique" => (&[], count_unique),
        "count:counting_composition" => (&["n_sent", "n_words"], counting_composition),
        "count:lowercase_counting" => (&["N"], lowercase_counting),
        "detectable_format:bigram_wrapping" => (&[], bigram_wrapping),
        "detectable_format:sentence_hyphens" => (&[], sentence_hyphens),
        "detectable_format:square_brackets" => (&[], square_brackets),
        "first_word:first_word_answer" => (&["first_word"], first_word_answer),
        "first_word:first_word_sent" => (&["first_word"], first_word_sent),
        "keywords:exclude_word_harder" => (&["keyword", "instruction"], exclude_word_harder),
        "keywords:keyword_specific_position" => (&["keyword", "n", "m"], keyword_specific_position),
        "keywords:no_adjacent_consecutive" => (&[], no_adjacent_consecutive),
        "keywords:palindrome" => (&[], palindrome),
        "keywords:start_end" => (&[], start_end),
        "keywords:word_count_different_numbers" => (
            &["keyword", "frequency", "relation"],
            word_count_different_numbers,
        ),
        "keywords:word_once" => (&["keyword"], word_once),
        "last_word:last_word_answer" => (&["last_word"], last_word_answer),
        "last_word:last_word_sent" => (&["last_word"], last_word_sent),
        "letters:letter_counting" => (&["N", "relation"], letter_counting),
        "letters:letter_counting2" => (
            &["letter", "let_frequency", "let_relation"],
            letter_counting2,
        ),
        "new:copy_span_idx" => (&["prompt_to_repeat", "n_start", "n_end"], copy_span_idx),
        "paragraphs:paragraphs" => (&[], paragraphs),
        "paragraphs:paragraphs2" => (&[], paragraphs2),
        "punctuation:punctuation_dot" => (&[], punctuation_dot),
        "punctuation:punctuation_exclamation" => (&[], punctuation_exclamation),
        _ => return None,
    };
    let args = Args(kwargs);
    // open-instruct checks the answer its `remove_thinking_section` returns, which is stripped:
    // leading/trailing whitespace never reaches a checker (it matters to `sentence_hyphens` and
    // the paragraph counters).
    let response = strip(response);
    // A blank response follows nothing: open-instruct's verifier scores an empty answer 0 before
    // any checker runs, which closes the checkers that a blank text meets vacuously
    // (`square_brackets`, `first_word_sent`, `punctuation_dot`, ...). Kwargs errors still win.
    let blank = response.is_empty();
    Some(
        args.only(takes)
            .and_then(|()| checker(&args, response))
            .map(|followed| followed && !blank),
    )
}

// ---------------------------------------------------------------------------------------------
// kwargs

/// An instruction's kwargs, read with the reference's rules (module docs).
struct Args<'a>(&'a Map<String, Value>);

/// `less than` / `at least`, the reference's two comparison relations.
#[derive(Clone, Copy)]
enum Relation {
    LessThan,
    AtLeast,
}

impl Relation {
    fn holds(self, count: usize, threshold: i64) -> bool {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        match self {
            Relation::LessThan => count < threshold,
            Relation::AtLeast => count >= threshold,
        }
    }
}

impl Args<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    /// Python's `build_description(**kwargs)` rejects a keyword it does not take.
    fn only(&self, takes: &[&str]) -> Result<(), String> {
        for (key, value) in self.0 {
            if !value.is_null() && !takes.contains(&key.as_str()) {
                let expected = if takes.is_empty() {
                    "none".to_owned()
                } else {
                    takes
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(format!(
                    "unexpected kwarg `{key}` (this instruction takes {expected})"
                ));
            }
        }
        Ok(())
    }

    /// A required, non-empty string (the reference redraws or raises on a falsy one).
    fn text(&self, key: &str) -> Result<&str, String> {
        match self.get(key) {
            None => Err(missing(key)),
            Some(Value::String(s)) if s.is_empty() => Err(missing(key)),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    /// A string, or a list whose first item is a string (the reference takes `value[0]` when the
    /// value is not a `str`).
    fn text_or_first(&self, key: &str) -> Result<&str, String> {
        match self.get(key) {
            Some(Value::Array(items)) => match items.first() {
                None => Err(missing(key)),
                Some(Value::String(s)) => Ok(s),
                Some(_) => Err(format!("`{key}` must be a string or a list of strings")),
            },
            _ => self.text(key),
        }
    }

    /// A required integer.
    fn int(&self, key: &str) -> Result<i64, String> {
        let Some(value) = self.get(key) else {
            return Err(missing(key));
        };
        let number = value
            .as_number()
            .ok_or_else(|| format!("`{key}` must be an integer"))?;
        if let Some(n) = number.as_i64() {
            return Ok(n);
        }
        match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            _ => Err(format!("`{key}` must be an integer")),
        }
    }

    /// A required integer that is at least `min`.
    fn int_at_least(&self, key: &str, min: i64) -> Result<i64, String> {
        let n = self.int(key)?;
        if n < min {
            return Err(format!("`{key}` must be at least {min}, got {n}"));
        }
        Ok(n)
    }

    fn relation(&self, key: &str) -> Result<Relation, String> {
        match self.get(key) {
            None => Err(missing(key)),
            Some(Value::String(s)) if s == "less than" => Ok(Relation::LessThan),
            Some(Value::String(s)) if s == "at least" => Ok(Relation::AtLeast),
            Some(other) => Err(format!(
                "`{key}` must be \"less than\" or \"at least\", got {other}"
            )),
        }
    }
}

fn missing(key: &str) -> String {
    format!("`{key}` is required (the reference would draw a random value or fail without it)")
}

// ---------------------------------------------------------------------------------------------
// copy:*

/// `copy:copy`, `copy:copying_simple`: the response, stripped and lowercased, equals
/// `prompt_to_repeat` stripped and lowercased. Nothing may precede or follow the copy.
fn copy(a: &Args, response: &str) -> Result<bool, String> {
    let prompt = a.text("prompt_to_repeat")?;
    Ok(lower(strip(response)) == lower(strip(prompt)))
}

/// `copy:copying_multiple`: the response split on `******` has exactly `N` parts and every part,
/// stripped and lowercased, equals `prompt_to_repeat` stripped and lowercased. (Seven asterisks
/// leave a stray `*` in a part, which then differs.) `N` = 0 is literal and never met.
fn copying_multiple(a: &Args, response: &str) -> Result<bool, String> {
    let prompt = lower(strip(a.text("prompt_to_repeat")?));
    let n = a.int("N")?;
    let parts: Vec<&str> = response.split("******").collect();
    Ok(count_is(parts.len(), n) && parts.iter().all(|p| lower(strip(p)) == prompt))
}

/// `copy:repeat_phrase`: with the phrase's first and last words `F` and `L` (split on
/// whitespace), the matches of the regex `F .*? L` in the response (case-sensitive, `.` not
/// crossing a newline, the words used as regex source as in the reference) number exactly
/// `small_n`; every match has as many whitespace-separated words as the phrase and differs from
/// it in at most one position; and the *last* match differs in exactly one (the reference only
/// tests the last match's count). `small_n` below 1 is an error (the reference redraws 0).
fn repeat_phrase(a: &Args, response: &str) -> Result<bool, String> {
    let phrase = strip(a.text("phrase")?);
    let n = a.int_at_least("small_n", 1)?;
    let words: Vec<&str> = split_ws(phrase).collect();
    let (Some(first), Some(last)) = (words.first(), words.last()) else {
        return Err("`phrase` has no words".to_owned());
    };
    let re = cached_regex(&format!("{first} .*? {last}"), false)
        .map_err(|e| format!("`phrase` words do not form a valid pattern: {e}"))?;
    let found: Vec<&str> = re.find_iter(response).map(|m| m.as_str()).collect();
    if !count_is(found.len(), n) {
        return Ok(false);
    }
    let mut differences = 0;
    for candidate in found {
        let got: Vec<&str> = split_ws(candidate).collect();
        if got.len() != words.len() {
            return Ok(false);
        }
        differences = got.iter().zip(&words).filter(|(g, w)| g != w).count();
        if differences > 1 {
            return Ok(false);
        }
    }
    Ok(differences == 1)
}

/// `new:copy_span_idx`: the response, stripped and lowercased, equals
/// `prompt_to_repeat[n_start:n_end]` (a Python slice over code points: end exclusive, negative
/// indices from the end, out-of-range clamped) stripped and lowercased. The reference redraws a
/// random index when `n_start` or `n_end` is 0; here 0 is literal (the start of the prompt).
fn copy_span_idx(a: &Args, response: &str) -> Result<bool, String> {
    let prompt = a.text("prompt_to_repeat")?;
    let start = a.int("n_start")?;
    let end = a.int("n_end")?;
    let chars: Vec<char> = prompt.chars().collect();
    let span = py_slice(&chars, start, end);
    Ok(lower(strip(response)) == lower(strip(&span)))
}

// ---------------------------------------------------------------------------------------------
// count:*

/// `count:count_increment_word`: `keyword1` (stripped) is found exactly once and `keyword2`
/// (stripped) exactly twice, each counted as a case-insensitive regex anywhere in the response
/// (module docs). Both are required: without them the reference crashes.
fn count_increment_word(a: &Args, response: &str) -> Result<bool, String> {
    let one = count_matches(strip(a.text("keyword1")?), response, "keyword1")?;
    let two = count_matches(strip(a.text("keyword2")?), response, "keyword2")?;
    Ok(one == 1 && two == 2)
}

/// `count:count_unique`: no NLTK `word_tokenize` token occurs twice (case-sensitive). Punctuation
/// tokens count: two sentences that both end in `.` repeat the `.` token and fail. Hole kept for
/// fidelity: a one-word answer passes.
fn count_unique(_: &Args, response: &str) -> Result<bool, String> {
    let tokens = word_tokenize(response);
    let unique: HashSet<&str> = tokens.iter().map(String::as_str).collect();
    Ok(unique.len() == tokens.len())
}

/// `count:counting_composition`: the response split on the regex `\s?\*\*\*\s?` (`***`, not the
/// `* * *` the instruction text shows) gives exactly 3 paragraphs, an empty part being allowed
/// only first or last; every part, *including* an empty first or last one, splits
/// (`split_into_sentences`) into exactly `n_sent` sentences, each of exactly `n_words` NLTK
/// tokens (punctuation tokens count as words). So a response that starts or ends with `***`
/// fails unless `n_sent` is 0, as in the reference. 0 counts are literal. Deviation: each
/// sentence is tokenized by our NLTK port (module docs).
fn counting_composition(a: &Args, response: &str) -> Result<bool, String> {
    let n_sent = a.int("n_sent")?;
    let n_words = a.int("n_words")?;
    let parts: Vec<&str> = STAR_DIVIDER.split(response).collect();
    let mut paragraphs = parts.len();
    for (index, part) in parts.iter().enumerate() {
        if strip(part).is_empty() {
            if index == 0 || index == parts.len() - 1 {
                paragraphs -= 1;
            } else {
                return Ok(false);
            }
        }
        let sentences = split_into_sentences(part);
        if !count_is(sentences.len(), n_sent) {
            return Ok(false);
        }
        for sentence in &sentences {
            if !count_is(word_tokenize(sentence).len(), n_words) {
                return Ok(false);
            }
        }
    }
    Ok(paragraphs == 3)
}

/// `count:lowercase_counting`: at most `N` matches of Python's `\b[a-z]+\b`, i.e. maximal runs of
/// word characters made only of ASCII `a`-`z` ("café" and "snake_case" are not counted; "don't"
/// counts "don" and "t"). `N` = 0 is literal (the reference redraws 2 or 3). Hole kept for
/// fidelity: joining words with underscores (`the_cat_sat`) hides them.
fn lowercase_counting(a: &Args, response: &str) -> Result<bool, String> {
    let n = a.int("N")?;
    let count = PY_WORD_RUN
        .find_iter(response)
        .filter(|m| m.as_str().bytes().all(|b| b.is_ascii_lowercase()))
        .count();
    Ok(i64::try_from(count).unwrap_or(i64::MAX) <= n)
}

// ---------------------------------------------------------------------------------------------
// detectable_format:*

/// `detectable_format:bigram_wrapping`: splitting on whitespace, for every pair of words at
/// positions (0, 1), (2, 3), … the first starts with `<<` and the second ends with `>>`. A
/// trailing odd word is not checked, so a one-word response passes (a hole kept for fidelity).
fn bigram_wrapping(_: &Args, response: &str) -> Result<bool, String> {
    let words: Vec<&str> = split_ws(response).collect();
    Ok(words
        .chunks_exact(2)
        .all(|pair| pair[0].starts_with("<<") && pair[1].ends_with(">>")))
}

/// `detectable_format:sentence_hyphens`: the response split on `-` is compared, part by part (up
/// to the shorter list), with `split_into_sentences` of the response with every `-` replaced by a
/// space: each part must carry no surrounding whitespace and equal its sentence. Hole kept for
/// fidelity: a single sentence passes (there is nothing to join).
fn sentence_hyphens(_: &Args, response: &str) -> Result<bool, String> {
    let gold = split_into_sentences(&response.replace('-', " "));
    Ok(response
        .split('-')
        .zip(&gold)
        .all(|(part, sentence)| strip(part) == part && part == sentence))
}

/// `detectable_format:square_brackets`: every whitespace-separated word starts with `[` and ends
/// with `]` (`[two words]` is two words and fails).
fn square_brackets(_: &Args, response: &str) -> Result<bool, String> {
    Ok(split_ws(response).all(|w| w.starts_with('[') && w.ends_with(']')))
}

// ---------------------------------------------------------------------------------------------
// first_word:* / last_word:*

/// `first_word:first_word_answer`: the first whitespace-separated word equals `first_word`
/// (stripped) ignoring case. Punctuation is not removed: `Hello,` is not `hello`.
fn first_word_answer(a: &Args, response: &str) -> Result<bool, String> {
    let want = lower(strip(a.text("first_word")?));
    Ok(split_ws(response).next().is_some_and(|w| lower(w) == want))
}

/// `first_word:first_word_sent`: every sentence of `split_into_sentences` begins with
/// `first_word` (a string, or the first item of a list; stripped) ignoring case, comparing the
/// sentence's first whitespace-separated word with its punctuation.
fn first_word_sent(a: &Args, response: &str) -> Result<bool, String> {
    let want = lower(strip(a.text_or_first("first_word")?));
    Ok(split_into_sentences(response)
        .iter()
        .all(|s| split_ws(s).next().is_some_and(|w| lower(w) == want)))
}

/// `last_word:last_word_answer`: the last whitespace-separated word, with every character that is
/// neither a word character nor whitespace removed, equals `last_word` (stripped) ignoring case.
/// A blank response fails (the reference raises `IndexError` there).
fn last_word_answer(a: &Args, response: &str) -> Result<bool, String> {
    let want = lower(strip(a.text("last_word")?));
    Ok(split_ws(response)
        .last()
        .is_some_and(|w| lower(&strip_punct(w)) == want))
}

/// `last_word:last_word_sent`: every sentence of `split_into_sentences` ends with `last_word` (a
/// string, or the first item of a list; stripped), comparing the sentence's last
/// whitespace-separated word with its non-word characters removed, ignoring case.
fn last_word_sent(a: &Args, response: &str) -> Result<bool, String> {
    let want = lower(strip(a.text_or_first("last_word")?));
    Ok(split_into_sentences(response).iter().all(|s| {
        split_ws(s)
            .last()
            .is_some_and(|w| lower(&strip_punct(w)) == want)
    }))
}

// ---------------------------------------------------------------------------------------------
// keywords:*

/// `keywords:exclude_word_harder`: the response does not contain `" " + keyword + " "` (keyword
/// stripped), a case-sensitive substring test. So only a space-delimited occurrence fails: the
/// keyword first, last, capitalised or next to punctuation is not seen. `keyword` is required
/// (the reference would pick a random word of `instruction`).
fn exclude_word_harder(a: &Args, response: &str) -> Result<bool, String> {
    let keyword = strip(a.text("keyword")?);
    if a.get("instruction").is_some_and(|v| !v.is_string()) {
        return Err("`instruction` must be a string".to_owned());
    }
    Ok(!response.contains(&format!(" {keyword} ")))
}

/// `keywords:keyword_specific_position`: the response has at least `n` sentences
/// (`split_into_sentences`), and the `n`-th has at least `m` NLTK tokens, the `m`-th being exactly
/// `keyword` (a string, or the first item of a list; stripped; case-sensitive). `n` and `m` are
/// 1-based and must be at least 1 (the reference redraws 0 and indexes from the end for negatives).
/// Hole kept for fidelity: a sentence made of the keyword repeated meets any `m` up to its length.
/// The sentence is tokenized by our NLTK port (module docs).
fn keyword_specific_position(a: &Args, response: &str) -> Result<bool, String> {
    let keyword = strip(a.text_or_first("keyword")?);
    let n = a.int_at_least("n", 1)?;
    let m = a.int_at_least("m", 1)?;
    let sentences = split_into_sentences(response);
    let Some(sentence) = usize::try_from(n - 1).ok().and_then(|i| sentences.get(i)) else {
        return Ok(false);
    };
    let words = word_tokenize(sentence);
    Ok(usize::try_from(m - 1)
        .ok()
        .and_then(|i| words.get(i))
        .is_some_and(|w| w == keyword))
}

/// `keywords:no_adjacent_consecutive`: for each pair of adjacent whitespace-separated words, the
/// lowercased first characters are not consecutive code points (`ord(second) - ord(first) == 1`:
/// "a b" fails, "b a" passes; digits count too: "1 2" fails). A first character whose lowercase
/// is more than one character (`İ`) fails the response, as in the reference. Hole kept for
/// fidelity: a one-word answer passes.
fn no_adjacent_consecutive(_: &Args, response: &str) -> Result<bool, String> {
    let words: Vec<&str> = split_ws(response).collect();
    for pair in words.windows(2) {
        let (Some(first), Some(second)) = (initial_lower(pair[0]), initial_lower(pair[1])) else {
            return Ok(false);
        };
        if i64::from(u32::from(second)) - i64::from(u32::from(first)) == 1 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `keywords:palindrome`: some whitespace-separated word reads the same reversed (by code point,
/// case-sensitive, punctuation included). The reference counts one-character words, so "I" or
/// "a" anywhere satisfies it: a known hole we keep for fidelity.
fn palindrome(_: &Args, response: &str) -> Result<bool, String> {
    Ok(split_ws(response).any(|w| w.chars().eq(w.chars().rev())))
}

/// `keywords:start_end`: the response has at least 2 NLTK tokens and the first equals the last
/// ignoring case. A final `.` is its own token, so "Hello … hello." fails.
fn start_end(_: &Args, response: &str) -> Result<bool, String> {
    let tokens = word_tokenize(response);
    Ok(match (tokens.first(), tokens.last()) {
        (Some(first), Some(last)) if tokens.len() >= 2 => lower(first) == lower(last),
        _ => false,
    })
}

/// `keywords:word_count_different_numbers`: the count of `keyword` (stripped; a case-insensitive
/// regex anywhere, module docs) is `less than` / `at least` `frequency`. All three kwargs are
/// required; a negative `frequency` is an error (the reference redraws it).
fn word_count_different_numbers(a: &Args, response: &str) -> Result<bool, String> {
    let keyword = strip(a.text("keyword")?);
    let frequency = a.int_at_least("frequency", 0)?;
    let relation = a.relation("relation")?;
    Ok(relation.holds(count_matches(keyword, response, "keyword")?, frequency))
}

/// `keywords:word_once`: `keyword` (stripped) is found exactly once, counted as a
/// case-insensitive regex anywhere (module docs: `cat` inside `category` counts).
fn word_once(a: &Args, response: &str) -> Result<bool, String> {
    let keyword = strip(a.text("keyword")?);
    Ok(count_matches(keyword, response, "keyword")? == 1)
}

// ---------------------------------------------------------------------------------------------
// letters:*

/// `letters:letter_counting`: the number of ASCII letters `[a-zA-Z]` is `less than` / `at least`
/// `N`. A relation other than those two is an error here (the reference silently fails every
/// response). `N` = 0 is literal (the reference redraws 2 or 3). Hole kept for fidelity: `at
/// least` is met by letter spam (`aaaa…`).
fn letter_counting(a: &Args, response: &str) -> Result<bool, String> {
    let n = a.int("N")?;
    let relation = a.relation("relation")?;
    Ok(relation.holds(response.bytes().filter(u8::is_ascii_alphabetic).count(), n))
}

/// `letters:letter_counting2` (the reference's `LetterFrequencyChecker`): in the lowercased
/// response, the count of `letter` (one character whose lowercase is `a`-`z`) is `less than` /
/// `at least` `let_frequency`. Any other `letter`, a negative or absent `let_frequency` and an
/// absent relation are errors (the reference would draw random ones). Hole kept for fidelity:
/// `at least` is met by repeating the letter.
fn letter_counting2(a: &Args, response: &str) -> Result<bool, String> {
    let raw = a.text("letter")?;
    let letter = {
        let mut chars = raw.chars();
        match (chars.next().map(char::to_lowercase), chars.next()) {
            (Some(mut low), None) => match (low.next(), low.next()) {
                (Some(c), None) if c.is_ascii_lowercase() => c,
                _ => return Err(format!("`letter` must be one English letter, got {raw:?}")),
            },
            _ => return Err(format!("`letter` must be one English letter, got {raw:?}")),
        }
    };
    let frequency = a.int_at_least("let_frequency", 0)?;
    let relation = a.relation("let_relation")?;
    let count = lower(response).chars().filter(|&c| c == letter).count();
    Ok(relation.holds(count, frequency))
}

// ---------------------------------------------------------------------------------------------
// paragraphs:* / punctuation:*

/// `paragraphs:paragraphs`: the response split on the regex `\s?\*\*\*\s?` gives exactly 2
/// non-blank parts, a blank part being allowed only first or last (a blank middle part fails).
fn paragraphs(_: &Args, response: &str) -> Result<bool, String> {
    Ok(two_paragraphs(STAR_DIVIDER.split(response)))
}

/// `paragraphs:paragraphs2`: as `paragraphs:paragraphs`, split on `\n\n` (so `\n\n\n` is one
/// separator plus a newline, and `\n\n\n\n` leaves a blank middle part, which fails).
fn paragraphs2(_: &Args, response: &str) -> Result<bool, String> {
    Ok(two_paragraphs(response.split("\n\n")))
}

fn two_paragraphs<'a>(parts: impl Iterator<Item = &'a str>) -> bool {
    let parts: Vec<&str> = parts.collect();
    let mut count = parts.len();
    for (index, part) in parts.iter().enumerate() {
        if strip(part).is_empty() {
            if index == 0 || index == parts.len() - 1 {
                count -= 1;
            } else {
                return false;
            }
        }
    }
    count == 2
}

/// `punctuation:punctuation_dot`: no `.` anywhere (also not in numbers or URLs).
fn punctuation_dot(_: &Args, response: &str) -> Result<bool, String> {
    Ok(!response.contains('.'))
}

/// `punctuation:punctuation_exclamation`: no `!` anywhere.
fn punctuation_exclamation(_: &Args, response: &str) -> Result<bool, String> {
    Ok(!response.contains('!'))
}

// ---------------------------------------------------------------------------------------------
// Python text primitives

/// Python `str.lower()`.
fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// `\w` of the `regex` engine NLTK 3.10 compiles its tokenizer patterns with (`nltk.redos`):
/// Unicode word characters including combining marks and connector punctuation, as Rust's
/// `regex`. (The checkers themselves use Python's `re`, whose `\w` has no marks.)
fn is_re_word(c: char) -> bool {
    let mut buf = [0u8; 4];
    RE_WORD_CHAR.is_match(c.encode_utf8(&mut buf))
}

/// `re.sub(r"[^\w\s]", "", word)`.
fn strip_punct(word: &str) -> String {
    NOT_WORD_NOR_SPACE.replace_all(word, "").into_owned()
}

/// The lowercase of the first character, when that is one character.
fn initial_lower(word: &str) -> Option<char> {
    let mut low = word.chars().next()?.to_lowercase();
    match (low.next(), low.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

/// Python `s[start:end]` over code points.
fn py_slice(chars: &[char], start: i64, end: i64) -> String {
    let len = i64::try_from(chars.len()).unwrap_or(i64::MAX);
    let clamp = |i: i64| if i < 0 { (i + len).max(0) } else { i.min(len) };
    let (start, end) = (clamp(start), clamp(end));
    if start >= end {
        return String::new();
    }
    chars[start as usize..end as usize].iter().collect()
}

fn count_is(count: usize, want: i64) -> bool {
    i64::try_from(count).is_ok_and(|c| c == want)
}

/// `len(re.findall(pattern, text, re.IGNORECASE))`.
fn count_matches(pattern: &str, text: &str, key: &str) -> Result<usize, String> {
    let re = cached_regex(pattern, true)
        .map_err(|e| format!("`{key}` is not a valid regular expression: {e}"))?;
    Ok(re.find_iter(text).count())
}

/// Patterns built from kwargs, compiled once per thread: an item is scored for many samples
/// (a GRPO group), and compiling a regex costs far more than running it on one response.
fn cached_regex(pattern: &str, case_insensitive: bool) -> Result<Regex, regex::Error> {
    const MAX: usize = 4096;
    thread_local! {
        /// Indexed by `case_insensitive`.
        static CACHE: [RefCell<HashMap<String, Regex>>; 2] = Default::default();
    }
    CACHE.with(|caches| {
        let cache = &caches[usize::from(case_insensitive)];
        if let Some(re) = cache.borrow().get(pattern) {
            return Ok(re.clone());
        }
        let re = RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .build()?;
        let mut cache = cache.borrow_mut();
        if cache.len() >= MAX {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), re.clone());
        Ok(re)
    })
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("valid built-in pattern")
}

/// Python's `\s` (Unicode whitespace plus U+001C..U+001F) for use inside a pattern.
const S: &str = r"[\s\x1C-\x1F]";

static RE_WORD_CHAR: LazyLock<Regex> = LazyLock::new(|| re(r"^\w$"));
static PY_WORD_RUN: LazyLock<Regex> = LazyLock::new(|| re(r"[\p{L}\p{N}_]+"));
static NOT_WORD_NOR_SPACE: LazyLock<Regex> = LazyLock::new(|| re(r"[^\p{L}\p{N}_\s\x1C-\x1F]"));
static STAR_DIVIDER: LazyLock<Regex> = LazyLock::new(|| re(&format!(r"{S}?\*\*\*{S}?")));

// ---------------------------------------------------------------------------------------------
// open-instruct's `split_into_sentences`, rule for rule

const STARTERS: &str = r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He[\s\x1C-\x1F]|She[\s\x1C-\x1F]|It[\s\x1C-\x1F]|They[\s\x1C-\x1F]|Their[\s\x1C-\x1F]|Our[\s\x1C-\x1F]|We[\s\x1C-\x1F]|But[\s\x1C-\x1F]|However[\s\x1C-\x1F]|That[\s\x1C-\x1F]|This[\s\x1C-\x1F]|Wherever)";

struct SentenceRules {
    prefixes: Regex,
    websites: Regex,
    digits: Regex,
    multiple_dots: Regex,
    single_initial: Regex,
    acronym_starter: Regex,
    three_letters: Regex,
    two_letters: Regex,
    suffix_starter: Regex,
    suffix: Regex,
    space_letter: Regex,
}

static SENTENCE_RULES: LazyLock<SentenceRules> = LazyLock::new(|| SentenceRules {
    prefixes: re(r"(Mr|St|Mrs|Ms|Dr)[.]"),
    websites: re(r"[.](com|net|org|io|gov|edu|me)"),
    digits: re(r"([0-9])[.]([0-9])"),
    multiple_dots: re(r"\.{2,}"),
    single_initial: re(&format!(r"{S}([A-Za-z])[.] ")),
    acronym_starter: re(&format!(r"([A-Z][.][A-Z][.](?:[A-Z][.])?) {STARTERS}")),
    three_letters: re(r"([A-Za-z])[.]([A-Za-z])[.]([A-Za-z])[.]"),
    two_letters: re(r"([A-Za-z])[.]([A-Za-z])[.]"),
    suffix_starter: re(&format!(r" (Inc|Ltd|Jr|Sr|Co)[.] {STARTERS}")),
    suffix: re(r" (Inc|Ltd|Jr|Sr|Co)[.]"),
    space_letter: re(r" ([A-Za-z])[.]"),
});

/// open-instruct `instructions_util.split_into_sentences`: protect the periods of titles, web
/// suffixes, decimals, ellipses, initials and acronyms, then cut after every `.`, `?` and `!`;
/// sentences are stripped and a trailing empty one dropped (an inner empty one is kept).
fn split_into_sentences(text: &str) -> Vec<String> {
    let r = &*SENTENCE_RULES;
    let mut t = format!(" {text}  ").replace('\n', " ");
    t = r.prefixes.replace_all(&t, "${1}<prd>").into_owned();
    t = r.websites.replace_all(&t, "<prd>${1}").into_owned();
    t = r.digits.replace_all(&t, "${1}<prd>${2}").into_owned();
    t = r
        .multiple_dots
        .replace_all(&t, |c: &regex::Captures| {
            format!("{}<stop>", "<prd>".repeat(c[0].len()))
        })
        .into_owned();
    if t.contains("Ph.D") {
        t = t.replace("Ph.D.", "Ph<prd>D<prd>");
    }
    t = r.single_initial.replace_all(&t, " ${1}<prd> ").into_owned();
    t = r
        .acronym_starter
        .replace_all(&t, "${1}<stop> ${2}")
        .into_owned();
    t = r
        .three_letters
        .replace_all(&t, "${1}<prd>${2}<prd>${3}<prd>")
        .into_owned();
    t = r
        .two_letters
        .replace_all(&t, "${1}<prd>${2}<prd>")
        .into_owned();
    t = r
        .suffix_starter
        .replace_all(&t, " ${1}<stop> ${2}")
        .into_owned();
    t = r.suffix.replace_all(&t, " ${1}<prd>").into_owned();
    t = r.space_letter.replace_all(&t, " ${1}<prd>").into_owned();
    t = t
        .replace(".\u{201d}", "\u{201d}.")
        .replace(".\"", "\".")
        .replace("!\"", "\"!")
        .replace("?\"", "\"?")
        .replace('.', ".<stop>")
        .replace('?', "?<stop>")
        .replace('!', "!<stop>")
        .replace("<prd>", ".");
    let mut sentences: Vec<String> = t.split("<stop>").map(|s| strip(s).to_owned()).collect();
    if sentences.last().is_some_and(String::is_empty) {
        sentences.pop();
    }
    sentences
}

// ---------------------------------------------------------------------------------------------
// NLTK `word_tokenize`: Punkt sentences, then `NLTKWordTokenizer` (ported)

/// NLTK `word_tokenize(text)`.
fn word_tokenize(text: &str) -> Vec<String> {
    super::punkt::sentences(text)
        .into_iter()
        .flat_map(treebank_tokenize)
        .collect()
}

struct TreebankRules {
    starting: Vec<(Regex, &'static str)>,
    punctuation: Vec<(Regex, &'static str)>,
    parens: Regex,
    double_dashes: Regex,
    ending: Vec<(Regex, &'static str)>,
    contractions: Vec<(Regex, &'static str)>,
}

static TREEBANK: LazyLock<TreebankRules> = LazyLock::new(|| {
    let rules =
        |list: &[(&str, &'static str)]| list.iter().map(|&(p, r)| (re(p), r)).collect::<Vec<_>>();
    TreebankRules {
        starting: rules(&[
            ("([«“‘„]|[`]+)", " ${1} "),
            (r#"^""#, "``"),
            ("(``)", " ${1} "),
            (r#"([ \(\[{<])("|'{2})"#, "${1} `` "),
        ]),
        punctuation: vec![
            (
                re(r#"([^\.])(\.)([\]\)}>"'»”’ ]*)\s*\z"#),
                "${1} ${2} ${3} ",
            ),
            (re(r"([:,])([^\d])"), " ${1} ${2}"),
            // Python's `$` also matches before a final newline.
            (re(r"([:,])(\n?)\z"), " ${1} ${2}"),
            (re(r"\.{2,}"), " ${0} "),
            (re(r"[;@#$%&]"), " ${0} "),
            (re(r"[\u{2012}-\u{2015}]"), " ${0} "),
            (re(r#"([^\.])(\.)([\]\)}>"']*)\s*\z"#), "${1} ${2}${3} "),
            (re(r"[?!]"), " ${0} "),
            (re(r"([^'])' "), "${1} ' "),
            (re(r"[*]"), " ${0} "),
        ],
        parens: re(r"[\]\[\(\)\{\}<>]"),
        double_dashes: re("--"),
        ending: vec![
            (re("([»”’])"), " ${1} "),
            (re("''"), " '' "),
            (re("\""), " '' "),
            (re(r"\s+"), " "),
            (re(r"([^' ])('[sS]|'[mM]|'[dD]|') "), "${1} ${2} "),
            (
                re(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "),
                "${1} ${2} ",
            ),
        ],
        contractions: vec![
            (re(r"(?i)\b(can)(not)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(d)('ye)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(gim)(me)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(gon)(na)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(got)(ta)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(lem)(me)\b"), " ${1} ${2} "),
            (re(r"(?i)\b(more)('n)\b"), " ${1} ${2} "),
            // `(?=\s)` in NLTK: the whitespace is matched and put back.
            (re(r"(?i)\b(wan)(na)(\s)"), " ${1} ${2} ${3}"),
            (re(r"(?i) ('t)(is)\b"), " ${1} ${2} "),
            (re(r"(?i) ('t)(was)\b"), " ${1} ${2} "),
        ],
    }
});

/// NLTK `NLTKWordTokenizer.tokenize` (the improved Treebank tokenizer behind `word_tokenize`),
/// its regexes applied in order. The one rule with look-around (an opening single quote) is
/// [`open_single_quotes`]; `\b` is Rust's Unicode word boundary, which differs from Python's only
/// next to combining marks.
fn treebank_tokenize(sentence: &str) -> Vec<String> {
    let tb = &*TREEBANK;
    let mut t = sentence.to_owned();
    for (regex, rep) in &tb.starting {
        t = regex.replace_all(&t, *rep).into_owned();
    }
    t = open_single_quotes(&t);
    for (regex, rep) in &tb.punctuation {
        t = regex.replace_all(&t, *rep).into_owned();
    }
    t = tb.parens.replace_all(&t, " ${0} ").into_owned();
    t = tb.double_dashes.replace_all(&t, " -- ").into_owned();
    t = format!(" {t} ");
    for (regex, rep) in tb.ending.iter().chain(&tb.contractions) {
        t = regex.replace_all(&t, *rep).into_owned();
    }
    split_ws(&t).map(str::to_owned).collect()
}

/// NLTK's `(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)` → `"' "`: a single quote that opens
/// a word (not after a word character, before one, and not a clitic like `'s`) is split off.
fn open_single_quotes(t: &str) -> String {
    const CLITICS: &[&str] = &["re", "ve", "ll", "m", "t", "s", "d", "n"];
    let mut out = String::with_capacity(t.len() + 8);
    let mut prev: Option<char> = None;
    for (i, c) in t.char_indices() {
        out.push(c);
        if c == '\'' && !prev.is_some_and(is_re_word) {
            let rest = &t[i + 1..];
            let opens_word = rest.chars().next().is_some_and(is_re_word);
            let clitic = CLITICS.iter().any(|cl| {
                rest.get(..cl.len())
                    .is_some_and(|h| h.eq_ignore_ascii_case(cl))
                    && !rest[cl.len()..].chars().next().is_some_and(is_re_word)
            });
            if opens_word && !clitic {
                out.push(' ');
            }
        }
        prev = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(id: &str, kwargs: &Value, response: &str) -> Result<bool, String> {
        check(id, kwargs.as_object().expect("kwargs object"), response).expect("known id")
    }

    #[allow(clippy::needless_pass_by_value)]
    fn yes(id: &str, kwargs: Value, response: &str) {
        assert_eq!(
            run(id, &kwargs, response),
            Ok(true),
            "{id} {kwargs} should pass: {response:?}"
        );
    }

    #[allow(clippy::needless_pass_by_value)]
    fn no(id: &str, kwargs: Value, response: &str) {
        assert_eq!(
            run(id, &kwargs, response),
            Ok(false),
            "{id} {kwargs} should fail: {response:?}"
        );
    }

    #[allow(clippy::needless_pass_by_value)]
    fn err(id: &str, kwargs: Value, needle: &str) {
        match run(id, &kwargs, "Some response.") {
            Err(msg) => assert!(
                msg.contains(needle),
                "{id} {kwargs}: {msg:?} lacks {needle:?}"
            ),
            Ok(v) => panic!("{id} {kwargs} should be a kwargs error, got Ok({v})"),
        }
    }

    #[test]
    fn ids_are_29_distinct_and_all_dispatch() {
        assert_eq!(IDS.len(), 29);
        let unique: HashSet<&&str> = IDS.iter().collect();
        assert_eq!(unique.len(), 29);
        for id in IDS {
            assert!(check(id, &Map::new(), "x").is_some(), "{id} not dispatched");
        }
        assert!(check("keywords:existence", &Map::new(), "x").is_none());
        assert!(check("nope", &Map::new(), "x").is_none());
    }

    #[test]
    fn null_kwargs_are_absent_and_unknown_ones_rejected() {
        yes(
            "punctuation:punctuation_dot",
            json!({"N": null, "keyword": null}),
            "No dots here",
        );
        err(
            "punctuation:punctuation_dot",
            json!({"N": 3}),
            "unexpected kwarg `N`",
        );
        err(
            "keywords:word_once",
            json!({"keyword": "cat", "frequency": 2}),
            "unexpected kwarg `frequency`",
        );
        err(
            "keywords:word_once",
            json!({"keyword": null}),
            "`keyword` is required",
        );
    }

    #[test]
    fn copy_and_copying_simple() {
        for id in ["copy:copy", "copy:copying_simple"] {
            let k = json!({"prompt_to_repeat": "Write a poem about the sea."});
            yes(id, k.clone(), "  write a POEM about the sea.\n");
            no(
                id,
                k.clone(),
                "Write a poem about the sea. Here it is: waves.",
            );
            no(id, k, "Sure! Write a poem about the sea.");
            err(id, json!({}), "`prompt_to_repeat` is required");
            err(
                id,
                json!({"prompt_to_repeat": ""}),
                "`prompt_to_repeat` is required",
            );
            err(id, json!({"prompt_to_repeat": 3}), "must be a string");
        }
    }

    #[test]
    fn copying_multiple() {
        let id = "copy:copying_multiple";
        let k = json!({"prompt_to_repeat": "Name a color.", "N": 3});
        yes(
            id,
            k.clone(),
            "Name a color.\n******\nname a color.\n******\nName a color.",
        );
        no(id, k.clone(), "Name a color.\n******\nName a color.");
        no(
            id,
            k.clone(),
            "Name a color.\n******\nName a color.\n******\nBlue.",
        );
        no(
            id,
            k,
            "Name a color.\n*******\nName a color.\n******\nName a color.",
        );
        err(id, json!({"prompt_to_repeat": "x"}), "`N` is required");
        err(
            id,
            json!({"prompt_to_repeat": "x", "N": "3"}),
            "must be an integer",
        );
        err(
            id,
            json!({"prompt_to_repeat": "x", "N": true}),
            "must be an integer",
        );
        yes(id, json!({"prompt_to_repeat": "x", "N": 2.0}), "x ****** x");
        err(
            id,
            json!({"prompt_to_repeat": "x", "N": 2.5}),
            "must be an integer",
        );
    }

    #[test]
    fn repeat_phrase() {
        let id = "copy:repeat_phrase";
        let k = json!({"phrase": "The early bird catches the worm", "small_n": 2});
        yes(
            id,
            k.clone(),
            "The early cat catches the worm, and then The early bird grabs the worm.",
        );
        // Unchanged copies do not count as transformed.
        no(
            id,
            k.clone(),
            "The early bird catches the worm. The early bird catches the worm.",
        );
        // Two words changed.
        no(
            id,
            k.clone(),
            "The late cat catches the worm. The early bird grabs the worm.",
        );
        // Wrong number of repetitions.
        no(id, k.clone(), "The early cat catches the worm.");
        // A line break inside the phrase hides it from `.`.
        no(
            id,
            k,
            "The early cat catches\nthe worm. The early bird grabs the worm.",
        );
        err(id, json!({"phrase": "a b c"}), "`small_n` is required");
        err(id, json!({"phrase": "a b c", "small_n": 0}), "at least 1");
        err(id, json!({"small_n": 2}), "`phrase` is required");
        err(id, json!({"phrase": "   ", "small_n": 2}), "no words");
        err(
            id,
            json!({"phrase": "(oops b", "small_n": 2}),
            "valid pattern",
        );
    }

    #[test]
    fn copy_span_idx() {
        let id = "new:copy_span_idx";
        let k =
            json!({"prompt_to_repeat": "The quick brown fox jumps.", "n_start": 4, "n_end": 15});
        yes(id, k.clone(), "quick brown");
        yes(id, k.clone(), "  Quick Brown ");
        no(id, k.clone(), "quick brown fox");
        no(id, k, "The quick brown");
        yes(
            id,
            json!({"prompt_to_repeat": "Hello world", "n_start": 0, "n_end": 5}),
            "hello",
        );
        yes(
            id,
            json!({"prompt_to_repeat": "Hello world", "n_start": -5, "n_end": 100}),
            "world",
        );
        err(
            id,
            json!({"prompt_to_repeat": "Hello", "n_end": 3}),
            "`n_start` is required",
        );
        err(
            id,
            json!({"n_start": 0, "n_end": 3}),
            "`prompt_to_repeat` is required",
        );
    }

    #[test]
    fn count_increment_word() {
        let id = "count:count_increment_word";
        let k = json!({"keyword1": "river", "keyword2": "stone"});
        yes(
            id,
            k.clone(),
            "The river carried a stone, and another Stone after it.",
        );
        no(id, k.clone(), "The river carried a stone.");
        no(
            id,
            k.clone(),
            "The river and the River carried a stone and a stone.",
        );
        // Substring counting, as in the reference: "stones" contains "stone".
        yes(id, k, "A river moved stones and a stone.");
        err(id, json!({"keyword1": "river"}), "`keyword2` is required");
        err(
            id,
            json!({"keyword1": "(", "keyword2": "x"}),
            "not a valid regular expression",
        );
    }

    #[test]
    fn count_unique() {
        let id = "count:count_unique";
        yes(id, json!({}), "Every word here differs");
        yes(id, json!({}), "Cats chase mice; dogs hunt birds.");
        no(id, json!({}), "the cat saw the dog");
        // Two final periods are two "." tokens.
        no(id, json!({}), "Sun rises. Moon sets.");
        // Case-sensitive: "The" and "the" differ.
        yes(id, json!({}), "The cat saw the dog");
        err(id, json!({"N": 1}), "unexpected kwarg");
    }

    #[test]
    fn counting_composition() {
        let id = "count:counting_composition";
        let k = json!({"n_sent": 2, "n_words": 5});
        let good = "Birds sing at dawn. Rivers run to sea.\n***\nWinds blow through trees. Clouds drift over hills.\n***\nStars shine at night. Owls hunt in darkness.";
        // Each sentence is four words plus the "." token.
        yes(id, json!({"n_sent": 2, "n_words": 5}), good);
        no(id, k.clone(), "Birds sing at dawn. Rivers run to sea.\n***\nWinds blow through trees.\n***\nStars shine at night. Owls hunt in darkness.");
        no(id, k.clone(), "Birds sing at dawn. Rivers run to sea.\n***\nWinds blow through trees. Clouds drift over hills.");
        // A trailing divider leaves an empty last part with zero sentences: fails, as in the reference.
        no(id, k.clone(), &format!("{good}\n***"));
        no(id, json!({"n_sent": 2, "n_words": 4}), good);
        err(id, json!({"n_sent": 2}), "`n_words` is required");
    }

    #[test]
    fn lowercase_counting() {
        let id = "count:lowercase_counting";
        yes(id, json!({"N": 2}), "HELLO there WORLD, my FRIEND");
        no(id, json!({"N": 2}), "HELLO there my good FRIEND");
        // Mixed case and non-ASCII words are not lowercase words.
        yes(id, json!({"N": 0}), "Hello World café_x CAFÉ");
        yes(id, json!({"N": 1}), "Naïve ÉCOLE résumé? no");
        err(id, json!({}), "`N` is required");
    }

    #[test]
    fn bigram_wrapping() {
        let id = "detectable_format:bigram_wrapping";
        yes(
            id,
            json!({}),
            "<<I am>> <<at home>> <<with my>> <<cute dog>>",
        );
        yes(id, json!({}), "<<I am>> <<at home>> alone");
        no(id, json!({}), "<<I am>> at home");
        no(id, json!({}), "<<I am at>> <<home now>>");
    }

    #[test]
    fn sentence_hyphens() {
        let id = "detectable_format:sentence_hyphens";
        yes(
            id,
            json!({}),
            "The sun rose.-Birds began to sing.-The day had started.",
        );
        no(id, json!({}), "The sun rose. - Birds began to sing.");
        no(id, json!({}), "The sun rose. Birds began to sing.");
        // A hyphenated word splits a sentence in two and fails.
        no(id, json!({}), "A well-known fact.-Another one.");
    }

    #[test]
    fn square_brackets() {
        let id = "detectable_format:square_brackets";
        yes(id, json!({}), "[Every] [word] [is] [wrapped.]");
        no(id, json!({}), "[Every] [word] is [wrapped]");
        no(id, json!({}), "[Two words] [here]");
        // Met vacuously by the reference checker; blank responses never pass here.
        no(id, json!({}), " \n ");
        no(
            "first_word:first_word_sent",
            json!({"first_word": "we"}),
            "",
        );
        no("punctuation:punctuation_dot", json!({}), "   ");
        // Kwargs errors are still reported for a blank response.
        assert!(run("keywords:word_once", &json!({}), "").is_err());
    }

    #[test]
    fn first_word_answer_and_sent() {
        let id = "first_word:first_word_answer";
        yes(id, json!({"first_word": "Indeed"}), "indeed that is right.");
        no(
            id,
            json!({"first_word": "indeed"}),
            "Indeed, that is right.",
        );
        no(id, json!({"first_word": "indeed"}), "Well, indeed.");
        no(id, json!({"first_word": "indeed"}), "   ");
        err(id, json!({"first_word": ["indeed"]}), "must be a string");
        err(id, json!({}), "`first_word` is required");

        let id = "first_word:first_word_sent";
        yes(
            id,
            json!({"first_word": "Today"}),
            "Today we rest. today we eat! Today we sleep?",
        );
        yes(id, json!({"first_word": ["today", "x"]}), "Today we rest.");
        no(
            id,
            json!({"first_word": "today"}),
            "Today we rest. Tomorrow we work.",
        );
        no(id, json!({"first_word": "today"}), "Today, we rest.");
        err(id, json!({"first_word": [1]}), "list of strings");
    }

    #[test]
    fn last_word_answer_and_sent() {
        let id = "last_word:last_word_answer";
        yes(id, json!({"last_word": "peace"}), "All we want is PEACE!");
        yes(
            id,
            json!({"last_word": "peace"}),
            "All we want is \"peace.\"",
        );
        no(id, json!({"last_word": "peace"}), "Peace is all we want.");
        no(id, json!({"last_word": "peace"}), "");
        err(id, json!({"last_word": 5}), "must be a string");

        let id = "last_word:last_word_sent";
        yes(
            id,
            json!({"last_word": "now"}),
            "Come here now. We leave now! Why not now?",
        );
        no(
            id,
            json!({"last_word": "now"}),
            "Come here now. We leave soon.",
        );
        yes(id, json!({"last_word": ["now"]}), "Do it now...");
        err(id, json!({}), "`last_word` is required");
    }

    #[test]
    fn exclude_word_harder() {
        let id = "keywords:exclude_word_harder";
        let k = json!({"keyword": "apple"});
        yes(id, k.clone(), "I like pears and plums.");
        no(id, k.clone(), "I like an apple a day.");
        // Only a space-delimited, same-case occurrence is seen (reference semantics).
        yes(id, k.clone(), "Apple pie is an apple.");
        yes(
            id,
            json!({"keyword": " apple ", "instruction": "Do not say apple"}),
            "pineapple only",
        );
        err(
            id,
            json!({"instruction": "Do not say apple"}),
            "`keyword` is required",
        );
        err(
            id,
            json!({"keyword": "apple", "instruction": 3}),
            "`instruction` must be a string",
        );
    }

    #[test]
    fn keyword_specific_position() {
        let id = "keywords:keyword_specific_position";
        let k = json!({"keyword": "blue", "n": 2, "m": 3});
        yes(id, k.clone(), "I like colors. The sky blue shines. Done.");
        no(id, k.clone(), "I like colors. The blue sky shines. Done.");
        no(id, k.clone(), "The sky blue shines.");
        no(id, k.clone(), "I like colors. The sky Blue shines.");
        // Tokens are NLTK's: "sky," is two tokens.
        no(
            id,
            json!({"keyword": "blue", "n": 1, "m": 3}),
            "The sky, blue and wide.",
        );
        yes(
            id,
            json!({"keyword": ["blue"], "n": 1, "m": 4}),
            "The sky, blue and wide.",
        );
        err(id, json!({"keyword": "blue", "n": 0, "m": 1}), "at least 1");
        err(id, json!({"keyword": "blue", "n": 1}), "`m` is required");
    }

    #[test]
    fn no_adjacent_consecutive() {
        let id = "keywords:no_adjacent_consecutive";
        yes(id, json!({}), "Zebras eat grass quietly");
        yes(id, json!({}), "ba ab");
        no(id, json!({}), "A big cat");
        no(id, json!({}), "Red sun");
        no(id, json!({}), "page 1 2");
    }

    #[test]
    fn palindrome() {
        let id = "keywords:palindrome";
        yes(id, json!({}), "We saw a racecar today");
        yes(id, json!({}), "Madam level");
        no(id, json!({}), "Racecar was seen today");
        no(id, json!({}), "");
    }

    #[test]
    fn start_end() {
        let id = "keywords:start_end";
        yes(id, json!({}), "Love is patient and kind, love");
        // Quotes are tokens: `` first, '' last.
        no(id, json!({}), "\"Love is all, love\"");
        no(id, json!({}), "Love is patient and kind, love.");
        no(id, json!({}), "Love");
        no(id, json!({}), "Love is patient");
    }

    #[test]
    fn word_count_different_numbers() {
        let id = "keywords:word_count_different_numbers";
        let k = json!({"keyword": "light", "frequency": 3, "relation": "at least"});
        yes(id, k.clone(), "Light, light and more LIGHT.");
        no(id, k, "Light and light.");
        yes(
            id,
            json!({"keyword": "light", "frequency": 2, "relation": "less than"}),
            "One light.",
        );
        no(
            id,
            json!({"keyword": "light", "frequency": 2, "relation": "less than"}),
            "Light and lightning.",
        );
        err(
            id,
            json!({"keyword": "light", "frequency": 2, "relation": "at most"}),
            "\"less than\" or \"at least\"",
        );
        err(
            id,
            json!({"keyword": "light", "frequency": -1, "relation": "at least"}),
            "at least 0",
        );
        err(
            id,
            json!({"keyword": "light", "relation": "at least"}),
            "`frequency` is required",
        );
        err(
            id,
            json!({"keyword": "light", "frequency": 1}),
            "`relation` is required",
        );
    }

    #[test]
    fn word_once() {
        let id = "keywords:word_once";
        yes(id, json!({"keyword": "ocean"}), "The Ocean is deep.");
        no(
            id,
            json!({"keyword": "ocean"}),
            "The ocean is deep, the ocean is wide.",
        );
        no(id, json!({"keyword": "ocean"}), "The sea is deep.");
        no(id, json!({"keyword": "cat"}), "A cat in a category.");
        err(id, json!({"keyword": ""}), "`keyword` is required");
    }

    #[test]
    fn letter_counting() {
        let id = "letters:letter_counting";
        yes(id, json!({"N": 5, "relation": "less than"}), "Hi, 123!");
        no(id, json!({"N": 5, "relation": "less than"}), "Hello there");
        yes(
            id,
            json!({"N": 10, "relation": "at least"}),
            "Hello there friend",
        );
        no(id, json!({"N": 10, "relation": "at least"}), "Hé héé 12345");
        err(
            id,
            json!({"N": 5, "relation": "exactly"}),
            "\"less than\" or \"at least\"",
        );
        err(id, json!({"relation": "at least"}), "`N` is required");
    }

    #[test]
    fn letter_counting2() {
        let id = "letters:letter_counting2";
        let k = json!({"letter": "e", "let_frequency": 3, "let_relation": "at least"});
        yes(id, k.clone(), "Every tree here");
        no(id, k, "A small dog");
        yes(
            id,
            json!({"letter": "Z", "let_frequency": 2, "let_relation": "less than"}),
            "Zero",
        );
        no(
            id,
            json!({"letter": "z", "let_frequency": 2, "let_relation": "less than"}),
            "Zero zones",
        );
        err(
            id,
            json!({"letter": "ab", "let_frequency": 2, "let_relation": "less than"}),
            "one English letter",
        );
        err(
            id,
            json!({"letter": "é", "let_frequency": 2, "let_relation": "less than"}),
            "one English letter",
        );
        err(
            id,
            json!({"letter": "a", "let_relation": "less than"}),
            "`let_frequency` is required",
        );
        err(
            id,
            json!({"letter": "a", "let_frequency": 1, "let_relation": "more than"}),
            "\"less than\" or \"at least\"",
        );
    }

    #[test]
    fn paragraphs_both_kinds() {
        let id = "paragraphs:paragraphs";
        yes(id, json!({}), "First part here.\n***\nSecond part here.");
        yes(id, json!({}), "***\nFirst.\n***\nSecond.\n***");
        no(id, json!({}), "Only one part.");
        no(id, json!({}), "One.\n***\n***\nTwo.");
        no(id, json!({}), "One.\n***\nTwo.\n***\nThree.");

        let id = "paragraphs:paragraphs2";
        yes(id, json!({}), "First paragraph.\n\nSecond paragraph.");
        yes(
            id,
            json!({}),
            "\n\nFirst paragraph.\n\n\nSecond paragraph.\n\n",
        );
        no(id, json!({}), "First paragraph.\nSecond line.");
        no(id, json!({}), "One.\n\n\n\nTwo.");
        no(id, json!({}), "One.\n\nTwo.\n\nThree.");
    }

    #[test]
    fn punctuation() {
        yes(
            "punctuation:punctuation_dot",
            json!({}),
            "No dots at all here!",
        );
        no("punctuation:punctuation_dot", json!({}), "Pi is 3.14");
        yes(
            "punctuation:punctuation_exclamation",
            json!({}),
            "Calm and quiet.",
        );
        no("punctuation:punctuation_exclamation", json!({}), "Wow!");
    }

    /// Responses the reference accepts although they dodge the instruction's intent; kept so the
    /// reward matches open-instruct's (listed in the module's checker docs).
    #[test]
    fn holes_kept_for_fidelity() {
        yes("keywords:palindrome", json!({}), "I think so");
        yes("detectable_format:bigram_wrapping", json!({}), "Hello");
        yes("count:count_unique", json!({}), "Yes");
        yes("keywords:no_adjacent_consecutive", json!({}), "Absolutely");
        yes(
            "detectable_format:sentence_hyphens",
            json!({}),
            "Just one sentence here.",
        );
        yes(
            "letters:letter_counting",
            json!({"N": 40, "relation": "at least"}),
            &"a".repeat(40),
        );
        let k = json!({"letter": "e", "let_frequency": 9, "let_relation": "at least"});
        yes("letters:letter_counting2", k, "eeeeeeeee");
        yes(
            "keywords:exclude_word_harder",
            json!({"keyword": "very"}),
            "It is very.",
        );
        yes(
            "keywords:word_once",
            json!({"keyword": "art"}),
            "Her heart was full.",
        );
        yes(
            "count:lowercase_counting",
            json!({"N": 0}),
            "The_cat_sat_on_the_mat",
        );
        let k = json!({"keyword": "sun", "n": 1, "m": 2});
        yes("keywords:keyword_specific_position", k, "sun sun sun sun.");
    }

    #[test]
    fn split_into_sentences_matches_reference_rules() {
        let s = split_into_sentences(
            "Mr. Smith went to Washington. He paid $3.50 for e.g. coffee! Really?",
        );
        assert_eq!(
            s,
            vec![
                "Mr. Smith went to Washington.",
                "He paid $3.50 for e.g. coffee!",
                "Really?"
            ]
        );
        assert_eq!(
            split_into_sentences("Wait... what?"),
            vec!["Wait...", "what?"]
        );
        assert_eq!(
            split_into_sentences("He said \"hi.\" Then left."),
            vec!["He said \"hi\".", "Then left."]
        );
        assert_eq!(
            split_into_sentences("Visit example.com today. Ok"),
            vec!["Visit example.com today.", "Ok"]
        );
        assert!(split_into_sentences("").is_empty());
        assert_eq!(split_into_sentences("a. . b"), vec!["a. .", "b"]);
    }

    #[test]
    fn treebank_matches_nltk_examples() {
        // Examples from NLTK's own docs and doctests; every expected value checked against
        // NLTK 3.10.4.
        let s = "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\nThanks.";
        assert_eq!(
            treebank_tokenize(s),
            vec![
                "Good", "muffins", "cost", "$", "3.88", "in", "New", "York.", "Please", "buy",
                "me", "two", "of", "them.", "Thanks", "."
            ]
        );
        assert_eq!(
            word_tokenize(s),
            vec![
                "Good", "muffins", "cost", "$", "3.88", "in", "New", "York", ".", "Please", "buy",
                "me", "two", "of", "them", ".", "Thanks", "."
            ]
        );
        assert_eq!(
            treebank_tokenize("They'll save and invest more."),
            vec!["They", "'ll", "save", "and", "invest", "more", "."]
        );
        assert_eq!(
            treebank_tokenize("hi, my name can't hello,"),
            vec!["hi", ",", "my", "name", "ca", "n't", "hello", ","]
        );
        assert_eq!(
            treebank_tokenize("\"We beat some pretty good teams to get here,\" Slocum said."),
            vec![
                "``", "We", "beat", "some", "pretty", "good", "teams", "to", "get", "here", ",",
                "''", "Slocum", "said", "."
            ]
        );
        assert_eq!(
            treebank_tokenize("I gotta 'go' (now)!"),
            vec!["I", "got", "ta", "'", "go", "'", "(", "now", ")", "!"]
        );
        assert_eq!(
            treebank_tokenize("wanna wanna."),
            vec!["wan", "na", "wan", "na", "."]
        );
    }

    /// Our side of `benches/ifeval/tulu_agreement.py`: reads the JSONL it wrote
    /// (`TULU_AGREEMENT_IN`: `check`, `tokens` and `sentences` records) and writes our answers,
    /// one JSON line per record, to `TULU_AGREEMENT_OUT`. The script compares them with the
    /// Python reference.
    #[test]
    #[ignore = "driven by benches/ifeval/tulu_agreement.py"]
    fn python_reference_agreement() {
        use std::io::Write;
        let input = std::env::var("TULU_AGREEMENT_IN").expect("TULU_AGREEMENT_IN");
        let output = std::env::var("TULU_AGREEMENT_OUT").expect("TULU_AGREEMENT_OUT");
        let text = std::fs::read_to_string(input).expect("read input");
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(output).expect("create output"));
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let rec: Value = serde_json::from_str(line).expect("json line");
            let answer = match rec["kind"].as_str() {
                Some("check") => {
                    let kwargs = rec["kwargs"].as_object().cloned().unwrap_or_default();
                    match check(
                        rec["id"].as_str().expect("id"),
                        &kwargs,
                        rec["response"].as_str().expect("response"),
                    ) {
                        Some(Ok(b)) => json!({"result": b}),
                        Some(Err(e)) => json!({"result": format!("error: {e}")}),
                        None => json!({"result": "unknown id"}),
                    }
                }
                Some("tokens") => {
                    json!({"tokens": word_tokenize(rec["text"].as_str().expect("text"))})
                }
                Some("sentences") => {
                    json!({"sentences": split_into_sentences(rec["text"].as_str().expect("text"))})
                }
                other => panic!("unknown record kind {other:?}"),
            };
            writeln!(out, "{answer}").expect("write");
        }
    }

    #[test]
    fn yaml_cases_agree() {
        #[derive(serde::Deserialize)]
        struct Item {
            instruction_id_list: Vec<String>,
            kwargs: Vec<Map<String, Value>>,
        }
        #[derive(serde::Deserialize)]
        struct Expect {
            reward: f64,
        }
        #[derive(serde::Deserialize)]
        struct Case {
            name: String,
            item: Item,
            output: String,
            expect: Expect,
        }
        #[derive(serde::Deserialize)]
        struct Suite {
            cases: Vec<Case>,
        }
        #[derive(serde::Deserialize)]
        struct Corpus {
            exploits: Vec<Exploit>,
        }
        #[derive(serde::Deserialize)]
        struct Exploit {
            #[serde(rename = "exploit")]
            name: String,
            item: Item,
            output: String,
        }
        // The same files run through the whole component in the suite and exploit tests; here
        // they run against the checkers alone, and every id must have a pass and a fail case.
        let root = env!("CARGO_MANIFEST_DIR");
        let suite: Suite = serde_yaml_ng::from_str(
            &std::fs::read_to_string(format!("{root}/tests/suite/ifeval.tulu.yaml"))
                .expect("ifeval.tulu.yaml"),
        )
        .expect("cases parse");
        let cases = suite.cases;
        let mut seen: HashSet<(String, bool)> = HashSet::new();
        let mut wrong = Vec::new();
        for case in &cases {
            let id = &case.item.instruction_id_list[0];
            let got = check(id, &case.item.kwargs[0], &case.output).expect("known id");
            let pass = case.expect.reward == 1.0;
            if got != Ok(pass) {
                wrong.push(format!("{}: got {got:?}", case.name));
            }
            seen.insert((id.clone(), pass));
        }
        assert!(wrong.is_empty(), "cases disagree:\n{}", wrong.join("\n"));
        for id in IDS {
            assert!(
                seen.contains(&((*id).to_owned(), true))
                    && seen.contains(&((*id).to_owned(), false)),
                "{id} lacks a pass or a fail case"
            );
        }
        let exploits = serde_yaml_ng::from_str::<Corpus>(
            &std::fs::read_to_string(format!("{root}/../../fixtures/exploits/ifeval.tulu.yaml"))
                .expect("ifeval.tulu.yaml"),
        )
        .expect("exploits parse")
        .exploits;
        assert!(!exploits.is_empty());
        let accepted: Vec<&str> = exploits
            .iter()
            .filter(|e| {
                check(&e.item.instruction_id_list[0], &e.item.kwargs[0], &e.output)
                    != Some(Ok(false))
            })
            .map(|e| e.name.as_str())
            .collect();
        assert!(accepted.is_empty(), "exploits not rejected: {accepted:?}");
    }
}
