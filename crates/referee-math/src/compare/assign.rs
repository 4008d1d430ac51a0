//! Names and assignments: `x = 3` answers with its value, a chain `x = 5 + 6 = 11` must hold
//! link by link, and a system `x = 2, y = 3` is matched unknown by unknown.

use super::Cx;
use crate::eval::{eval, Env, PLAIN};
use crate::expr::{Expr, Rel};
use crate::num::{EvalError, EvalResult, Num};

impl Cx<'_> {
    /// A chain `x = a = b ≈ c` must hold link by link: `5 = 7` is not an answer of 7, and a
    /// `≈` link must be a correct rounding (`\frac13 \approx 0.3333`).
    pub(super) fn chain_holds(&mut self, e: &Expr) -> EvalResult<bool> {
        let Expr::Relation(terms, rels) = e else {
            return Ok(true);
        };
        let skip = usize::from(is_name(&terms[0]));
        let values = &terms[skip..];
        let links = &rels[skip..];
        if values.len() < 2 {
            return Ok(true);
        }
        let (how, why) = (self.how, self.why.take());
        let mut ok = true;
        for (w, link) in values.windows(2).zip(links) {
            let holds = match self.link_values(&w[0], &w[1])? {
                // Not numbers (variables, sets): compared as answers.
                None => self.same(&w[0], &w[1])?,
                Some((x, y)) => {
                    Self::num_eq_sym(&x, &y)
                        || (*link == Rel::Approx && self.rounds_to(&w[0], &w[1]))
                }
            };
            if !holds {
                ok = false;
                break;
            }
        }
        (self.how, self.why) = (how, why);
        Ok(ok)
    }

    /// Both sides of a chain link as numbers, when they are constants.
    fn link_values(&mut self, x: &Expr, y: &Expr) -> EvalResult<Option<(Num, Num)>> {
        if !x.is_constant() || !y.is_constant() {
            return Ok(None);
        }
        let env = Env {
            vars: &[],
            reading: PLAIN,
        };
        match (eval(x, &env, &mut self.b), eval(y, &env, &mut self.b)) {
            (Err(e @ EvalError::TooComplex(_)), _) | (_, Err(e @ EvalError::TooComplex(_))) => {
                Err(e)
            }
            (Ok(a), Ok(b)) => Ok(Some((a, b))),
            _ => Ok(None),
        }
    }

    /// A system's solution: `x = 2, y = 3` against `y = 3, x = 2` (matched by name) or against
    /// bare values `2, 3` (matched in order). `None` when the gold is not such a list.
    pub(super) fn system(&mut self, g: &Expr, a: &Expr) -> EvalResult<Option<bool>> {
        let Expr::List(gs) = g else { return Ok(None) };
        let names: Option<Vec<String>> = gs
            .iter()
            .map(|x| assigned_name(x).map(crate::canon::show))
            .collect();
        let Some(names) = names else { return Ok(None) };
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        if gs.len() < 2 || unique.len() != names.len() {
            return Ok(None);
        }
        self.how = "system (by unknown)";
        let expanded = expand_tuple_assignment(a);
        let a = expanded.as_ref().unwrap_or(a);
        let items: Vec<Expr> = match a {
            Expr::List(v) | Expr::Set(v) | Expr::Tuple(v) => v.clone(),
            Expr::Pair(x, y) => vec![(**x).clone(), (**y).clone()],
            _ => return Ok(Some(false)),
        };
        if items.len() != gs.len() {
            self.why = Some(format!("{} values for {} unknowns", items.len(), gs.len()));
            return Ok(Some(false));
        }
        let by_name = items.iter().all(|x| assigned_name(x).is_some());
        for (k, (gi, name)) in gs.iter().zip(&names).enumerate() {
            let ai = if by_name {
                items
                    .iter()
                    .find(|x| assigned_name(x).is_some_and(|n| crate::canon::show(n) == *name))
            } else {
                items.get(k)
            };
            let Some(ai) = ai else {
                self.why = Some(format!("no value for {name}"));
                return Ok(Some(false));
            };
            if !self.same(gi, ai)? {
                self.how = "system (by unknown)";
                self.why = Some(format!("{name} differs"));
                return Ok(Some(false));
            }
        }
        self.how = "system (by unknown)";
        self.why = None;
        Ok(Some(true))
    }
}

