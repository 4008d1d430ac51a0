//! # set_match
//! *What it scores:* a list the policy wrote against the row's list (entities, scene-graph
//! triples, tags, cited ids): precision, recall, F1 or F-β of a one-to-one matching, minus a
//! penalty per hallucinated item. A gold item is matched at most once, and a predicted item
//! repeated (under the matching's normal form) counts once, so neither listing everything nor
//! repeating a right answer pays.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `reference` (template: an item
//! field holding a JSON array is taken as it is; text is read with `reference_extract`),
//! `extract` (how the input is read: `json`, default, the whole text one JSON array; `lines`;
//! `list`, markdown or numbered list items, markers removed; `{delimiter: ","}`;
//! `{regex: "..."}`, each match's group `item`, else group 1, else the whole match),
//! `reference_extract` (the same choices; default: `extract`'s), `match` (`exact`, default:
//! the trimmed texts; `casefold`: NFKC, invisible characters removed, lower-cased, whitespace
//! collapsed; `squad`: SQuAD v1.1's `normalize_answer`; `numeric`: each item one number
//! (`1,000`, `$3`, `1e3`), equal within `abs_tol` (default 0) or `rel_tol` (default 1e-9);
//! `fuzzy`: the casefold forms' rapidfuzz `ratio` ≥ `threshold`, default 0.9), `assign`
//! (`numeric` and `fuzzy`: `optimal`, default, the most pairs then the largest total
//! similarity, by Kuhn–Munkres; `greedy`, pairs by descending similarity, ties to earlier
//! items), `metric` (`f1`, default; `precision`; `recall`; `f_beta` with `beta`),
//! `hallucination_penalty` (default 0: subtracted once per predicted item that matched
//! nothing), `duplicates` (`ignore`, default: a repeat counts once and is no hallucination;
//! `count_as_wrong`: each repeat is an unmatched prediction), `max_items` (default 1000).
//!
//! *Example:*
//! ```yaml
//! type: set_match
//! name: entities
//! extract: json
//! reference: "{{item.entities}}"
//! match: casefold
//! metric: f1
//! hallucination_penalty: 0.1
//! ```
//!
//! *Score and failure modes:* the metric in [0,1] minus `hallucination_penalty` × the
//! unmatched predictions (so below 0 with a penalty; wrap it in `clamp` to bound it). Items are
//! trimmed; items empty after normalisation are dropped on both sides, and the gold list is a
//! set too. With both lists empty every metric is 1; with exactly one empty it is 0. The trace
//! says what matched, what was missed and what was hallucinated. An input that is not a list
//! (bad JSON, a JSON object), or longer than `max_items`, is the policy's miss: 0, status ok,
//! with a note; a JSON element that is neither a string nor a number (an object where names
//! belong) matches nothing. A reference that is not a list, holds such an element, or (for
//! `numeric`) an item that is not a number fails with `unparseable_reference`; one longer than
//! `max_items` with `reference_too_long`; a missing field with `missing_field`.

