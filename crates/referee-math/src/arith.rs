//! Checking stated arithmetic: is `48 / 6 = 8` true? Both sides are parsed by the same parser as
//! answers and evaluated by the same evaluator (exact big rationals, `f64` once an irrational
//! enters), so a claim is read the way an answer would be. One [`Arith`] checks the claims of one
//! text and charges them all to one step budget: a text cannot buy more work by stating more.
//!
//! ```
//! use referee_math::{Arith, ClaimStatus, Limits, Relation};
//! let mut a = Arith::new(Limits::default());
//! assert_eq!(a.check("48/6", Relation::Equal, "8", 0.0).status, ClaimStatus::Holds);
//! assert_eq!(a.check("10/3", Relation::Equal, "3.33", 0.0).status, ClaimStatus::Holds);
//! assert_eq!(a.check("10/3", Relation::Equal, "3", 0.0).status, ClaimStatus::Fails);
//! ```
//!
//! # Precision
//! A side written as a bare decimal (`3.33`, `-0.5`, `12.5%`) is a rounding of the other side to
//! its written places: it holds when it is within half a unit of its last digit, a tie either way
//! (`10/3 = 3.33`, `10/3 = 3.3`, `3/8 = 0.38` and `3/8 = 0.37` hold; `10/3 = 3.34` does not). An
//! integer (or a whole decimal such as `3.0`, or `0.00`) is exact: `10/3 = 3` fails. With
//! [`Relation::Approx`] (`≈`) an integer is a rounding too, to its last non-zero digit
//! (`1000 + 234 ≈ 1200`, `10/3 ≈ 3`). `%` means /100 on both sides (`20% \cdot 50 = 10`, `50% = 0.5`).

use crate::compare::precision::{approx_eq, decimal_places, half_unit};
use crate::eval::{eval, Env, Reading};
use crate::expr::Expr;
use crate::num::{q_to_f64, Budget, EvalError, Num, Q};
use crate::options::Limits;
use crate::parse::{parse_with, ParseError};
use num_bigint::BigInt;
use num_traits::{Signed, Zero};

/// How the two sides are claimed to relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// `=`: equal, a bare decimal side to its written precision.
    Equal,
    /// `≈`: the stated side is a rounding of the other, integers included.
    Approx,
}

impl Relation {
    pub fn symbol(self) -> &'static str {
        match self {
            Relation::Equal => "=",
            Relation::Approx => "≈",
        }
    }
}

/// Which side of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimSide {
    Left,
    Right,
}

impl ClaimSide {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimSide::Left => "left",
            ClaimSide::Right => "right",
        }
    }
}

/// The verdict on one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClaimStatus {
    /// Both sides have values and they agree.
    Holds,
    /// Both sides have values and they differ.
    Fails,
    /// Both sides are bare numbers of the same value (`1 = 1`, `8 = 8.0`): true, and says
    /// nothing; callers should not count it as a correct computation.
    Tautology,
    /// A side has no value (division by zero, `0^{-1}`): the claim cannot be true.
    Undefined(ClaimSide),
    /// A side is over a [`Limits`] cap (`9^{9^{9^9}}`, 100,000 digits) or the shared step budget
    /// ran out: the claim cannot be verified.
    TooComplex(ClaimSide, &'static str),
    /// A side is not a closed arithmetic expression (a variable, a list, text, infinity).
    NotArithmetic(ClaimSide),
    /// A side could not be parsed at all.
    Unreadable(ClaimSide, String),
}

impl ClaimStatus {
    /// A stable snake_case word for traces.
    pub fn as_str(&self) -> &'static str {
        match self {
            ClaimStatus::Holds => "holds",
            ClaimStatus::Fails => "fails",
            ClaimStatus::Tautology => "tautology",
            ClaimStatus::Undefined(_) => "undefined",
            ClaimStatus::TooComplex(..) => "too_complex",
            ClaimStatus::NotArithmetic(_) => "not_arithmetic",
            ClaimStatus::Unreadable(..) => "unreadable",
        }
    }
}

/// One checked claim: the verdict, both values as shown to people, and how they were compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub status: ClaimStatus,
    /// The left side's value (`8`, `10/3`, `1.4142135623731`), when it has one.
    pub lhs: Option<String>,
    /// The right side's value, when it has one.
    pub rhs: Option<String>,
    /// `exact`, `to the written precision of 3.33`, `within tolerance`, `numeric`, or empty.
    pub how: String,
}

/// A checker for the claims of one text; build one per text, since its budget is shared.
#[derive(Debug)]
pub struct Arith {
    limits: Limits,
    budget: Budget,
}

/// `%` is /100 on both sides of a claim: `50% = 0.5` is the claim that makes sense.
const READING: Reading = Reading {
    percent_fraction: true,
    degrees_radians: false,
};

