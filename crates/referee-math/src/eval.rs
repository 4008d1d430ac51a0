//! Evaluation of scalar expressions to [`Num`], exactly where possible. Free variables take the
//! values of the point given; percent and degree markers are resolved by the caller's reading.

use crate::expr::{Const, Expr, Func};
use crate::num::{binom, exact_root, factorial, q_int, Budget, EvalError, EvalResult, Num, Q};
use num_bigint::BigInt;
use num_traits::{Signed, Zero};

/// How `%` and `°` are read during one evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    /// `25\%` is 0.25 (else 25).
    pub percent_fraction: bool,
    /// `45^\circ` is π/4 (else 45).
    pub degrees_radians: bool,
}

pub(crate) const PLAIN: Reading = Reading {
    percent_fraction: false,
    degrees_radians: false,
};

pub(crate) struct Env<'a> {
    pub vars: &'a [(String, Num)],
    pub reading: Reading,
}

pub(crate) fn eval(e: &Expr, env: &Env<'_>, b: &mut Budget) -> EvalResult<Num> {
    b.charge(1)?;
    match e {
        Expr::Num(l) => Ok(Num::real(l.value.clone())),
        Expr::Base { digits, base } => {
            let v = BigInt::parse_bytes(digits.as_bytes(), *base).ok_or(EvalError::NotNumeric)?;
            Ok(Num::real(Q::from_integer(v)))
        }
        Expr::Const(c) => match c {
            Const::Pi => Num::approx(std::f64::consts::PI, 0.0),
            Const::E => Num::approx(std::f64::consts::E, 0.0),
            Const::I => Ok(Num::Exact {
                re: Q::zero(),
                im: q_int(1),
            }),
            Const::Infinity => Err(EvalError::NotNumeric),
        },
        Expr::Var(name) => env
            .vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .ok_or(EvalError::NotNumeric),
        Expr::Add(v) => {
            let mut acc = Num::int(0);
            for t in v {
                acc = acc.add(&eval(t, env, b)?, b)?;
            }
            Ok(acc)
        }
        Expr::Mul(v) => {
            let mut acc = Num::int(1);
            for t in v {
                acc = acc.mul(&eval(t, env, b)?, b)?;
            }
            Ok(acc)
        }
        Expr::Neg(a) => Ok(eval(a, env, b)?.neg()),
        Expr::Frac(n, d) | Expr::Ratio(n, d) => eval(n, env, b)?.div(&eval(d, env, b)?, b),
        Expr::Mixed(w, f) => eval(w, env, b)?.add(&eval(f, env, b)?, b),
        Expr::Pow(x, p) => {
            let base = eval(x, env, b)?;
            let exp = eval(p, env, b)?;
            base.pow(&exp, b)
        }
        Expr::Root(x, n) => {
            let v = eval(x, env, b)?;
            let n = eval(n, env, b)?;
            if let (Some(r), Some(k)) = (v.as_real_exact(), n.as_real_exact()) {
                if k.is_integer() && k.is_positive() {
                    if let Some(root) = exact_root(r, k.numer(), b)? {
                        return Ok(Num::real(root));
                    }
                    let (rf, kf) = (crate::num::q_to_f64(r), crate::num::q_to_f64(k));
                    if rf < 0.0 {
                        if k.numer() % 2 == BigInt::from(1) {
                            return Num::approx(-(-rf).powf(1.0 / kf), 0.0);
                        }
                        // Even root of a negative: i * sqrt(-r) for square roots.
                        if *k == q_int(2) {
                            return Num::approx(0.0, (-rf).sqrt());
                        }
                        return Err(EvalError::Undefined);
                    }
                    return Num::approx(rf.powf(1.0 / kf), 0.0);
                }
            }
            v.pow(&Num::int(1).div(&n, b)?, b)
        }
        // A degree sign inside a trigonometric function always means degrees: `\cos 40^\circ`
        // is not `\cos 40`.
        Expr::Func(
            f @ (Func::Sin | Func::Cos | Func::Tan | Func::Cot | Func::Sec | Func::Csc),
            a,
        ) if a.has_degrees() => {
            let inner = Env {
                vars: env.vars,
                reading: Reading {
                    degrees_radians: true,
                    ..env.reading
                },
            };
            func(*f, &eval(a, &inner, b)?)
        }
        Expr::Func(f, a) => func(*f, &eval(a, env, b)?),
        Expr::LogBase(base, a) => {
            let x = eval(a, env, b)?.real_f64().ok_or(EvalError::Undefined)?;
            let bs = eval(base, env, b)?.real_f64().ok_or(EvalError::Undefined)?;
            if x <= 0.0 || bs <= 0.0 || bs == 1.0 {
                return Err(EvalError::Undefined);
            }
            let v = x.ln() / bs.ln();
            // Exact when the log is a small integer (`\log_2 8 = 3`).
            let r = v.round();
            if (v - r).abs() < 1e-12 && r.abs() < 1e6 {
                return Ok(Num::int(r as i64));
            }
            Num::approx(v, 0.0)
        }
        Expr::DoubleFactorial(a) => {
            let v = eval(a, env, b)?;
            let q = v.as_real_exact().ok_or(EvalError::Undefined)?;
            crate::num::double_factorial(q, b)
        }
        Expr::Factorial(a) => {
            let v = eval(a, env, b)?;
            let q = v.as_real_exact().ok_or(EvalError::Undefined)?;
            factorial(q, b)
        }
        Expr::Binom(n, k) => {
            let n = eval(n, env, b)?;
            let k = eval(k, env, b)?;
            match (n.as_real_exact(), k.as_real_exact()) {
                (Some(n), Some(k)) => binom(n, k, b),
                _ => Err(EvalError::NotNumeric),
            }
        }
        Expr::Percent(a) => {
            let v = eval(a, env, b)?;
            if env.reading.percent_fraction {
                v.div(&Num::int(100), b)
            } else {
                Ok(v)
            }
        }
        Expr::Degrees(a) => {
            let v = eval(a, env, b)?;
            // A degree marker on a number may be only a marker (`45^\circ` is 45); on anything
            // else (`\pi^\circ`) it is a unit.
            if env.reading.degrees_radians || !a.is_literal() {
                v.mul(&Num::approx(std::f64::consts::PI / 180.0, 0.0)?, b)
            } else {
                Ok(v)
            }
        }
        _ => Err(EvalError::NotNumeric),
    }
}