use super::items::{self, ExtractSpec, Item, Sides, SHOWN};
use super::numeric::lone_number;
use crate::compile::{sync, At, Compiler, Number};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::text::matching::{match_sets, Assign};
use crate::text::{fuzzy_match, normalise::is_invisible, squad};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use unicode_normalization::UnicodeNormalization;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetMatchSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The gold list: an item field holding a JSON array, or text read with `reference_extract`.
    pub reference: String,
    /// How the input is read as a list (default `json`).
    #[serde(default)]
    pub extract: ExtractSpec,
    /// How a textual reference is read as a list (default: as `extract`).
    #[serde(default)]
    pub reference_extract: Option<ExtractSpec>,
    /// How two items are compared (default `exact`).
    #[serde(default, rename = "match")]
    pub matching: Matching,
    /// `numeric`: absolute tolerance (default 0).
    #[serde(default)]
    pub abs_tol: Option<Number>,
    /// `numeric`: relative tolerance (default 1e-9).
    #[serde(default)]
    pub rel_tol: Option<Number>,
    /// `fuzzy`: the least similarity that matches (default 0.9).
    #[serde(default)]
    pub threshold: Option<Number>,
    /// `numeric` and `fuzzy`: how pairs are chosen (default `optimal`).
    #[serde(default)]
    pub assign: Option<Assign>,
    #[serde(default)]
    pub metric: Metric,
    /// `f_beta`: recall weighs `beta` times as much as precision.
    #[serde(default)]
    pub beta: Option<Number>,
    /// Subtracted once per predicted item that matched nothing (default 0).
    #[serde(default)]
    pub hallucination_penalty: Option<Number>,
    #[serde(default)]
    pub duplicates: Duplicates,
    /// Longest list matched (default 1000).
    #[serde(default)]
    pub max_items: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Matching {
    #[default]
    Exact,
    Casefold,
    Squad,
    Numeric,
    Fuzzy,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    #[default]
    F1,
    Precision,
    Recall,
    FBeta,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Duplicates {
    #[default]
    Ignore,
    CountAsWrong,
}

pub struct SetMatch {
    sides: Sides,
    matching: Matching,
    abs_tol: f64,
    rel_tol: f64,
    threshold: f64,
    assign: Assign,
    metric: Metric,
    beta: f64,
    penalty: f64,
    duplicates: Duplicates,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: SetMatchSpec = cx.spec(v, at)?;
    let sides = Sides::compile(
        cx,
        at,
        spec.input.as_deref(),
        &spec.reference,
        &spec.extract,
        spec.reference_extract.as_ref(),
        spec.max_items,
    );
    let mut ok = true;
    let m = spec.matching;
    let mut only = |set: bool, field: &str, allowed: bool, what: &str, cx: &mut Compiler| {
        if set && !allowed {
            cx.err(
                at,
                Some(field),
                format!("`{field}` is only used with {what}"),
            );
            ok = false;
        }
    };
    only(
        spec.abs_tol.is_some(),
        "abs_tol",
        m == Matching::Numeric,
        "`match: numeric`",
        cx,
    );
    only(
        spec.rel_tol.is_some(),
        "rel_tol",
        m == Matching::Numeric,
        "`match: numeric`",
        cx,
    );
    only(
        spec.threshold.is_some(),
        "threshold",
        m == Matching::Fuzzy,
        "`match: fuzzy`",
        cx,
    );
    only(
        spec.assign.is_some(),
        "assign",
        matches!(m, Matching::Numeric | Matching::Fuzzy),
        "`match: numeric` or `match: fuzzy`",
        cx,
    );
    only(
        spec.beta.is_some(),
        "beta",
        spec.metric == Metric::FBeta,
        "`metric: f_beta`",
        cx,
    );
    let mut check = |x: Option<Number>,
                     field: &str,
                     default: f64,
                     valid: fn(f64) -> bool,
                     want: &str| match x {
        None => default,
        Some(Number(t)) if valid(t) => t,
        Some(Number(t)) => {
            cx.err(
                at,
                Some(field),
                format!("`{field}` must be {want}, found {t}"),
            );
            ok = false;
            default
        }
    };
    let abs_tol = check(spec.abs_tol, "abs_tol", 0.0, |t| t >= 0.0, "≥ 0");
    let rel_tol = check(spec.rel_tol, "rel_tol", 1e-9, |t| t >= 0.0, "≥ 0");
    let threshold = check(
        spec.threshold,
        "threshold",
        0.9,
        |t| t > 0.0 && t <= 1.0,
        "in (0, 1]",
    );
    let penalty = check(
        spec.hallucination_penalty,
        "hallucination_penalty",
        0.0,
        |t| t >= 0.0,
        "≥ 0",
    );
    let beta = check(spec.beta, "beta", 1.0, |t| t > 0.0, "> 0");
    if spec.metric == Metric::FBeta && spec.beta.is_none() {
        cx.err(
            at,
            Some("beta"),
            "`metric: f_beta` needs a `beta` (recall weighs beta times precision)",
        );
        ok = false;
    }
    let sides = sides?;
    ok.then(|| {
        sync(SetMatch {
            sides,
            matching: m,
            abs_tol,
            rel_tol,
            threshold,
            assign: spec.assign.unwrap_or_default(),
            metric: spec.metric,
            beta,
            penalty,
            duplicates: spec.duplicates,
        })
    })
}

/// The casefold normal form: NFKC, invisible characters removed, lower-cased, whitespace
/// collapsed to single spaces.
pub fn casefold(s: &str) -> String {
    // `str::to_lowercase`, not per character, so a final sigma lower-cases as in Python.
    // ASCII is its own NFKC form and holds no invisible character: no copy for it.
    let visible: std::borrow::Cow<str> = if s.is_ascii() {
        std::borrow::Cow::Borrowed(s)
    } else {
        s.nfkc()
            .filter(|c| !is_invisible(*c))
            .collect::<String>()
            .into()
    };
    let mut out = String::with_capacity(visible.len());
    let mut space = false;
    for c in visible.to_lowercase().chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// One list item, read for matching.
struct Unit<'a> {
    item: &'a Item,
    /// The normal form repeats are found by (and, for the exact kinds, matched by).
    key: String,
    /// `numeric`: the value; NaN when the item is not a number.
    num: f64,
    /// Whether it can match anything at all.
    usable: bool,
}

/// Pairs of (predicted, gold) unit indices.
type Pairs = Vec<(usize, usize)>;

impl SetMatch {
    /// The unit for `item`, or `None` when it is empty after normalisation.
    fn unit<'a>(&self, item: &'a Item) -> Option<Unit<'a>> {
        if !item.scalar {
            return Some(Unit {
                item,
                key: item.text.clone(),
                num: f64::NAN,
                usable: false,
            });
        }
        let (key, num) = match self.matching {
            Matching::Exact => (item.text.clone(), f64::NAN),
            Matching::Casefold | Matching::Fuzzy => (casefold(&item.text), f64::NAN),
            Matching::Squad => (squad::normalize_answer(&item.text), f64::NAN),
            Matching::Numeric => match lone_number(&item.text) {
                // 0 and -0 are one number.
                Some(n) => (format!("{}", n.value + 0.0), n.value),
                None => (item.text.clone(), f64::NAN),
            },
        };
        if key.is_empty() {
            return None;
        }
        let usable = self.matching != Matching::Numeric || num.is_finite();
        Some(Unit {
            item,
            key,
            num,
            usable,
        })
    }

    fn close(&self, a: f64, b: f64) -> bool {
        if !a.is_finite() || !b.is_finite() {
            return false;
        }
        let d = (a - b).abs();
        d <= self.abs_tol || d <= self.rel_tol * a.abs().max(b.abs())
    }

    fn pairs(&self, pred: &[Unit], gold: &[Unit]) -> Pairs {
        match self.matching {
            Matching::Exact | Matching::Casefold | Matching::Squad => {
                let by_key: HashMap<&str, usize> = gold
                    .iter()
                    .enumerate()
                    .map(|(j, g)| (g.key.as_str(), j))
                    .collect();
                pred.iter()
                    .enumerate()
                    .filter(|(_, p)| p.usable)
                    .filter_map(|(i, p)| by_key.get(p.key.as_str()).map(|&j| (i, j)))
                    .collect()
            }
            Matching::Numeric | Matching::Fuzzy => {
                let sim = |p: &Unit, g: &Unit| -> f64 {
                    if !p.usable {
                        return f64::NAN;
                    }
                    if self.matching == Matching::Numeric {
                        if self.close(p.num, g.num) {
                            1.0
                        } else {
                            f64::NAN
                        }
                    } else {
                        fuzzy_match(&p.key, &g.key)
                    }
                };
                let threshold = if self.matching == Matching::Numeric {
                    1.0
                } else {
                    self.threshold
                };
                let full: Vec<Vec<f64>> = pred
                    .iter()
                    .map(|p| gold.iter().map(|g| sim(p, g)).collect())
                    .collect();
                // Only rows and columns with a hit take part in the assignment, so its cost
                // follows the plausible pairs, not the list lengths.
                let hit = |x: f64| x >= threshold;
                let rows: Vec<usize> = (0..pred.len())
                    .filter(|&i| full[i].iter().any(|&x| hit(x)))
                    .collect();
                let cols: Vec<usize> = (0..gold.len())
                    .filter(|&j| full.iter().any(|r| hit(r[j])))
                    .collect();
                if rows.is_empty() {
                    return Vec::new();
                }
                let sub: Vec<Vec<f64>> = rows
                    .iter()
                    .map(|&i| cols.iter().map(|&j| full[i][j]).collect())
                    .collect();
                match_sets(&sub, threshold, self.assign)
                    .pairs
                    .into_iter()
                    .map(|(i, j, _)| (rows[i], cols[j]))
                    .collect()
            }
        }
    }

    fn value(&self, tp: usize, predicted: usize, gold: usize) -> (f64, f64, f64) {
        if predicted == 0 && gold == 0 {
            return (1.0, 1.0, 1.0);
        }
        if tp == 0 {
            return (0.0, 0.0, 0.0);
        }
        let p = tp as f64 / predicted as f64;
        let r = tp as f64 / gold as f64;
        let b2 = self.beta * self.beta;
        let f = match self.metric {
            Metric::Precision => p,
            Metric::Recall => r,
            Metric::F1 => 2.0 * p * r / (p + r),
            Metric::FBeta => (1.0 + b2) * p * r / (b2 * p + r),
        };
        (p, r, f)
    }
}

