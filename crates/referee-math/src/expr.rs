//! The parsed form of an answer. Structure is kept (sets, tuples, intervals, relations, matrices)
//! because equivalence depends on it; arithmetic is kept unevaluated so the "restated the
//! question" policy can see whether an answer was computed.

use crate::num::Q;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Const {
    Pi,
    E,
    I,
    Infinity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Sin,
    Cos,
    Tan,
    Cot,
    Sec,
    Csc,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Ln,
    /// Base 10 unless a base is given (`\log_2 x` is parsed as `Log2`-style `LogBase`).
    Log,
    Exp,
    Floor,
    Ceil,
    Abs,
    /// Complex conjugate (`\overline{z}`); of a segment name, a name.
    Conj,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rel {
    Eq,
    /// `\approx`: the right side is a rounding of the left.
    Approx,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Rel {
    pub fn flip(self) -> Rel {
        match self {
            Rel::Lt => Rel::Gt,
            Rel::Le => Rel::Ge,
            Rel::Gt => Rel::Lt,
            Rel::Ge => Rel::Le,
            r => r,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Rel::Eq => "=",
            Rel::Approx => "≈",
            Rel::Ne => "≠",
            Rel::Lt => "<",
            Rel::Le => "≤",
            Rel::Gt => ">",
            Rel::Ge => "≥",
        }
    }
}

/// How a number literal was written; decides precision and the "unevaluated" policy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lit {
    pub value: Q,
    /// Digits after the decimal point as written (`3.10` → 2); `None` for an integer.
    pub places: Option<u32>,
    /// Significant digits as written (`0.0310` → 3).
    pub sig: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Num(Lit),
    /// A number in another base, `52_8`: the digits as written and the base.
    Base {
        digits: String,
        base: u32,
    },
    Const(Const),
    Var(String),
    Add(Vec<Expr>),
    Mul(Vec<Expr>),
    Neg(Box<Expr>),
    /// `\frac{a}{b}` or `a/b` (kept apart from Mul so `\frac{6}{8}` stays a literal).
    Frac(Box<Expr>, Box<Expr>),
    /// `7\frac{3}{4}`: integer part and the fraction.
    Mixed(Box<Expr>, Box<Expr>),
    Pow(Box<Expr>, Box<Expr>),
    /// `\sqrt[n]{x}`; index 2 for `\sqrt{x}`.
    Root(Box<Expr>, Box<Expr>),
    Func(Func, Box<Expr>),
    LogBase(Box<Expr>, Box<Expr>),
    Factorial(Box<Expr>),
    DoubleFactorial(Box<Expr>),
    Binom(Box<Expr>, Box<Expr>),
    Percent(Box<Expr>),
    Degrees(Box<Expr>),
    /// `a \pm b` (or `\pm b` with `a` = None): two values.
    PlusMinus(Option<Box<Expr>>, Box<Expr>),
    /// A plain-text answer, normalised (lower case, no punctuation or spaces).
    Text(String),
    /// Applied function `f(x)` of an unknown function: kept as a name and its argument text.
    Apply(String, Vec<Expr>),

    // Structure.
    /// `\{a, b\}`.
    Set(Vec<Expr>),
    /// A bare `a, b` list or `a \text{ or } b`: compared as a set, a hedge against a scalar gold.
    List(Vec<Expr>),
    /// `(a, b, c)` with three or more items, `\langle ..\rangle`, or a `[a, b, c]`.
    Tuple(Vec<Expr>),
    /// `a : b`: a ratio (or a clock time), compared term by term.
    Ratio(Box<Expr>, Box<Expr>),
    /// `(a, b)`: an ordered pair or an open interval, read by what the gold is.
    Pair(Box<Expr>, Box<Expr>),
    Interval {
        lo: Box<Expr>,
        hi: Box<Expr>,
        lo_closed: bool,
        hi_closed: bool,
    },
    Union(Vec<Expr>),
    /// `A \setminus B`: intervals without a finite set of points.
    SetMinus(Box<Expr>, Box<Expr>),
    /// `a = b`, `a < b \le c`: the terms and the relations between them.
    Relation(Vec<Expr>, Vec<Rel>),
    Matrix {
        rows: usize,
        cols: usize,
        cells: Vec<Expr>,
    },
}

impl Expr {
    pub fn is_structure(&self) -> bool {
        matches!(
            self,
            Expr::Set(_)
                | Expr::List(_)
                | Expr::Tuple(_)
                | Expr::Pair(..)
                | Expr::Interval { .. }
                | Expr::Union(_)
                | Expr::SetMinus(..)
                | Expr::Relation(..)
                | Expr::Matrix { .. }
        )
    }

    /// Visits every node (pre-order).
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Add(v)
            | Expr::Mul(v)
            | Expr::Set(v)
            | Expr::List(v)
            | Expr::Tuple(v)
            | Expr::Union(v)
            | Expr::Apply(_, v)
            | Expr::Relation(v, _) => v.iter().for_each(|e| e.walk(f)),
            Expr::Matrix { cells, .. } => cells.iter().for_each(|e| e.walk(f)),
            Expr::Neg(a)
            | Expr::Func(_, a)
            | Expr::Factorial(a)
            | Expr::DoubleFactorial(a)
            | Expr::Percent(a)
            | Expr::Degrees(a) => a.walk(f),
            Expr::Frac(a, b)
            | Expr::Mixed(a, b)
            | Expr::Pow(a, b)
            | Expr::Root(a, b)
            | Expr::LogBase(a, b)
            | Expr::Binom(a, b)
            | Expr::Pair(a, b)
            | Expr::Ratio(a, b)
            | Expr::SetMinus(a, b)
            | Expr::Interval { lo: a, hi: b, .. } => {
                a.walk(f);
                b.walk(f);
            }
            Expr::PlusMinus(a, b) => {
                if let Some(a) = a {
                    a.walk(f);
                }
                b.walk(f);
            }
            Expr::Num(_) | Expr::Base { .. } | Expr::Const(_) | Expr::Var(_) | Expr::Text(_) => {}
        }
    }

    pub fn any(&self, pred: impl Fn(&Expr) -> bool) -> bool {
        let mut found = false;
        self.walk(&mut |e| found |= pred(e));
        found
    }

    /// No free variable (cheaper than `vars().is_empty()`: no allocation).
    pub fn is_constant(&self) -> bool {
        !self.any(|e| matches!(e, Expr::Var(_)))
    }

    /// Free variables, sorted and unique.
    pub fn vars(&self) -> Vec<String> {
        let mut v = Vec::new();
        self.walk(&mut |e| {
            if let Expr::Var(name) = e {
                v.push(name.clone());
            }
        });
        v.sort();
        v.dedup();
        v
    }

    /// A number written as a literal: integer, decimal, scientific notation, a fraction of
    /// literals, a mixed number, with sign, `%` or degrees. What a computed answer looks like.
    pub fn is_literal(&self) -> bool {
        match self {
            Expr::Num(_) | Expr::Base { .. } => true,
            Expr::Neg(a) | Expr::Percent(a) | Expr::Degrees(a) => a.is_literal(),
            Expr::Frac(a, b) | Expr::Mixed(a, b) | Expr::Ratio(a, b) => {
                a.is_literal() && b.is_literal()
            }
            // 1.5 \times 10^{3}: scientific notation.
            Expr::Mul(v) if v.len() == 2 => matches!(&v[0], Expr::Num(_)) && is_power_of_ten(&v[1]),
            _ => false,
        }
    }

    /// Written with a `%`.
    pub fn has_percent(&self) -> bool {
        self.any(|e| matches!(e, Expr::Percent(_)))
    }

    pub fn has_degrees(&self) -> bool {
        self.any(|e| matches!(e, Expr::Degrees(_)))
    }
}

pub(crate) fn is_power_of_ten(e: &Expr) -> bool {
    match e {
        Expr::Pow(b, x) => {
            matches!(&**b, Expr::Num(l) if l.places.is_none() && l.value == crate::num::q_int(10))
                && match &**x {
                    Expr::Num(l) => l.places.is_none(),
                    Expr::Neg(n) => matches!(&**n, Expr::Num(l) if l.places.is_none()),
                    _ => false,
                }
        }
        _ => false,
    }
}
