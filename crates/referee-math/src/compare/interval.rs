//! Intervals and inequalities: inequalities read as intervals, unions merged, points taken out,
//! and intervals compared endpoint by endpoint with their openness.

use super::assign::is_name;
use super::Cx;
use crate::eval::{eval, Env, PLAIN};
use crate::expr::{Const, Expr, Rel};
use crate::num::{Budget, EvalResult};
use crate::options::IntervalInequality;

impl Cx<'_> {
    pub(super) fn intervals(
        &mut self,
        g: &Expr,
        a: &Expr,
        gold_was_inequality: bool,
    ) -> EvalResult<bool> {
        let conv;
        let a = if is_inequality(a) {
            let allowed = match self.opts.interval_inequality {
                IntervalInequality::Equivalent => true,
                IntervalInequality::GoldInequalityOnly => gold_was_inequality,
                IntervalInequality::Never => false,
            };
            if !allowed {
                self.how = "interval";
                self.why = Some("an inequality against an interval (interval_inequality)".into());
                return Ok(false);
            }
            if let Some(i) = inequality_interval(a) {
                conv = i;
                &conv
            } else {
                self.how = "interval";
                self.why = Some("not an interval".into());
                return Ok(false);
            }
        } else {
            a
        };
        let from_list;
        let a = match a {
            Expr::List(items) if items.iter().all(is_inequality) => {
                if items.iter().any(|x| x.vars() != items[0].vars()) {
                    self.how = "interval";
                    self.why = Some("inequalities in different unknowns".into());
                    return Ok(false);
                }
                let mut parts = Vec::with_capacity(items.len());
                for it in items {
                    let Some(i) = inequality_interval(it) else {
                        self.how = "interval";
                        self.why = Some("not an interval".into());
                        return Ok(false);
                    };
                    parts.push(i);
                }
                // `x < -1, x > 2` (pieces apart) is a union; `x > 0 and x < 1` (pieces that
                // overlap) is an intersection: nobody writes ℝ or ∅ that way.
                let Some(e) = list_of_inequalities(parts) else {
                    self.how = "interval";
                    self.why = Some("inequalities that neither join nor meet".into());
                    return Ok(false);
                };
                from_list = e;
                &from_list
            }
            _ => a,
        };
        let as_pair;
        let a = match a {
            Expr::Pair(x, y) => {
                as_pair = Expr::Interval {
                    lo: x.clone(),
                    hi: y.clone(),
                    lo_closed: false,
                    hi_closed: false,
                };
                &as_pair
            }
            _ => a,
        };
        // In a union, `(a, b)` is an open interval and `x > 2` the interval it describes.
        let open = |e: &Expr| match e {
            r @ Expr::Relation(..) if is_inequality(r) => {
                inequality_interval(r).unwrap_or_else(|| r.clone())
            }
            Expr::Pair(x, y) => Expr::Interval {
                lo: x.clone(),
                hi: y.clone(),
                lo_closed: false,
                hi_closed: false,
            },
            e => e.clone(),
        };
        let parts = |e: &Expr| -> Vec<Expr> {
            match e {
                Expr::Union(v) => v.iter().map(open).collect(),
                Expr::SetMinus(base, removed) => {
                    let base: Vec<Expr> = match &**base {
                        Expr::Union(v) => v.iter().map(open).collect(),
                        b => vec![open(b)],
                    };
                    remove_points(base, removed)
                }
                e => vec![open(e)],
            }
        };
        // `x < 3 or y > 3` is not a set of x.
        if let Expr::Union(v) = a {
            let rels: Vec<&Expr> = v.iter().filter(|x| is_inequality(x)).collect();
            if rels.iter().any(|x| x.vars() != rels[0].vars()) {
                self.how = "interval";
                self.why = Some("inequalities in different unknowns".into());
                return Ok(false);
            }
        }
        let (gp, ap) = (merge_union(parts(g)), merge_union(parts(a)));
        if gp.len() != ap.len() {
            self.how = "interval";
            self.why = Some(format!("{} pieces against {}", ap.len(), gp.len()));
            return Ok(false);
        }
        for x in &gp {
            let mut found = false;
            for y in &ap {
                if self.interval_eq(x, y)? {
                    found = true;
                    break;
                }
            }
            if !found {
                self.how = "interval (endpoints and openness)";
                self.why = Some(format!("no match for {}", crate::canon::show(x)));
                return Ok(false);
            }
        }
        self.how = "interval (endpoints and openness)";
        self.why = None;
        Ok(true)
    }

    pub(super) fn interval_eq(&mut self, x: &Expr, y: &Expr) -> EvalResult<bool> {
        match (x, y) {
            (
                Expr::Interval {
                    lo: a,
                    hi: b,
                    lo_closed: ac,
                    hi_closed: bc,
                },
                Expr::Interval {
                    lo: c,
                    hi: d,
                    lo_closed: cc,
                    hi_closed: dc,
                },
            ) => Ok(ac == cc && bc == dc && self.endpoint(a, c)? && self.endpoint(b, d)?),
            (Expr::Set(_), Expr::Set(_)) => self.same(x, y),
            _ => Ok(false),
        }
    }

    fn endpoint(&mut self, x: &Expr, y: &Expr) -> EvalResult<bool> {
        match (inf_sign(x), inf_sign(y)) {
            (Some(s), Some(t)) => Ok(s == t),
            (None, None) => self.scalar(x, y),
            _ => Ok(false),
        }
    }
}