/// Units with repeats (same key) removed, first kept, and how many were removed.
fn dedup(units: Vec<Unit<'_>>) -> (Vec<Unit<'_>>, usize) {
    let n = units.len();
    let mut seen = HashSet::with_capacity(n);
    let kept: Vec<Unit> = units
        .into_iter()
        .filter(|u| seen.insert((u.usable, u.key.clone())))
        .collect();
    let dropped = n - kept.len();
    (kept, dropped)
}

fn listed<'a>(it: impl Iterator<Item = &'a str>) -> Value {
    Value::Array(it.take(SHOWN).map(|t| Value::String(shorten(t))).collect())
}

impl SyncComponent for SetMatch {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let input = match self.sides.input.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        let gold_value = match self.sides.reference.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        let gold_items = match items::read(&gold_value, &self.sides.reference_extract) {
            Ok(g) => g,
            Err(why) => {
                return Outcome::error(
                    "unparseable_reference",
                    format!("the reference is not a list: {why}"),
                )
            }
        };
        if let Some(bad) = gold_items.iter().find(|i| !i.scalar) {
            return Outcome::error(
                "unparseable_reference",
                format!(
                    "the reference list holds `{}`, not a string or a number",
                    shorten(&bad.text)
                ),
            );
        }
        if gold_items.len() > self.sides.max_items {
            return Outcome::error(
                "reference_too_long",
                format!(
                    "the reference has {} items, over `max_items` ({})",
                    gold_items.len(),
                    self.sides.max_items
                ),
            );
        }
        let mut gold = Vec::with_capacity(gold_items.len());
        for g in &gold_items {
            if let Some(u) = self.unit(g) {
                if !u.usable {
                    return Outcome::error(
                        "unparseable_reference",
                        format!("the reference item `{}` is not a number", shorten(&g.text)),
                    );
                }
                gold.push(u);
            }
        }
        let (gold, _) = dedup(gold);
        let pred_items = match items::read(&input, &self.sides.extract) {
            Ok(p) => p,
            Err(why) => {
                cx.note(|| format!("scored 0: the output is not a list: {why}"));
                return Outcome::ok(0.0);
            }
        };
        if pred_items.len() > self.sides.max_items {
            cx.note(|| {
                format!(
                    "scored 0: the output lists {} items, over `max_items` ({})",
                    pred_items.len(),
                    self.sides.max_items
                )
            });
            return Outcome::ok(0.0);
        }
        let pred: Vec<Unit> = pred_items.iter().filter_map(|i| self.unit(i)).collect();
        let (pred, repeats) = dedup(pred);
        let pairs = self.pairs(&pred, &gold);
        let tp = pairs.len();
        let wrong_repeats = if self.duplicates == Duplicates::CountAsWrong {
            repeats
        } else {
            0
        };
        let predicted = pred.len() + wrong_repeats;
        let hallucinated = predicted - tp;
        let (p, r, f) = self.value(tp, predicted, gold.len());
        let reward = f - self.penalty * hallucinated as f64;
        cx.note(|| {
            let mut n = format!(
                "{tp} matched ({} predicted, {} gold): precision {p:.3}, recall {r:.3}",
                predicted,
                gold.len()
            );
            if !matches!(self.metric, Metric::Precision | Metric::Recall) {
                let _ = write!(
                    n,
                    ", F{} {f:.3}",
                    if self.metric == Metric::F1 {
                        "1".to_string()
                    } else {
                        format!("β={}", self.beta)
                    }
                );
            }
            if repeats > 0 {
                let _ = write!(
                    n,
                    "; {repeats} repeated item{} {}",
                    if repeats == 1 { "" } else { "s" },
                    if wrong_repeats > 0 {
                        "counted as wrong"
                    } else {
                        "counted once"
                    }
                );
            }
            if self.penalty > 0.0 && hallucinated > 0 {
                let _ = write!(n, "; {hallucinated} hallucinated, −{} each", self.penalty);
            }
            n
        });
        cx.detail(|| {
            let (mut pm, mut gm) = (vec![false; pred.len()], vec![false; gold.len()]);
            for &(i, j) in &pairs {
                pm[i] = true;
                gm[j] = true;
            }
            json!({
                "matched": pairs.iter().take(SHOWN).map(|&(i, j)| json!([shorten(&pred[i].item.text), shorten(&gold[j].item.text)])).collect::<Vec<_>>(),
                "missed": listed(gold.iter().zip(&gm).filter(|(_, m)| !**m).map(|(g, _)| g.item.text.as_str())),
                "hallucinated": listed(pred.iter().zip(&pm).filter(|(_, m)| !**m).map(|(p, _)| p.item.text.as_str())),
                "repeats": repeats,
                "precision": p,
                "recall": r,
            })
        });
        Outcome::ok(reward)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;
    use proptest::prelude::*;

