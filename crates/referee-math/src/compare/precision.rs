//! Written precision and floating equality: a decimal matches to half a unit of its last
//! digit, `≈` must be a correct rounding, and values that went through `f64` are equal within
//! a relative bound.

use super::Cx;
use crate::eval::{eval, Env, Reading, PLAIN};
use crate::expr::{Expr, Lit};
use crate::num::{q_to_f64, Num, Q};
use num_traits::{Signed, Zero};

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
            let diff = || (gq - aq).abs();
            // Strictly within half a unit: `3.55` is not `3.5`.
            if let Some((p, _)) = gdec {
                self.how = "to the gold's written precision";
                return !gq.is_zero() && diff() < half_unit(p);
            }
            if let Some((p, sig)) = adec {
                self.how = "rounded decimal answer";
                return sig >= self.opts.min_significant_digits && diff() < half_unit(p);
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
            self.how = "rounded decimal answer";
            // `\cos 60^\circ` is 0.5 exactly: no rounding to judge.
            if approx_eq(gv, av) {
                return true;
            }
            let tol = q_to_f64(&half_unit(p)) * scale(ra);
            return sig >= self.opts.min_significant_digits && d < tol * (1.0 - 1e-12);
        }
        self.how = "numeric";
        approx_eq(gv, av)
    }

    pub(super) fn num_eq_sym(x: &Num, y: &Num) -> bool {
        match (x, y) {
            (Num::Exact { .. }, Num::Exact { .. }) => x == y,
            _ => approx_eq(x, y),
        }
    }

    /// `x ≈ d` for a written decimal `d`: `d` is `x` correctly rounded, at any precision.
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
        (xf - df).abs() <= q_to_f64(&half_unit(p)) * (1.0 + 1e-9)
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
