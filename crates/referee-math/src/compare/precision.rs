//! Written precision and floating equality: a decimal matches to half a unit of its last
//! digit, `≈` must be a correct rounding, and values that went through `f64` are equal within
//! a relative bound.

use super::Cx;
use crate::eval::{eval, Env, Reading, PLAIN};
use crate::expr::{Expr, Lit};
use crate::num::{q_to_f64, Num, Q};
use crate::options::Approximate;
use num_traits::{Signed, Zero};

/// Why a decimal approximation of an exact gold scores 0 by default (also the trace note).
pub(crate) const EXACT_FORM_NOTE: &str =
    "a decimal approximation of an exact gold; the MATH convention asks for the exact form";

/// Why a rounding of a terminating gold scores 0 under every `approximate` setting.
const TERMINATING_NOTE: &str =
    "a rounding of a gold whose decimal terminates: only its exact value counts";

/// A decimal answer's distance to the gold, for [`Cx::approximation`].
struct Closeness<'q> {
    /// Both sides exact (rationals): rounding to decimal places is done exactly.
    exact: Option<(&'q Q, &'q Q)>,
    gold: f64,
    answer: f64,
    /// Within half a unit of the answer's last written digit: a correct rounding.
    rounded: bool,
    /// Within one unit: a rounding or a truncation (worth naming in the trace).
    within_unit: bool,
}

impl Cx<'_> {
    pub(super) fn values_equal(
        &mut self,
        (g, gv, rg): (&Expr, &Num, Reading),
        (a, av, ra): (&Expr, &Num, Reading),
    ) -> bool {
        let gdec = decimal_places(g, rg.percent_fraction);
        let adec = decimal_places(a, ra.percent_fraction);
        if let (Num::Exact { .. }, Num::Exact { .. }) = (gv, av) {
            if gv == av {
                self.how = "exact";
                return true;
            }
            let (Some(gq), Some(aq)) = (gv.as_real_exact(), av.as_real_exact()) else {
                self.how = "exact";
                return false;
            };
            let diff = (gq - aq).abs();
            // Strictly within half a unit: `3.55` is not `3.5`.
            if let Some((p, _)) = gdec {
                self.how = "to the gold's written precision";
                return !gq.is_zero() && diff < half_unit(p);
            }
            if let Some((p, sig)) = adec {
                let near = Closeness {
                    exact: Some((gq, aq)),
                    gold: q_to_f64(gq),
                    answer: q_to_f64(aq),
                    rounded: diff < half_unit(p),
                    within_unit: diff < half_unit(p) * Q::from_integer(2.into()),
                };
                return self.approximation(terminates(gq), sig, &near);
            }
            self.how = "exact";
            return false;
        }
        let (g0, gi) = gv.to_c64();
        let (a0, ai) = av.to_c64();
        let d = (g0 - a0).hypot(gi - ai);
        // A decimal read as degrees is compared in radians: its half unit shrinks with it.
        let scale = |r: Reading| {
            if r.degrees_radians {
                std::f64::consts::PI / 180.0
            } else {
                1.0
            }
        };
        if let Some((p, _)) = gdec {
            self.how = "to the gold's written precision";
            let tol = q_to_f64(&half_unit(p)) * scale(rg);
            return g0 != 0.0 && d < tol * (1.0 - 1e-12);
        }
        if let Some((p, sig)) = adec {
            // `\cos 60^\circ` is 0.5 exactly: a short decimal that meets a floating gold to
            // float precision is its exact value, not an approximation (an irrational comes
            // that close to an 8-digit decimal with odds of about 1e-6).
            let same = approx_eq(gv, av);
            if same && sig <= 8 {
                self.how = "exact value";
                return true;
            }
            // A real decimal never approximates a complex gold (`1.4142` for `\sqrt2 + i`).
            if gv.real_f64().is_none() {
                self.how = "decimal answer";
                return false;
            }
            let tol = q_to_f64(&half_unit(p)) * scale(ra);
            let near = Closeness {
                exact: None,
                gold: g0,
                answer: a0,
                rounded: same || d < tol * (1.0 - 1e-12),
                within_unit: same || d < 2.0 * tol * (1.0 - 1e-12),
            };
            let terminating = gv.as_real_exact().is_some_and(terminates);
            return self.approximation(terminating, sig, &near);
        }
        self.how = "numeric";
        approx_eq(gv, av)
    }

    /// A decimal answer that is not the gold's exact value: right only when the gold has no
    /// terminating decimal and [`Approximate`] accepts it at the precision it states.
    fn approximation(&mut self, terminating: bool, sig: u32, n: &Closeness<'_>) -> bool {
        self.how = "decimal answer";
        if terminating {
            // `0.0009766` for `\frac{1}{1024}`: the exact decimal exists, so write it.
            if n.rounded {
                self.why = Some(TERMINATING_NOTE.into());
            }
            return false;
        }
        match self.opts.approximate {
            Approximate::Never => {
                if n.within_unit {
                    self.why = Some(EXACT_FORM_NOTE.into());
                    self.approximated = true;
                }
                false
            }
            Approximate::SignificantDigits(k) => {
                self.how = "approximation (significant_digits)";
                if sig < k {
                    self.why = Some(format!("{sig} significant digits, fewer than {k}"));
                } else if !n.rounded {
                    self.why = Some("not the gold correctly rounded".into());
                }
                sig >= k && n.rounded
            }
            Approximate::DecimalPlaces(k) => {
                self.how = "approximation (decimal_places)";
                let k = k.min(100);
                let (equal, gold_zero) = if let Some((g, a)) = n.exact {
                    let scale = Q::from_integer(pow10(k as usize));
                    let (g, a) = ((g * &scale).round(), (a * &scale).round());
                    (g == a, g.is_zero())
                } else {
                    let scale = 10f64.powi(k as i32);
                    let (g, a) = ((n.gold * scale).round(), (n.answer * scale).round());
                    (g == a, g == 0.0)
                };
                if gold_zero {
                    // Math-Verify accepts `0.0` for any gold below 5e-7: not here.
                    self.why = Some(format!("the gold rounds to 0 at {k} decimal places"));
                    return false;
                }
                if !equal {
                    self.why = Some(format!("differs from the gold at {k} decimal places"));
                }
                equal
            }
            Approximate::RelTol(t) => {
                self.how = "approximation (rel_tol)";
                let m = n.gold.abs().max(n.answer.abs());
                let ok = (n.gold - n.answer).abs() <= t * m;
                if !ok {
                    self.why = Some(format!("off by more than rel_tol {t}"));
                }
                ok
            }
        }
    }

    pub(super) fn num_eq_sym(x: &Num, y: &Num) -> bool {
        match (x, y) {
            (Num::Exact { .. }, Num::Exact { .. }) => x == y,
            _ => approx_eq(x, y),
        }
    }

    /// `x ≈ d` for a written decimal `d`: `d` is `x` correctly rounded or truncated (`\frac23
    /// \approx 0.666`, `= 0.666\ldots`), at any precision. The link only keeps a chain honest:
    /// the answer is still its exact part.
    pub(super) fn rounds_to(&mut self, x: &Expr, d: &Expr) -> bool {
        let Some((p, _)) = decimal_places(d, false) else {
            return false;
        };
        let env = Env {
            vars: &[],
            reading: PLAIN,
        };
        let (Ok(xv), Ok(dv)) = (eval(x, &env, &mut self.b), eval(d, &env, &mut self.b)) else {
            return false;
        };
        let (Some(xf), Some(df)) = (xv.real_f64(), dv.real_f64()) else {
            return false;
        };
        let half = q_to_f64(&half_unit(p)) * (1.0 + 1e-9);
        let truncated =
            xf.signum() == df.signum() && xf.abs() >= df.abs() && xf.abs() - df.abs() < 2.0 * half;
        (xf - df).abs() <= half || truncated
    }
}

