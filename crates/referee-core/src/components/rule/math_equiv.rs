//! # math_equiv
//! *What it scores:* whether the final answer of a math completion equals the gold answer
//! mathematically: `\frac{1}{2}` ≡ `0.5`, `\{2,1\}` ≡ `\{1,2\}`, `1 < x \le 3` ≡ `(1,3]`,
//! `2\sqrt3` ≡ `\sqrt{12}`, `(x+1)^2` ≡ `x^2+2x+1`, `y = 2x+1` ≡ `2x - y + 1 = 0`. Built on the
//! `referee-math` crate: native LaTeX parsing, exact big-rational arithmetic, no SymPy, every
//! call bounded.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`: the completion); `reference`
//! (template: the gold); and the policies, each with its default:
//! - `extract`: `strict` (default: the last `\boxed{}`/`\fbox{}`, `The final answer is X`,
//!   `Answer: X`, GSM8K `#### X`; the last marker wins, so a self-correction counts; markers
//!   written back to back are one list, a hedge unless the gold is a set; never "the last
//!   number in the text"), `boxed` (boxes only), `lenient` (strict, then the last number
//!   anywhere: for evaluation, it rewards lazy answers), `none` (the input is the bare answer).
//! - `gold`: `bare` (default: the reference is the answer) or `solution` (a worked MATH/GSM8K
//!   solution; its marked answer is used).
//! - `percent`: `either` (default: when one side writes `%`, `25\%` ≡ `25` ≡ `0.25`; with no `%`
//!   on either side `50` ≢ `0.5`), `marker` (`25\%` ≡ `25` only), `fraction` (`25\%` ≡ `0.25` only).
//! - `interval_inequality`: `equivalent` (default), `gold_inequality_only` (Math-Verify's
//!   rule: an inequality gold accepts an interval, not the reverse), `never`.
//! - `unreduced_fractions`: `accept` (default) or `reject` (`\frac{6}{8}` against `\frac34`).
//! - `angles`: `convert` (default: `45^\circ` ≡ `\frac{\pi}{4}` when one side writes degrees) or
//!   `marker` (`45^\circ` ≡ `45` only).
//! - `unevaluated`: `reject` (default: against a gold written as a number, `2+2`, `\sqrt{16}`
//!   or `2^{10}` restate instead of compute and score 0) or `accept`.
//! - `approximate`: whether a decimal answer may stand for an exact gold that has no terminating
//!   decimal (`0.3333` for `\frac13`, `6.2832` for `2\pi`, `1.414` for `\sqrt2`). Default
//!   `never`: the MATH convention (Hendrycks MATH, PRM800K) asks for the exact form, so such an
//!   answer scores 0 and the trace says why. Opt in with one of
//!   `{significant_digits: N}` (correctly rounded to at least N significant digits: with 4,
//!   `0.3333` and `3.1416` pass, `3.14` and the truncated `3.1415` do not),
//!   `{decimal_places: N}` (Math-Verify's `float_rounding`, 6 there: both sides rounded to N
//!   places agree, `0.333333` passes, `0.3333` does not; a non-zero gold that rounds to 0 is
//!   never matched) or `{rel_tol: t}` (Qwen2.5-Math's and prime_math's `isclose`, 1e-4 there:
//!   `|a − g| ≤ t · max(|a|, |g|)`). Under every setting a terminating gold is exact (`0.25` ≡
//!   `\frac14`, `72.0` ≡ `72`, and `0.0009766` ≢ `\frac{1}{1024}`), so integer answers are
//!   never approximated; a repeating decimal is exact (`0.\overline{3}` ≡ `\frac13`); a decimal
//!   gold is matched to its written precision (`3.14` accepts `\pi`); an exact answer that goes
//!   on to approximate (`2\pi \approx 6.28`, `\frac13 = 0.333\ldots`) answers with its exact
//!   part; entries of tuples, sets and intervals follow the same rule.
//! - `extra_units`: words to strip after a number besides the built-in unit whitelist
//!   (`5 \text{ apples}` is text unless `apples` is listed; trailing text is never dropped
//!   wholesale, so `1 \text{ or } 2` stays a hedge).
//!
//! *Example:*
//! ```yaml
//! type: math_equiv
//! name: correct
//! reference: "{{item.answer}}"
//! extract: strict
//! ```
//!
//! *Score and failure modes:* 1 when equal, else 0. The trace says what was extracted and
//! from where, both canonical forms, the comparison used and a status: `correct`, `wrong`
//! (a hedge is wrong), `no_answer`, `unparseable_answer`, `too_complex` (an answer over the
//! caps: length, nesting, exponent, factorial size, steps). Those score 0 with status ok: the
//! policy wrote them. A decimal approximation of an exact gold is `wrong` under the default
//! `approximate: never`, with the note "a decimal approximation of an exact gold; the MATH
//! convention asks for the exact form". A gold that cannot be read fails with
//! `unparseable_gold` (a literal one is a compile error), a gold over the caps with
//! `too_complex`: never a silent 1 or 0.