fn inf_sign(e: &Expr) -> Option<i8> {
    match e {
        Expr::Const(Const::Infinity) => Some(1),
        Expr::Neg(a) => inf_sign(a).map(|s| -s),
        _ => None,
    }
}

/// An interval from an inequality in one variable: `x > 3`, `1 < x \le 2`, `3 \ge x`.
pub(super) fn inequality_interval(e: &Expr) -> Option<Expr> {
    let Expr::Relation(terms, rels) = e else {
        return None;
    };
    let inf = |neg: bool| {
        let i = Expr::Const(Const::Infinity);
        Box::new(if neg { Expr::Neg(Box::new(i)) } else { i })
    };
    let const_term = Expr::is_constant;
    let open = |lo: Box<Expr>, hi: Box<Expr>, lc: bool, hc: bool| Expr::Interval {
        lo,
        hi,
        lo_closed: lc,
        hi_closed: hc,
    };
    let abs_of_var = |t: &Expr| matches!(t, Expr::Func(crate::expr::Func::Abs, a) if matches!(&**a, Expr::Var(_)));
    match (terms.as_slice(), rels.as_slice()) {
        // `|x| \le 3` is [-3, 3]; `|x| > 3` is (-∞, -3) ∪ (3, ∞).
        ([l, r], [rel]) if (abs_of_var(l) && const_term(r)) || (abs_of_var(r) && const_term(l)) => {
            let (c, rel) = if abs_of_var(l) {
                (r, *rel)
            } else {
                (l, rel.flip())
            };
            let c = Box::new(c.clone());
            let neg_c = Box::new(Expr::Neg(c.clone()));
            match rel {
                Rel::Lt | Rel::Le => Some(open(neg_c, c, rel == Rel::Le, rel == Rel::Le)),
                Rel::Gt | Rel::Ge => Some(Expr::Union(vec![
                    open(inf(true), neg_c, false, rel == Rel::Ge),
                    open(c, inf(false), rel == Rel::Ge, false),
                ])),
                _ => None,
            }
        }
        // `x \ne 0`: everything but one point.
        ([l, r], [Rel::Ne]) if (is_name(l) && const_term(r)) || (is_name(r) && const_term(l)) => {
            let c = Box::new(if is_name(l) { r.clone() } else { l.clone() });
            Some(Expr::Union(vec![
                open(inf(true), c.clone(), false, false),
                open(c, inf(false), false, false),
            ]))
        }
        ([l, r], [rel]) => {
            let (c, rel) = if is_name(l) && const_term(r) {
                (r, *rel)
            } else if is_name(r) && const_term(l) {
                (l, rel.flip())
            } else {
                return None;
            };
            let c = Box::new(c.clone());
            Some(match rel {
                Rel::Lt | Rel::Le => Expr::Interval {
                    lo: inf(true),
                    hi: c,
                    lo_closed: false,
                    hi_closed: rel == Rel::Le,
                },
                Rel::Gt | Rel::Ge => Expr::Interval {
                    lo: c,
                    hi: inf(false),
                    lo_closed: rel == Rel::Ge,
                    hi_closed: false,
                },
                _ => return None,
            })
        }
        ([a, v, c], [r1, r2]) if is_name(v) && const_term(a) && const_term(c) => {
            let up = |r: &Rel| matches!(r, Rel::Lt | Rel::Le);
            let down = |r: &Rel| matches!(r, Rel::Gt | Rel::Ge);
            if up(r1) && up(r2) {
                Some(Expr::Interval {
                    lo: Box::new(a.clone()),
                    hi: Box::new(c.clone()),
                    lo_closed: *r1 == Rel::Le,
                    hi_closed: *r2 == Rel::Le,
                })
            } else if down(r1) && down(r2) {
                Some(Expr::Interval {
                    lo: Box::new(c.clone()),
                    hi: Box::new(a.clone()),
                    lo_closed: *r2 == Rel::Ge,
                    hi_closed: *r1 == Rel::Ge,
                })
            } else {
                None
            }
        }
        _ => None,
    }
}

