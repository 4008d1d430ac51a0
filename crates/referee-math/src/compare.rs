//! Equivalence by type: structure first (sets, tuples, intervals, relations, matrices), then
//! scalars exactly where both sides are exact, to the written precision where one side is a
//! decimal, and at deterministic sample points where variables appear.

use crate::eval::{eval, Env, Reading, PLAIN};
use crate::expr::{Const, Expr, Lit, Rel};
use crate::extract::{extract_limited, Extraction};
use crate::num::{q_to_f64, Budget, EvalError, EvalResult, Num, Q};
use crate::options::{
    AngleUnits, ExtractMode, GoldForm, IntervalInequality, Options, Percent, Unevaluated,
    UnreducedFractions,
};
use crate::parse::{parse_with, ParseError, Parsed};
use crate::{Side, Status, Verdict};
use num_integer::Integer;
use num_traits::{Signed, Zero};

fn verdict(status: Status, detail: impl Into<String>) -> Verdict {
    Verdict {
        status,
        side: None,
        extracted: None,
        gold_form: None,
        answer_form: None,
        detail: detail.into(),
    }
}

pub(crate) fn verify(opts: &Options, gold: &str, answer: &str) -> Verdict {
    let limits = &opts.limits;
    // The gold.
    let gold_text = match opts.gold {
        GoldForm::Bare => gold.trim().to_string(),
        GoldForm::Solution => {
            match extract_limited(gold, ExtractMode::STRICT, limits.max_completion_bytes) {
                Some(ex) => ex.parts.join(", "),
                None => {
                    return verdict(
                        Status::UnparseableGold,
                        "no marked answer in the gold solution",
                    )
                }
            }
        }
    };
    if gold_text.is_empty() {
        return verdict(Status::UnparseableGold, "the gold is empty");
    }
    let g = match parse_with(&gold_text, limits, &opts.extra_units) {
        Ok(p) => p,
        Err(ParseError::TooComplex(m)) => {
            let mut v = verdict(Status::TooComplex, format!("gold: {m}"));
            v.side = Some(Side::Gold);
            return v;
        }
        Err(e) => return verdict(Status::UnparseableGold, format!("gold `{gold_text}`: {e}")),
    };
    let g = fill_text(g);
    let gold_form = Some(g.canonical());

    // The answer.
    let Some(ex) = extract_limited(answer, opts.extract, limits.max_completion_bytes) else {
        let mut v = verdict(Status::NoAnswer, "no marked answer found");
        v.gold_form = gold_form;
        return v;
    };
    let mut base = Verdict {
        status: Status::Wrong,
        side: None,
        extracted: Some(ex.clone()),
        gold_form,
        answer_form: None,
        detail: String::new(),
    };
    if ex.questioned {
        base.detail = "the answer is posed as a question".into();
        return base;
    }
    // A choice gold (`B`, `\text{(B)}`) against `\textbf{(B)}\ 12`: the option's label
    // copied with its value.
    if let Expr::Var(letter) = &g.expr {
        let upper = letter.len() == 1 && letter.chars().all(|c| c.is_ascii_uppercase());
        if let ([part], true) = (ex.parts.as_slice(), upper) {
            if let Some(label) = choice_label(part) {
                base.answer_form = Some(label.to_string());
                base.status = if label.eq_ignore_ascii_case(&letter.chars().next().unwrap_or(' ')) {
                    Status::Correct
                } else {
                    Status::Wrong
                };
                base.detail = "choice label".into();
                return base;
            }
        }
    }
    let a = match parse_parts(&ex, opts, &g) {
        Ok(a) => a,
        Err((status, detail)) => {
            base.status = status;
            if status == Status::TooComplex {
                base.side = Some(Side::Answer);
            }
            base.detail = detail;
            return base;
        }
    };
    base.answer_form = Some(a.canonical());
    if !g.units.is_empty() && !a.units.is_empty() && g.units != a.units {
        base.detail = format!(
            "different units: {} against {}",
            a.units.join(" "),
            g.units.join(" ")
        );
        return base;
    }
    if base.answer_form == base.gold_form && !matches!(g.expr, Expr::Text(_)) {
        base.status = Status::Correct;
        base.detail = "same canonical form".into();
        return base;
    }
    let mut cx = Cx {
        opts,
        seed: fnv1a(gold_text.as_bytes()),
        b: Budget::new(*limits),
        how: "",
        why: None,
    };
    match cx.top(&g, &a) {
        Ok(eq) => {
            base.status = if eq { Status::Correct } else { Status::Wrong };
            base.detail = match cx.why {
                Some(w) => format!("{}: {w}", cx.how),
                None => cx.how.to_string(),
            };
        }
        Err(EvalError::TooComplex(m)) => {
            base.status = Status::TooComplex;
            let mut probe = Budget::new(*limits);
            let env = Env {
                vars: &[],
                reading: PLAIN,
            };
            let gold_bad = matches!(
                eval(&g.expr, &env, &mut probe),
                Err(EvalError::TooComplex(_))
            );
            base.side = Some(if gold_bad { Side::Gold } else { Side::Answer });
            base.detail = m.to_string();
        }
        Err(_) => {
            base.status = Status::Wrong;
            base.detail = "not comparable".into();
        }
    }
    base
}