/// `x = 3`, `f(x) = 3`: a name on the left that the answer is a value of.
/// A name for the unknown(s): `x`, `f(x)`, `(p, q)`, `AB`, `|AB|`, `\frac{NO}{BO}`, `V_1:V_2`.
pub(super) fn is_name(e: &Expr) -> bool {
    match e {
        Expr::Var(_) | Expr::Apply(..) => true,
        // AIME's `m + n = 47`: a sum of plain unknowns.
        Expr::Add(v) => v.len() >= 2 && v.iter().all(|t| matches!(t, Expr::Var(_))),
        Expr::Pair(a, b) | Expr::Frac(a, b) | Expr::Ratio(a, b) => is_name(a) && is_name(b),
        Expr::Tuple(v) | Expr::Mul(v) => v.iter().all(is_name),
        // `|AB|` (a length) names a quantity; `|x|` is a value of x, not a name for it.
        Expr::Func(crate::expr::Func::Abs, a) => matches!(&**a, Expr::Mul(v) if v.len() >= 2
            && v.iter().all(|t| matches!(t, Expr::Var(n) if n.chars().all(|c| c.is_ascii_uppercase())))),
        _ => false,
    }
}

/// `(x, y) = (2, 3)` as `x = 2, y = 3`.
pub(super) fn expand_tuple_assignment(e: &Expr) -> Option<Expr> {
    let Expr::Relation(terms, rels) = e else {
        return None;
    };
    let items = |t: &Expr| -> Option<Vec<Expr>> {
        match t {
            Expr::Pair(x, y) => Some(vec![(**x).clone(), (**y).clone()]),
            Expr::Tuple(v) => Some(v.clone()),
            _ => None,
        }
    };
    if terms.len() != 2 || rels != &[Rel::Eq] {
        return None;
    }
    let (names, values) = (items(&terms[0])?, items(&terms[1])?);
    if names.len() != values.len() || !names.iter().all(|n| matches!(n, Expr::Var(_))) {
        return None;
    }
    Some(Expr::List(
        names
            .into_iter()
            .zip(values)
            .map(|(n, v)| Expr::Relation(vec![n, v], vec![Rel::Eq]))
            .collect(),
    ))
}

/// The name in `x = 3` (or `x = 5 + 6 = 11`).
pub(super) fn assigned_name(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Relation(terms, rels)
            if terms.len() >= 2
                && rels.iter().all(|r| matches!(r, Rel::Eq | Rel::Approx))
                && is_name(&terms[0]) =>
        {
            Some(&terms[0])
        }
        _ => None,
    }
}

/// The right side of `x = 3` (or of a chain `x = 5 + 6 = 11`, its last term).
pub(super) fn unwrap_assignment(e: &Expr) -> Option<&Expr> {
    if let Expr::Relation(terms, rels) = e {
        if rels.iter().all(|r| matches!(r, Rel::Eq | Rel::Approx)) && terms.len() >= 2 {
            // `x = 5 + 6 = 11`: the last term. A chain that goes on to approximate
            // (`x = \frac13 \approx 0.33`) answers with the value before the first `≈`.
            let named = is_name(&terms[0]);
            if named || terms.iter().all(Expr::is_constant) {
                let skip = usize::from(named);
                return match rels[skip..].iter().position(|r| *r == Rel::Approx) {
                    Some(k) => terms.get(skip + k),
                    None => terms.last(),
                };
            }
            if terms.len() == 2 && is_name(&terms[1]) && terms[0].is_constant() {
                return Some(&terms[0]);
            }
        }
    }
    None
}
