//! # arithmetic
//! *What it scores:* whether the arithmetic a text states is right: every `a op b = c` (and each
//! adjacent pair of a chain `a = b = c`) in prose, in LaTeX (`$...$`, `\(...\)`, `\times`,
//! `\cdot`, `\div`, `\frac{a}{b}`, `^`) and in GSM8K calculator annotations `<<48/6=8>>` is
//! evaluated exactly with referee-math. Alone, or as `each_step`'s grader for per-step
//! arithmetic checks (a step-level verifier for GSM8K-style chains).
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`); `mode`: `fraction` (default:
//! the share of checked equalities that hold) or `all` (1 only if every one holds);
//! `tolerance` (relative, default 0: `|l − r| ≤ tolerance · max(|l|, |r|)` also holds);
//! `if_none` (a number: the score when nothing is checked; default: the node does not apply,
//! so `each_step` leaves such a step out, "Let x be the apples" is not wrong);
//! `max_equations` (default 100): distinct equalities checked; each one past it counts as not
//! holding, unread, so a wrong claim cannot hide behind padding and padding costs no work.
//!
//! What is read: numbers with a point (`1.5`, `.5`), thousands groups `1,000` and `1\,000` (a
//! comma before exactly three digits, no space), `%` as /100 on both sides (`20% of 50 = 10`,
//! `50% = 0.5`), `+ - * / ^ ( )`, `**` emphasis and `5!`, `\sqrt`, `\pi`; `3 x 4` with a lone
//! spaced `x` between numbers is `3 × 4`. Look-alikes read as what they look like: `−` (U+2212)
//! is minus, `×` `·` `÷` are operators, full-width (`２＋２＝５`) and mathematical digits are
//! digits. Code blocks and inline code are read like prose (a wrong claim has nowhere to hide);
//! `==`, `!=`, `+=`, `:=` are code, not claims.
//!
//! Not checked, counted as `skipped` (never as correct): an equality with a variable or a unit
//! glued to a number on either side (`x = 5`, `2x + 3 = 7`, `= 12m`; in `x = 2 + 3 = 6` only
//! `2 + 3 = 6` is checked), an empty side (`= 5`), a bare number after a word (`Day 1 = 5
//! miles`: a label), a side glued to a character that is not read (`3:4 = 0.75`, `1,2,3 = 6`,
//! `10/4 = 2,5`), a side referee-math cannot read, and a **tautology**: two bare numbers of
//! the same value (`1 = 1`, `8 = 8.0`) are true and compute nothing, so padding with them
//! cannot raise the score (two different bare numbers, `1 = 2`, are wrong). A claim repeated
//! (spaces ignored: `2+2=4`, `2 + 2 = 4`) is checked once, so repeats do not raise the score;
//! `48/6 = <<48/6=8>>8` is one claim, `48/6 = <<48/6=8>>9` two (one right, one wrong). Dates,
//! ranges and times have no `=` and are never claims.
//!
//! Precision (referee-math's `Arith`): a side written as a bare decimal is a rounding of the
//! other side to its written places, within half a unit of its last digit, a tie either way:
//! `10/3 = 3.33` and `10/3 = 3.3` hold, `10/3 = 3.34` does not. An integer, or a whole decimal
//! (`3.0`, `0.00`), is exact: `10/3 = 3` is wrong. `≈` (`\approx`) is a rounding claim, checked
//! like `=` except that an integer rounds to its last non-zero digit (`10/3 ≈ 3`,
//! `1000 + 234 ≈ 1200` hold; `22/7 ≈ 3.2` does not).
//!
//! *Example:*
//! ```yaml
//! type: arithmetic
//! mode: all                  # every stated equality must hold
//! tolerance: 0.001
//! ```
//! Per step: `{type: each_step, steps: {split: lines}, aggregate: min, grader: {type: arithmetic}}`
//! (one wrong equation makes its step, and so the solution, 0; steps without one are left out).
//!
//! *Score and failure modes:* in [0, 1]. A division by zero (`5/0 = 0`) or a side over
//! referee-math's caps (`9^{9^{9^9}}`, a 100,000-digit number, the step budget of one text) is
//! checked and does not hold: a claim that cannot be verified is never paid. Nothing checked
//! (only skipped claims, or none) gives `if_none`, by default not applicable. Policy text never
//! makes the node fail; only a template that cannot render does. The trace's `detail` lists each
//! equality (char offsets `start`/`end` as Python indexes a `str`, the text, both values, the
//! status and how it was compared) and the counts (`checked`, `held`, `skipped`, `repeats`,
//! `over_cap`). Known limit: `fraction` rises with every *distinct* true claim a policy adds;
//! use `mode: all`, or `each_step` with `min`, where the policy chooses what it writes.

