//! # rubric
//! *What it scores:* a response against a rubric of criteria, each judged by a model (several
//! per call), combined by their signed weights: the RaR / ProRubric / verifiers-`RubricJudge`
//! way of rewarding answers no rule can check.
//!
//! *Spec:*
//! - `criteria`: a list, or a template naming the item's list (`"{{item.rubric}}"`; a JSON
//!   string holding the list, or an object with a `rubric`, `rubrics` or `criteria` list, is
//!   accepted too). Each criterion is one of the common dataset shapes:
//!   - a plain string (weight 1);
//!   - RaR `{title, description, weight}`: a description starting `Essential Criteria:`,
//!     `Important Criteria:`, `Optional Criteria:` or `Pitfall Criteria:` gets its category's
//!     weight (`categories:`, default 1.0 / 0.7 / 0.3 / −0.9, the RaR paper's); a row without a
//!     readable prefix gets the category its integer weight encodes (5 / 3–4 / 1–2 / negative);
//!     with `weights: item` the row's own `weight` is used instead;
//!   - ProRubric `{criterion, weight}` (open-instruct's `{description, weight}` alike), the weight
//!     signed: a negative weight is a penalty, judged as "is the undesirable behaviour present";
//!   - verifiers' `{name, text, weight, choices: [worst, ..., best]}`: an ordinal criterion whose
//!     verdict is one of `choices`, scored rank/(n−1);
//!   - any object may add `critical: true`: a safety-critical criterion whose failure zeroes the
//!     reward.
//! - `dimensions` (ProRubric's protocol-level groups; a list or a template): `{name, weight?,
//!   criteria: [0-based index or criterion name, ...], fails_if?: "clause"}`, or ProRubric's
//!   generated shape `{name, description, weight, atomic_indices: [1-based indices]}` (also
//!   wrapped as `{"criteria": [...]}`). A dimension scores its weight only when **all** its
//!   criteria hold and its failure clause (judged as one more question; taken from the
//!   `description`'s "fails … if …" sentence when `fails_if` is absent) does not fire. The weight
//!   defaults to Σ|w| of its criteria.
//!   Criteria outside every dimension are not judged (unless critical).
//! - `question`, `reference` (templates shown to the judge), `input` (what is graded, default
//!   `{{sample.output_text}}`), `instructions` (extra guidance for the judge).
//! - `per_call` (default: all): criteria per judge call; the calls run concurrently.
//! - `mode`: `verdicts` (default, one verdict per criterion) or `likert` (RaR's "implicit"
//!   aggregation: all criteria in one prompt, one 1–10 rating r, reward (r−1)/9).
//! - `soft` (default false): a criterion's score is the judge's probability of `true` (or the
//!   expected rank over its choices), read from `top_logprobs` at that verdict's position; where
//!   a verdict's position cannot be located the hard verdict is used (noted in the trace). The
//!   weighted sum uses the probabilities; dimensions and critical criteria use whether each
//!   criterion holds (see below), so soft verdicts refine only the flat sum.
//! - As in `score_model`: `judge`, `model`, `sampling_params`, `reasoning`, `prefilter`,
//!   `min_chars`, `max_chars`, `injection`, `deadline_ms`.
//!
//! *Example:*
//! ```yaml
//! type: rubric
//! name: rubric
//! question: "{{item.question}}"
//! criteria:
//!   - {title: Names the cause, description: "Essential Criteria: Identifies low oxygen as the cause.", weight: 5}
//!   - {title: Units, description: "Important Criteria: Gives the dose in mg/kg.", weight: 3}
//!   - {title: Harm, description: "Pitfall Criteria: Recommends an unsafe dose.", weight: -2}
//!   - {criterion: "Advises seeing a doctor for severe symptoms", weight: 1, critical: true}
//! per_call: 2
//! ```
//!
//! *Score and failure modes:* reward = clamp₀¹(Σ wᵢ·sᵢ / Σ max(0, wᵢ)) over the criteria (or the
//! dimensions): ProRubric's normaliser, so penalties subtract from what the positive criteria
//! earn and an answer that hits only pitfalls scores 0, not below. A criterion *holds* when its
//! score is ≥ 0.5 (a penalty: when it is < 0.5). A failed critical criterion makes the reward 0.
//! The judge must answer `{"verdicts": [{"id", "reason", "verdict"}]}` (`reason` may be left
//! out) with every id of its call exactly once, booleans as JSON booleans and choices spelled
//! exactly; anything else (or a cut off reply) is `judge_unparseable`. A row whose rubric is malformed, empty or has no positive
//! weight is `invalid_rubric`; call failures keep their reason (`judge_timeout`, ...): errors,
//! never a 0. The candidate is delimited and prefiltered as in `score_model`, with the criteria
//! texts as echo sources (a candidate restating the rubric scores 0 without a call); with
//! `injection: fail` (default) a candidate that writes the verdict keys itself (`"verdict":`,
//! `"verdicts":`, `"rating":`) scores 0 without a call as well. Every
//! criterion's verdict, reason and score is in the trace's detail.

