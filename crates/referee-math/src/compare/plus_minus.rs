//! `\pm`: a value written with it is the set of its two values.

use crate::expr::Expr;

/// A value written with `\pm` anywhere (`\frac{-1 \pm \sqrt5}{2}`): two values.
pub(super) fn has_pm(e: &Expr) -> bool {
    !e.is_structure() && e.any(|x| matches!(x, Expr::PlusMinus(..)))
}

/// The two values of an expression with `\pm` (every `\pm` takes the same sign).
pub(super) fn plus_minus_items(e: &Expr) -> Vec<Expr> {
    if has_pm(e) {
        vec![pm_pick(e, true), pm_pick(e, false)]
    } else {
        vec![e.clone()]
    }
}

fn pm_pick(e: &Expr, plus: bool) -> Expr {
    let b = |x: &Expr| Box::new(pm_pick(x, plus));
    let all = |v: &[Expr]| v.iter().map(|x| pm_pick(x, plus)).collect::<Vec<_>>();
    match e {
        Expr::PlusMinus(a, x) => {
            let x = pm_pick(x, plus);
            let x = if plus { x } else { Expr::Neg(Box::new(x)) };
            match a {
                None => x,
                Some(a) => Expr::Add(vec![pm_pick(a, plus), x]),
            }
        }
        Expr::Add(v) => Expr::Add(all(v)),
        Expr::Mul(v) => Expr::Mul(all(v)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::Frac(x, y) => Expr::Frac(b(x), b(y)),
        Expr::Mixed(x, y) => Expr::Mixed(b(x), b(y)),
        Expr::Pow(x, y) => Expr::Pow(b(x), b(y)),
        Expr::Root(x, y) => Expr::Root(b(x), b(y)),
        Expr::LogBase(x, y) => Expr::LogBase(b(x), b(y)),
        Expr::Binom(x, y) => Expr::Binom(b(x), b(y)),
        Expr::Func(f, x) => Expr::Func(*f, b(x)),
        Expr::Factorial(x) => Expr::Factorial(b(x)),
        Expr::Percent(x) => Expr::Percent(b(x)),
        Expr::Degrees(x) => Expr::Degrees(b(x)),
        other => other.clone(),
    }
}
