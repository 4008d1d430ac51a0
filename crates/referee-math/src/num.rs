//! The number domain: exact complex rationals while the arithmetic allows it, complex floats
//! once an irrational enters (roots of non-squares, π, e, logs, trig). Every operation charges
//! a [`Budget`], and big-integer growth is capped before it happens, so no input can make the
//! arithmetic hang (Math-Verify issue #65).

use crate::options::Limits;
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

pub(crate) type Q = BigRational;

/// Why evaluation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EvalError {
    /// A cap in [`Limits`] was hit: the caller reports `too_complex`.
    TooComplex(&'static str),
    /// Division by zero, a pole, a value outside a function's domain: no value here.
    Undefined,
    /// Not a number (text, a set where a number was needed, a free variable in exact mode).
    NotNumeric,
}

pub(crate) type EvalResult<T> = Result<T, EvalError>;

/// Work accounting for one comparison.
#[derive(Debug)]
pub(crate) struct Budget {
    pub steps: u64,
    pub limits: Limits,
}

impl Budget {
    pub fn new(limits: Limits) -> Self {
        Budget { steps: 0, limits }
    }

    pub fn charge(&mut self, n: u64) -> EvalResult<()> {
        self.steps += n;
        if self.steps > self.limits.max_steps {
            Err(EvalError::TooComplex("evaluation step budget"))
        } else {
            Ok(())
        }
    }

    fn check_bits(&self, q: &Q) -> EvalResult<()> {
        let bits = q.numer().bits() + q.denom().bits();
        if bits > self.limits.max_bits {
            Err(EvalError::TooComplex("number too large"))
        } else {
            Ok(())
        }
    }
}

/// A complex number, exact or approximate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Num {
    Exact { re: Q, im: Q },
    Approx { re: f64, im: f64 },
}

pub(crate) fn q_int(n: i64) -> Q {
    Q::from_integer(BigInt::from(n))
}

pub(crate) fn q_to_f64(q: &Q) -> f64 {
    q.to_f64().unwrap_or_else(|| {
        // Very large or very small: scale through the bit lengths.
        let n = q.numer().to_f64().unwrap_or(f64::INFINITY);
        let d = q.denom().to_f64().unwrap_or(f64::INFINITY);
        if n.is_finite() && d.is_infinite() {
            0.0
        } else {
            n / d
        }
    })
}

impl Num {
    pub fn real(q: Q) -> Num {
        Num::Exact {
            re: q,
            im: Q::zero(),
        }
    }

    pub fn int(n: i64) -> Num {
        Num::real(q_int(n))
    }

    pub fn approx(re: f64, im: f64) -> EvalResult<Num> {
        if re.is_finite() && im.is_finite() {
            Ok(Num::Approx { re, im })
        } else {
            Err(EvalError::Undefined)
        }
    }

    pub fn as_real_exact(&self) -> Option<&Q> {
        match self {
            Num::Exact { re, im } if im.is_zero() => Some(re),
            _ => None,
        }
    }

    pub fn to_c64(&self) -> (f64, f64) {
        match self {
            Num::Exact { re, im } => (q_to_f64(re), q_to_f64(im)),
            Num::Approx { re, im } => (*re, *im),
        }
    }

    pub fn is_zero(&self) -> bool {
        match self {
            Num::Exact { re, im } => re.is_zero() && im.is_zero(),
            Num::Approx { re, im } => *re == 0.0 && *im == 0.0,
        }
    }

    /// Real value as f64, if the imaginary part is (numerically) zero.
    pub fn real_f64(&self) -> Option<f64> {
        match self {
            Num::Exact { re, im } => im.is_zero().then(|| q_to_f64(re)),
            Num::Approx { re, im } => (im.abs() <= 1e-12 * re.abs().max(1.0)).then_some(*re),
        }
    }