    #[allow(clippy::needless_pass_by_value)] // test helper: call sites build the values inline
    fn score(spec: Value, output: &str, gold: Value) -> f64 {
        let p = Program::compile(&spec).unwrap();
        let r = p.score(&Sample::new(output, json!({ "gold": gold })));
        r.reward.unwrap()
    }

    #[test]
    fn casefold_form() {
        assert_eq!(casefold("  New\u{200b}  YORK\tCity "), "new york city");
        assert_eq!(casefold("ＰＡＲＩＳ"), "paris");
    }

    #[test]
    fn f1_precision_recall_and_penalty() {
        let spec = |extra: Value| {
            let mut s = json!({"type": "set_match", "reference": "{{item.gold}}"});
            s.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            s
        };
        let gold = json!(["a", "b", "c", "d"]);
        // tp 2, predicted 3, gold 4: P 2/3, R 1/2, F1 4/7.
        let out = r#"["a", "b", "x"]"#;
        assert!((score(spec(json!({})), out, gold.clone()) - 4.0 / 7.0).abs() < 1e-12);
        assert!(
            (score(spec(json!({"metric": "precision"})), out, gold.clone()) - 2.0 / 3.0).abs()
                < 1e-12
        );
        assert!((score(spec(json!({"metric": "recall"})), out, gold.clone()) - 0.5).abs() < 1e-12);
        // F2 = 5 P R / (4 P + R) = 5·(1/3) / (8/3 + 1/2) = (5/3) / (19/6) = 10/19.
        assert!(
            (score(
                spec(json!({"metric": "f_beta", "beta": 2})),
                out,
                gold.clone()
            ) - 10.0 / 19.0)
                .abs()
                < 1e-12
        );
        assert!(
            (score(
                spec(json!({"hallucination_penalty": 0.25})),
                out,
                gold.clone()
            ) - (4.0 / 7.0 - 0.25))
                .abs()
                < 1e-12
        );
    }