/// `(B) 12`, `\textbf{(B)}\ 12`, `\text{(B) } 12`: the label of an option followed by more.
fn choice_label(raw: &str) -> Option<char> {
    let mut s = raw.trim_start_matches([' ', '$', '{']);
    for w in ["\\textbf{", "\\text{", "\\mathrm{", "\\mathbf{"] {
        if let Some(r) = s.strip_prefix(w) {
            s = r.trim_start();
        }
    }
    let b = s.as_bytes();
    if b.len() < 4 || b[0] != b'(' || !b[1].is_ascii_uppercase() || b[2] != b')' {
        return None;
    }
    // A value must follow the label (a bare `(B)` parses as the letter already), and not an
    // operator: `(X) + 1` is arithmetic on X, not option X.
    let rest = s[3..].trim_start_matches(['}', ' ', '~', ':', '.', '$']);
    let rest = rest.strip_prefix("\\ ").unwrap_or(rest).trim_start();
    // The value of the option: a number or a formula, not a second option or a comment.
    let value_like = rest.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        || ["\\frac", "\\dfrac", "\\sqrt", "\\pi"]
            .iter()
            .any(|v| rest.starts_with(v));
    let b2 = rest.as_bytes();
    let another_label = b2
        .windows(3)
        .any(|w| w[0] == b'(' && w[1].is_ascii_uppercase() && w[2] == b')');
    let words = rest.to_ascii_lowercase();
    let hedge = words
        .split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| matches!(w, "or" | "and" | "not" | "is" | "cup"))
        || rest.contains(',');
    (value_like && !another_label && !hedge).then_some(char::from(b[1]))
}

fn fill_text(mut p: Parsed) -> Parsed {
    if p.expr == Expr::Text(String::new()) {
        p.expr = Expr::Text(p.text.clone());
    }
    p
}

fn is_setlike(e: &Expr) -> bool {
    matches!(e, Expr::Set(_) | Expr::List(_)) || has_pm(e)
}