    pub fn add(&self, o: &Num, b: &mut Budget) -> EvalResult<Num> {
        b.charge(1)?;
        if let (Num::Exact { re: a, im: ai }, Num::Exact { re: c, im: ci }) = (self, o) {
            let re = a + c;
            let im = ai + ci;
            b.check_bits(&re)?;
            b.check_bits(&im)?;
            Ok(Num::Exact { re, im })
        } else {
            let (a, ai) = self.to_c64();
            let (c, ci) = o.to_c64();
            Num::approx(a + c, ai + ci)
        }
    }

    pub fn neg(&self) -> Num {
        match self {
            Num::Exact { re, im } => Num::Exact { re: -re, im: -im },
            Num::Approx { re, im } => Num::Approx { re: -re, im: -im },
        }
    }

    pub fn mul(&self, o: &Num, b: &mut Budget) -> EvalResult<Num> {
        b.charge(1)?;
        // `1 · x` is common (`\frac{1}{2004!}` is 1 times a reciprocal) and a big-rational
        // product would spend its time on gcds.
        if self.as_real_exact().is_some_and(One::is_one) {
            return Ok(o.clone());
        }
        if o.as_real_exact().is_some_and(One::is_one) {
            return Ok(self.clone());
        }
        if let (Num::Exact { re: a, im: ai }, Num::Exact { re: c, im: ci }) = (self, o) {
            let (re, im) = if ai.is_zero() && ci.is_zero() {
                (a * c, Q::zero())
            } else {
                (a * c - ai * ci, a * ci + ai * c)
            };
            b.check_bits(&re)?;
            b.check_bits(&im)?;
            Ok(Num::Exact { re, im })
        } else {
            let (a, ai) = self.to_c64();
            let (c, ci) = o.to_c64();
            Num::approx(a * c - ai * ci, a * ci + ai * c)
        }
    }

    pub fn recip(&self, b: &mut Budget) -> EvalResult<Num> {
        b.charge(1)?;
        if self.is_zero() {
            return Err(EvalError::Undefined);
        }
        match self {
            Num::Exact { re, im } => {
                if im.is_zero() {
                    return Ok(Num::real(re.recip()));
                }
                let d = re * re + im * im;
                Ok(Num::Exact {
                    re: re / &d,
                    im: -(im / &d),
                })
            }
            Num::Approx { re, im } => {
                let d = re * re + im * im;
                if d == 0.0 {
                    return Err(EvalError::Undefined);
                }
                Num::approx(re / d, -im / d)
            }
        }
    }

    pub fn div(&self, o: &Num, b: &mut Budget) -> EvalResult<Num> {
        self.mul(&o.recip(b)?, b)
    }

    /// `self ^ e`. Exact when the base is exact and the exponent an integer within the caps, or a
    /// rational whose root is exact (`8^{1/3}`, `\frac{4}{9}^{1/2}`).
    pub fn pow(&self, e: &Num, b: &mut Budget) -> EvalResult<Num> {
        b.charge(1)?;
        if let (Num::Exact { .. }, Some(q)) = (self, e.as_real_exact()) {
            if q.is_integer() {
                return self.powi(q.numer(), b);
            }
            if let Some(r) = self.as_real_exact() {
                if let Some(root) = exact_root(r, q.denom(), b)? {
                    return Num::real(root).powi(q.numer(), b);
                }
            }
        }
        if self.is_zero() {
            // 0^x for x with positive real part is 0.
            let (er, _) = e.to_c64();
            return if er > 0.0 {
                Ok(Num::int(0))
            } else {
                Err(EvalError::Undefined)
            };
        }
        let (a, ai) = self.to_c64();
        let (c, ci) = e.to_c64();
        if ai == 0.0 && ci == 0.0 && a > 0.0 {
            return Num::approx(a.powf(c), 0.0);
        }
        if ai == 0.0 && ci == 0.0 && a < 0.0 && c.fract() == 0.0 {
            return Num::approx(a.powf(c), 0.0);
        }
        // Principal value: exp(e * ln(self)).
        let (lr, li) = c_ln(a, ai);
        let (xr, xi) = (c * lr - ci * li, c * li + ci * lr);
        let m = xr.exp();
        Num::approx(m * xi.cos(), m * xi.sin())
    }

