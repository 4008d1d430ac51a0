//! # length
//! *What it scores:* the length of the input, as a reward-shaping term: a range check, a linear
//! penalty, or DAPO's soft overlong punishment.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`); `unit` (required): `chars`
//! (Unicode scalar values, so combining marks count), `words` (separated by whitespace or by
//! zero-width spaces, which would otherwise glue words into one), or `tokens`: matches of
//! `\w+|[^\w\s]` (a word, or one punctuation mark). `tokens` approximates a model tokenizer
//! and does not equal one: BPE splits long and rare words into several tokens, so a policy that
//! glues words together (`thequickbrownfox`) looks shorter in `tokens` and `words` than it is;
//! use `chars` where that matters. `penalty`:
//! - `range` (default): 1 when `min` ≤ length ≤ `max`, else 0. Needs `min` or `max`.
//! - `linear`: 0 within `max` (and at or above `min`, if given), else −`per_unit` · excess,
//!   never below `floor` (optional, ≤ 0). Needs `max` and `per_unit`.
//! - `soft_overlong`: DAPO's overlong punishment with `max` (the maximum length) and `buffer`
//!   (the cache length): 0 when length ≤ `max` − `buffer`; (`max` − `buffer` − length) /
//!   `buffer` · `factor` inside the buffer; −`factor` beyond `max`. `factor` defaults to 1.
//!
//! *Example:*
//! ```yaml
//! type: length
//! unit: tokens
//! penalty: soft_overlong
//! max: 4096
//! buffer: 512
//! ```
//!
//! *Score and failure modes:* `range`: 1 or 0; `linear`: ≤ 0; `soft_overlong`: in
//! [−`factor`, 0]. Never fails at runtime. Compile errors: a negative bound, `min` > `max`,
//! `buffer` > `max` or 0, a field the chosen penalty needs but lacks, or one it does not use.

use crate::compile::{sync, At, Compiler, Number};
use crate::components::rule::scan::{is_space, is_word};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::LazyLock;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthSpec {
    /// What is measured (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// What is counted: `chars`, `words` or `tokens` (approximate).
    pub unit: LengthUnit,
    /// `range` (default), `linear` or `soft_overlong`.
    #[serde(default)]
    pub penalty: LengthPenalty,
    #[serde(default)]
    pub min: Option<Number>,
    #[serde(default)]
    pub max: Option<Number>,
    /// `linear`: penalty per unit beyond the bounds.
    #[serde(default)]
    pub per_unit: Option<Number>,
    /// `linear`: the lowest value (≤ 0).
    #[serde(default)]
    pub floor: Option<Number>,
    /// `soft_overlong`: the length of the punishment ramp before `max`.
    #[serde(default)]
    pub buffer: Option<Number>,
    /// `soft_overlong`: the punishment at `max` and beyond (default 1).
    #[serde(default)]
    pub factor: Option<Number>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    Chars,
    Words,
    Tokens,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LengthPenalty {
    #[default]
    Range,
    Linear,
    SoftOverlong,
}

enum Shape {
    Range {
        min: f64,
        max: f64,
    },
    Linear {
        min: f64,
        max: f64,
        per_unit: f64,
        floor: f64,
    },
    SoftOverlong {
        max: f64,
        buffer: f64,
        factor: f64,
    },
}

pub struct Length {
    input: Template,
    unit: LengthUnit,
    shape: Shape,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: LengthSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let mut ok = true;
    let fields = [
        ("min", spec.min),
        ("max", spec.max),
        ("per_unit", spec.per_unit),
        ("floor", spec.floor),
        ("buffer", spec.buffer),
        ("factor", spec.factor),
    ];
    for (field, x) in fields {
        let Some(Number(v)) = x else { continue };
        if field == "floor" && v > 0.0 {
            cx.err(
                at,
                Some(field),
                format!("`floor` must be ≤ 0 (it is the lowest reward), found {v}"),
            );
            ok = false;
        } else if field != "floor" && v < 0.0 {
            cx.err(at, Some(field), format!("`{field}` must be ≥ 0, found {v}"));
            ok = false;
        }
    }
    let (pname, used, needed): (&str, &[&str], &[&str]) = match spec.penalty {
        LengthPenalty::Range => ("range", &["min", "max"], &[]),
        LengthPenalty::Linear => (
            "linear",
            &["min", "max", "per_unit", "floor"],
            &["max", "per_unit"],
        ),
        LengthPenalty::SoftOverlong => (
            "soft_overlong",
            &["max", "buffer", "factor"],
            &["max", "buffer"],
        ),
    };
    for (field, x) in fields {
        if x.is_some() && !used.contains(&field) {
            cx.err(
                at,
                Some(field),
                format!("`{field}` is not used by `penalty: {pname}`"),
            );
            ok = false;
        }
        if x.is_none() && needed.contains(&field) {
            cx.err(at, None, format!("`penalty: {pname}` needs `{field}`"));
            ok = false;
        }
    }
    let get = |x: Option<Number>| x.map(|n| n.0);
    let (min, max) = (get(spec.min), get(spec.max));
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            cx.err(
                at,
                Some("min"),
                format!("`min` ({lo}) is greater than `max` ({hi})"),
            );
            ok = false;
        }
    }
    let shape = match spec.penalty {
        LengthPenalty::Range => {
            if min.is_none() && max.is_none() {
                cx.err(at, None, "`penalty: range` needs `min`, `max` or both");
                ok = false;
            }
            Shape::Range {
                min: min.unwrap_or(0.0),
                max: max.unwrap_or(f64::INFINITY),
            }
        }
        LengthPenalty::Linear => Shape::Linear {
            min: min.unwrap_or(0.0),
            max: max.unwrap_or(0.0),
            per_unit: get(spec.per_unit).unwrap_or(0.0),
            floor: get(spec.floor).unwrap_or(f64::NEG_INFINITY),
        },
        LengthPenalty::SoftOverlong => {
            let buffer = get(spec.buffer);
            if let (Some(b), Some(m)) = (buffer, max) {
                if b == 0.0 || b > m {
                    cx.err(
                        at,
                        Some("buffer"),
                        format!("`buffer` ({b}) must be > 0 and ≤ `max` ({m})"),
                    );
                    ok = false;
                }
            }
            Shape::SoftOverlong {
                max: max.unwrap_or(0.0),
                buffer: buffer.unwrap_or(1.0),
                factor: get(spec.factor).unwrap_or(1.0),
            }
        }
    };
    let input = input?;
    ok.then(|| {
        sync(Length {
            input,
            unit: spec.unit,
            shape,
        })
    })
}