/// Digits after the point in a written decimal (`3.10` → 2), through sign, `%` and `°`.
/// Digits after the point in a written decimal (`3.10` → 2) and its significant digits, as
/// read: `18.0` is the whole number 18 (datasets store integers as floats), `1.6 \times
/// 10^{-19}` has 20 places, and `12.5\%` read as a fraction has 3.
pub(crate) fn decimal_places(e: &Expr, percent_fraction: bool) -> Option<(u32, u32)> {
    match e {
        Expr::Num(Lit {
            places: Some(p),
            sig,
            value,
        }) => (!value.is_integer()).then_some((*p, *sig)),
        Expr::Neg(a) | Expr::Degrees(a) => decimal_places(a, percent_fraction),
        Expr::Percent(a) => {
            let extra = if percent_fraction { 2 } else { 0 };
            // `25\%` as 0.25 is exact, like 25.
            decimal_places(a, percent_fraction).map(|(p, sig)| (p + extra, sig))
        }
        Expr::Mul(v) if e.is_literal() => {
            let (p, sig) = match &v[0] {
                Expr::Num(Lit { places, sig, .. }) => (places.unwrap_or(0), *sig),
                _ => return None,
            };
            let k = ten_power(&v[1])?;
            let places = i64::from(p) - k;
            // `1.80 \times 10^{1}` is the whole number 18, like `18.0`.
            let whole = match &v[0] {
                Expr::Num(l) => {
                    let scaled = if k >= 0 {
                        l.value.clone() * Q::from_integer(pow10(k as usize))
                    } else {
                        l.value.clone() / Q::from_integer(pow10(k.unsigned_abs() as usize))
                    };
                    scaled.is_integer()
                }
                _ => false,
            };
            (places > 0 && !whole).then_some((places as u32, sig))
        }
        _ => None,
    }
}

/// k in `10^{k}`.
fn ten_power(e: &Expr) -> Option<i64> {
    let Expr::Pow(_, x) = e else { return None };
    let lit = |e: &Expr| match e {
        Expr::Num(l) => l.value.to_integer().try_into().ok(),
        _ => None,
    };
    match &**x {
        Expr::Neg(n) => lit(n).map(|k: i64| -k),
        other => lit(other),
    }
}