pub(super) fn is_inequality(e: &Expr) -> bool {
    matches!(e, Expr::Relation(_, rels) if rels.iter().all(|r| matches!(r, Rel::Lt | Rel::Le | Rel::Gt | Rel::Ge)))
        || matches!(e, Expr::Relation(t, rels) if t.len() == 2 && rels == &[Rel::Ne] && (is_name(&t[0]) || is_name(&t[1])))
}

pub(super) fn is_intervalish(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Interval { .. } | Expr::Union(_) | Expr::SetMinus(..)
    ) || matches!(e, Expr::List(v) if v.iter().all(is_inequality))
}

/// Intervals with finitely many points taken out (`\mathbb{R} \setminus \{0\}`), split at
/// those points. Left as written when a value is not numeric.
fn remove_points(intervals: Vec<Expr>, removed: &Expr) -> Vec<Expr> {
    let points: Vec<&Expr> = match removed {
        Expr::Set(v) | Expr::List(v) => v.iter().collect(),
        e => vec![e],
    };
    let mut pts: Vec<(f64, &Expr)> = Vec::with_capacity(points.len());
    for p in points {
        let Some(v) = endpoint_f64(p) else {
            return intervals;
        };
        pts.push((v, p));
    }
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = Vec::new();
    for iv in intervals {
        let Expr::Interval {
            lo,
            hi,
            lo_closed,
            hi_closed,
        } = iv
        else {
            out.push(iv);
            continue;
        };
        let (Some(l), Some(h)) = (endpoint_f64(&lo), endpoint_f64(&hi)) else {
            out.push(Expr::Interval {
                lo,
                hi,
                lo_closed,
                hi_closed,
            });
            continue;
        };
        let (mut cur_lo, mut cur_closed) = (lo, lo_closed);
        let mut cur_l = l;
        for (v, p) in &pts {
            if *v == cur_l {
                cur_closed = false;
            } else if *v > cur_l && *v < h {
                out.push(Expr::Interval {
                    lo: cur_lo,
                    hi: Box::new((*p).clone()),
                    lo_closed: cur_closed,
                    hi_closed: false,
                });
                cur_lo = Box::new((*p).clone());
                cur_closed = false;
                cur_l = *v;
            }
        }
        let hi_closed = hi_closed && !pts.iter().any(|(v, _)| *v == h);
        out.push(Expr::Interval {
            lo: cur_lo,
            hi,
            lo_closed: cur_closed,
            hi_closed,
        });
    }
    out
}