impl Arith {
    pub fn new(limits: Limits) -> Self {
        Arith {
            limits,
            budget: Budget::new(limits),
        }
    }

    /// Evaluation steps spent so far, across every claim checked.
    pub fn steps(&self) -> u64 {
        self.budget.steps
    }

    /// Checks `lhs rel rhs`. `tolerance` (relative, ≥ 0) loosens the comparison:
    /// `|l − r| ≤ tolerance · max(|l|, |r|)` also holds.
    pub fn check(&mut self, lhs: &str, rel: Relation, rhs: &str, tolerance: f64) -> Claim {
        let mut out = Claim {
            status: ClaimStatus::Holds,
            lhs: None,
            rhs: None,
            how: String::new(),
        };
        let l = match self.side(lhs, ClaimSide::Left) {
            Ok(x) => x,
            Err(s) => {
                out.status = s;
                return out;
            }
        };
        let r = match self.side(rhs, ClaimSide::Right) {
            Ok(x) => x,
            Err(s) => {
                out.status = s;
                return out;
            }
        };
        let (lv, rv) = match (l.1, r.1) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(s), _) | (_, Err(s)) => {
                out.status = s;
                return out;
            }
        };
        out.lhs = Some(show(&lv));
        out.rhs = Some(show(&rv));
        let (holds, how) = compare((&l.0, &lv), (&r.0, &rv), rel, tolerance);
        out.how = how;
        out.status = match (holds, bare(&l.0) && bare(&r.0)) {
            (true, true) => ClaimStatus::Tautology,
            (true, false) => ClaimStatus::Holds,
            (false, _) => ClaimStatus::Fails,
        };
        out
    }

    /// One side parsed (`Err`: unreadable, not arithmetic, too long) and evaluated (the inner
    /// `Err`: no value, over a cap), so the right side is still read when the left has no value.
    #[allow(clippy::type_complexity)]
    fn side(
        &mut self,
        text: &str,
        side: ClaimSide,
    ) -> Result<(Expr, Result<Num, ClaimStatus>), ClaimStatus> {
        let p = match parse_with(text, &self.limits, &[]) {
            Ok(p) => p,
            Err(ParseError::TooComplex(m)) => return Err(ClaimStatus::TooComplex(side, m)),
            Err(ParseError::Syntax(m)) => return Err(ClaimStatus::Unreadable(side, m)),
        };
        let e = p.expr;
        let closed = e.is_constant()
            && !e.is_structure()
            && !e.any(|x| {
                matches!(
                    x,
                    Expr::Text(_)
                        | Expr::PlusMinus(..)
                        | Expr::Apply(..)
                        | Expr::Base { .. }
                        | Expr::Const(crate::expr::Const::Infinity)
                )
            });
        if !closed {
            return Err(ClaimStatus::NotArithmetic(side));
        }
        let env = Env {
            vars: &[],
            reading: READING,
        };
        let v = match eval(&e, &env, &mut self.budget) {
            Ok(v) => Ok(v),
            Err(EvalError::TooComplex(m)) => Err(ClaimStatus::TooComplex(side, m)),
            Err(EvalError::Undefined) => Err(ClaimStatus::Undefined(side)),
            Err(EvalError::NotNumeric) => Err(ClaimStatus::NotArithmetic(side)),
        };
        Ok((e, v))
    }
}

/// A bare number: digits with a sign or a point, nothing computed (`%` is a conversion, so
/// `50% = 0.5` is a claim).
fn bare(e: &Expr) -> bool {
    match e {
        Expr::Num(_) => true,
        Expr::Neg(a) => matches!(**a, Expr::Num(_)),
        _ => false,
    }
}

/// Half a unit of the last written digit of a bare stated number: of its last decimal place,
/// and with `≈` of an integer's last non-zero digit. `None` when the side is not a rounding.
fn stated_half_unit(e: &Expr, rel: Relation) -> Option<Q> {
    if let Some((p, _)) = decimal_places(e, true) {
        return Some(half_unit(p));
    }
    if rel != Relation::Approx {
        return None;
    }
    let (lit, percent) = match e {
        Expr::Num(l) => (l, false),
        Expr::Neg(a) | Expr::Percent(a) => match &**a {
            Expr::Num(l) => (l, matches!(e, Expr::Percent(_))),
            _ => return None,
        },
        _ => return None,
    };
    if !lit.value.is_integer() {
        return None;
    }
    let mut n = lit.value.to_integer().abs();
    let mut unit = BigInt::from(1);
    let ten = BigInt::from(10);
    while !n.is_zero() && (&n % &ten).is_zero() && unit.bits() < 4096 {
        n /= &ten;
        unit *= &ten;
    }
    let half = Q::new(unit, BigInt::from(2));
    Some(if percent {
        half / Q::from_integer(BigInt::from(100))
    } else {
        half
    })
}

