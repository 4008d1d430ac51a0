//! # ranking
//! *What it scores:* a ranked list the policy wrote (recommended items, retrieved passages,
//! cited documents) against the row's relevant ids: NDCG@k, MRR, hit@k, precision@k or
//! recall@k.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `reference` (template: a list
//! of relevant ids, each of relevance 1, or a map id → relevance ≥ 0; an item field holding
//! JSON is taken as it is, text is read with `reference_extract`), `extract` (how the input is
//! read: `json`, default, one JSON array; `lines`; `list`; `{delimiter: ","}`; `{regex: "..."}`,
//! as in `set_match`), `reference_extract` (the same choices, for a textual list; default
//! `extract`'s), `metric` (`ndcg`, default; `mrr`; `hit`; `precision`; `recall`), `k` (the
//! cut-off; default the whole ranking), `gain` (`ndcg`: `linear`, default, a document's gain
//! is its relevance, as `trec_eval` and scikit-learn's `ndcg_score`; `exponential`,
//! 2^rel − 1, as Burges et al. and LightGBM), `match` (`exact`, default, trimmed ids;
//! `casefold`, as `set_match`'s), `max_items` (default 1000).
//!
//! NDCG@k = DCG@k / IDCG@k with DCG@k = Σ_{i ≤ k} gain(rel_i) / log2(i + 1) and IDCG@k the DCG
//! of the gold relevances sorted in decreasing order (all of them when `k` is not set). MRR is
//! 1 / the rank of the first relevant id within `k` (0 when none); hit@k is 1 when one is
//! there; precision@k is the relevant ids in the top k over k (over the ranking's length
//! without `k`); recall@k over the number of relevant ids. Relevant means relevance > 0.
//!
//! *Example:*
//! ```yaml
//! type: ranking
//! name: ndcg_at_10
//! reference: "{{item.relevance}}"
//! metric: ndcg
//! k: 10
//! ```
//!
//! *Score and failure modes:* a value in [0,1]. An id repeated in the ranking counts once, at
//! its first position: the repeats keep their slots and gain nothing, so padding a ranking with
//! a right id never pays. An input that is not a list, or longer than `max_items`, scores 0
//! with a note (the policy's miss); a JSON element that is neither a string nor a number takes
//! a slot and is not relevant. A reference that is not a list or a map of numbers ≥ 0 fails
//! with `unparseable_reference`; one with no relevant id (nothing to rank) with
//! `empty_reference`; one longer than `max_items` with `reference_too_long`.

use super::items::{self, ExtractSpec, Sides, SHOWN};
use super::set_match::casefold;
use crate::compile::{sync, At, Compiler};
use crate::node::{shorten, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankingSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The relevant ids: a list, or a map id → relevance.
    pub reference: String,
    /// How the input is read as a list (default `json`).
    #[serde(default)]
    pub extract: ExtractSpec,
    /// How a textual reference is read as a list (default: as `extract`).
    #[serde(default)]
    pub reference_extract: Option<ExtractSpec>,
    #[serde(default)]
    pub metric: Metric,
    /// The cut-off (default: the whole ranking).
    #[serde(default)]
    pub k: Option<usize>,
    /// `ndcg`: how relevance becomes gain (default `linear`).
    #[serde(default)]
    pub gain: Option<Gain>,
    /// How ids are compared (default `exact`).
    #[serde(default, rename = "match")]
    pub matching: IdMatch,
    /// Longest list read (default 1000).
    #[serde(default)]
    pub max_items: Option<usize>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    #[default]
    Ndcg,
    Mrr,
    Hit,
    Precision,
    Recall,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Gain {
    #[default]
    Linear,
    Exponential,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdMatch {
    #[default]
    Exact,
    Casefold,
}

pub struct Ranking {
    sides: Sides,
    metric: Metric,
    k: Option<usize>,
    gain: Gain,
    matching: IdMatch,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: RankingSpec = cx.spec(v, at)?;
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
    if spec.k == Some(0) {
        cx.err(at, Some("k"), "`k` must be at least 1");
        ok = false;
    }
    if spec.gain.is_some() && spec.metric != Metric::Ndcg {
        cx.err(at, Some("gain"), "`gain` is only used with `metric: ndcg`");
        ok = false;
    }
    let sides = sides?;
    ok.then(|| {
        sync(Ranking {
            sides,
            metric: spec.metric,
            k: spec.k,
            gain: spec.gain.unwrap_or_default(),
            matching: spec.matching,
        })
    })
}

impl Ranking {
    fn key<'a>(&self, id: &'a str) -> Cow<'a, str> {
        match self.matching {
            IdMatch::Exact => Cow::Borrowed(id),
            IdMatch::Casefold => Cow::Owned(casefold(id)),
        }
    }

    fn gain(&self, rel: f64) -> f64 {
        match self.gain {
            Gain::Linear => rel,
            Gain::Exponential => 2f64.powf(rel) - 1.0,
        }
    }

    /// The gold relevances by key (a repeated id keeps its largest relevance).
    fn gold(&self, v: &Value) -> Result<HashMap<String, f64>, Outcome> {
        let bad = |m: String| Outcome::error("unparseable_reference", m);
        let mut out: HashMap<String, f64> = HashMap::new();
        let mut put = |id: &str, rel: f64| {
            let k = self.key(id.trim()).into_owned();
            if !k.is_empty() {
                let e = out.entry(k).or_insert(rel);
                *e = e.max(rel);
            }
        };
        if let Value::Object(m) = v {
            if m.len() > self.sides.max_items {
                return Err(too_long(m.len(), self.sides.max_items));
            }
            for (id, rel) in m {
                match rel.as_f64() {
                    Some(r) if r.is_finite() && r >= 0.0 => put(id, r),
                    _ => {
                        return Err(bad(format!(
                            "the relevance of `{}` is `{}`, not a number ≥ 0",
                            shorten(id),
                            shorten(&rel.to_string())
                        )))
                    }
                }
            }
        } else {
            let ids = items::read(v, &self.sides.reference_extract)
                .map_err(|why| bad(format!("the reference is not a list or a map: {why}")))?;
            if ids.len() > self.sides.max_items {
                return Err(too_long(ids.len(), self.sides.max_items));
            }
            for i in &ids {
                if !i.scalar {
                    return Err(bad(format!(
                        "the reference list holds `{}`, not an id",
                        shorten(&i.text)
                    )));
                }
                put(&i.text, 1.0);
            }
        }
        Ok(out)
    }
}

