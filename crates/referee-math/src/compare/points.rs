//! Expressions with variables, compared at deterministic rational sample points seeded from the
//! gold (six positive, three with negated coordinates).

use super::Cx;
use crate::eval::{eval, Env, PLAIN};
use crate::expr::Expr;
use crate::num::{EvalError, EvalResult, Num, Q};

impl Cx<'_> {
    /// Both sides at sample point `k` (its coordinates negated when `negative`); a cap hit on
    /// either side ends the comparison.
    pub(super) fn eval_at(
        &mut self,
        (g, a): (&Expr, &Expr),
        vars: &[String],
        k: usize,
        negative: bool,
    ) -> EvalResult<(EvalResult<Num>, EvalResult<Num>)> {
        let mut point = sample_point(vars, k, self.seed);
        if negative {
            for (_, x) in &mut point {
                *x = x.neg();
            }
        }
        let env = Env {
            vars: &point,
            reading: PLAIN,
        };
        let gv = eval(g, &env, &mut self.b);
        let av = eval(a, &env, &mut self.b);
        for r in [&gv, &av] {
            if let Err(e @ EvalError::TooComplex(_)) = r {
                return Err(*e);
            }
        }
        Ok((gv, av))
    }

    pub(super) fn at_points(&mut self, g: &Expr, a: &Expr, vars: &[String]) -> EvalResult<bool> {
        let mut agree = 0;
        for k in 0..POINTS {
            match self.eval_at((g, a), vars, k, false)? {
                (Ok(x), Ok(y)) => {
                    if !Self::num_eq_sym(&x, &y) {
                        self.how = "at sample points";
                        self.why = Some("differs at a sample point".into());
                        return Ok(false);
                    }
                    agree += 1;
                }
                (Err(EvalError::NotNumeric), _) | (_, Err(EvalError::NotNumeric)) => {
                    self.how = "canonical form";
                    return Ok(crate::canon::show(g) == crate::canon::show(a));
                }
                (Err(_), Err(_)) => {}
                _ => {
                    self.how = "at sample points";
                    self.why = Some("defined on one side only".into());
                    return Ok(false);
                }
            }
        }
        // Points with negative coordinates catch `|x|` or `\sqrt{x^2}` against `x`, and
        // `\ln|x|` against `\ln x` (a real value against none). A complex value is not held
        // against either side.
        for k in 0..NEGATIVE_POINTS {
            match self.eval_at((g, a), vars, k + POINTS, true)? {
                (Ok(x), Ok(y))
                    if x.real_f64().is_some()
                        && y.real_f64().is_some()
                        && !Self::num_eq_sym(&x, &y) =>
                {
                    self.how = "at sample points";
                    self.why = Some("differs at a sample point with negative values".into());
                    return Ok(false);
                }
                // Defined and real on one side only: `\ln|x|` is not `\ln x`.
                (Ok(x), Err(EvalError::Undefined)) | (Err(EvalError::Undefined), Ok(x))
                    if x.real_f64().is_some() =>
                {
                    self.how = "at sample points";
                    self.why = Some("defined on one side only, at negative values".into());
                    return Ok(false);
                }
                _ => {}
            }
        }
        self.how = "at sample points";
        Ok(agree >= 3)
    }
}

pub(super) const POINTS: usize = 6;

pub(super) const NEGATIVE_POINTS: usize = 3;

/// Deterministic rational sample points in (0, 30], different for each variable and each
/// gold, exact so polynomials and rational functions compare without rounding.
fn sample_point(vars: &[String], k: usize, seed: u64) -> Vec<(String, Num)> {
    vars.iter()
        .enumerate()
        .map(|(j, v)| {
            let r = splitmix64(seed ^ ((k as u64) << 32) ^ (j as u64).wrapping_mul(0x9E37_79B9));
            let d = (r % 16 + 2) as i64; // 2..=17
            let n = ((r >> 16) % (30 * d as u64)) as i64 + 1;
            (v.clone(), Num::real(Q::new(n.into(), d.into())))
        })
        .collect()
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