/// Parses the extracted parts; several different parts are one list against a set gold and a
/// hedge otherwise.
fn parse_parts(ex: &Extraction, opts: &Options, g: &Parsed) -> Result<Parsed, (Status, String)> {
    if ex.parts.len() > MAX_PARTS {
        return Err((
            Status::TooComplex,
            format!("{} answers written back to back", ex.parts.len()),
        ));
    }
    let mut parsed = Vec::with_capacity(ex.parts.len());
    for part in &ex.parts {
        if part.trim().is_empty() || part.trim() == "$$" {
            return Err((Status::NoAnswer, "the answer is empty".into()));
        }
        match parse_with(part, &opts.limits, &opts.extra_units) {
            Ok(p) => parsed.push(fill_text(p)),
            Err(ParseError::TooComplex(m)) => {
                return Err((Status::TooComplex, format!("answer: {m}")))
            }
            Err(e) => return Err((Status::UnparseableAnswer, format!("answer `{part}`: {e}"))),
        }
    }
    if parsed.len() == 1 {
        return Ok(parsed.pop().unwrap_or_else(|| unreachable!()));
    }
    let forms: Vec<String> = parsed.iter().map(Parsed::canonical).collect();
    if forms.iter().all(|f| *f == forms[0]) {
        return Ok(parsed.swap_remove(0));
    }
    // The same value written twice (`\boxed{5}` then `\boxed{5.0}`) is not a hedge.
    let mut cx = Cx {
        opts,
        seed: fnv1a(g.text.as_bytes()),
        b: Budget::new(opts.limits),
        how: "",
        why: None,
    };
    let mut all_same = true;
    for p in &parsed[1..] {
        match cx.same(&parsed[0].expr, &p.expr) {
            Ok(true) => {}
            Err(EvalError::TooComplex(m)) => {
                return Err((Status::TooComplex, format!("answer: {m}")))
            }
            Ok(false) | Err(_) => {
                all_same = false;
                break;
            }
        }
    }
    if all_same && !is_setlike(&g.expr) {
        return Ok(parsed.swap_remove(0));
    }
    if is_setlike(&g.expr) {
        let text = parsed
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let mut units: Vec<String> = parsed.iter().flat_map(|p| p.units.clone()).collect();
        units.sort_unstable();
        units.dedup();
        let mut items = Vec::new();
        for p in parsed {
            match p.expr {
                Expr::List(v) | Expr::Set(v) => items.extend(v),
                e => items.push(e),
            }
        }
        return Ok(Parsed {
            expr: Expr::List(items),
            text,
            units,
        });
    }
    Err((
        Status::Wrong,
        format!(
            "hedge: {} different final answers ({})",
            forms.len(),
            forms.join(" | ")
        ),
    ))
}

struct Cx<'a> {
    opts: &'a Options,
    /// Seeds the sample points: derived from the gold, so the points differ from problem to
    /// problem (nothing for a policy to learn) yet every run gives the same verdict.
    seed: u64,
    b: Budget,
    how: &'static str,
    why: Option<String>,
}

fn inf_sign(e: &Expr) -> Option<i8> {
    match e {
        Expr::Const(Const::Infinity) => Some(1),
        Expr::Neg(a) => inf_sign(a).map(|s| -s),
        _ => None,
    }
}

