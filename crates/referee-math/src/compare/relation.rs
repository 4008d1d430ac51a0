//! Equations and inequalities compared as relations: `f = g` against `c·f = c·g`, up to a
//! factor (positive for inequalities) and a swap of sides.

use super::interval::{inequality_interval, is_inequality, is_intervalish};
use super::points::{NEGATIVE_POINTS, POINTS};
use super::Cx;
use crate::expr::{Expr, Rel};
use crate::num::{EvalResult, Num};
use crate::options::IntervalInequality;

impl Cx<'_> {
    pub(super) fn relation(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
        let Expr::Relation(gt, gr) = g else {
            return Ok(false);
        };
        if is_inequality(g) && (is_intervalish(a) || matches!(a, Expr::Pair(..))) {
            if self.opts.interval_inequality == IntervalInequality::Never {
                self.how = "inequality";
                self.why = Some("an interval against an inequality (interval_inequality)".into());
                return Ok(false);
            }
            if let Some(gi) = inequality_interval(g) {
                return self.intervals(&gi, a, true);
            }
        }
        let Expr::Relation(at, ar) = a else {
            self.how = "relation";
            self.why = Some("not an equation or inequality".into());
            return Ok(false);
        };
        if is_inequality(g) && is_inequality(a) {
            if g.vars() != a.vars() {
                self.how = "inequality";
                self.why = Some("a different unknown".into());
                return Ok(false);
            }
            if let (Some(gi), Some(ai)) = (inequality_interval(g), inequality_interval(a)) {
                let r = self.interval_eq(&gi, &ai)?;
                self.how = "inequality (as intervals)";
                return Ok(r);
            }
        }
        if gt.len() != 2 || at.len() != 2 {
            self.how = "relation";
            return Ok(false);
        }
        // Normalise to `f rel 0` with rel in {=, ≠, <, ≤}.
        let norm = |t: &[Expr], r: Rel| -> (Expr, Rel) {
            let (l, rr, rel) = match r {
                Rel::Gt | Rel::Ge => (&t[1], &t[0], r.flip()),
                _ => (&t[0], &t[1], r),
            };
            (
                Expr::Add(vec![l.clone(), Expr::Neg(Box::new(rr.clone()))]),
                rel,
            )
        };
        let (fg, rg) = norm(gt, gr[0]);
        let (fa, ra) = norm(at, ar[0]);
        if rg != ra {
            self.how = "relation";
            self.why = Some("different relation".into());
            return Ok(false);
        }
        let positive_only = matches!(rg, Rel::Lt | Rel::Le);
        let r = self.proportional(&fg, &fa, positive_only)?;
        self.how = if positive_only {
            "inequality up to a positive factor"
        } else {
            "equation up to a factor and side swap"
        };
        Ok(r)
    }

    /// `f ≡ c·g` for a constant `c ≠ 0` (positive when asked), checked at sample points.
    fn proportional(&mut self, f: &Expr, g: &Expr, positive: bool) -> EvalResult<bool> {
        let mut vars = f.vars();
        vars.extend(g.vars());
        vars.sort();
        vars.dedup();
        let mut ratio: Option<Num> = None;
        let mut informative = 0;
        // Negative coordinates too: `y = |x|` is not `y = x`.
        for k in 0..POINTS + NEGATIVE_POINTS {
            let (Ok(vf), Ok(vg)) = self.eval_at((f, g), &vars, k, k >= POINTS)? else {
                continue;
            };
            match (vf.is_zero(), vg.is_zero()) {
                (true, true) => continue,
                (true, false) | (false, true) => return Ok(false),
                _ => {}
            }
            let r = vf.div(&vg, &mut self.b)?;
            if positive && r.real_f64().is_none_or(|x| x <= 0.0) {
                return Ok(false);
            }
            if let Some(r0) = &ratio {
                if !Self::num_eq_sym(r0, &r) {
                    return Ok(false);
                }
            } else {
                ratio = Some(r);
            }
            informative += 1;
        }
        Ok(informative >= 2 || (vars.is_empty() && informative >= 1))
    }
}
