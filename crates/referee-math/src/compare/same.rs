//! The dispatch by the gold's type: text and option letters first, assignments unwrapped, then
//! sets, tuples, intervals, relations, matrices, or a scalar.

use super::assign::{assigned_name, expand_tuple_assignment, unwrap_assignment};
use super::interval::{is_inequality, is_intervalish};
use super::plus_minus::{has_pm, plus_minus_items};
use super::Cx;
use crate::expr::{Const, Expr};
use crate::num::EvalResult;
use crate::parse::Parsed;

impl Cx<'_> {
    pub(super) fn top(&mut self, g: &Parsed, a: &Parsed) -> EvalResult<bool> {
        if let Expr::Text(gt) = &g.expr {
            self.how = "text";
            return Ok(*gt == a.text);
        }
        if let Expr::Text(_) = &a.expr {
            self.how = "text";
            self.why = Some("a text answer against a mathematical gold".into());
            return Ok(false);
        }
        // A lone letter is a choice: compare without case.
        let letter = |e: &Expr| match e {
            Expr::Var(v) => Some(v.clone()),
            Expr::Const(Const::E) => Some("e".into()),
            Expr::Const(Const::I) => Some("i".into()),
            _ => None,
        };
        if let (Expr::Var(x), Some(y)) = (&g.expr, letter(&a.expr)) {
            self.how = "choice";
            return Ok(x.eq_ignore_ascii_case(&y));
        }
        // A capital letter as gold is an option: only that letter answers it (`1B`, `B^\circ`
        // or `x/x B` are not option B).
        if let Expr::Var(x) = &g.expr {
            if x.len() == 1 && x.chars().all(|c| c.is_ascii_uppercase()) {
                self.how = "choice";
                self.why = Some("an option letter was expected".into());
                return Ok(false);
            }
        }
        self.same(&g.expr, &a.expr)
    }

    pub(super) fn same(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
        self.b.charge(1)?;
        // `x = 3` against `3`, gold `x = 3` against `3`, `x = 11` against `x = 5 + 6 = 11`,
        // and `x \in [1, 2]` against `1 \le x \le 2`.
        // A gold function definition `p(x) = x^2 - 4` answers with its right side too.
        let defines =
            matches!(g, Expr::Relation(t, _) if matches!(t.first(), Some(Expr::Apply(..))));
        if matches!(g, Expr::List(_)) && expand_tuple_assignment(a).is_some() {
            if let Some(r) = self.system(g, a)? {
                return Ok(r);
            }
        }
        let ga = unwrap_assignment(g).filter(|r| r.is_constant() || defines);
        let aa = unwrap_assignment(a);
        if aa.is_some() && !self.chain_holds(a)? {
            self.how = "chain";
            self.why = Some("the chain of equalities is false".into());
            return Ok(false);
        }
        match (ga, aa) {
            (Some(gr), Some(ar)) => {
                // Both name the unknown: `x = 3` is not `y = 3`.
                if let (Some(gn), Some(an)) = (assigned_name(g), assigned_name(a)) {
                    if crate::canon::show(gn) != crate::canon::show(an) {
                        self.how = "assignment";
                        self.why = Some("a different unknown".into());
                        return Ok(false);
                    }
                }
                return self.same(gr, ar);
            }
            (None, Some(ar)) if !matches!(g, Expr::Relation(..)) || is_intervalish(ar) => {
                return self.same(g, ar)
            }
            (Some(gr), None) if !matches!(a, Expr::Relation(..)) || is_intervalish(gr) => {
                return self.same(gr, a)
            }
            _ => {}
        }
        // One-element lists and sets against a scalar.
        if let (false, Expr::List(v)) = (is_setlike(g), a) {
            if v.len() == 1 {
                return self.same(g, &v[0]);
            }
        }
        if let Some(r) = self.system(g, a)? {
            return Ok(r);
        }
        match (g, a) {
            (Expr::Ratio(x, y), Expr::Ratio(u, v)) => {
                self.how = "ratio (term by term)";
                return Ok(self.same(x, u)? && self.same(y, v)?);
            }
            // `6:30` (a time, or a ratio) is not the number 0.2; `11:21` is `\frac{11}{21}`.
            (Expr::Ratio(..), other) | (other, Expr::Ratio(..))
                if !matches!(other, Expr::Frac(..)) =>
            {
                self.how = "ratio";
                self.why = Some("a ratio against a number".into());
                return Ok(false);
            }
            _ => {}
        }
        match g {
            Expr::Set(gs) | Expr::List(gs) => self.set_like(gs, a),
            _ if has_pm(g) => {
                let gs = plus_minus_items(g);
                self.set_like(&gs, a)
            }
            Expr::Tuple(gs) => self.tuple(gs, a),
            Expr::Pair(x, y) => {
                if is_intervalish(a) || is_inequality(a) {
                    let gi = Expr::Interval {
                        lo: x.clone(),
                        hi: y.clone(),
                        lo_closed: false,
                        hi_closed: false,
                    };
                    return self.same(&gi, a);
                }
                self.tuple(&[(**x).clone(), (**y).clone()], a)
            }
            Expr::Interval { .. } | Expr::Union(_) => self.intervals(g, a, false),
            Expr::Relation(..) => self.relation(g, a),
            Expr::Matrix { rows, cols, cells } => self.matrix(*rows, *cols, cells, a),
            Expr::Text(t) => {
                self.how = "text";
                Ok(*t == crate::parse::normalize_text(&crate::canon::show(a)))
            }
            _ => self.scalar(g, a),
        }
    }
}

pub(super) fn is_setlike(e: &Expr) -> bool {
    matches!(e, Expr::Set(_) | Expr::List(_)) || has_pm(e)
}