fn compare(l: (&Expr, &Num), r: (&Expr, &Num), rel: Relation, tol: f64) -> (bool, String) {
    let exact = matches!((l.1, r.1), (Num::Exact { .. }, Num::Exact { .. }));
    if exact && l.1 == r.1 {
        return (true, "exact".into());
    }
    if !exact && approx_eq(l.1, r.1) {
        return (true, "numeric".into());
    }
    // The stated rounding: the right side when it is a bare number, else the left.
    let stated = stated_half_unit(r.0, rel)
        .map(|h| (h, r.0))
        .or_else(|| stated_half_unit(l.0, rel).map(|h| (h, l.0)));
    if let Some((half, e)) = stated {
        let shown = crate::canon::show(e);
        let within = if let (Some(a), Some(b)) = (l.1.as_real_exact(), r.1.as_real_exact()) {
            (a - b).abs() <= half
        } else {
            let (a, ai) = l.1.to_c64();
            let (b, bi) = r.1.to_c64();
            (a - b).hypot(ai - bi) <= q_to_f64(&half) * (1.0 + 1e-12)
        };
        if within {
            return (true, format!("to the written precision of {shown}"));
        }
    }
    if tol > 0.0 {
        let (a, ai) = l.1.to_c64();
        let (b, bi) = r.1.to_c64();
        let d = (a - b).hypot(ai - bi);
        if d.is_finite() && d <= tol * a.hypot(ai).max(b.hypot(bi)) {
            return (true, format!("within relative tolerance {tol}"));
        }
    }
    (false, if exact { "exact" } else { "numeric" }.into())
}

/// A value for people: `8`, `-10/3`, `1.4142135623731`, `2i`; a huge integer by its leading
/// digits and length.
fn show(v: &Num) -> String {
    match v {
        Num::Exact { re, im } if im.is_zero() => show_q(re),
        Num::Exact { re, im } => format!("{} + {}i", show_q(re), show_q(im)),
        Num::Approx { re, im } if *im == 0.0 => show_f(*re),
        Num::Approx { re, im } => format!("{} + {}i", show_f(*re), show_f(*im)),
    }
}

fn show_q(q: &Q) -> String {
    let cut = |s: String| {
        if s.len() > 40 {
            format!("{}…({} digits)", &s[..20], s.trim_start_matches('-').len())
        } else {
            s
        }
    };
    if q.is_integer() {
        cut(q.numer().to_string())
    } else if let Some(d) = terminating(q) {
        d
    } else {
        format!(
            "{}/{}",
            cut(q.numer().to_string()),
            cut(q.denom().to_string())
        )
    }
}

/// `333/100` as `3.33`, when the denominator is 2^a·5^b and the decimal is short.
fn terminating(q: &Q) -> Option<String> {
    let (two, five) = (BigInt::from(2), BigInt::from(5));
    let mut d = q.denom().clone();
    let mut k = 0usize;
    let (mut a, mut b) = (0usize, 0usize);
    while (&d % &two).is_zero() && a < 20 {
        d /= &two;
        a += 1;
    }
    while (&d % &five).is_zero() && b < 20 {
        d /= &five;
        b += 1;
    }
    if d != BigInt::from(1) {
        return None;
    }
    k += a.max(b);
    let scaled = (q * Q::from_integer(num_traits::pow(BigInt::from(10), k))).to_integer();
    let neg = scaled.is_negative();
    let digits = scaled.abs().to_string();
    if digits.len() > 40 {
        return None;
    }
    let digits = format!("{digits:0>width$}", width = k + 1);
    let (int, frac) = digits.split_at(digits.len() - k);
    Some(format!("{}{int}.{frac}", if neg { "-" } else { "" }))
}