    fn powi(&self, n: &BigInt, b: &mut Budget) -> EvalResult<Num> {
        let neg = n.is_negative();
        let Some(k) = n.abs().to_u32() else {
            return self.pow_big_trivial(n);
        };
        if k > b.limits.max_exponent {
            return self.pow_big_trivial(n);
        }
        if let Num::Exact { re, im } = self {
            if im.is_zero() {
                // Estimate the size before computing it.
                let bits = (re.numer().bits() + re.denom().bits()) * u64::from(k);
                if bits > b.limits.max_bits && !is_unit(re) {
                    return Err(EvalError::TooComplex("power too large"));
                }
                b.charge(u64::from(k.max(1).ilog2()) + 1)?;
                // Numerator and denominator apart: they stay coprime, so no gcd on big numbers.
                let v = Q::new_raw(
                    num_traits::pow(re.numer().clone(), k as usize),
                    num_traits::pow(re.denom().clone(), k as usize),
                );
                let v = if neg {
                    if v.is_zero() {
                        return Err(EvalError::Undefined);
                    }
                    v.recip()
                } else {
                    v
                };
                return Ok(Num::real(v));
            }
        }
        // Square and multiply (complex exact or approximate), charged per step.
        let mut acc = Num::int(1);
        let mut base = self.clone();
        let mut e = k;
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.mul(&base, b)?;
            }
            e >>= 1;
            if e > 0 {
                base = base.mul(&base, b)?;
            }
        }
        if neg {
            acc.recip(b)
        } else {
            Ok(acc)
        }
    }

    /// Huge integer exponents only have a value for bases 0, 1 and -1.
    fn pow_big_trivial(&self, n: &BigInt) -> EvalResult<Num> {
        if let Some(r) = self.as_real_exact() {
            if r.is_one() {
                return Ok(Num::int(1));
            }
            if r.is_zero() && n.is_positive() {
                return Ok(Num::int(0));
            }
            if *r == -Q::one() {
                return Ok(Num::int(if n.is_even() { 1 } else { -1 }));
            }
        }
        Err(EvalError::TooComplex("exponent too large"))
    }
}

fn is_unit(q: &Q) -> bool {
    q.is_one() || q.is_zero() || *q == -Q::one()
}

/// The exact real `n`-th root of `r` if there is one (`\sqrt{4/9} = 2/3`, `\sqrt[3]{-8} = -2`).
pub(crate) fn exact_root(r: &Q, n: &BigInt, b: &mut Budget) -> EvalResult<Option<Q>> {
    let Some(n) = n.to_u32() else {
        return Ok(None);
    };
    if n == 0 {
        return Err(EvalError::Undefined);
    }
    b.charge(2)?;
    if r.is_negative() {
        if n % 2 == 0 {
            return Ok(None);
        }
        return Ok(exact_root(&-r, &BigInt::from(n), b)?.map(|x| -x));
    }
    let num = r.numer();
    let den = r.denom();
    let rn = num.nth_root(n);
    let rd = den.nth_root(n);
    if num_traits::pow(rn.clone(), n as usize) == *num
        && num_traits::pow(rd.clone(), n as usize) == *den
    {
        Ok(Some(Q::new(rn, rd)))
    } else {
        Ok(None)
    }
}

pub(crate) fn c_ln(a: f64, ai: f64) -> (f64, f64) {
    (a.hypot(ai).ln(), ai.atan2(a))
}

/// A non-negative integer `n` that drives an n-step product, within `max_factorial`, charged.
fn small_count(n: &Q, b: &mut Budget, what: &'static str) -> EvalResult<u32> {
    let k = n
        .numer()
        .to_u32()
        .filter(|k| *k <= b.limits.max_factorial)
        .ok_or(EvalError::TooComplex(what))?;
    b.charge(u64::from(k))?;
    Ok(k)
}