/// Whether a rational has a finite decimal expansion (its reduced denominator is `2^a 5^b`).
pub(crate) fn terminates(q: &Q) -> bool {
    use num_integer::Integer;
    let mut d = q.denom().abs();
    for p in [2u32, 5] {
        let p = num_bigint::BigInt::from(p);
        while !d.is_zero() && d.is_multiple_of(&p) {
            d /= &p;
        }
    }
    d == num_bigint::BigInt::from(1)
}

pub(crate) fn half_unit(places: u32) -> Q {
    Q::new(5.into(), pow10(places as usize + 1))
}

fn pow10(k: usize) -> num_bigint::BigInt {
    num_traits::pow(num_bigint::BigInt::from(10), k)
}

/// Equality where at least one side went through floating point (roots of non-squares, π, e,
/// logs, trig). Against an exact rational the bound is tight (1e-13 relative), since a
/// rational equal to an irrational would be a near miss like `\frac{103993}{33102}` for π;
/// between two floating values it allows for rounding (1e-11). Only an exact zero tolerates
/// an absolute 1e-15 (`\sin\pi` is 0).
pub(crate) fn approx_eq(x: &Num, y: &Num) -> bool {
    let exact = |n: &Num| matches!(n, Num::Exact { .. });
    let (a, ai) = x.to_c64();
    let (b, bi) = y.to_c64();
    let d = (a - b).hypot(ai - bi);
    let m = a.hypot(ai).max(b.hypot(bi));
    if (exact(x) && x.is_zero()) || (exact(y) && y.is_zero()) {
        return d <= 1e-15;
    }
    let rel = if exact(x) || exact(y) { 1e-13 } else { 1e-11 };
    d <= rel * m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Answer, Gold, Options, Status, Verifier};

    fn q(n: i64, d: i64) -> Q {
        Q::new(n.into(), d.into())
    }

    #[test]
    fn terminating_denominators_are_twos_and_fives() {
        assert!(terminates(&q(1, 4)));
        assert!(terminates(&q(3, 1024)));
        assert!(terminates(&q(7, 80)));
        assert!(terminates(&q(-18, 1)));
        assert!(terminates(&(q(6, 15) * q(5, 2))));
        assert!(!terminates(&q(1, 3)));
        assert!(!terminates(&q(1, 30)));
        assert!(!terminates(&q(2, 7)));
    }

    fn verdict(opts: Options, gold: &str, answer: &str) -> crate::Verdict {
        Verifier::new(opts).verify(Gold(gold), Answer(answer))
    }

    #[test]
    fn the_default_names_the_math_convention() {
        for (gold, answer) in [
            (r"\frac13", r"\boxed{0.3333}"),
            (r"2\pi", r"\boxed{6.2832}"),
            (r"(0, \sqrt2)", r"\boxed{(0, 1.414)}"),
            (r"\{1, \sqrt2\}", r"\boxed{\{1.4142, 1\}}"),
            (r"\frac23", r"\boxed{0.6666}"),
        ] {
            let v = verdict(Options::default(), gold, answer);
            assert_eq!(v.status, Status::Wrong, "{gold} / {answer}");
            assert!(
                v.detail.contains(EXACT_FORM_NOTE),
                "{gold} / {answer}: {}",
                v.detail
            );
        }
        // A plain wrong decimal is not called an approximation.
        let v = verdict(Options::default(), r"\frac13", r"\boxed{0.5}");
        assert_eq!(v.status, Status::Wrong);
        assert!(!v.detail.contains(EXACT_FORM_NOTE), "{}", v.detail);
        // Nor is a rounding of a terminating gold, which no setting accepts.
        let v = verdict(Options::default(), r"\frac{1}{1024}", r"\boxed{0.0009766}");
        assert_eq!(v.status, Status::Wrong);
        assert!(v.detail.contains(TERMINATING_NOTE), "{}", v.detail);
    }

    #[test]
    fn each_opt_in_states_its_precision() {
        let with = |a| Options {
            approximate: a,
            ..Options::default()
        };
        let cases = [
            (Approximate::SignificantDigits(4), r"\boxed{0.3333}", true),
            (Approximate::SignificantDigits(5), r"\boxed{0.3333}", false),
            (Approximate::DecimalPlaces(4), r"\boxed{0.3333}", true),
            (Approximate::DecimalPlaces(6), r"\boxed{0.3333}", false),
            (Approximate::DecimalPlaces(6), r"\boxed{0.33333333}", true),
            (Approximate::RelTol(1e-3), r"\boxed{0.3333}", true),
            (Approximate::RelTol(1e-6), r"\boxed{0.3333}", false),
        ];
        for (a, answer, ok) in cases {
            let v = verdict(with(a), r"\frac13", answer);
            assert_eq!(
                v.status == Status::Correct,
                ok,
                "{a:?} {answer}: {}",
                v.detail
            );
            assert!(v.detail.starts_with("approximation"), "{}", v.detail);
        }
        // A huge `decimal_places` is capped, not a huge allocation.
        let v = verdict(
            with(Approximate::DecimalPlaces(u32::MAX)),
            r"\frac13",
            r"\boxed{0.3}",
        );
        assert_eq!(v.status, Status::Wrong);
    }
}