mod extract;

use crate::compile::{sync, At, Compiler, Number};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use extract::{equalities, Equality, Skip, Source};
use referee_math::{Arith, ClaimStatus, Limits};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::fmt::Write as _;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArithmeticSpec {
    /// The text checked (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// `fraction` (default): the share of checked equalities that hold; `all`: 1 only if all do.
    #[serde(default)]
    pub mode: ArithmeticMode,
    /// Relative tolerance (default 0: exact, a bare decimal to its written precision).
    #[serde(default)]
    pub tolerance: Option<Number>,
    /// The score when no equality is checked (default: the node does not apply).
    #[serde(default)]
    pub if_none: Option<Number>,
    /// Distinct equalities checked (default 100); each one past it counts as not holding.
    #[serde(default)]
    pub max_equations: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArithmeticMode {
    #[default]
    Fraction,
    All,
}

pub struct Arithmetic {
    input: Template,
    mode: ArithmeticMode,
    tolerance: f64,
    if_none: Option<f64>,
    max_equations: usize,
}

const DEFAULT_MAX: usize = 100;
/// Entries listed in the trace's detail beyond the checked ones (skipped, repeats).
const DETAIL_MAX: usize = 100;

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ArithmeticSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let mut ok = true;
    let tolerance = match spec.tolerance {
        None => 0.0,
        Some(Number(t)) if t >= 0.0 => t,
        Some(Number(t)) => {
            cx.err(at, Some("tolerance"), format!("must be ≥ 0, found {t}"));
            ok = false;
            0.0
        }
    };
    let max_equations = spec.max_equations.unwrap_or(DEFAULT_MAX);
    if max_equations == 0 {
        cx.err(
            at,
            Some("max_equations"),
            "must be at least 1 (0 would check nothing and score every claim as not holding)",
        );
        ok = false;
    }
    let input = input?;
    ok.then(|| {
        sync(Arithmetic {
            input,
            mode: spec.mode,
            tolerance,
            if_none: spec.if_none.map(|n| n.0),
            max_equations,
        })
    })
}

