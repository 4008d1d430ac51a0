//! The knobs of the verifier. Defaults are the strict reward setting: never reward a guess,
//! accept every correct way of writing the answer that reasonable graders agree on.

/// Where the answer is looked for in a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractMode {
    /// The whole input is the answer (already extracted by the caller).
    Bare,
    /// Marked answers only, among the enabled sources. The **last** marker in the text wins
    /// (a self-correction after "No wait" or in a later sentence takes the later box); markers
    /// within one sentence (`\boxed{1}, \boxed{2}`, `$1$ or $2$`, `\boxed{3} (if odd)
    /// \boxed{4}`) form one answer list, a hedge unless the gold is a set or list. An answer
    /// followed by `?` is not an answer. Never falls back to "the last number in the text"
    /// unless `last_number`.
    Markers {
        /// `\boxed{..}` / `\fbox{..}`, brace-balanced.
        boxed: bool,
        /// `The final answer is X`, `the answer is X`, `Answer: X`, `Final answer: X`,
        /// `**Answer:** X` (the rest of that sentence or line; a box inside it is used).
        answer_phrase: bool,
        /// GSM8K `#### X` at the start of a line.
        hashes: bool,
        /// Lenient fallback, off in the strict reward mode: when nothing is marked, the last
        /// number (or `$..$` formula) in the text.
        last_number: bool,
    },
}

impl ExtractMode {
    /// Boxes, answer phrases and `####`; no unanchored fallback. The default.
    pub const STRICT: ExtractMode = ExtractMode::Markers {
        boxed: true,
        answer_phrase: true,
        hashes: true,
        last_number: false,
    };
    /// Only `\boxed{}` / `\fbox{}`.
    pub const BOXED: ExtractMode = ExtractMode::Markers {
        boxed: true,
        answer_phrase: false,
        hashes: false,
        last_number: false,
    };
    /// The strict markers, then the last number anywhere (verl "flexible"). Rewards lazy
    /// answers; for evaluation, not for rewards.
    pub const LENIENT: ExtractMode = ExtractMode::Markers {
        boxed: true,
        answer_phrase: true,
        hashes: true,
        last_number: true,
    };
}

/// How the gold string is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldForm {
    /// The gold is a bare answer (`\frac{1}{2}`, `(1, 2]`, `x = 3`). The default. A `\boxed{}`
    /// wrapper or surrounding `$..$` is still unwrapped.
    Bare,
    /// The gold is a worked solution (MATH-style, GSM8K-style): extract with the strict markers.
    Solution,
}

/// `25\%` against `25` and `0.25`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percent {
    /// Default. When one side writes `%`, it may be read either as a marker (`25\% ≡ 25`) or as a
    /// fraction (`25\% ≡ 0.25`). With no `%` on either side there is no scaling: `50` against
    /// `0.5` is wrong (the ×100 guess).
    Either,
    /// `%` is only a marker: `25\% ≡ 25`, `25\% ≢ 0.25`.
    Marker,
    /// `%` means /100: `25\% ≡ 0.25 ≡ \frac14`, `25\% ≢ 25`.
    Fraction,
}

/// `(1, 3)` against `1 < x < 3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalInequality {
    /// Default. An interval equals the inequality in one variable that describes it, both ways:
    /// `(1,3] ≡ 1 < x \le 3`, `[2,\infty) ≡ x \ge 2`.
    Equivalent,
    /// Math-Verify's asymmetric rule: an inequality gold accepts an interval answer, an interval
    /// gold does not accept an inequality (so "restating the inequality given" never scores).
    GoldInequalityOnly,
    /// Never: an interval answers an interval, an inequality an inequality.
    Never,
}

/// `\frac{6}{8}` against `\frac{3}{4}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnreducedFractions {
    /// Default: equal values are equal.
    Accept,
    /// When the gold is a fraction in lowest terms, the answer's written fraction must be in
    /// lowest terms too.
    Reject,
}

/// `45^\circ` against `\frac{\pi}{4}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AngleUnits {
    /// Default: when exactly one side writes degrees (`^\circ`, `°`, `\text{degrees}`), the
    /// other side may be in radians: `45^\circ ≡ \frac{\pi}{4}`. `45^\circ ≡ 45` always.
    Convert,
    /// Degrees are only a marker: `45^\circ ≡ 45`, `45^\circ ≢ \frac{\pi}{4}`.
    Marker,
}

/// `2+2` against gold `4`: restating the question's expression instead of computing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unevaluated {
    /// Default. When the gold is a number written as a literal (integer, decimal, fraction,
    /// mixed number, with sign, `%`, scientific notation), the answer must be a literal too:
    /// `2+2`, `2^{10}`, `\sqrt{16}`, `3!`, `\binom{5}{2}`, `52_8` (another base),
    /// `\sin 30^\circ` against a literal gold are wrong; so is any answer with a variable against
    /// a gold without one (`(x+3)^2 - x^2 - 6x` for 9). A decimal gold still accepts an
    /// irrational it rounds (`3.14` accepts `\pi`), and a degree gold its radian measure
    /// (`45^\circ` accepts `\frac{\pi}{4}`). A non-literal gold (`2\sqrt{3}`,
    /// `\frac{\pi}{4}`) accepts any equal expression.
    Reject,
    /// Any expression equal in value is accepted (Math-Verify's behaviour).
    Accept,
}

