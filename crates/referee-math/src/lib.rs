//! Math answer extraction and equivalence, for rewards on math problems.
//!
//! Standalone: no workspace dependency, no Python, no SymPy, no processes, no signals. Every call
//! is bounded by [`Limits`], so hostile input (`9^{9^{9^9}}`, 5,000 nested braces, a megabyte of
//! digits) returns [`Status::TooComplex`] quickly instead of hanging.
//!
//! ```
//! use referee_math::{Answer, Gold, Options, Status, Verifier};
//! let v = Verifier::new(Options::default());
//! let verdict = v.verify(Gold(r"\frac{1}{2}"), Answer(r"so the answer is $\boxed{0.5}$"));
//! assert_eq!(verdict.status, Status::Correct);
//! ```
//!
//! The roles are newtypes ([`Gold`], [`Answer`]) because `verify(gold, pred)` is easy to call
//! backwards and the two sides are not treated alike: the gold is parsed as a bare answer (or
//! extracted from a worked solution, [`GoldForm::Solution`]), the answer is extracted from a
//! completion.
//!
//! # Policies and their defaults
//! Where reasonable graders disagree, [`Options`] says which way to go; see each field.
//!
//! # How a comparison runs
//! 1. Extraction ([`extract`]): the last marker wins; markers written back to back are one list.
//! 2. Parsing (`parse`): LaTeX and plain text to a tree that keeps structure (sets, tuples,
//!    intervals, relations, matrices) and keeps arithmetic unevaluated.
//! 3. Comparison (`compare`): by the gold's type. Numbers are exact big rationals while the
//!    arithmetic allows; a decimal gold is matched to its written precision; a decimal answer
//!    that only approximates an exact gold (`0.3333` for `\frac13`) is wrong unless
//!    [`Options::approximate`] says otherwise (the MATH convention); anything with a variable is
//!    evaluated at rational points seeded from the gold (six positive, three negative).
//!
//! # Known limits
//! - Irrational constants (`\sqrt2`, `\pi`, `e`, logs, trig) are evaluated in `f64`. Two
//!   floating values are equal within 1e-11 relative; a floating value and an exact rational
//!   within 1e-13 (so `\frac{103993}{33102}` is not π, but a closer rational would pass); and
//!   `0` equals a floating value below 1e-15 (`\sin\pi` must be 0, so `e^{-40}` is 0 too).
//! - Expressions with variables are compared at nine points (deterministic per gold): two
//!   different functions that agree at all of them would pass.
//! - Not parsed: `\sum`/`\prod`/`\int`, `cases` environments, set-builder notation, quantifiers
//!   (`\forall`): such answers are `unparseable_answer` (scored 0), such golds
//!   `unparseable_gold` (an error, never a silent score).

#![forbid(unsafe_code)]

mod arith;
mod canon;
mod compare;
mod eval;
mod expr;
mod extract;
mod num;
mod options;
mod parse;

pub use arith::{Arith, Claim, ClaimSide, ClaimStatus, Relation};
pub use extract::{extract, Extraction, Source};
pub use options::{
    AngleUnits, Approximate, ExtractMode, GoldForm, IntervalInequality, Limits, Options, Percent,
    Unevaluated, UnreducedFractions,
};
pub use parse::{parse, Parsed};

/// The reference answer (ground truth).
#[derive(Debug, Clone, Copy)]
pub struct Gold<'a>(pub &'a str);

/// What the policy wrote: a full completion, from which the answer is extracted per
/// [`Options::extract`].
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a>(pub &'a str);

/// The outcome of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// The extracted answer equals the gold.
    Correct,
    /// An answer was found and parsed, and it is not equal to the gold (a hedge is wrong too).
    Wrong,
    /// No answer could be extracted from the completion.
    NoAnswer,
    /// An answer was extracted but could not be read as math.
    UnparseableAnswer,
    /// The gold could not be read: nobody can score this row. Never a silent 1 or 0.
    UnparseableGold,
    /// One side exceeded a [`Limits`] cap (length, nesting, exponent, factorial, steps).
    TooComplex,
}

impl Status {
    /// The stable snake_case reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Correct => "correct",
            Status::Wrong => "wrong",
            Status::NoAnswer => "no_answer",
            Status::UnparseableAnswer => "unparseable_answer",
            Status::UnparseableGold => "unparseable_gold",
            Status::TooComplex => "too_complex",
        }
    }

    /// Whether the row was scored on its merits (correct or wrong or a policy-side failure) as
    /// opposed to a gold that nobody can score against.
    pub fn is_gold_failure(self) -> bool {
        matches!(self, Status::UnparseableGold)
    }
}

/// Which side a [`Status::TooComplex`] or parse failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Gold,
    Answer,
}

/// Everything needed to explain a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub status: Status,
    /// For `TooComplex`: which side was too complex.
    pub side: Option<Side>,
    /// The extracted answer text and where it came from.
    pub extracted: Option<Extraction>,
    /// Canonical form of the gold, when it parsed.
    pub gold_form: Option<String>,
    /// Canonical form of the answer, when it parsed.
    pub answer_form: Option<String>,
    /// How the two were compared (`exact rational`, `set`, `interval`, `equation up to scaling`,
    /// `numeric at 6 points`, `decimal to gold precision`, ...), or why it stopped.
    pub detail: String,
}

impl Verdict {
    /// 1.0 for correct, 0.0 otherwise (callers that need the failure distinction read `status`).
    pub fn reward(&self) -> f64 {
        if self.status == Status::Correct {
            1.0
        } else {
            0.0
        }
    }
}

/// A verifier with its options fixed: build once, call from many threads.
#[derive(Debug, Clone)]
pub struct Verifier {
    opts: Options,
}

impl Verifier {
    pub fn new(opts: Options) -> Self {
        Verifier { opts }
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Extracts the answer from `answer` and compares it with `gold`.
    pub fn verify(&self, gold: Gold<'_>, answer: Answer<'_>) -> Verdict {
        compare::verify(&self.opts, gold.0, answer.0)
    }
}