/// What became of one found equality.
enum Fate {
    Checked(referee_math::Claim),
    Skipped(&'static str),
    Repeat,
    OverCap,
}

impl SyncComponent for Arithmetic {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let found = equalities(&text);
        let mut arith = Arith::new(Limits::default());
        let mut seen: HashSet<String> = HashSet::new();
        let (mut held, mut failed, mut skipped, mut repeats, mut over) = (0, 0, 0, 0, 0);
        let mut fates: Vec<Fate> = Vec::with_capacity(found.len());
        for q in &found {
            if let Some(k) = q.skip {
                skipped += 1;
                fates.push(Fate::Skipped(k.as_str()));
                continue;
            }
            if !seen.insert(q.key()) {
                repeats += 1;
                fates.push(Fate::Repeat);
                continue;
            }
            if held + failed >= self.max_equations {
                over += 1;
                fates.push(Fate::OverCap);
                continue;
            }
            let c = arith.check(&q.lhs, q.rel, &q.rhs, self.tolerance);
            match &c.status {
                ClaimStatus::Holds => held += 1,
                ClaimStatus::Fails | ClaimStatus::Undefined(_) | ClaimStatus::TooComplex(..) => {
                    failed += 1;
                }
                _ => {
                    // Tautologies and unreadable sides are not computations; a later copy of
                    // the same text is still a repeat.
                    skipped += 1;
                    fates.push(Fate::Skipped(skip_word(&c.status)));
                    continue;
                }
            }
            fates.push(Fate::Checked(c));
        }
        let checked = held + failed + over;
        cx.detail(|| {
            detail(
                &text,
                &found,
                &fates,
                [checked, held, skipped, repeats, over],
            )
        });
        if checked == 0 {
            cx.note(|| {
                format!(
                    "no arithmetic claim to check ({skipped} skipped, {repeats} repeated): {}",
                    self.if_none
                        .map_or_else(|| "not applicable".to_string(), |v| v.to_string())
                )
            });
            return self
                .if_none
                .map_or_else(Outcome::not_applicable, Outcome::ok);
        }
        let value = match self.mode {
            ArithmeticMode::Fraction => held as f64 / checked as f64,
            ArithmeticMode::All => f64::from(u8::from(held == checked)),
        };
        cx.note(|| {
            let mut n = format!("{held} of {checked} equalities hold");
            if let Some((q, Fate::Checked(c))) = found
                .iter()
                .zip(&fates)
                .find(|(_, f)| matches!(f, Fate::Checked(c) if c.status != ClaimStatus::Holds))
            {
                let _ = write!(
                    n,
                    "; first wrong: `{}` ({})",
                    shorten(&text[q.start..q.end]),
                    why_not(c)
                );
            }
            if over > 0 {
                let _ = write!(n, "; {over} past max_equations counted as not holding");
            }
            if skipped + repeats > 0 {
                let _ = write!(n, "; {skipped} skipped, {repeats} repeated");
            }
            n
        });
        Outcome::ok(value)
    }
}

fn skip_word(s: &ClaimStatus) -> &'static str {
    match s {
        ClaimStatus::Tautology => "a tautology: two bare numbers of the same value",
        ClaimStatus::NotArithmetic(_) => "a side is not arithmetic",
        _ => "a side cannot be read",
    }
}

/// Why a checked claim does not hold, for the note.
fn why_not(c: &referee_math::Claim) -> String {
    match &c.status {
        ClaimStatus::Undefined(side) => format!("the {} side has no value", side.as_str()),
        ClaimStatus::TooComplex(side, m) => {
            format!("the {} side is too complex: {m}", side.as_str())
        }
        _ => format!(
            "{} against {}",
            c.lhs.as_deref().unwrap_or("?"),
            c.rhs.as_deref().unwrap_or("?")
        ),
    }
}

fn detail(
    text: &str,
    found: &[Equality],
    fates: &[Fate],
    [checked, held, skipped, repeats, over]: [usize; 5],
) -> Value {
    // Char offsets, found in one pass (the equalities are sorted by start).
    let mut chars = 0usize;
    let mut byte = 0usize;
    let mut to_char = |b: usize| {
        if b < byte {
            return text[..b].chars().count();
        }
        chars += text[byte..b].chars().count();
        byte = b;
        chars
    };
    let mut listed_other = 0;
    let mut rows = Vec::new();
    for (q, f) in found.iter().zip(fates) {
        if !matches!(f, Fate::Checked(_)) {
            if listed_other >= DETAIL_MAX {
                continue;
            }
            listed_other += 1;
        }
        let start = to_char(q.start);
        let end = to_char(q.end);
        let mut o = json!({
            "start": start,
            "end": end,
            "text": shorten(&text[q.start..q.end]),
            "rel": q.rel.symbol(),
        });
        if q.source == Source::Annotation {
            o["source"] = json!("annotation");
        }
        match f {
            Fate::Checked(c) => {
                o["status"] = json!(c.status.as_str());
                o["holds"] = json!(c.status == ClaimStatus::Holds);
                o["lhs"] = json!(c.lhs);
                o["rhs"] = json!(c.rhs);
                if !c.how.is_empty() {
                    o["how"] = json!(c.how);
                }
                if c.status != ClaimStatus::Holds && c.lhs.is_none() {
                    o["why"] = json!(why_not(c));
                }
            }
            Fate::Skipped(why) => {
                o["status"] = json!("skipped");
                o["why"] = json!(why);
            }
            Fate::Repeat => o["status"] = json!("repeat"),
            Fate::OverCap => {
                o["status"] = json!("over_cap");
                o["holds"] = json!(false);
            }
        }
        rows.push(o);
    }
    json!({
        "equalities": rows,
        "checked": checked,
        "held": held,
        "skipped": skipped,
        "repeats": repeats,
        "over_cap": over,
    })
}