fn too_long(n: usize, max: usize) -> Outcome {
    Outcome::error(
        "reference_too_long",
        format!("the reference has {n} ids, over `max_items` ({max})"),
    )
}

impl SyncComponent for Ranking {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let input = match self.sides.input.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        let gold_value = match self.sides.reference.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        let gold = match self.gold(&gold_value) {
            Ok(g) => g,
            Err(o) => return o,
        };
        let relevant = gold.values().filter(|r| **r > 0.0).count();
        if relevant == 0 {
            return Outcome::error(
                "empty_reference",
                "the reference has no relevant id (relevance > 0): there is nothing to rank",
            );
        }
        let ranked = match items::read(&input, &self.sides.extract) {
            Ok(p) => p,
            Err(why) => {
                cx.note(|| format!("scored 0: the output is not a list: {why}"));
                return Outcome::ok(0.0);
            }
        };
        if ranked.len() > self.sides.max_items {
            cx.note(|| {
                format!(
                    "scored 0: the output ranks {} items, over `max_items` ({})",
                    ranked.len(),
                    self.sides.max_items
                )
            });
            return Outcome::ok(0.0);
        }
        let k = self.k.unwrap_or(ranked.len());
        let mut seen: HashSet<Cow<str>> = HashSet::with_capacity(ranked.len().min(k));
        let mut repeats = 0usize;
        // The relevance at each of the first k slots (0 for a repeat or an unknown id).
        let rels: Vec<f64> = ranked
            .iter()
            .take(k)
            .map(|i| {
                if !i.scalar {
                    return 0.0;
                }
                let key = self.key(&i.text);
                let rel = gold.get(key.as_ref()).copied().unwrap_or(0.0);
                if seen.insert(key) {
                    rel
                } else {
                    repeats += 1;
                    0.0
                }
            })
            .collect();
        let hits = rels.iter().filter(|r| **r > 0.0).count();
        let first = rels.iter().position(|r| *r > 0.0);
        let value = match self.metric {
            Metric::Ndcg => {
                let dcg = |rs: &mut dyn Iterator<Item = f64>| -> f64 {
                    rs.enumerate()
                        .map(|(i, r)| self.gain(r) / ((i + 2) as f64).log2())
                        .sum()
                };
                let mut ideal: Vec<f64> = gold.values().copied().collect();
                ideal.sort_by(|a, b| b.total_cmp(a));
                let ideal_k = self.k.unwrap_or(ideal.len());
                let idcg = dcg(&mut ideal.into_iter().take(ideal_k));
                let got = dcg(&mut rels.iter().copied());
                if idcg > 0.0 {
                    got / idcg
                } else {
                    0.0
                }
            }
            Metric::Mrr => first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
            Metric::Hit => f64::from(u8::from(first.is_some())),
            Metric::Precision => {
                let denom = self.k.unwrap_or(ranked.len());
                if denom == 0 {
                    0.0
                } else {
                    hits as f64 / denom as f64
                }
            }
            Metric::Recall => hits as f64 / relevant as f64,
        };
        cx.note(|| {
            let mut n = format!(
                "{hits} relevant of {} ranked{} ({relevant} relevant in the reference)",
                rels.len(),
                self.k
                    .map(|k| format!(" in the top {k}"))
                    .unwrap_or_default()
            );
            if let Some(i) = first {
                let _ = write!(n, "; first relevant at rank {}", i + 1);
            }
            if repeats > 0 {
                let _ = write!(n, "; {repeats} repeated ids gain nothing");
            }
            n
        });
        cx.detail(|| {
            json!({
                "ranked": ranked.iter().take(k.min(SHOWN)).zip(&rels).map(|(i, r)| json!([shorten(&i.text), r])).collect::<Vec<_>>(),
                "relevant": relevant,
                "repeats": repeats,
            })
        });
        Outcome::ok(value)
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
        p.score(&Sample::new(output, json!({ "gold": gold })))
            .reward
            .unwrap()
    }

    #[test]
    fn ndcg_worked_by_hand() {
        let spec = json!({"type": "ranking", "reference": "{{item.gold}}", "k": 3});
        // rels [3, 0, 2]; ideal [3, 2, 1]. DCG = 3 + 2/2 = 4; IDCG = 3 + 2/log2(3) + 1/2.
        let got = score(
            spec.clone(),
            r#"["a", "x", "b"]"#,
            json!({"a": 3, "b": 2, "c": 1}),
        );
        let want = 4.0 / (3.0 + 2.0 / 3f64.log2() + 0.5);
        assert!((got - want).abs() < 1e-12, "{got} {want}");
        let mut e = spec;
        e["gain"] = json!("exponential");
        // DCG = 7 + 3/2; IDCG = 7 + 3/log2(3) + 1/2.
        let got = score(e, r#"["a", "x", "b"]"#, json!({"a": 3, "b": 2, "c": 1}));
        let want = 8.5 / (7.0 + 3.0 / 3f64.log2() + 0.5);
        assert!((got - want).abs() < 1e-12);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every metric lies in [0, 1], the ideal order scores 1 on NDCG, and repeating an id
        /// never raises any metric.
        #[test]
        fn bounded_ideal_and_repeat_proof(
            rels in proptest::collection::vec(0u8..4, 1..8),
            ranked in proptest::collection::vec(0usize..10, 0..12),
            dup in 0usize..12,
            k in proptest::option::of(1usize..12),
        ) {
            prop_assume!(rels.iter().any(|r| *r > 0));
            let gold: serde_json::Map<String, Value> =
                rels.iter().enumerate().map(|(i, r)| (format!("d{i}"), json!(r))).collect();
            let ids: Vec<String> = ranked.iter().map(|i| format!("d{i}")).collect();
            let mut padded = ids.clone();
            // A repeat goes after the id's first place (a copy before it would be a move).
            if let Some(x) = ids.get(dup % ids.len().max(1)) {
                let first = ids.iter().position(|y| y == x).unwrap_or(0);
                padded.insert(first + 1 + dup % (ids.len() - first), x.clone());
            }
            let mut ideal: Vec<(String, u8)> =
                rels.iter().enumerate().map(|(i, r)| (format!("d{i}"), *r)).collect();
            ideal.sort_by_key(|x| std::cmp::Reverse(x.1));
            let ideal: Vec<String> = ideal.into_iter().map(|(i, _)| i).collect();
            for metric in ["ndcg", "mrr", "hit", "precision", "recall"] {
                for gain in ["linear", "exponential"] {
                    if metric != "ndcg" && gain == "exponential" {
                        continue;
                    }
                    let mut spec = json!({"type": "ranking", "reference": "{{item.gold}}", "metric": metric});
                    if metric == "ndcg" {
                        spec["gain"] = json!(gain);
                    }
                    if let Some(k) = k {
                        spec["k"] = json!(k);
                    }
                    let s = |ids: &[String]| score(spec.clone(), &serde_json::to_string(ids).unwrap(), Value::Object(gold.clone()));
                    let base = s(&ids);
                    prop_assert!((0.0..=1.0 + 1e-12).contains(&base), "{metric}: {base}");
                    // Inserting a repeat moves later ids down: never a gain.
                    prop_assert!(s(&padded) <= base + 1e-12, "{metric} {gain}: {ids:?} {base} vs {padded:?}");
                    if metric == "ndcg" {
                        prop_assert!((s(&ideal) - 1.0).abs() < 1e-12);
                    }
                }
            }
        }
    }

    #[test]
    fn repeats_keep_their_slot_and_gain_nothing() {
        let spec =
            json!({"type": "ranking", "reference": "{{item.gold}}", "metric": "precision", "k": 4});
        assert_eq!(
            score(spec, r#"["a", "a", "a", "b"]"#, json!(["a", "b"])),
            0.5
        );
        let mrr = json!({"type": "ranking", "reference": "{{item.gold}}", "metric": "mrr"});
        assert_eq!(
            score(mrr, r#"["x", "x", "b"]"#, json!(["a", "b"])),
            1.0 / 3.0
        );
    }
}