    fn pool() -> impl Strategy<Value = Vec<String>> {
        proptest::collection::vec(
            prop_oneof![
                Just("Paris"),
                Just("paris "),
                Just("PARIS"),
                Just("Rome"),
                Just("the Rome"),
                Just("Oslo"),
                Just("Osl0"),
                Just("1"),
                Just("1.0"),
                Just("x"),
                Just("")
            ]
            .prop_map(str::to_string),
            0..8,
        )
    }

    #[allow(clippy::needless_pass_by_value)]
    fn run(m: &str, pred: &[String], gold: &[String], extra: Value) -> f64 {
        let mut spec = json!({"type": "set_match", "reference": "{{item.gold}}", "match": m});
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        score(spec, &serde_json::to_string(pred).unwrap(), json!(gold))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Repeating predicted items never changes the score, under every matching.
        #[test]
        fn repeats_never_change_the_score(pred in pool(), gold in pool(), k in 0usize..8) {
            for m in ["exact", "casefold", "squad", "numeric", "fuzzy"] {
                if m == "numeric" && gold.iter().any(|g| !g.trim().is_empty() && lone_number(g).is_none()) {
                    continue;
                }
                let mut more = pred.clone();
                if let Some(x) = pred.get(k % pred.len().max(1)) {
                    more.extend(std::iter::repeat_n(x.clone(), k));
                }
                let a = run(m, &pred, &gold, json!({"hallucination_penalty": 0.1}));
                let b = run(m, &more, &gold, json!({"hallucination_penalty": 0.1}));
                prop_assert!((a - b).abs() < 1e-12, "{m}: {pred:?} -> {a}, {more:?} -> {b}");
            }
        }

        /// An extra item that matches no gold never raises precision or F1.
        #[test]
        fn a_hallucination_never_pays(pred in pool(), gold in pool()) {
            for metric in ["f1", "precision"] {
                let mut more = pred.clone();
                more.push("zzz-not-a-gold".into());
                let a = run("casefold", &pred, &gold, json!({"metric": metric}));
                let b = run("casefold", &more, &gold, json!({"metric": metric}));
                prop_assert!(b <= a + 1e-12, "{metric}: {a} -> {b}");
            }
        }

        /// Exact-kind scores equal a brute-force set computation.
        #[test]
        fn casefold_f1_is_the_set_f1(pred in pool(), gold in pool()) {
            let keys = |v: &[String]| -> HashSet<String> {
                v.iter().map(|x| casefold(x)).filter(|k| !k.is_empty()).collect()
            };
            let (p, g) = (keys(&pred), keys(&gold));
            let tp = p.intersection(&g).count() as f64;
            let want = match (p.len(), g.len()) {
                (0, 0) => 1.0,
                _ if tp == 0.0 => 0.0,
                (np, ng) => 2.0 * tp / (np + ng) as f64,
            };
            let got = run("casefold", &pred, &gold, json!({}));
            prop_assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
    }

    #[test]
    fn numeric_tolerance_is_one_to_one() {
        let spec = json!({"type": "set_match", "reference": "{{item.gold}}", "match": "numeric", "abs_tol": 0.5});
        // 1.2 is close to both 1 and 1.5; optimal pairs 1.2-1.5 and 1-1.
        assert!((score(spec.clone(), "[1.2, 1]", json!([1, 1.5])) - 1.0).abs() < 1e-12);
        // One prediction never takes two golds.
        assert!((score(spec, "[1.2]", json!([1, 1.5])) - 2.0 / 3.0).abs() < 1e-12);
    }
}