static TOKENS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\w+|[^\w\s]").expect("valid token regex"));

/// The length of `text` in `unit`, without allocating.
fn measure(text: &str, unit: LengthUnit) -> usize {
    let b = text.as_bytes();
    match unit {
        LengthUnit::Chars => text.chars().count(),
        LengthUnit::Words => match count_starts(b, word_start) {
            (n, true) => n,
            _ => text.split(is_word_break).filter(|w| !w.is_empty()).count(),
        },
        LengthUnit::Tokens => match count_starts(b, token_start) {
            (n, true) => n,
            _ => TOKENS.find_iter(text).count(),
        },
    }
}

/// Counts the bytes `c` of `b` (with the byte `p` before them; a space before the first) where
/// `start(p, c)` holds, and says whether `b` is all ASCII (the count is only meaningful then).
/// One branch-free pass that the compiler vectorizes; `length` is a full scan of every output,
/// so this is its whole cost.
fn count_starts(b: &[u8], start: impl Fn(u8, u8) -> bool) -> (usize, bool) {
    let mut n = 0usize;
    let mut high = 0u8;
    let mut prev = b' ';
    // Counting in a u8 keeps 16 bytes in each vector step; a chunk of 255 cannot overflow it.
    for chunk in b.chunks(255) {
        let mut m = u8::from(start(prev, chunk[0]));
        high |= chunk[0];
        for (&p, &c) in chunk.iter().zip(&chunk[1..]) {
            m += u8::from(start(p, c));
            high |= c;
        }
        n += usize::from(m);
        prev = chunk[chunk.len() - 1];
    }
    (n, high < 0x80)
}

/// A token starts at every punctuation byte and at a word byte after a non-word byte.
fn token_start(p: u8, c: u8) -> bool {
    !is_space(c) & !(is_word(c) & is_word(p))
}

/// A word starts at a non-space byte after a space.
fn word_start(p: u8, c: u8) -> bool {
    !is_space(c) & is_space(p)
}

/// Whitespace, and the invisible spaces that are not Unicode whitespace but would glue words
/// together (zero-width space, word joiner, BOM, Mongolian vowel separator).
fn is_word_break(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{200b}' | '\u{2060}' | '\u{feff}' | '\u{180e}')
}

impl Shape {
    fn value(&self, len: f64) -> f64 {
        match *self {
            Shape::Range { min, max } => f64::from(u8::from(min <= len && len <= max)),
            Shape::Linear {
                min,
                max,
                per_unit,
                floor,
            } => {
                let excess = (len - max).max(min - len).max(0.0);
                if excess == 0.0 {
                    0.0
                } else {
                    (-per_unit * excess).max(floor)
                }
            }
            Shape::SoftOverlong {
                max,
                buffer,
                factor,
            } => {
                let expected = max - buffer;
                if len <= expected {
                    0.0
                } else if len <= max {
                    (expected - len) / buffer * factor
                } else {
                    -factor
                }
            }
        }
    }
}

