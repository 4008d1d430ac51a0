//! Single values: numbers in a base, the policies on unreduced fractions and unevaluated
//! answers, the percent and degree readings, and constants compared by value.

use super::plus_minus::has_pm;
use super::precision::{approx_eq, decimal_places};
use super::Cx;
use crate::eval::{eval, Env, Reading};
use crate::expr::{Expr, Lit};
use crate::num::{EvalError, EvalResult};
use crate::options::{AngleUnits, Percent, Unevaluated, UnreducedFractions};
use num_integer::Integer;

impl Cx<'_> {
    pub(super) fn scalar(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
        if a.is_structure() || has_pm(a) {
            self.how = "value";
            self.why = Some("a list, set or relation against a single value".into());
            return Ok(false);
        }
        if let Some(r) = Self::base_numbers(g, a) {
            self.how = "number in a base";
            return Ok(r);
        }
        if let Expr::Text(t) = a {
            self.how = "text";
            return Ok(*t == crate::parse::normalize_text(&crate::canon::show(g)));
        }
        // Unreduced fractions.
        if self.opts.unreduced_fractions == UnreducedFractions::Reject {
            if let (Some((gn, gd)), Some((an, ad))) = (int_fraction(g), int_fraction(a)) {
                if gn.gcd(&gd) == 1.into() && an.gcd(&ad) != 1.into() {
                    self.how = "fraction";
                    self.why = Some("not in lowest terms (unreduced_fractions: reject)".into());
                    return Ok(false);
                }
            }
        }
        if self.opts.unevaluated == Unevaluated::Reject {
            if g.is_constant() && !a.is_constant() {
                // `(x+3)^2 - x^2 - 6x` for 9: a restated expression, not a number.
                self.how = "value";
                self.why = Some(
                    "the answer has a variable the gold does not (unevaluated: reject)".into(),
                );
                return Ok(false);
            }
            if matches!(a, Expr::Base { .. }) && !matches!(g, Expr::Base { .. }) {
                self.how = "number in a base";
                self.why = Some("written in another base (unevaluated: reject)".into());
                return Ok(false);
            }
        }
        let mut vars = g.vars();
        vars.extend(a.vars());
        vars.sort();
        vars.dedup();
        if vars.is_empty() {
            self.constant(g, a)
        } else {
            self.at_points(g, a, &vars)
        }
    }

    fn base_numbers(g: &Expr, a: &Expr) -> Option<bool> {
        match (g, a) {
            (
                Expr::Base { digits, base },
                Expr::Base {
                    digits: d2,
                    base: b2,
                },
            ) => Some(base == b2 && digits.trim_start_matches('0') == d2.trim_start_matches('0')),
            (
                Expr::Base { digits, .. },
                Expr::Num(Lit {
                    value,
                    places: None,
                    ..
                }),
            ) => Some(value.to_integer().to_string() == *digits),
            (Expr::Base { .. }, _) => Some(false),
            _ => None,
        }
    }

    fn readings(&self, g: &Expr, a: &Expr) -> Vec<(Reading, Reading)> {
        let (gp, ap) = (g.has_percent(), a.has_percent());
        let pct: Vec<(bool, bool)> = match self.opts.percent {
            Percent::Marker => vec![(false, false)],
            Percent::Fraction => vec![(true, true)],
            Percent::Either => match (gp, ap) {
                (true, false) | (false, true) => vec![(false, false), (gp, ap)],
                _ => vec![(false, false)],
            },
        };
        let (gd, ad) = (g.has_degrees(), a.has_degrees());
        let deg: Vec<(bool, bool)> = match self.opts.angles {
            AngleUnits::Convert if gd != ad => vec![(false, false), (gd, ad)],
            _ => vec![(false, false)],
        };
        let mut out = Vec::with_capacity(pct.len() * deg.len());
        for (pg, pa) in &pct {
            for (dg, da) in &deg {
                out.push((
                    Reading {
                        percent_fraction: *pg,
                        degrees_radians: *dg,
                    },
                    Reading {
                        percent_fraction: *pa,
                        degrees_radians: *da,
                    },
                ));
            }
        }
        out
    }

    fn constant(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
        let mut last_err = None;
        let readings = self.readings(g, a);
        for (rg, ra) in readings {
            let env_g = Env {
                vars: &[],
                reading: rg,
            };
            let env_a = Env {
                vars: &[],
                reading: ra,
            };
            let gv = match eval(g, &env_g, &mut self.b) {
                Ok(v) => v,
                Err(e @ EvalError::TooComplex(_)) => return Err(e),
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            let av = match eval(a, &env_a, &mut self.b) {
                Ok(v) => v,
                Err(e @ EvalError::TooComplex(_)) => return Err(e),
                Err(e) => {
                    last_err = Some(e);
                    continue;
                }
            };
            if self.values_equal((g, &gv, rg), (a, &av, ra)) {
                // Restating the question: a computed gold wants a computed answer.
                // Against a literal gold only a literal answer counts, unless the match went
                // through a degrees/radians conversion (`45^\circ` is `\frac{\pi}{4}`).
                // The conversion exemption is for `\frac{\pi}{4}` against `45^\circ`: the
                // answer a multiple of π, not `\arcsin\frac12`.
                let converted = rg.degrees_radians && !a.any(|x| matches!(x, Expr::Func(..)));
                let exact_literal =
                    g.is_literal() && decimal_places(g, false).is_none() && !converted;
                // `\sin 30^\circ` for 0.5 equals the decimal exactly (to float precision):
                // a restatement, unlike `\pi` for 3.14.
                // (An irrational can only meet a decimal that closely if the decimal has 13+
                // digits, as `4.123105625617661` for `\sqrt{17}`: that is not a restatement.)
                let short = decimal_places(g, false).is_some_and(|(_, sig)| sig < 12);
                let hits_decimal = !converted && short && approx_eq(&gv, &av);
                // A gold like `0.5` is too coarse to stand for an irrational: `0.2e` is within
                // its half unit. Only a decimal of 3+ significant digits (`3.14`) accepts one.
                let coarse = decimal_places(g, false).is_some_and(|(_, sig)| sig < 3);
                if self.opts.unevaluated == Unevaluated::Reject
                    && g.is_literal()
                    && !a.is_literal()
                    && (exact_literal || av.as_real_exact().is_some() || hits_decimal || coarse)
                {
                    self.how = "value";
                    self.why = Some("equal but not evaluated (unevaluated: reject)".into());
                    return Ok(false);
                }
                self.why = None;
                return Ok(true);
            }
        }
        if last_err.is_some() && self.how.is_empty() {
            self.how = "value";
            self.why = Some("could not evaluate".into());
        }
        Ok(false)
    }
}

fn int_fraction(e: &Expr) -> Option<(num_bigint::BigInt, num_bigint::BigInt)> {
    match e {
        Expr::Frac(n, d) => match (&**n, &**d) {
            (Expr::Num(a), Expr::Num(b)) if a.places.is_none() && b.places.is_none() => {
                Some((a.value.to_integer(), b.value.to_integer()))
            }
            _ => None,
        },
        Expr::Neg(a) => int_fraction(a),
        _ => None,
    }
}