/// n! exactly, capped.
pub(crate) fn factorial(n: &Q, b: &mut Budget) -> EvalResult<Num> {
    if !n.is_integer() || n.is_negative() {
        return Err(EvalError::Undefined);
    }
    let k = small_count(n, b, "factorial too large")?;
    let mut acc = BigInt::one();
    for i in 2..=k {
        acc *= i;
    }
    Ok(Num::real(Q::from_integer(acc)))
}

/// n!! = n·(n−2)·…, exactly, capped like n!.
pub(crate) fn double_factorial(n: &Q, b: &mut Budget) -> EvalResult<Num> {
    if !n.is_integer() || n.is_negative() {
        return Err(EvalError::Undefined);
    }
    let k = small_count(n, b, "factorial too large")?;
    let mut acc = BigInt::one();
    let mut i = k;
    while i > 1 {
        acc *= i;
        i -= 2;
    }
    Ok(Num::real(Q::from_integer(acc)))
}

/// C(n, k) for integer n, k (n may be negative or rational through the falling factorial).
pub(crate) fn binom(n: &Q, k: &Q, b: &mut Budget) -> EvalResult<Num> {
    if !k.is_integer() {
        return Err(EvalError::NotNumeric);
    }
    if k.is_negative() {
        return Ok(Num::int(0));
    }
    let k = small_count(k, b, "binomial too large")?;
    let mut acc = Q::one();
    for i in 0..k {
        acc = acc * (n - q_int(i64::from(i))) / q_int(i64::from(i) + 1);
        b.check_bits(&acc)?;
    }
    Ok(Num::real(acc))
}

/// Parses decimal digits with an optional fraction part and exponent into an exact rational.
pub(crate) fn q_from_decimal(int: &str, frac: &str, exp: i64, b: &mut Budget) -> EvalResult<Q> {
    let digits = format!("{int}{frac}");
    let digits = if digits.is_empty() { "0" } else { &digits };
    let n: BigInt = digits.parse().map_err(|_| EvalError::NotNumeric)?;
    let e = exp - frac.len() as i64;
    if e.unsigned_abs() > u64::from(b.limits.max_exponent) {
        if n.is_zero() {
            return Ok(Q::zero());
        }
        return Err(EvalError::TooComplex("exponent too large"));
    }
    let ten = BigInt::from(10);
    let p = num_traits::pow(ten, e.unsigned_abs() as usize);
    let q = if e >= 0 {
        Q::from_integer(n * p)
    } else {
        Q::new(n, p)
    };
    b.check_bits(&q)?;
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_stop_towers_before_they_are_computed() {
        let mut b = Budget::new(Limits::default());
        let nine = Num::int(9);
        let big = Num::int(387_420_489);
        assert!(matches!(
            nine.pow(&big, &mut b),
            Err(EvalError::TooComplex(_))
        ));
        // Within the exponent cap but over the size cap: refused by the size estimate.
        assert_eq!(
            Num::int(3).pow(&Num::int(99_999), &mut b),
            Err(EvalError::TooComplex("power too large"))
        );
        assert_eq!(Num::int(1).pow(&big, &mut b), Ok(Num::int(1)));
    }

    #[test]
    fn exact_roots_and_decimals() {
        let mut b = Budget::new(Limits::default());
        let r = exact_root(&Q::new(4.into(), 9.into()), &BigInt::from(2), &mut b).unwrap();
        assert_eq!(r, Some(Q::new(2.into(), 3.into())));
        assert_eq!(
            exact_root(&q_int(2), &BigInt::from(2), &mut b).unwrap(),
            None
        );
        assert_eq!(
            q_from_decimal("1", "50", 0, &mut b).unwrap(),
            Q::new(3.into(), 2.into())
        );
    }
}