mod generate;
mod shapes;

use crate::compile::{judged, At, Compiler};
use crate::components::judge::{
    exact_keys, render_delimited, unparseable, verdict_object, Caller, JudgeFields, NOTICE,
};
use crate::exec::BoxFuture;
use crate::judge::{soft, JudgeReply};
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use generate::{Writer, Written};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use shapes::{criteria_of, describe, dimensions_of, list_of, Criterion, Dimension};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

/// A criterion as datasets write it (see the module docs); also a plain string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the schema of `criteria` items; they are read from JSON by `criterion_of`
pub struct CriterionSpec {
    pub title: Option<String>,
    pub description: Option<String>,
    pub criterion: Option<String>,
    pub name: Option<String>,
    pub text: Option<String>,
    pub weight: Option<f64>,
    /// Ordinal verdicts, worst first.
    pub choices: Option<Vec<String>>,
    pub critical: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // schema only, see CriterionSpec
pub enum CriterionItem {
    Text(String),
    Object(CriterionSpec),
}

/// A dimension: criteria that must all hold, and a failure clause that must not fire.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // schema only, see CriterionSpec
pub struct DimensionSpec {
    pub name: String,
    pub weight: Option<f64>,
    /// 0-based indices or criterion names.
    pub criteria: Option<Vec<Value>>,
    /// ProRubric's generated field: 1-based indices into the criteria.
    pub atomic_indices: Option<Vec<usize>>,
    pub fails_if: Option<String>,
    pub description: Option<String>,
}

/// The criteria: a list in the spec, a template naming the item's, or a rubric writer
/// (`{generate: {...}}`, read by `generate.rs` so its errors have their paths).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CriteriaSource {
    Template(String),
    List(#[schemars(with = "Vec<CriterionItem>")] Vec<Value>),
    Generate(#[schemars(with = "generate::GenerateCriteria")] Map<String, Value>),
}

/// The dimensions: a list in the spec, or a template naming the item's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DimensionsSource {
    Template(String),
    List(#[schemars(with = "Vec<DimensionSpec>")] Vec<Value>),
}

/// Where a RaR criterion's weight comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WeightSource {
    /// The category's weight (`categories:`) when the description names one, else the row's.
    #[default]
    Category,
    /// The row's own `weight`.
    Item,
}

/// The weights of RaR's categories.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryWeights {
    #[serde(default = "w_essential")]
    pub essential: f64,
    #[serde(default = "w_important")]
    pub important: f64,
    #[serde(default = "w_optional")]
    pub optional: f64,
    #[serde(default = "w_pitfall")]
    pub pitfall: f64,
}

fn w_essential() -> f64 {
    1.0
}
fn w_important() -> f64 {
    0.7
}
fn w_optional() -> f64 {
    0.3
}
fn w_pitfall() -> f64 {
    -0.9
}

