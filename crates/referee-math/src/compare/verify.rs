//! The entry point: the gold parsed (or extracted from a solution), the answer extracted and
//! parsed part by part, an option label or the same canonical form settled at once, the rest
//! compared by [`Cx`](super::Cx).

use super::points::fnv1a;
use super::precision::{decimal_places, EXACT_FORM_NOTE};
use super::same::is_setlike;
use super::Cx;
use crate::eval::{eval, Env, PLAIN};
use crate::expr::Expr;
use crate::extract::{extract_limited, Extraction};
use crate::num::{Budget, EvalError};
use crate::options::{Approximate, ExtractMode, GoldForm, Options};
use crate::parse::{parse_with, ParseError, Parsed};
use crate::{Side, Status, Verdict};

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
        approximated: false,
    };
    match cx.top(&g, &a) {
        Ok(eq) => {
            base.status = if eq { Status::Correct } else { Status::Wrong };
            base.detail = match cx.why {
                Some(w) => format!("{}: {w}", cx.how),
                None => cx.how.to_string(),
            };
            if !eq && cx.approximated && !base.detail.contains(EXACT_FORM_NOTE) {
                base.detail.push_str("; ");
                base.detail.push_str(EXACT_FORM_NOTE);
            }
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
    // The same value written twice (`\boxed{5}` then `\boxed{5.0}`, or `\boxed{\frac13}`
    // then `\boxed{0.3333}`) is not a hedge: a correct rounding is the same value here, and
    // the exact part is the one compared with the gold.
    let lenient = Options {
        approximate: Approximate::SignificantDigits(HEDGE_DIGITS),
        ..opts.clone()
    };
    let mut cx = Cx {
        opts: &lenient,
        seed: fnv1a(g.text.as_bytes()),
        b: Budget::new(opts.limits),
        how: "",
        why: None,
        approximated: false,
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
        let k = parsed
            .iter()
            .position(|p| decimal_places(&p.expr, false).is_none())
            .unwrap_or(0);
        return Ok(parsed.swap_remove(k));
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

/// Digits a decimal needs to count as the same value as an exact part beside it.
const HEDGE_DIGITS: u32 = 4;

/// More answers than this written back to back is spraying, not a list.
const MAX_PARTS: usize = 256;