use crate::compile::{sync, At, Compiler};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::{render_pair, Template};
use referee_math as rm;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MathEquivSpec {
    /// The completion (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The gold answer (template), e.g. `{{item.answer}}`.
    pub reference: String,
    #[serde(default)]
    pub extract: Extract,
    #[serde(default)]
    pub gold: GoldForm,
    #[serde(default)]
    pub percent: Percent,
    #[serde(default)]
    pub interval_inequality: IntervalInequality,
    #[serde(default)]
    pub unreduced_fractions: UnreducedFractions,
    #[serde(default)]
    pub angles: Angles,
    #[serde(default)]
    pub unevaluated: Unevaluated,
    /// Decimal approximations of an exact gold with no terminating decimal: `never` (default,
    /// the MATH convention), or accepted at a stated precision.
    #[serde(default)]
    pub approximate: Approximate,
    /// Unit words stripped after a number, besides the built-in whitelist.
    #[serde(default)]
    pub extra_units: Vec<String>,
}

/// Where the answer is looked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Extract {
    #[default]
    Strict,
    Boxed,
    Lenient,
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoldForm {
    #[default]
    Bare,
    Solution,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Percent {
    #[default]
    Either,
    Marker,
    Fraction,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalInequality {
    #[default]
    Equivalent,
    GoldInequalityOnly,
    Never,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnreducedFractions {
    #[default]
    Accept,
    Reject,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Angles {
    #[default]
    Convert,
    Marker,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unevaluated {
    #[default]
    Reject,
    Accept,
}

/// `approximate:`, the precision at which a decimal answer may stand for an exact gold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Approximate {
    /// The exact form is required (MATH, PRM800K).
    #[default]
    Never,
    /// Correctly rounded to at least this many significant digits (1 to 30).
    SignificantDigits(u32),
    /// Math-Verify's `float_rounding`: both sides rounded to this many decimal places agree
    /// (1 to 30).
    DecimalPlaces(u32),
    /// Qwen2.5-Math's `isclose`: `|a − g| ≤ rel_tol · max(|a|, |g|)` (above 0, at most 0.1).
    RelTol(f64),
}

pub struct MathEquiv {
    input: Template,
    reference: Template,
    verifier: rm::Verifier,
}

fn options(spec: &MathEquivSpec) -> rm::Options {
    rm::Options {
        extract: match spec.extract {
            Extract::Strict => rm::ExtractMode::STRICT,
            Extract::Boxed => rm::ExtractMode::BOXED,
            Extract::Lenient => rm::ExtractMode::LENIENT,
            Extract::None => rm::ExtractMode::Bare,
        },
        gold: match spec.gold {
            GoldForm::Bare => rm::GoldForm::Bare,
            GoldForm::Solution => rm::GoldForm::Solution,
        },
        percent: match spec.percent {
            Percent::Either => rm::Percent::Either,
            Percent::Marker => rm::Percent::Marker,
            Percent::Fraction => rm::Percent::Fraction,
        },
        interval_inequality: match spec.interval_inequality {
            IntervalInequality::Equivalent => rm::IntervalInequality::Equivalent,
            IntervalInequality::GoldInequalityOnly => rm::IntervalInequality::GoldInequalityOnly,
            IntervalInequality::Never => rm::IntervalInequality::Never,
        },
        unreduced_fractions: match spec.unreduced_fractions {
            UnreducedFractions::Accept => rm::UnreducedFractions::Accept,
            UnreducedFractions::Reject => rm::UnreducedFractions::Reject,
        },
        angles: match spec.angles {
            Angles::Convert => rm::AngleUnits::Convert,
            Angles::Marker => rm::AngleUnits::Marker,
        },
        unevaluated: match spec.unevaluated {
            Unevaluated::Reject => rm::Unevaluated::Reject,
            Unevaluated::Accept => rm::Unevaluated::Accept,
        },
        approximate: match spec.approximate {
            Approximate::Never => rm::Approximate::Never,
            Approximate::SignificantDigits(n) => rm::Approximate::SignificantDigits(n),
            Approximate::DecimalPlaces(n) => rm::Approximate::DecimalPlaces(n),
            Approximate::RelTol(t) => rm::Approximate::RelTol(t),
        },
        extra_units: spec.extra_units.clone(),
        limits: rm::Limits::default(),
    }
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    if v.get("min_significant_digits").is_some() {
        // The old default accepted 4-digit roundings; say what replaced it rather than
        // "unknown field", so a spec that relied on it is migrated on purpose.
        cx.err(
            at,
            Some("min_significant_digits"),
            "replaced by `approximate: {significant_digits: N}`: decimal approximations of an \
             exact gold now score 0 unless `approximate` is given",
        );
        return None;
    }
    let spec: MathEquivSpec = cx.spec(v, at)?;
    let bad = match spec.approximate {
        Approximate::Never => None,
        Approximate::SignificantDigits(n) | Approximate::DecimalPlaces(n) => {
            (!(1..=30).contains(&n)).then_some("the digits must be 1 to 30")
        }
        Approximate::RelTol(t) => {
            (!(t > 0.0 && t <= 0.1)).then_some("`rel_tol` must be above 0 and at most 0.1")
        }
    };
    if let Some(m) = bad {
        cx.err(at, Some("approximate"), m);
    }
    let approximate_ok = bad.is_none();
    let input = cx.input(spec.input.as_deref(), at);
    let reference = cx.template(&spec.reference, at, "reference");
    let verifier = rm::Verifier::new(options(&spec));
    if let Some(r) = &reference {
        if r.is_literal() {
            // A fixed gold is checked once, here, rather than failing every row.
            let v = verifier.verify(rm::Gold(r.source()), rm::Answer(""));
            if matches!(
                v.status,
                rm::Status::UnparseableGold | rm::Status::TooComplex
            ) && v.side != Some(rm::Side::Answer)
            {
                cx.err(
                    at,
                    Some("reference"),
                    format!("cannot be read: {}", shorten(&v.detail)),
                );
                return None;
            }
        }
    }
    if !approximate_ok {
        return None;
    }
    Some(sync(MathEquiv {
        input: input?,
        reference: reference?,
        verifier,
    }))
}

impl SyncComponent for MathEquiv {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let (input, gold) = match render_pair(&self.input, &self.reference, s) {
            Ok(pair) => pair,
            Err(m) => return m.outcome(cx),
        };
        let v = self.verifier.verify(rm::Gold(&gold), rm::Answer(&input));
        let gold_failed = v.status == rm::Status::UnparseableGold
            || (v.status == rm::Status::TooComplex && v.side == Some(rm::Side::Gold));
        if gold_failed {
            return Outcome::error(v.status.as_str(), shorten(&v.detail));
        }
        cx.note(|| describe(&v));
        Outcome::bool(v.status == rm::Status::Correct)
    }
}

/// `correct: extracted `0.5` (boxed); gold 1/2, answer 0.5; exact`.
fn describe(v: &rm::Verdict) -> String {
    use std::fmt::Write;
    let mut out = v.status.as_str().to_string();
    if let Some(ex) = &v.extracted {
        let _ = write!(
            out,
            ": extracted `{}` ({})",
            shorten(&ex.text()),
            ex.source.as_str()
        );
    }
    match (&v.gold_form, &v.answer_form) {
        (Some(g), Some(a)) => {
            let _ = write!(out, "; gold {}, answer {}", shorten(g), shorten(a));
        }
        (Some(g), None) => {
            let _ = write!(out, "; gold {}", shorten(g));
        }
        _ => {}
    }
    if !v.detail.is_empty() {
        out.push_str("; ");
        out.push_str(&v.detail);
    }
    out
}