/// Whether a decimal answer may stand for an exact gold that has no terminating decimal
/// (`0.3333` for `\frac13`, `6.2832` for `2\pi`, `1.414` for `\sqrt2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Approximate {
    /// Default: never. Hendrycks MATH and PRM800K grade the exact form (their normalisers never
    /// equate `0.3333` with `\frac13`), and a reward that pays for `3.14` teaches a policy to
    /// stop at a calculator value.
    Never,
    /// Correctly rounded to at least this many significant digits: with 4, `0.3333 ≡ \frac13`
    /// and `3.1416 ≡ \pi`; `3.14 ≢ \pi` (too few), `3.1415 ≢ \pi` (truncated, not rounded).
    /// Referee's rule before the MATH-convention default.
    SignificantDigits(u32),
    /// Math-Verify's `float_rounding`: equal when both sides rounded to this many decimal
    /// places agree (its default is 6: `0.333333 ≡ \frac13`, `0.3333 ≢ \frac13`). Unlike
    /// Math-Verify, a non-zero gold that rounds to 0 is never matched (`0.0` for `2^{-99}`).
    DecimalPlaces(u32),
    /// Qwen2.5-Math's and prime_math's `isclose`: `|a − g| ≤ rel_tol · max(|a|, |g|)` (they use
    /// 1e-4). Here it only ever applies to a decimal answer against such a gold, never to
    /// integers or terminating values, so it cannot accept 53607 for 53608.
    RelTol(f64),
}

/// Hard caps that bound the work of every call. Exceeding one gives [`crate::Status::TooComplex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest completion scanned for an answer, in bytes (longer: only the last this-many bytes
    /// are scanned, cut at a char boundary).
    pub max_completion_bytes: usize,
    /// Longest extracted answer or gold, in bytes.
    pub max_answer_bytes: usize,
    /// Deepest nesting of braces, brackets and operators.
    pub max_depth: usize,
    /// Largest integer exponent evaluated exactly, and largest result size in bits.
    pub max_exponent: u32,
    pub max_bits: u64,
    /// Largest `n!` evaluated.
    pub max_factorial: u32,
    /// Evaluation steps (operations) across the whole comparison.
    pub max_steps: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_completion_bytes: 1 << 20,
            max_answer_bytes: 4096,
            max_depth: 64,
            max_exponent: 100_000,
            max_bits: 1 << 17,
            max_factorial: 3_000,
            max_steps: 200_000,
        }
    }
}

/// All policies. `Options::default()` is the strict reward setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub extract: ExtractMode,
    pub gold: GoldForm,
    pub percent: Percent,
    pub interval_inequality: IntervalInequality,
    pub unreduced_fractions: UnreducedFractions,
    pub angles: AngleUnits,
    pub unevaluated: Unevaluated,
    /// A decimal answer against an exact gold that has no terminating decimal (`\frac13`, `\pi`,
    /// `\sqrt2`): by default ([`Approximate::Never`]) it scores 0, as the MATH convention asks
    /// for the exact form; the other variants accept approximations at a stated precision.
    /// Unaffected: a decimal **gold** is matched to its own written precision, strictly within
    /// half a unit of its last digit (gold `3.14` accepts `\pi` and `3.1416`, not `3.1` or
    /// `3.145`); a terminating value is exact (`0.25 ≡ \frac14`, `18.0 ≡ 18`) and a rounding
    /// of it is wrong whatever this says; a repeating decimal (`0.\overline{3}`) is exact; an
    /// exact answer that goes on to approximate (`2\pi \approx 6.28`,
    /// `\frac13 = 0.333\ldots`) answers with its exact part.
    pub approximate: Approximate,
    /// Extra unit words stripped after a number, beyond the built-in whitelist (lengths, areas,
    /// volumes, masses, times, money, speeds, common physics units). A count noun such as
    /// `apples` is not a unit: list the ones a dataset uses. When both sides write a unit,
    /// the units must agree (`5 \text{ km}` is not `5 \text{ m}`).
    pub extra_units: Vec<String>,
    pub limits: Limits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            extract: ExtractMode::STRICT,
            gold: GoldForm::Bare,
            percent: Percent::Either,
            interval_inequality: IntervalInequality::Equivalent,
            unreduced_fractions: UnreducedFractions::Accept,
            angles: AngleUnits::Convert,
            unevaluated: Unevaluated::Reject,
            approximate: Approximate::Never,
            extra_units: Vec::new(),
            limits: Limits::default(),
        }
    }
}