/// `x = 3`, `f(x) = 3`: a name on the left that the answer is a value of.
/// A name for the unknown(s): `x`, `f(x)`, `(p, q)`, `AB`, `|AB|`, `\frac{NO}{BO}`, `V_1:V_2`.
fn is_name(e: &Expr) -> bool {
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
fn expand_tuple_assignment(e: &Expr) -> Option<Expr> {
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
fn assigned_name(e: &Expr) -> Option<&Expr> {
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
fn unwrap_assignment(e: &Expr) -> Option<&Expr> {
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

/// An interval from an inequality in one variable: `x > 3`, `1 < x \le 2`, `3 \ge x`.
fn inequality_interval(e: &Expr) -> Option<Expr> {
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

fn is_inequality(e: &Expr) -> bool {
    matches!(e, Expr::Relation(_, rels) if rels.iter().all(|r| matches!(r, Rel::Lt | Rel::Le | Rel::Gt | Rel::Ge)))
        || matches!(e, Expr::Relation(t, rels) if t.len() == 2 && rels == &[Rel::Ne] && (is_name(&t[0]) || is_name(&t[1])))
}

fn is_intervalish(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Interval { .. } | Expr::Union(_) | Expr::SetMinus(..)
    ) || matches!(e, Expr::List(v) if v.iter().all(is_inequality))
}

/// Digits after the point in a written decimal (`3.10` → 2), through sign, `%` and `°`.
/// Digits after the point in a written decimal (`3.10` → 2) and its significant digits, as
/// read: `18.0` is the whole number 18 (datasets store integers as floats), `1.6 \times
/// 10^{-19}` has 20 places, and `12.5\%` read as a fraction has 3.
fn decimal_places(e: &Expr, percent_fraction: bool) -> Option<(u32, u32)> {
    match e {
        Expr::Num(Lit {
            places: Some(p),
            sig,
            value,
        }) => (!value.is_integer()).then_some((*p, *sig)),
        Expr::Neg(a) | Expr::Degrees(a) => decimal_places(a, percent_fraction),
        Expr::Percent(a) => {
            let extra = if percent_fraction { 2 } else { 0 };
            // `25\%` as 0.25 is exact, like 25.
            decimal_places(a, percent_fraction).map(|(p, sig)| (p + extra, sig))
        }
        Expr::Mul(v) if e.is_literal() => {
            let (p, sig) = match &v[0] {
                Expr::Num(Lit { places, sig, .. }) => (places.unwrap_or(0), *sig),
                _ => return None,
            };
            let k = ten_power(&v[1])?;
            let places = i64::from(p) - k;
            // `1.80 \times 10^{1}` is the whole number 18, like `18.0`.
            let whole = match &v[0] {
                Expr::Num(l) => {
                    let scaled = if k >= 0 {
                        l.value.clone() * Q::from_integer(pow10(k as usize))
                    } else {
                        l.value.clone() / Q::from_integer(pow10(k.unsigned_abs() as usize))
                    };
                    scaled.is_integer()
                }
                _ => false,
            };
            (places > 0 && !whole).then_some((places as u32, sig))
        }
        _ => None,
    }
}

/// k in `10^{k}`.
fn ten_power(e: &Expr) -> Option<i64> {
    let Expr::Pow(_, x) = e else { return None };
    let lit = |e: &Expr| match e {
        Expr::Num(l) => l.value.to_integer().try_into().ok(),
        _ => None,
    };
    match &**x {
        Expr::Neg(n) => lit(n).map(|k: i64| -k),
        other => lit(other),
    }
}

fn half_unit(places: u32) -> Q {
    Q::new(5.into(), pow10(places as usize + 1))
}

fn pow10(k: usize) -> num_bigint::BigInt {
    num_traits::pow(num_bigint::BigInt::from(10), k)
}

impl Cx<'_> {
    fn top(&mut self, g: &Parsed, a: &Parsed) -> EvalResult<bool> {
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

    fn same(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
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

    /// A chain `x = a = b ≈ c` must hold link by link: `5 = 7` is not an answer of 7, and a
    /// `≈` link must be a correct rounding (`\frac13 \approx 0.3333`).
    fn chain_holds(&mut self, e: &Expr) -> EvalResult<bool> {
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

    /// `x ≈ d` for a written decimal `d`: `d` is `x` correctly rounded, at any precision.
    fn rounds_to(&mut self, x: &Expr, d: &Expr) -> bool {
        let Some((p, _)) = decimal_places(d, false) else {
            return false;
        };
        let env = Env {
            vars: &[],
            reading: PLAIN,
        };
        let (Ok(xv), Ok(dv)) = (eval(x, &env, &mut self.b), eval(d, &env, &mut self.b)) else {
            return false;
        };
        let (Some(xf), Some(df)) = (xv.real_f64(), dv.real_f64()) else {
            return false;
        };
        (xf - df).abs() <= q_to_f64(&half_unit(p)) * (1.0 + 1e-9)
    }

    /// A system's solution: `x = 2, y = 3` against `y = 3, x = 2` (matched by name) or against
    /// bare values `2, 3` (matched in order). `None` when the gold is not such a list.
    fn system(&mut self, g: &Expr, a: &Expr) -> EvalResult<Option<bool>> {
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

    fn set_like(&mut self, gs: &[Expr], a: &Expr) -> EvalResult<bool> {
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

    fn tuple(&mut self, gs: &[Expr], a: &Expr) -> EvalResult<bool> {
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

    fn matrix(&mut self, rows: usize, cols: usize, cells: &[Expr], a: &Expr) -> EvalResult<bool> {
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

    fn intervals(&mut self, g: &Expr, a: &Expr, gold_was_inequality: bool) -> EvalResult<bool> {
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

    fn interval_eq(&mut self, x: &Expr, y: &Expr) -> EvalResult<bool> {
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

    fn relation(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
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

    fn num_eq_sym(x: &Num, y: &Num) -> bool {
        match (x, y) {
            (Num::Exact { .. }, Num::Exact { .. }) => x == y,
            _ => approx_eq(x, y),
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

    fn scalar(&mut self, g: &Expr, a: &Expr) -> EvalResult<bool> {
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

    fn values_equal(
        &mut self,
        (g, gv, rg): (&Expr, &Num, Reading),
        (a, av, ra): (&Expr, &Num, Reading),
    ) -> bool {
        let gdec = decimal_places(g, rg.percent_fraction);
        let adec = decimal_places(a, ra.percent_fraction);
        if let (Num::Exact { .. }, Num::Exact { .. }) = (gv, av) {
            if gv == av {
                self.how = "exact";
                return true;
            }
            let (Some(gq), Some(aq)) = (gv.as_real_exact(), av.as_real_exact()) else {
                self.how = "exact";
                return false;
            };
            let diff = || (gq - aq).abs();
            // Strictly within half a unit: `3.55` is not `3.5`.
            if let Some((p, _)) = gdec {
                self.how = "to the gold's written precision";
                return !gq.is_zero() && diff() < half_unit(p);
            }
            if let Some((p, sig)) = adec {
                self.how = "rounded decimal answer";
                return sig >= self.opts.min_significant_digits && diff() < half_unit(p);
            }
            self.how = "exact";
            return false;
        }
        let (g0, gi) = gv.to_c64();
        let (a0, ai) = av.to_c64();
        let d = (g0 - a0).hypot(gi - ai);
        // A decimal read as degrees is compared in radians: its half unit shrinks with it.
        let scale = |r: Reading| {
            if r.degrees_radians {
                std::f64::consts::PI / 180.0
            } else {
                1.0
            }
        };
        if let Some((p, _)) = gdec {
            self.how = "to the gold's written precision";
            let tol = q_to_f64(&half_unit(p)) * scale(rg);
            return g0 != 0.0 && d < tol * (1.0 - 1e-12);
        }
        if let Some((p, sig)) = adec {
            self.how = "rounded decimal answer";
            // `\cos 60^\circ` is 0.5 exactly: no rounding to judge.
            if approx_eq(gv, av) {
                return true;
            }
            let tol = q_to_f64(&half_unit(p)) * scale(ra);
            return sig >= self.opts.min_significant_digits && d < tol * (1.0 - 1e-12);
        }
        self.how = "numeric";
        approx_eq(gv, av)
    }

    /// Both sides at sample point `k` (its coordinates negated when `negative`); a cap hit on
    /// either side ends the comparison.
    fn eval_at(
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

    fn at_points(&mut self, g: &Expr, a: &Expr, vars: &[String]) -> EvalResult<bool> {
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

const POINTS: usize = 6;
const NEGATIVE_POINTS: usize = 3;

/// Equality where at least one side went through floating point (roots of non-squares, π, e,
/// logs, trig). Against an exact rational the bound is tight (1e-13 relative), since a
/// rational equal to an irrational would be a near miss like `\frac{103993}{33102}` for π;
/// between two floating values it allows for rounding (1e-11). Only an exact zero tolerates
/// an absolute 1e-15 (`\sin\pi` is 0).
fn approx_eq(x: &Num, y: &Num) -> bool {
    let exact = |n: &Num| matches!(n, Num::Exact { .. });
    let (a, ai) = x.to_c64();
    let (b, bi) = y.to_c64();
    let d = (a - b).hypot(ai - bi);
    let m = a.hypot(ai).max(b.hypot(bi));
    if (exact(x) && x.is_zero()) || (exact(y) && y.is_zero()) {
        return d <= 1e-15;
    }
    let rel = if exact(x) || exact(y) { 1e-13 } else { 1e-11 };
    d <= rel * m
}

/// More answers than this written back to back is spraying, not a list.
const MAX_PARTS: usize = 256;

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

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
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

/// A value written with `\pm` anywhere (`\frac{-1 \pm \sqrt5}{2}`): two values.
fn has_pm(e: &Expr) -> bool {
    !e.is_structure() && e.any(|x| matches!(x, Expr::PlusMinus(..)))
}

/// The two values of an expression with `\pm` (every `\pm` takes the same sign).
fn plus_minus_items(e: &Expr) -> Vec<Expr> {
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