impl SyncComponent for Length {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let n = measure(&text, self.unit);
        let v = self.shape.value(n as f64);
        cx.note(|| {
            let unit = match self.unit {
                LengthUnit::Chars => "chars",
                LengthUnit::Words => "words",
                LengthUnit::Tokens => "tokens (approximate)",
            };
            let bounds = match self.shape {
                Shape::Range { min, max } => format!("range [{min}, {max}]"),
                Shape::Linear {
                    min, max, per_unit, ..
                } => format!("linear, 0 within [{min}, {max}], −{per_unit} per unit beyond"),
                Shape::SoftOverlong { max, buffer, .. } => {
                    format!("soft overlong, max {max}, buffer {buffer}")
                }
            };
            format!("{n} {unit}; {bounds}")
        });
        // -0.0 reads badly in results
        Outcome::ok(v + 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `\w+|[^\w\s]` matches in ASCII text, counted without the regex engine.
    fn ascii_tokens(b: &[u8]) -> usize {
        count_starts(b, token_start).0
    }

    #[test]
    fn counts() {
        assert_eq!(measure("héllo wörld", LengthUnit::Chars), 11);
        assert_eq!(measure("👍🏽", LengthUnit::Chars), 2);
        assert_eq!(measure("  a \n b\t c  ", LengthUnit::Words), 3);
        assert_eq!(
            measure("a\u{200b}b\u{2060}c\u{3000}d\u{a0}e", LengthUnit::Words),
            5
        );
        assert_eq!(measure("\u{200b}\u{200b}", LengthUnit::Words), 0);
        assert_eq!(measure("", LengthUnit::Words), 0);
        assert_eq!(measure("Hello, world! It's 3.5", LengthUnit::Tokens), 10);
        assert_eq!(measure("日本語 です", LengthUnit::Tokens), 2);
    }

    #[test]
    fn ascii_fast_path_equals_the_regex() {
        let mut x: u32 = 7;
        for _ in 0..2000 {
            let s: String = (0..40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    char::from((x % 128) as u8)
                })
                .collect();
            assert_eq!(
                ascii_tokens(s.as_bytes()),
                TOKENS.find_iter(&s).count(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn ascii_fast_paths_equal_the_general_ones() {
        let mut x: u32 = 11;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..2000 {
            // Up to three counting chunks long.
            let len = next() % 700;
            let s: String = (0..len)
                .map(|_| {
                    let r = next();
                    // Mostly the bytes that matter here, some of any ASCII, a few non-ASCII.
                    match r % 10 {
                        0..=3 => char::from(b" \t\n\r\x0b\x0cab_9.,"[(r / 10) as usize % 12]),
                        4..=8 => char::from((r / 10 % 128) as u8),
                        _ => ['é', '\u{200b}', '\u{a0}', '日'][(r / 10) as usize % 4],
                    }
                })
                .collect();
            let words = s.split(is_word_break).filter(|w| !w.is_empty()).count();
            let tokens = TOKENS.find_iter(&s).count();
            assert_eq!(measure(&s, LengthUnit::Words), words, "{s:?}");
            assert_eq!(measure(&s, LengthUnit::Tokens), tokens, "{s:?}");
            assert_eq!(count_starts(s.as_bytes(), token_start).1, s.is_ascii());
        }
        // Many counting chunks.
        let long = "ab, c".repeat(300_000);
        assert_eq!(measure(&long, LengthUnit::Tokens), 600_001);
        assert_eq!(measure(&long, LengthUnit::Words), 300_001);
    }

    #[test]
    fn shapes() {
        let r = Shape::Range { min: 2.0, max: 4.0 };
        assert_eq!(
            [1.0, 2.0, 4.0, 5.0].map(|l| r.value(l)),
            [0.0, 1.0, 1.0, 0.0]
        );
        let l = Shape::Linear {
            min: 10.0,
            max: 20.0,
            per_unit: 0.1,
            floor: -1.0,
        };
        assert_eq!(
            [15.0, 25.0, 5.0, 1000.0].map(|x| l.value(x)),
            [0.0, -0.5, -0.5, -1.0]
        );
        // DAPO: max 20480, cache 4096 → punishment starts after 16384.
        let d = Shape::SoftOverlong {
            max: 20480.0,
            buffer: 4096.0,
            factor: 1.0,
        };
        assert_eq!(
            [16384.0, 18432.0, 20480.0, 30000.0].map(|x| d.value(x)),
            [0.0, -0.5, -1.0, -1.0]
        );
    }
}
