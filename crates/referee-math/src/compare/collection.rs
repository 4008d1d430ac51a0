//! Sets and lists (order ignored), tuples and vectors (ordered), matrices (elementwise).

use super::assign::{assigned_name, unwrap_assignment};
use super::plus_minus::{has_pm, plus_minus_items};
use super::Cx;
use crate::expr::Expr;
use crate::num::EvalResult;

impl Cx<'_> {
    pub(super) fn set_like(&mut self, gs: &[Expr], a: &Expr) -> EvalResult<bool> {
        let owned;
        let as_: &[Expr] = match a {
            Expr::Set(v) | Expr::List(v) => v,
            _ if has_pm(a) => {
                owned = plus_minus_items(a);
                &owned
            }
            _ if gs.len() == 1 => return self.same(&gs[0], a),
            _ => {
                self.how = "set";
                self.why = Some("a single value against a set of answers".into());
                return Ok(false);
            }
        };
        let how = "set (order ignored)";
        for x in gs {
            if !self.any_same(x, as_, true)? {
                self.how = how;
                self.why = Some(format!("missing {}", crate::canon::show(x)));
                return Ok(false);
            }
        }
        for y in as_ {
            if !self.any_same(y, gs, false)? {
                self.how = how;
                self.why = Some(format!("extra {}", crate::canon::show(y)));
                return Ok(false);
            }
        }
        self.how = how;
        self.why = None;
        Ok(true)
    }

    /// Whether `fixed` is the same as one of `others` (`fixed` on the gold side or not).
    fn any_same(&mut self, fixed: &Expr, others: &[Expr], fixed_is_gold: bool) -> EvalResult<bool> {
        for o in others {
            let hit = if fixed_is_gold {
                self.same(fixed, o)?
            } else {
                self.same(o, fixed)?
            };
            if hit {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn elementwise(&mut self, gs: &[Expr], as_: &[Expr], how: &'static str) -> EvalResult<bool> {
        if gs.len() != as_.len() {
            self.how = how;
            self.why = Some(format!("{} items against {}", as_.len(), gs.len()));
            return Ok(false);
        }
        for (x, y) in gs.iter().zip(as_) {
            if !self.same(x, y)? {
                self.how = how;
                self.why = Some(format!("{} differs", crate::canon::show(y)));
                return Ok(false);
            }
        }
        self.how = how;
        self.why = None;
        Ok(true)
    }

    pub(super) fn tuple(&mut self, gs: &[Expr], a: &Expr) -> EvalResult<bool> {
        let pair;
        let named: Vec<Expr>;
        let as_: &[Expr] = match a {
            // `(1, 2)` against `x = 1, y = 2`: the values in order.
            Expr::List(v) if v.iter().all(|x| assigned_name(x).is_some()) => {
                named = v
                    .iter()
                    .filter_map(|x| unwrap_assignment(x).cloned())
                    .collect();
                &named
            }
            Expr::Tuple(v) => v,
            Expr::Pair(x, y) => {
                pair = [(**x).clone(), (**y).clone()];
                &pair
            }
            Expr::Matrix { rows, cols, cells } if *rows == 1 || *cols == 1 => cells,
            _ => {
                self.how = "tuple";
                self.why = Some("not a tuple".into());
                return Ok(false);
            }
        };
        self.elementwise(gs, as_, "tuple (ordered)")
    }

    pub(super) fn matrix(
        &mut self,
        rows: usize,
        cols: usize,
        cells: &[Expr],
        a: &Expr,
    ) -> EvalResult<bool> {
        match a {
            Expr::Matrix {
                rows: r,
                cols: c,
                cells: ac,
            } => {
                if (*r, *c) != (rows, cols) {
                    self.how = "matrix";
                    self.why = Some(format!("shape {r}x{c} against {rows}x{cols}"));
                    return Ok(false);
                }
                self.elementwise(cells, ac, "matrix (elementwise)")
            }
            Expr::Tuple(v) if rows == 1 || cols == 1 => self.elementwise(cells, v, "vector"),
            Expr::Pair(x, y) if rows == 1 || cols == 1 => {
                self.elementwise(cells, &[(**x).clone(), (**y).clone()], "vector")
            }
            _ => {
                self.how = "matrix";
                self.why = Some("not a matrix".into());
                Ok(false)
            }
        }
    }
}