impl Default for CategoryWeights {
    fn default() -> Self {
        CategoryWeights {
            essential: w_essential(),
            important: w_important(),
            optional: w_optional(),
            pitfall: w_pitfall(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RubricMode {
    /// One verdict per criterion (RaR's "explicit" aggregation).
    #[default]
    Verdicts,
    /// One 1–10 rating for the whole rubric (RaR's "implicit" aggregation).
    Likert,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RubricSpec {
    pub criteria: CriteriaSource,
    #[serde(default)]
    pub dimensions: Option<DimensionsSource>,
    #[serde(default)]
    pub weights: WeightSource,
    #[serde(default)]
    pub categories: Option<CategoryWeights>,
    #[serde(default)]
    pub mode: RubricMode,
    /// Criteria per judge call (default: all in one call).
    #[serde(default)]
    pub per_call: Option<usize>,
    #[serde(default)]
    pub question: Option<String>,
    #[serde(default)]
    pub reference: Option<String>,
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// Extra guidance for the judge, added to its instructions.
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub soft: bool,
}

/// A sample's rubric; shared with the grader when it is fixed in the spec.
#[derive(Debug, Clone)]
struct Rubric {
    criteria: Arc<Vec<Criterion>>,
    dimensions: Arc<Vec<Dimension>>,
    /// Written for the sample's prompt by the rubric writer.
    written: Option<Written>,
}

/// Where the criteria come from.
enum Source {
    Fixed(Arc<Vec<Criterion>>),
    FromItem(Template),
    Written(Box<Writer>),
}

/// The dimensions: none; resolved at compile time (fixed criteria and dimensions); given in the
/// spec over the item's criteria (resolved per sample); or the item's own.
enum Dims {
    None,
    Resolved(Arc<Vec<Dimension>>),
    Raw(Vec<Value>),
    FromItem(Template),
}

pub struct RubricGrader {
    criteria: Source,
    dimensions: Dims,
    weights: WeightSource,
    categories: CategoryWeights,
    mode: RubricMode,
    per_call: Option<usize>,
    question: Option<Template>,
    reference: Option<Template>,
    input: Template,
    instructions: Option<String>,
    soft: bool,
    caller: Caller,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let (spec, common): (RubricSpec, JudgeFields) = cx.spec_pair(v, at)?;
    let cats = spec.categories.clone().unwrap_or_default();
    for (k, w) in [
        ("essential", cats.essential),
        ("important", cats.important),
        ("optional", cats.optional),
        ("pitfall", cats.pitfall),
    ] {
        if !w.is_finite() {
            cx.err_in(at, &format!("categories/{k}"), "must be a finite number");
        }
    }
    let report = |cx: &mut Compiler, field: &str, errs: Vec<(Option<usize>, String)>| {
        for (i, e) in errs {
            match i {
                Some(i) => cx.err_in(at, &format!("{field}/{i}"), e),
                None => cx.err(at, Some(field), e),
            }
        }
    };
    let criteria = match &spec.criteria {
        CriteriaSource::Template(t) => cx.template(t, at, "criteria").map(Source::FromItem),
        CriteriaSource::Generate(g) => Writer::compile(g, cx, at, &common, spec.weights, &cats)
            .map(|w| Source::Written(Box::new(w))),
        CriteriaSource::List(items) => match criteria_of(items, spec.weights, &cats) {
            Ok(c) => Some(Source::Fixed(Arc::new(c))),
            Err(errs) => {
                report(cx, "criteria", errs);
                None
            }
        },
    };
    let dimensions = match &spec.dimensions {
        None => Some(Dims::None),
        Some(DimensionsSource::Template(t)) => cx.template(t, at, "dimensions").map(Dims::FromItem),
        // Resolved now against fixed criteria; against an item's, per sample.
        Some(DimensionsSource::List(items)) => match &criteria {
            Some(Source::Fixed(c)) => match dimensions_of(items, c) {
                Ok(d) => Some(Dims::Resolved(Arc::new(d))),
                Err(errs) => {
                    report(cx, "dimensions", errs);
                    None
                }
            },
            _ => Some(Dims::Raw(items.clone())),
        },
    };
    if matches!(spec.criteria, CriteriaSource::Generate(_)) && spec.dimensions.is_some() {
        cx.err(
            at,
            Some("dimensions"),
            "a generated rubric has no criteria known in advance to group: give dimensions with criteria from the spec or the item",
        );
    }
    if spec.mode == RubricMode::Likert && spec.dimensions.is_some() {
        cx.err(
            at,
            Some("dimensions"),
            "dimensions need per-criterion verdicts (mode: verdicts)",
        );
    }
    if spec.per_call == Some(0) {
        cx.err(at, Some("per_call"), "must be at least 1");
    }
    let question = spec
        .question
        .as_deref()
        .map(|q| cx.template(q, at, "question"));
    let reference = spec
        .reference
        .as_deref()
        .map(|r| cx.template(r, at, "reference"));
    let input = cx.input(spec.input.as_deref(), at);
    let caller = Caller::compile(cx, at, &common, 2048);
    if cx.has_errors() {
        return None;
    }
    let caller = caller?;
    let samples = caller.samples;
    Some(judged(
        samples,
        RubricGrader {
            criteria: criteria?,
            dimensions: dimensions?,
            weights: spec.weights,
            categories: cats,
            mode: spec.mode,
            per_call: spec.per_call,
            question: question.flatten(),
            reference: reference.flatten(),
            input: input?,
            instructions: spec.instructions,
            soft: spec.soft,
            caller,
        },
    ))
}

/// What one question to the judge is.
#[derive(Debug, Clone)]
enum Kind {
    /// Yes/no; a penalty asks whether the undesirable behaviour is present.
    Binary {
        penalty: bool,
    },
    Ordinal(Vec<String>),
    /// A dimension's failure clause: does it fire?
    Failure,
}

#[derive(Debug, Clone)]
struct Question {
    /// The id shown to the judge (1-based).
    id: u64,
    text: String,
    kind: Kind,
}

/// A verdict on one question: its score in [0, 1] (1 = criterion met, penalty present, failure
/// fired, best choice), the judge's words, whether logprobs gave it.
#[derive(Debug, Clone)]
struct Verdict {
    score: f64,
    raw: Value,
    reason: Option<String>,
    soft: bool,
}

const ENTRY: &str = "\"verdict\"";

impl RubricGrader {
    async fn resolve(&self, s: &Sample, cx: &mut ScoreCtx) -> Result<Rubric, Outcome> {
        let mut written = None;
        let criteria: Arc<Vec<Criterion>> = match &self.criteria {
            Source::Fixed(c) => c.clone(),
            Source::Written(w) => {
                let r = w.write(s, cx).await?;
                let c = r.criteria.clone();
                written = Some(r);
                c
            }
            Source::FromItem(t) => {
                let v = t.render_value(s).map_err(|m| m.outcome(cx))?;
                let items = list_of(&v, "rubric").map_err(invalid)?;
                Arc::new(
                    criteria_of(&items, self.weights, &self.categories)
                        .map_err(|errs| invalid(describe(&errs)))?,
                )
            }
        };
        let bad = |errs: Vec<(Option<usize>, String)>| {
            invalid(format!("dimensions: {}", describe(&errs)))
        };
        let dimensions = match &self.dimensions {
            Dims::None => Arc::new(Vec::new()),
            Dims::Resolved(d) => d.clone(),
            Dims::Raw(items) => Arc::new(dimensions_of(items, &criteria).map_err(bad)?),
            Dims::FromItem(t) => {
                let v = t.render_value(s).map_err(|m| m.outcome(cx))?;
                let items = list_of(&v, "dimensions").map_err(invalid)?;
                Arc::new(dimensions_of(&items, &criteria).map_err(bad)?)
            }
        };
        Ok(Rubric {
            criteria,
            dimensions,
            written,
        })
    }

    /// The questions to ask: every criterion (with dimensions: those in a dimension, and the
    /// critical ones), then the dimensions' failure clauses. Returns the questions and, per
    /// criterion, the index of its question.
    fn questions(rubric: &Rubric) -> (Vec<Question>, Vec<Option<usize>>, Vec<Option<usize>>) {
        let used: Vec<bool> = (0..rubric.criteria.len())
            .map(|i| {
                rubric.dimensions.is_empty()
                    || rubric.criteria[i].critical
                    || rubric.dimensions.iter().any(|d| d.members.contains(&i))
            })
            .collect();
        let mut qs = Vec::new();
        let mut of_criterion = vec![None; rubric.criteria.len()];
        for (i, c) in rubric.criteria.iter().enumerate() {
            if !used[i] {
                continue;
            }
            of_criterion[i] = Some(qs.len());
            qs.push(Question {
                id: qs.len() as u64 + 1,
                text: c.text.clone(),
                kind: match &c.choices {
                    Some(ch) => Kind::Ordinal(ch.clone()),
                    None => Kind::Binary {
                        penalty: c.weight < 0.0,
                    },
                },
            });
        }
        let mut of_dimension = vec![None; rubric.dimensions.len()];
        for (i, d) in rubric.dimensions.iter().enumerate() {
            if let Some(f) = &d.fails_if {
                of_dimension[i] = Some(qs.len());
                qs.push(Question {
                    id: qs.len() as u64 + 1,
                    text: f.clone(),
                    kind: Kind::Failure,
                });
            }
        }
        (qs, of_criterion, of_dimension)
    }

    /// The part of the prompt every call shares: question, reference, the candidate.
    fn header(&self, s: &Sample) -> Result<String, crate::template::Miss> {
        let r = self.caller.reasoning;
        let mut out = String::new();
        let render = |t: &Template| render_delimited(t, s, r);
        if let Some(q) = &self.question {
            let _ = write!(out, "Question:\n{}\n\n", render(q)?);
        }
        if let Some(rf) = &self.reference {
            let _ = write!(out, "Reference answer:\n{}\n\n", render(rf)?);
        }
        let _ = write!(out, "Response to evaluate:\n{}", render(&self.input)?);
        Ok(out)
    }

    fn system(&self, task: &str) -> String {
        let mut sys = String::from(task);
        if let Some(extra) = &self.instructions {
            sys.push_str("\n\n");
            sys.push_str(extra);
        }
        sys.push_str("\n\n");
        sys.push_str(NOTICE);
        sys
    }

    fn verdict_request(&self, header: &str, batch: &[Question]) -> (Vec<(String, String)>, Value) {
        let mut list = String::new();
        for q in batch {
            let _ = write!(list, "\n[{}] ", q.id);
            match &q.kind {
                Kind::Binary { penalty: true } => list.push_str("(penalty) "),
                Kind::Failure => list.push_str("(failure condition) "),
                Kind::Binary { penalty: false } | Kind::Ordinal(_) => {}
            }
            list.push_str(&q.text);
            if let Kind::Ordinal(ch) = &q.kind {
                let _ = write!(
                    list,
                    " — choices, worst to best: {}",
                    ch.iter()
                        .map(|c| serde_json::to_string(c).unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        let ids: Vec<String> = batch.iter().map(|q| q.id.to_string()).collect();
        let task = format!(
            "You grade a response against rubric criteria, each on its own. For a plain \
criterion, the verdict is true when the response meets it. For a criterion marked (penalty) or \
(failure condition), the verdict is true when the response shows the problem it describes. For a \
criterion with choices, the verdict is exactly one of its choices. Respond with only a JSON \
object: {{\"verdicts\": [{{\"id\": ID, \"reason\": \"one sentence\", \"verdict\": V}}]}} with \
one entry for each of the ids {} exactly once, in that order, V being true or false (JSON \
booleans) or a choice string.",
            ids.join(", ")
        );
        let verdict_schema = if batch.iter().all(|q| !matches!(q.kind, Kind::Ordinal(_))) {
            json!({"type": "boolean"})
        } else {
            let choices: Vec<&String> = batch
                .iter()
                .filter_map(|q| match &q.kind {
                    Kind::Ordinal(c) => Some(c),
                    _ => None,
                })
                .flatten()
                .collect();
            json!({"anyOf": [{"type": "boolean"}, {"type": "string", "enum": choices}]})
        };
        let schema = json!({"type": "object", "properties": {"verdicts": {"type": "array",
            "items": {"type": "object", "properties": {
                "id": {"type": "integer", "enum": batch.iter().map(|q| q.id).collect::<Vec<_>>()},
                "reason": {"type": "string"}, "verdict": verdict_schema},
              "required": ["id", "reason", "verdict"], "additionalProperties": false},
            "minItems": batch.len(), "maxItems": batch.len()}},
            "required": ["verdicts"], "additionalProperties": false});
        let messages = vec![
            ("system".to_string(), self.system(&task)),
            ("user".to_string(), format!("{header}\n\nCriteria:{list}")),
        ];
        (messages, schema)
    }

    /// Parses one call's verdicts strictly: every id of the batch exactly once.
    fn parse(&self, reply: &JudgeReply, batch: &[Question]) -> Result<Vec<Verdict>, String> {
        let m = verdict_object(reply)?;
        exact_keys(&m, &["verdicts"], &[])?;
        let Some(entries) = m["verdicts"].as_array() else {
            return Err("`verdicts` is not a list".into());
        };
        let mut out: Vec<Option<Verdict>> = vec![None; batch.len()];
        for (n, e) in entries.iter().enumerate() {
            let Some(o) = e.as_object() else {
                return Err(format!("verdict {n} is not an object"));
            };
            exact_keys(o, &["id", "verdict"], &["reason"])?;
            let Some(id) = o["id"].as_u64() else {
                return Err(format!("verdict {n}: `id` is not an integer: {}", o["id"]));
            };
            let Some(k) = batch.iter().position(|q| q.id == id) else {
                return Err(format!("verdict {n}: id {id} was not asked"));
            };
            if out[k].is_some() {
                return Err(format!("id {id} is judged twice"));
            }
            let reason = match o.get("reason") {
                None => None,
                Some(Value::String(r)) => Some(r.clone()),
                Some(other) => return Err(format!("id {id}: `reason` is not a string: {other}")),
            };
            let raw = o["verdict"].clone();
            let (labels, hard): (Vec<String>, f64) = match (&batch[k].kind, &raw) {
                (Kind::Ordinal(ch), Value::String(v)) => match ch.iter().position(|c| c == v) {
                    Some(r) => (ch.clone(), r as f64 / (ch.len() - 1) as f64),
                    None => return Err(format!("id {id}: `{v}` is not one of its choices")),
                },
                (Kind::Ordinal(_), other) => {
                    return Err(format!(
                        "id {id}: the verdict must be a choice, not {other}"
                    ))
                }
                (_, Value::Bool(b)) => (
                    vec!["true".into(), "false".into()],
                    if *b { 1.0 } else { 0.0 },
                ),
                (_, other) => {
                    return Err(format!(
                        "id {id}: the verdict must be a JSON boolean, not {other}"
                    ))
                }
            };
            let mut v = Verdict {
                score: hard,
                raw,
                reason,
                soft: false,
            };
            if self.soft {
                let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
                if let Some(p) = reply
                    .logprobs
                    .as_ref()
                    .and_then(|lp| nth_entry_distribution(lp, n, &refs))
                {
                    v.score = match &batch[k].kind {
                        Kind::Ordinal(ch) => p
                            .iter()
                            .enumerate()
                            .map(|(r, p)| p * r as f64 / (ch.len() - 1) as f64)
                            .sum(),
                        _ => p[0],
                    };
                    v.soft = true;
                }
            }
            out[k] = Some(v);
        }
        if let Some(k) = out.iter().position(Option::is_none) {
            return Err(format!("no verdict for id {}", batch[k].id));
        }
        Ok(out.into_iter().flatten().collect())
    }

    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let started = Instant::now();
        let rubric = match self.resolve(s, cx).await {
            Ok(r) => r,
            Err(o) => return o,
        };
        let out = self.grade(s, &rubric, started, cx).await;
        if let Some(w) = &rubric.written {
            cx.note(|| w.note());
            cx.detail_insert("generated", || w.detail());
        }
        out
    }

    async fn grade(
        &self,
        s: &Sample,
        rubric: &Rubric,
        started: Instant,
        cx: &mut ScoreCtx,
    ) -> Outcome {
        if rubric.dimensions.is_empty() && !rubric.criteria.iter().any(|c| c.weight > 0.0) {
            return invalid("the rubric has no criterion with a positive weight".into());
        }
        if !rubric.dimensions.is_empty() && !rubric.dimensions.iter().any(|d| d.weight > 0.0) {
            return invalid("the rubric's dimensions have no positive weight".into());
        }
        let mut echo: Vec<&str> = rubric.criteria.iter().map(|c| c.text.as_str()).collect();
        echo.extend(
            rubric
                .dimensions
                .iter()
                .filter_map(|d| d.fails_if.as_deref()),
        );
        if let Some(i) = &self.instructions {
            echo.push(i);
        }
        if let Some(o) = self.caller.prefilter(s, cx, &echo) {
            return o;
        }
        if let Some(o) = self
            .caller
            .forged_verdict(s, cx, &["verdicts", "verdict", "rating"])
        {
            return o;
        }
        let header = match self.header(s) {
            Ok(h) => h,
            Err(miss) => return miss.outcome(cx),
        };
        match self.mode {
            RubricMode::Likert => self.likert(s, rubric, &header, started, cx).await,
            RubricMode::Verdicts => self.verdicts(s, rubric, &header, started, cx).await,
        }
    }

    async fn verdicts(
        &self,
        s: &Sample,
        rubric: &Rubric,
        header: &str,
        started: Instant,
        cx: &mut ScoreCtx,
    ) -> Outcome {
        let (qs, of_criterion, of_dimension) = Self::questions(rubric);
        let size = self.per_call.unwrap_or(qs.len()).max(1);
        let batches: Vec<&[Question]> = qs.chunks(size).collect();
        let top = self.soft.then_some(20);
        let deadline = self.caller.deadline.map(|d| started + d);
        let attached = match self.caller.attached(s, cx) {
            Ok(a) => a,
            Err(o) => return o,
        };
        let mut calls = Vec::with_capacity(batches.len());
        for b in &batches {
            let (messages, schema) = self.verdict_request(header, b);
            let mut call = self.caller.request(messages, Some(schema), top, cx.draw());
            if let Err(o) = self.caller.place(&mut call, &attached, cx) {
                return o;
            }
            calls.push(
                self.caller
                    .judge
                    .judge
                    .call(&self.caller.judge.endpoint, call, deadline),
            );
        }
        let replies = futures::future::join_all(calls).await;
        // Every call is counted before the first failure decides the outcome.
        let replies: Vec<Result<JudgeReply, Outcome>> = replies
            .into_iter()
            .map(|r| self.caller.account(r, cx))
            .collect();
        let mut verdicts: Vec<Verdict> = Vec::with_capacity(qs.len());
        let mut cached = 0;
        for (b, r) in batches.iter().zip(replies) {
            let reply = match r {
                Ok(r) => r,
                Err(o) => return o,
            };
            cached += usize::from(reply.cached);
            match self.parse(&reply, b) {
                Ok(v) => verdicts.extend(v),
                Err(e) => return unparseable(e),
            }
        }
        // Per criterion: its score and whether it holds.
        let score = |i: usize| of_criterion[i].map(|q| verdicts[q].score);
        let holds = |i: usize| {
            score(i).map(|sc| {
                if rubric.criteria[i].weight < 0.0 {
                    sc < 0.5
                } else {
                    sc >= 0.5
                }
            })
        };
        let failed_critical: Vec<usize> = (0..rubric.criteria.len())
            .filter(|i| rubric.criteria[*i].critical && holds(*i) == Some(false))
            .collect();
        let mut dim_values = Vec::new();
        let (num, den) = if rubric.dimensions.is_empty() {
            rubric
                .criteria
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(n, d), (i, c)| {
                    (
                        n + c.weight * score(i).unwrap_or(0.0),
                        d + c.weight.max(0.0),
                    )
                })
        } else {
            let mut n = 0.0;
            let mut d = 0.0;
            for (k, dim) in rubric.dimensions.iter().enumerate() {
                let all = dim.members.iter().all(|i| holds(*i) == Some(true));
                let fired = of_dimension[k].is_some_and(|q| verdicts[q].score >= 0.5);
                let pass = all && !fired;
                dim_values.push((pass, all, fired));
                n += dim.weight * f64::from(u8::from(pass));
                d += dim.weight.max(0.0);
            }
            (n, d)
        };
        let weighted = (num / den).clamp(0.0, 1.0);
        let value = if failed_critical.is_empty() {
            weighted
        } else {
            0.0
        };
        let soft_missing = self.soft && verdicts.iter().any(|v| !v.soft);
        cx.note(|| {
            let mut n = format!(
                "judge `{}`: {} criteria in {} call(s)",
                self.caller.judge.endpoint,
                qs.len(),
                batches.len()
            );
            if cached > 0 {
                let _ = write!(n, " [{cached} cache hit(s)]");
            }
            if rubric.dimensions.is_empty() {
                let met = (0..rubric.criteria.len())
                    .filter(|i| holds(*i) == Some(true))
                    .count();
                let _ = write!(
                    n,
                    "; {met} of {} hold; Σw·s / Σmax(0,w) = {num:.4} / {den:.4}",
                    rubric.criteria.len()
                );
            } else {
                let passed = dim_values.iter().filter(|d| d.0).count();
                let _ = write!(
                    n,
                    "; {passed} of {} dimensions pass; {num:.4} / {den:.4}",
                    rubric.dimensions.len()
                );
            }
            if !failed_critical.is_empty() {
                let _ = write!(
                    n,
                    "; critical criterion {} failed: reward 0",
                    failed_critical
                        .iter()
                        .map(|i| format!("#{}", i + 1))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if soft_missing {
                n.push_str(
                    "; some verdicts' logprobs could not be located: their hard verdicts are used",
                );
            }
            n
        });
        cx.detail(|| {
            let criteria: Vec<Value> = rubric
                .criteria
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut o = Map::new();
                    o.insert("index".into(), json!(i));
                    if let Some(nm) = &c.name {
                        o.insert("name".into(), json!(nm));
                    }
                    o.insert("text".into(), json!(c.text));
                    o.insert("weight".into(), json!(c.weight));
                    if let Some(cat) = c.category {
                        o.insert("category".into(), json!(cat));
                    }
                    if c.critical {
                        o.insert("critical".into(), json!(true));
                    }
                    match of_criterion[i] {
                        Some(q) => {
                            let v = &verdicts[q];
                            o.insert("id".into(), json!(qs[q].id));
                            o.insert("verdict".into(), v.raw.clone());
                            o.insert("score".into(), json!(v.score));
                            o.insert("holds".into(), json!(holds(i)));
                            if let Some(r) = &v.reason {
                                o.insert("reason".into(), json!(r));
                            }
                            if self.soft {
                                o.insert("soft".into(), json!(v.soft));
                            }
                        }
                        None => {
                            o.insert("judged".into(), json!(false));
                        }
                    }
                    Value::Object(o)
                })
                .collect();
            let dims: Vec<Value> = rubric
                .dimensions
                .iter()
                .zip(&dim_values)
                .enumerate()
                .map(|(k, (d, (pass, all, fired)))| {
                    json!({"name": d.name, "weight": d.weight, "criteria": d.members,
                           "all_hold": all, "fails_if": d.fails_if, "failure_fired": fired,
                           "failure_reason": of_dimension[k].and_then(|q| verdicts[q].reason.clone()),
                           "passes": pass})
                })
                .collect();
            json!({"criteria": criteria, "dimensions": dims, "calls": batches.len(),
                   "weighted": weighted, "critical_failed": failed_critical})
        });
        Outcome::ok(value)
    }

    async fn likert(
        &self,
        s: &Sample,
        rubric: &Rubric,
        header: &str,
        started: Instant,
        cx: &mut ScoreCtx,
    ) -> Outcome {
        let mut list = String::new();
        for (i, c) in rubric.criteria.iter().enumerate() {
            let _ = write!(list, "\n[{}] (weight {}) {}", i + 1, c.weight, c.text);
            if c.critical {
                list.push_str(" (critical)");
            }
        }
        let task = "You rate a response against a rubric as a whole. Criteria with a negative \
weight describe problems that lower the rating; a critical criterion that is not met makes the \
response unacceptable. Respond with only a JSON object: {\"reason\": \"a few sentences\", \
\"rating\": R}, R an integer from 1 (fails the rubric) to 10 (meets all of it).";
        let schema = json!({"type": "object", "properties": {"reason": {"type": "string"},
            "rating": {"type": "integer", "minimum": 1, "maximum": 10}},
            "required": ["reason", "rating"], "additionalProperties": false});
        let messages = vec![
            ("system".to_string(), self.system(task)),
            ("user".to_string(), format!("{header}\n\nRubric:{list}")),
        ];
        let top = self.soft.then_some(20);
        let (reply, m) = match self
            .caller
            .ask(
                s,
                messages,
                Vec::new(),
                schema,
                top,
                started,
                cx,
                &["rating"],
                &["reason"],
                "",
            )
            .await
        {
            Ok(r) => r,
            Err(o) => return o,
        };
        let rating = match m["rating"].as_u64().filter(|r| (1..=10).contains(r)) {
            Some(r) => r as f64,
            None => {
                return unparseable(format!(
                    "`rating` is not an integer from 1 to 10: {}",
                    m["rating"]
                ))
            }
        };
        let mut r = rating;
        let mut soft_used = false;
        if self.soft {
            let scale: Vec<(String, f64)> =
                (1..=10).map(|i| (i.to_string(), f64::from(i))).collect();
            let sc: Vec<(&str, f64)> = scale.iter().map(|(t, v)| (t.as_str(), *v)).collect();
            match reply
                .logprobs
                .as_ref()
                .and_then(|lp| soft::expected_score_after(lp, "\"rating\"", &sc))
            {
                Some(e) => {
                    r = e;
                    soft_used = true;
                }
                None => cx.note(|| "no usable logprobs: the sampled rating is used".into()),
            }
        }
        let value = ((r - 1.0) / 9.0).clamp(0.0, 1.0);
        cx.note(|| {
            let mut n = format!(
                "judge `{}` rated {rating} of 10 against {} criteria",
                self.caller.judge.endpoint,
                rubric.criteria.len()
            );
            if soft_used {
                let _ = write!(n, "; expected rating from logprobs {r:.4}");
            }
            if reply.cached {
                n.push_str(" [cache hit]");
            }
            n
        });
        cx.detail(|| json!({"verdict": Value::Object(m.clone()), "cached": reply.cached}));
        Outcome::ok(value)
    }
}

/// At the `n`-th verdict entry of a reply (0-based, in the reply's order), the distribution
/// over `labels` at the first position after its `"verdict"` key chose one.
fn nth_entry_distribution(lp: &Value, n: usize, labels: &[&str]) -> Option<Vec<f64>> {
    let positions = soft::positions(lp)?;
    let wanted: Vec<String> = labels.iter().map(|l| soft::norm(l)).collect();
    let mut seen = String::new();
    let mut start = None;
    for (i, (t, _)) in positions.iter().enumerate() {
        seen.push_str(t);
        if seen.matches(ENTRY).count() > n {
            start = Some(i + 1);
            break;
        }
    }
    let (_, alts) = positions[start?..]
        .iter()
        .find(|(t, _)| wanted.contains(&soft::norm(t)))?;
    let mut mass = vec![0.0; wanted.len()];
    for (tok, lp) in alts {
        if let Some(i) = wanted.iter().position(|w| *w == soft::norm(tok)) {
            if lp.is_finite() {
                mass[i] += lp.exp();
            }
        }
    }
    let total: f64 = mass.iter().sum();
    (total > 0.0).then(|| mass.iter().map(|m| m / total).collect())
}

/// The dataset's rubric cannot be used: nobody can score this row.
fn invalid(msg: String) -> Outcome {
    Outcome::error("invalid_rubric", msg)
}

impl AsyncComponent for RubricGrader {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nth_verdict_is_located_in_the_logprobs() {
        let pos = |t: &str, alts: &[(&str, f64)]| {
            json!({"token": t, "logprob": alts[0].1, "top_logprobs":
                alts.iter().map(|(a, l)| json!({"token": a, "logprob": l})).collect::<Vec<_>>()})
        };
        let lp = json!({"content": [
            pos("{\"verdicts\": [{\"id\": 1, \"reason\": \"true enough\", \"verdict\"", &[("x", 0.0)]),
            pos(": ", &[(": ", 0.0)]),
            pos("true", &[("true", -0.1), ("false", -2.4)]),
            pos("}, {\"id\": 2, \"verdict\"", &[("x", 0.0)]),
            pos(": ", &[(": ", 0.0)]),
            pos("false", &[("false", -0.3), ("true", -1.4)]),
        ]});
        let p0 = nth_entry_distribution(&lp, 0, &["true", "false"]).unwrap();
        let p1 = nth_entry_distribution(&lp, 1, &["true", "false"]).unwrap();
        assert!(p0[0] > 0.9 && p1[0] < 0.5, "{p0:?} {p1:?}");
        assert!(nth_entry_distribution(&lp, 2, &["true", "false"]).is_none());
    }

    #[test]
    fn every_criterion_has_its_verdict_in_the_trace() {
        use crate::judge::script::ScriptJudge;
        use crate::{Program, Sample};
        let judge = Arc::new(
            ScriptJudge::from_value(&json!([
                {"when": "ids 1 exactly", "content": "{\"verdicts\": [{\"id\": 1, \"reason\": \"says Paris\", \"verdict\": true}]}"},
                {"content": "{\"verdicts\": [{\"id\": 2, \"reason\": \"no river\", \"verdict\": false}]}"}
            ]))
            .unwrap(),
        );
        let env = crate::exec::Env {
            judge: Some(judge.clone()),
            ..Default::default()
        };
        let spec = json!({"type": "rubric", "per_call": 1,
            "criteria": [{"name": "city", "text": "Names Paris", "weight": 3}, "Mentions the Seine"]});
        let p = Program::compile_with(&spec, env).unwrap();
        let r = p.explain(&Sample::new("Paris is the capital.", json!({})));
        assert_eq!(r.reward, Some(0.75));
        assert_eq!(judge.calls().len(), 2);
        let d = r.trace.unwrap().detail.unwrap();
        assert_eq!(d["criteria"][0]["name"], "city");
        assert_eq!(d["criteria"][0]["verdict"], true);
        assert_eq!(d["criteria"][0]["reason"], "says Paris");
        assert_eq!(d["criteria"][1]["holds"], false);
        assert_eq!(d["calls"], 2);
    }
}
