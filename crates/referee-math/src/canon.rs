//! The canonical text of a parsed answer, shown in explanations: one spelling per meaning
//! (`\dfrac{1}{2}`, `1/2` and `\frac12` all show as `1/2`; sets sorted as written).

use crate::expr::{Const, Expr, Func, Rel};
use std::fmt::Write;

pub(crate) fn show(e: &Expr) -> String {
    let mut s = String::new();
    write(&mut s, e);
    s
}

fn list(s: &mut String, items: &[Expr], open: &str, close: &str) {
    s.push_str(open);
    for (k, it) in items.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        write(s, it);
    }
    s.push_str(close);
}

fn atom(s: &mut String, e: &Expr) {
    let simple = matches!(e, Expr::Num(l) if l.value >= crate::num::q_int(0))
        || matches!(
            e,
            Expr::Var(_)
                | Expr::Const(_)
                | Expr::Base { .. }
                | Expr::Func(..)
                | Expr::Root(..)
                | Expr::Text(_)
        );
    if simple {
        write(s, e);
    } else {
        s.push('(');
        write(s, e);
        s.push(')');
    }
}

fn write(s: &mut String, e: &Expr) {
    match e {
        Expr::Num(l) => {
            if let Some(p) = l.places.filter(|p| *p > 0) {
                let v = crate::num::q_to_f64(&l.value);
                if l.value.numer().bits() < 50 && l.value.denom().bits() < 50 {
                    let _ = write!(s, "{v:.*}", p as usize);
                } else {
                    let _ = write!(s, "{}", l.value);
                }
            } else {
                let _ = write!(s, "{}", l.value);
            }
        }
        Expr::Base { digits, base } => {
            let _ = write!(s, "{digits}_{base}");
        }
        Expr::Const(c) => s.push_str(match c {
            Const::Pi => "π",
            Const::E => "e",
            Const::I => "i",
            Const::Infinity => "∞",
        }),
        Expr::Var(v) => s.push_str(v),
        Expr::Add(v) => {
            for (k, t) in v.iter().enumerate() {
                if let Expr::Neg(a) = t {
                    s.push_str(if k == 0 { "-" } else { " - " });
                    atom(s, a);
                } else {
                    if k > 0 {
                        s.push_str(" + ");
                    }
                    write(s, t);
                }
            }
        }
        Expr::Mul(v) => {
            for (k, t) in v.iter().enumerate() {
                if k > 0 {
                    s.push('*');
                }
                atom(s, t);
            }
        }
        Expr::Neg(a) => {
            s.push('-');
            atom(s, a);
        }
        Expr::Frac(a, b) => {
            atom(s, a);
            s.push('/');
            atom(s, b);
        }
        Expr::Mixed(a, b) => {
            write(s, a);
            s.push(' ');
            write(s, b);
        }
        Expr::Pow(a, b) => {
            atom(s, a);
            s.push('^');
            atom(s, b);
        }
        Expr::Root(a, n) => {
            if matches!(&**n, Expr::Num(l) if l.value == crate::num::q_int(2)) {
                s.push_str("sqrt(");
            } else {
                s.push_str("root(");
                write(s, n);
                s.push_str(", ");
            }
            write(s, a);
            s.push(')');
        }
        Expr::Func(f, a) => {
            let name = match f {
                Func::Sin => "sin",
                Func::Cos => "cos",
                Func::Tan => "tan",
                Func::Cot => "cot",
                Func::Sec => "sec",
                Func::Csc => "csc",
                Func::Asin => "arcsin",
                Func::Acos => "arccos",
                Func::Atan => "arctan",
                Func::Sinh => "sinh",
                Func::Cosh => "cosh",
                Func::Tanh => "tanh",
                Func::Ln => "ln",
                Func::Log => "log",
                Func::Exp => "exp",
                Func::Floor => "floor",
                Func::Ceil => "ceil",
                Func::Abs => "abs",
                Func::Conj => "conj",
            };
            s.push_str(name);
            s.push('(');
            write(s, a);
            s.push(')');
        }
        Expr::LogBase(b, a) => {
            s.push_str("log_");
            atom(s, b);
            s.push('(');
            write(s, a);
            s.push(')');
        }
        Expr::Factorial(a) => {
            atom(s, a);
            s.push('!');
        }
        Expr::DoubleFactorial(a) => {
            atom(s, a);
            s.push_str("!!");
        }
        Expr::Binom(n, k) => {
            s.push_str("binom(");
            write(s, n);
            s.push_str(", ");
            write(s, k);
            s.push(')');
        }
        Expr::Percent(a) => {
            atom(s, a);
            s.push('%');
        }
        Expr::Degrees(a) => {
            atom(s, a);
            s.push('°');
        }
        Expr::PlusMinus(a, b) => {
            if let Some(a) = a {
                write(s, a);
                s.push(' ');
            }
            s.push_str("± ");
            atom(s, b);
        }
        Expr::Text(t) => {
            let _ = write!(s, "text({t})");
        }
        Expr::Apply(f, args) => {
            s.push_str(f);
            list(s, args, "(", ")");
        }
        Expr::Set(v) => list(s, v, "{", "}"),
        Expr::List(v) => list(s, v, "", ""),
        Expr::Tuple(v) => list(s, v, "(", ")"),
        Expr::SetMinus(a, b) => {
            write(s, a);
            s.push_str(" \\ ");
            write(s, b);
        }
        Expr::Ratio(a, b) => {
            atom(s, a);
            s.push_str(" : ");
            atom(s, b);
        }
        Expr::Pair(a, b) => {
            s.push('(');
            write(s, a);
            s.push_str(", ");
            write(s, b);
            s.push(')');
        }
        Expr::Interval {
            lo,
            hi,
            lo_closed,
            hi_closed,
        } => {
            s.push(if *lo_closed { '[' } else { '(' });
            write(s, lo);
            s.push_str(", ");
            write(s, hi);
            s.push(if *hi_closed { ']' } else { ')' });
        }
        Expr::Union(v) => {
            for (k, t) in v.iter().enumerate() {
                if k > 0 {
                    s.push_str(" ∪ ");
                }
                write(s, t);
            }
        }
        Expr::Relation(terms, rels) => {
            for (k, t) in terms.iter().enumerate() {
                if k > 0 {
                    let r: Rel = rels[k - 1];
                    let _ = write!(s, " {} ", r.symbol());
                }
                write(s, t);
            }
        }
        Expr::Matrix { rows, cols, cells } => {
            s.push_str("matrix[");
            for r in 0..*rows {
                if r > 0 {
                    s.push_str("; ");
                }
                for c in 0..*cols {
                    if c > 0 {
                        s.push_str(", ");
                    }
                    write(s, &cells[r * cols + c]);
                }
            }
            s.push(']');
        }
    }
}