/// A list of intervals read from inequalities: their union when they are pairwise apart,
/// their intersection when they all meet, `None` when neither.
fn list_of_inequalities(parts: Vec<Expr>) -> Option<Expr> {
    let ends = |e: &Expr| -> Option<(f64, f64, bool, bool)> {
        let Expr::Interval {
            lo,
            hi,
            lo_closed,
            hi_closed,
        } = e
        else {
            return None;
        };
        Some((endpoint_f64(lo)?, endpoint_f64(hi)?, *lo_closed, *hi_closed))
    };
    let iv: Vec<(f64, f64, bool, bool)> = parts.iter().map(ends).collect::<Option<_>>()?;
    let meet = |a: &(f64, f64, bool, bool), b: &(f64, f64, bool, bool)| {
        let lo = a.0.max(b.0);
        let hi = a.1.min(b.1);
        lo < hi
            || (lo == hi
                && (a.0 != lo || a.2)
                && (b.0 != lo || b.2)
                && (a.1 != hi || a.3)
                && (b.1 != hi || b.3))
    };
    let mut all_meet = true;
    let mut all_apart = true;
    for (k, a) in iv.iter().enumerate() {
        for b in &iv[k + 1..] {
            if meet(a, b) {
                all_apart = false;
            } else {
                all_meet = false;
            }
        }
    }
    if all_apart {
        return Some(Expr::Union(parts));
    }
    if !all_meet {
        return None;
    }
    // The intersection: the largest lower end and the smallest upper end.
    let mut lo = 0;
    let mut hi = 0;
    for (k, x) in iv.iter().enumerate() {
        if x.0 > iv[lo].0 || (x.0 == iv[lo].0 && !x.2) {
            lo = k;
        }
        if x.1 < iv[hi].1 || (x.1 == iv[hi].1 && !x.3) {
            hi = k;
        }
    }
    let (
        Expr::Interval {
            lo: l,
            lo_closed: lc,
            ..
        },
        Expr::Interval {
            hi: h,
            hi_closed: hc,
            ..
        },
    ) = (&parts[lo], &parts[hi])
    else {
        return None;
    };
    Some(Expr::Interval {
        lo: l.clone(),
        hi: h.clone(),
        lo_closed: *lc,
        hi_closed: *hc,
    })
}

fn endpoint_f64(e: &Expr) -> Option<f64> {
    if let Some(s) = inf_sign(e) {
        return Some(f64::INFINITY * f64::from(s));
    }
    let mut b = Budget::new(crate::options::Limits::default());
    let env = Env {
        vars: &[],
        reading: PLAIN,
    };
    eval(e, &env, &mut b).ok()?.real_f64()
}

/// Merges overlapping or touching intervals (`[1,2] ∪ [2,3]` is `[1,3]`) when every endpoint
/// has a numeric value; otherwise leaves the pieces as written.
fn merge_union(parts: Vec<Expr>) -> Vec<Expr> {
    if parts.len() < 2 {
        return parts;
    }
    let val = endpoint_f64;
    let mut iv = Vec::with_capacity(parts.len());
    for p in &parts {
        let Expr::Interval {
            lo,
            hi,
            lo_closed,
            hi_closed,
        } = p
        else {
            return parts;
        };
        let (Some(l), Some(h)) = (val(lo), val(hi)) else {
            return parts;
        };
        iv.push((l, h, p.clone(), *lo_closed, *hi_closed));
    }
    iv.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.3.cmp(&a.3)));
    let mut out: Vec<(f64, f64, Expr, bool, bool)> = Vec::with_capacity(iv.len());
    for cur in iv {
        if let Some(last) = out.last_mut() {
            let touches = cur.0 < last.1 || (cur.0 == last.1 && (last.4 || cur.3));
            if touches {
                if cur.1 > last.1 || (cur.1 == last.1 && cur.4) {
                    let Expr::Interval { hi, .. } = &cur.2 else {
                        continue;
                    };
                    if let Expr::Interval {
                        hi: lh, hi_closed, ..
                    } = &mut last.2
                    {
                        lh.clone_from(hi);
                        *hi_closed = cur.4;
                    }
                    last.1 = cur.1;
                    last.4 = cur.4;
                }
                continue;
            }
        }
        out.push(cur);
    }
    out.into_iter().map(|x| x.2).collect()
}