impl Skip {
    #[cfg(test)]
    fn all() -> [Skip; 4] {
        [Skip::Variable, Skip::Empty, Skip::Label, Skip::Cut]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::Program;

    fn score(spec: &Value, text: &str) -> (Option<f64>, String) {
        let p = Program::compile(spec).unwrap();
        let r = p.score(&Sample::new(text, json!({})));
        (r.reward, r.status.as_str().to_string())
    }

    /// `0 + 1 = 1. 1 + 1 = 2. ...`: `n` distinct right claims.
    fn counting(n: usize) -> String {
        let mut t = String::new();
        for k in 0..n {
            let _ = write!(t, "{k} + 1 = {}. ", k + 1);
        }
        t
    }

    #[test]
    fn skip_words_are_distinct() {
        let words: HashSet<&str> = Skip::all().iter().map(|s| s.as_str()).collect();
        assert_eq!(words.len(), 4);
    }

    #[test]
    fn fraction_all_and_if_none() {
        let t = "2 + 2 = 4, and 3 * 3 = 10.";
        assert_eq!(score(&json!({"type": "arithmetic"}), t).0, Some(0.5));
        assert_eq!(
            score(&json!({"type": "arithmetic", "mode": "all"}), t).0,
            Some(0.0)
        );
        assert_eq!(
            score(&json!({"type": "arithmetic"}), "Let x be the apples.").1,
            "not_applicable"
        );
        assert_eq!(
            score(&json!({"type": "arithmetic", "if_none": 0}), "x = 5").0,
            Some(0.0)
        );
    }

    #[test]
    fn repeats_and_tautologies_do_not_inflate() {
        let honest = "2 + 2 = 4. 3 * 3 = 10.";
        let padded = format!("{honest} {}", "2+2=4 1 = 1 0=0 ".repeat(1_000));
        let s = json!({"type": "arithmetic"});
        assert_eq!(score(&s, honest).0, score(&s, &padded).0);
    }

    #[test]
    fn past_the_cap_counts_as_not_holding() {
        let s = json!({"type": "arithmetic", "max_equations": 10});
        assert_eq!(score(&s, &counting(50)).0, Some(0.2));
    }

    #[test]
    fn hostile_volume_is_cheap() {
        // 10,000 distinct claims (only the first 100 evaluated) and 100,000-digit sides.
        let many = counting(10_000);
        let digits = "9".repeat(100_000);
        let huge = format!("{digits} * {digits} = {digits}. ").repeat(20);
        let tower = "9^{9^{9^9}} = 1. ".repeat(200);
        let s = json!({"type": "arithmetic"});
        let t0 = std::time::Instant::now();
        assert_eq!(score(&s, &many).0, Some(0.01));
        assert_eq!(score(&s, &huge).0, Some(0.0));
        assert_eq!(score(&s, &tower).0, Some(0.0));
        assert!(t0.elapsed().as_secs_f64() < 5.0, "{:?}", t0.elapsed());
    }
}