fn func(f: Func, v: &Num) -> EvalResult<Num> {
    if f == Func::Conj {
        return Ok(match v {
            Num::Exact { re, im } => Num::Exact {
                re: re.clone(),
                im: -im,
            },
            Num::Approx { re, im } => Num::Approx { re: *re, im: -im },
        });
    }
    if let (Func::Abs, Num::Exact { re, im }) = (f, v) {
        if im.is_zero() {
            return Ok(Num::real(re.abs()));
        }
    }
    if let (Func::Floor | Func::Ceil, Some(q)) = (f, v.as_real_exact()) {
        return Ok(Num::real(Q::from_integer(if f == Func::Floor {
            q.floor().to_integer()
        } else {
            q.ceil().to_integer()
        })));
    }
    // Exact values at 0 keep `\sin 0`, `\ln 1`, `e^0`-style answers exact.
    if let Some(q) = v.as_real_exact() {
        if q.is_zero()
            && matches!(
                f,
                Func::Sin | Func::Tan | Func::Asin | Func::Atan | Func::Sinh | Func::Tanh
            )
        {
            return Ok(Num::int(0));
        }
        if q.is_zero() && matches!(f, Func::Cos | Func::Cosh | Func::Exp) {
            return Ok(Num::int(1));
        }
        if *q == q_int(1) && matches!(f, Func::Ln | Func::Log) {
            return Ok(Num::int(0));
        }
    }
    let (x, xi) = v.to_c64();
    if xi != 0.0 {
        return match f {
            Func::Exp => {
                let m = x.exp();
                Num::approx(m * xi.cos(), m * xi.sin())
            }
            Func::Abs => Num::approx(x.hypot(xi), 0.0),
            _ => Err(EvalError::Undefined),
        };
    }
    let r = match f {
        Func::Sin => x.sin(),
        Func::Cos => x.cos(),
        Func::Tan => {
            if x.cos().abs() < 1e-15 {
                return Err(EvalError::Undefined);
            }
            x.tan()
        }
        Func::Cot => 1.0 / x.tan(),
        Func::Sec => 1.0 / x.cos(),
        Func::Csc => 1.0 / x.sin(),
        Func::Asin if x.abs() <= 1.0 => x.asin(),
        Func::Acos if x.abs() <= 1.0 => x.acos(),
        Func::Atan => x.atan(),
        Func::Sinh => x.sinh(),
        Func::Cosh => x.cosh(),
        Func::Tanh => x.tanh(),
        Func::Ln if x > 0.0 => x.ln(),
        Func::Log if x > 0.0 => x.log10(),
        Func::Asin | Func::Acos | Func::Ln | Func::Log => return Err(EvalError::Undefined),
        Func::Exp => x.exp(),
        Func::Abs => x.abs(),
        Func::Floor => x.floor(),
        Func::Ceil => x.ceil(),
        Func::Conj => x,
    };
    Num::approx(r, 0.0)
}