fn show_f(x: f64) -> String {
    let s = format!("{x:.13}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(l: &str, r: &str) -> ClaimStatus {
        Arith::new(Limits::default())
            .check(l, Relation::Equal, r, 0.0)
            .status
    }

    fn approx(l: &str, r: &str) -> ClaimStatus {
        Arith::new(Limits::default())
            .check(l, Relation::Approx, r, 0.0)
            .status
    }

    #[test]
    fn exact_claims() {
        assert_eq!(st("48/6", "8"), ClaimStatus::Holds);
        assert_eq!(st("48 / 6", "9"), ClaimStatus::Fails);
        assert_eq!(st(r"\frac{3}{4} \times 8", "6"), ClaimStatus::Holds);
        assert_eq!(st("2^{10}", "1024"), ClaimStatus::Holds);
        assert_eq!(st("-3 + 5", "2"), ClaimStatus::Holds);
        assert_eq!(st("0.1 + 0.2", "0.3"), ClaimStatus::Holds);
        assert_eq!(st("1,000 * 3", "3000"), ClaimStatus::Holds);
        assert_eq!(st("5!", "120"), ClaimStatus::Holds);
        assert_eq!(st(r"\sqrt{2} \cdot \sqrt{2}", "2"), ClaimStatus::Holds);
        assert_eq!(st("3 + 5", "2 * 4"), ClaimStatus::Holds);
    }

    #[test]
    fn written_precision() {
        assert_eq!(st("10/3", "3.33"), ClaimStatus::Holds);
        assert_eq!(st("10/3", "3.3"), ClaimStatus::Holds);
        assert_eq!(st("10/3", "3.34"), ClaimStatus::Fails);
        assert_eq!(st("10/3", "3"), ClaimStatus::Fails);
        assert_eq!(st("10/3", "3.0"), ClaimStatus::Fails);
        assert_eq!(st("3/8", "0.38"), ClaimStatus::Holds);
        assert_eq!(st("3/8", "0.37"), ClaimStatus::Holds);
        assert_eq!(st("1/1000", "0.00"), ClaimStatus::Fails);
        assert_eq!(st(r"\sqrt{2}", "1.414"), ClaimStatus::Holds);
        assert_eq!(st(r"\sqrt{2}", "1.415"), ClaimStatus::Fails);
        // The stated decimal may be on the left.
        assert_eq!(st("3.33", "10/3"), ClaimStatus::Holds);
    }

    #[test]
    fn approximately() {
        assert_eq!(approx("10/3", "3"), ClaimStatus::Holds);
        assert_eq!(approx("1000 + 234", "1200"), ClaimStatus::Holds);
        // Two bare numbers say nothing computed, even when one rounds the other.
        assert_eq!(approx("1234", "1200"), ClaimStatus::Tautology);
        assert_eq!(approx("1234 + 100", "1200"), ClaimStatus::Fails);
        assert_eq!(approx(r"\sqrt{2}", "1.41"), ClaimStatus::Holds);
        assert_eq!(approx("22/7", "3.2"), ClaimStatus::Fails);
    }

    #[test]
    fn percent_is_a_hundredth() {
        assert_eq!(st(r"20\% \cdot 50", "10"), ClaimStatus::Holds);
        assert_eq!(st("50%", "0.5"), ClaimStatus::Holds);
        assert_eq!(st("50%", "50"), ClaimStatus::Fails);
    }

    #[test]
    fn tautologies_and_failures_without_a_value() {
        assert_eq!(st("1", "1"), ClaimStatus::Tautology);
        assert_eq!(st("8", "8.0"), ClaimStatus::Tautology);
        assert_eq!(st("1", "2"), ClaimStatus::Fails);
        assert_eq!(st("5/0", "0"), ClaimStatus::Undefined(ClaimSide::Left));
        assert!(matches!(
            st("9^{9^{9^9}}", "1"),
            ClaimStatus::TooComplex(ClaimSide::Left, _)
        ));
        let digits = "7".repeat(100_000);
        assert!(matches!(
            st(&digits, &digits),
            ClaimStatus::TooComplex(ClaimSide::Left, _)
        ));
        assert_eq!(
            st("x + 1", "2"),
            ClaimStatus::NotArithmetic(ClaimSide::Left)
        );
        assert!(matches!(
            st("2 +", "2"),
            ClaimStatus::Unreadable(ClaimSide::Left, _)
        ));
    }

    #[test]
    fn tolerance_loosens() {
        let mut a = Arith::new(Limits::default());
        assert_eq!(
            a.check("100/3", Relation::Equal, "33", 0.05).status,
            ClaimStatus::Holds
        );
        assert_eq!(
            a.check("100/3", Relation::Equal, "30", 0.05).status,
            ClaimStatus::Fails
        );
    }

    #[test]
    fn values_are_shown() {
        let c = Arith::new(Limits::default()).check("10/3", Relation::Equal, "3.33", 0.0);
        assert_eq!(c.lhs.as_deref(), Some("10/3"));
        assert_eq!(c.rhs.as_deref(), Some("3.33"));
        assert!(c.how.contains("3.33"), "{}", c.how);
        let c = Arith::new(Limits::default()).check("2^{300}", Relation::Equal, "1", 0.0);
        assert!(c.lhs.unwrap().contains("digits"));
    }

    #[test]
    fn the_budget_is_shared_across_claims() {
        let mut a = Arith::new(Limits {
            max_steps: 300,
            ..Limits::default()
        });
        let long = vec!["1"; 30].join("+");
        assert_eq!(
            a.check(&long, Relation::Equal, "30", 0.0).status,
            ClaimStatus::Holds
        );
        let over = (0..20).find(|_| {
            matches!(
                a.check(&long, Relation::Equal, "30", 0.0).status,
                ClaimStatus::TooComplex(_, "evaluation step budget")
            )
        });
        assert!(over.is_some_and(|k| k < 10), "{over:?}");
    }
}
