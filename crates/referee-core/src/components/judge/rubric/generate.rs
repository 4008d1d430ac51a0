//! The rubric writer: `criteria: {generate: {...}}`. A model writes the criteria for the prompt
//! (RaR's `{title, description: "Essential Criteria: ...", weight}` or ProRubric's signed
//! `{criterion, weight}`), optionally from a reference answer, once per prompt; the `rubric`
//! grader then judges every sample of the prompt against that one rubric.
//!
//! - **The policy's text never reaches the writer.** Its templates (`question`, `reference`,
//!   `instructions`) may read only `item.*`; a template reading `sample.*` is a compile error.
//!   So the writer's request is a function of the row's data alone, and a GRPO group's samples
//!   send identical requests.
//! - **Once per prompt.** Identical requests share one call through a bounded memo in the
//!   compiled grader, keyed by a digest of the request (endpoint, messages, sampling, schema):
//!   samples that arrive together wait for the first one's call, later ones reuse its rubric.
//!   The judge pool's own dedup only works with its cache on, and not across time without it.
//!   A sample served from the memo counts a cache hit, not a call. A failed write is shared
//!   by the samples waiting on it, then forgotten (the next sample asks again).
//! - **Strict parsing.** The reply must be one JSON object `{"criteria": [...]}` in the chosen
//!   shape, with exactly the shape's keys, between `min_criteria` and `max_criteria` criteria,
//!   each text non-empty and at most [`MAX_TEXT`] characters, no two alike, none writing the
//!   candidate's delimiter, weights finite, non-zero and within ±[`MAX_WEIGHT`] (RaR: a
//!   category prefix whose sign agrees with the weight). Then each criterion goes through the
//!   dataset normaliser (`shapes.rs`), so RaR's categories get the grader's `categories:`
//!   weights as a dataset rubric would. Anything else is `invalid_generated_rubric`; a failed
//!   call keeps its reason (`judge_timeout`, ...): an error for the row, never the policy's 0.

use super::shapes::{criteria_of, describe, strip_category, Criterion};
use super::{CategoryWeights, WeightSource};
use crate::compile::{At, Compiler, COMMON_FIELDS};
use crate::components::judge::{exact_keys, verdict_object, Caller, JudgeFields, SamplingParams};
use crate::judge::guard;
use crate::judge::{JudgeCall, JudgeFailure, JudgeReply};
use crate::node::ScoreCtx;
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::normalise::view;
use futures::future::{BoxFuture, FutureExt, Shared};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest as _, Sha256};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest criterion text accepted from the writer, in characters (RaR's are one sentence).
pub const MAX_TEXT: usize = 600;
/// The longest RaR title accepted (RaR asks for 2–4 words).
const MAX_TITLE: usize = 120;
/// The largest |weight| accepted (RaR writes 1–5 and −1/−2; ProRubric small signed numbers).
pub const MAX_WEIGHT: f64 = 10.0;
/// The most criteria `max_criteria` may allow.
const CAP: usize = 100;
/// Distinct prompts whose rubrics the memo keeps (a training run revisits its prompts).
const MEMO_CAPACITY: usize = 4096;

/// The shape the writer is asked to write in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// RaR: `{title, description: "<Category> Criteria: ...", weight}`, categories Essential,
    /// Important, Optional, Pitfall.
    #[default]
    Rar,
    /// ProRubric: `{criterion, weight}`, the weight signed (negative: a penalty).
    Prorubric,
}

/// `criteria: {generate: {...}}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the schema of `criteria: {generate}`; read by `Writer::compile`
pub struct GenerateCriteria {
    pub generate: GenerateSpec,
}

/// The rubric writer's fields.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateSpec {
    /// The prompt the rubric is for (`{{item.question}}`); only `item.*` may be read.
    pub question: String,
    /// A reference answer to write the criteria from (`{{item.answer}}`).
    #[serde(default)]
    pub reference: Option<String>,
    /// Extra guidance for the writer (domain, what matters); only `item.*` may be read.
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub shape: Shape,
    /// Fewest criteria accepted (default 1).
    #[serde(default)]
    pub min_criteria: Option<usize>,
    /// Most criteria accepted (default 20, at most 100).
    #[serde(default)]
    pub max_criteria: Option<usize>,
    /// One call per distinct prompt (default true); false asks the writer for every sample
    /// (the judge cache, when on, still answers repeats).
    #[serde(default)]
    pub share: Option<bool>,
    /// The writer's endpoint (default: the grader's).
    #[serde(default)]
    pub judge: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Default temperature 0: a rubric is a reference, not a sample.
    #[serde(default)]
    pub sampling_params: Option<SamplingParams>,
    /// The most a sample waits for its rubric, retries included.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// What a write produced, shared by the samples of one prompt.
#[derive(Clone)]
struct Done {
    reply: Result<JudgeReply, JudgeFailure>,
    /// The normalised criteria, or why the reply is not a usable rubric.
    rubric: Result<Arc<Vec<Criterion>>, String>,
}

type Pending = Shared<BoxFuture<'static, Done>>;

/// Recent writes by request digest, oldest first in `order`.
#[derive(Default)]
struct Memo {
    map: HashMap<[u8; 32], Pending>,
    order: VecDeque<[u8; 32]>,
}

/// How a reply is read: the shape, its bounds, and the grader's weighting.
struct Reading {
    shape: Shape,
    min: usize,
    max: usize,
    weights: WeightSource,
    categories: CategoryWeights,
}

/// A compiled rubric writer.
pub(super) struct Writer {
    caller: Caller,
    question: Template,
    reference: Option<Template>,
    instructions: Option<Template>,
    reading: Arc<Reading>,
    share: bool,
    memo: Mutex<Memo>,
}

/// A rubric the writer wrote for one sample's prompt.
#[derive(Debug, Clone)]
pub(super) struct Written {
    pub(super) criteria: Arc<Vec<Criterion>>,
    pub(super) endpoint: Arc<str>,
    /// Served from the memo: another sample of the prompt paid for the call.
    pub(super) shared: bool,
    /// The judge's cache answered the call.
    pub(super) cached: bool,
    /// The request's digest (hex, first 16 bytes): equal for samples that share a rubric.
    pub(super) digest: String,
    pub(super) shape: Shape,
}

impl Written {
    /// The trace's account of the rubric: who wrote it, whether it was shared, and the
    /// criteria as normalised (text, weight, category).
    pub(super) fn detail(&self) -> Value {
        let criteria: Vec<Value> = self
            .criteria
            .iter()
            .map(|c| {
                let mut o = Map::new();
                if let Some(n) = &c.name {
                    o.insert("name".into(), json!(n));
                }
                o.insert("text".into(), json!(c.text));
                o.insert("weight".into(), json!(c.weight));
                if let Some(cat) = c.category {
                    o.insert("category".into(), json!(cat));
                }
                Value::Object(o)
            })
            .collect();
        json!({"writer": self.endpoint, "shape": self.shape, "shared": self.shared,
               "cached": self.cached, "request": self.digest, "criteria": criteria})
    }

    pub(super) fn note(&self) -> String {
        let how = if self.shared {
            "shared with this prompt's other samples (no new call)"
        } else if self.cached {
            "from the judge cache"
        } else {
            "a new call"
        };
        format!(
            "rubric of {} criteria written by the writer `{}` for this prompt ({how})",
            self.criteria.len(),
            self.endpoint
        )
    }
}

/// The writer's templates may read only the dataset.
fn item_only(cx: &mut Compiler, at: &At, field: &str, src: &str) -> Option<Template> {
    let t = cx.template(src, at, field)?;
    if t.reads_sample() {
        cx.err(
            at,
            Some(field),
            "the rubric writer may read only `item.*` (the policy's text never reaches it)",
        );
        return None;
    }
    Some(t)
}

impl Writer {
    /// Compiles `criteria: {generate: ...}` (`v` is the `criteria` object; `grader` the grader's
    /// own judge fields, whose endpoint the writer uses unless it names its own).
    pub(super) fn compile(
        v: &Map<String, Value>,
        cx: &mut Compiler,
        at: &At,
        grader: &JudgeFields,
        weights: WeightSource,
        categories: &CategoryWeights,
    ) -> Option<Writer> {
        let outer = At {
            path: at.field("criteria"),
            kind: at.kind,
        };
        if let Some(k) = v.keys().find(|k| *k != "generate") {
            cx.err(
                &outer,
                Some(k),
                "a criteria object is `{generate: {...}}` (a rubric writer); give a list or a template otherwise",
            );
            return None;
        }
        let Some(inner) = v.get("generate") else {
            cx.err(
                &outer,
                None,
                "a criteria object needs `generate: {question, ...}`",
            );
            return None;
        };
        let here = At {
            path: outer.field("generate"),
            kind: at.kind,
        };
        if let Some(o) = inner.as_object() {
            // `spec` passes these over as a node's own fields; here they mean nothing.
            for k in COMMON_FIELDS.iter().filter(|k| o.contains_key(**k)) {
                cx.err(&here, Some(k), format!("unknown field `{k}`"));
            }
        } else {
            cx.err(&here, None, "expected the writer's fields as an object");
            return None;
        }
        let spec: GenerateSpec = cx.spec(inner, &here)?;
        let question = item_only(cx, &here, "question", &spec.question);
        // `Some(None)`: not given; `None`: given and wrong (reported).
        let optional = |cx: &mut Compiler, field: &str, src: Option<&str>| match src {
            None => Some(None),
            Some(t) => item_only(cx, &here, field, t).map(Some),
        };
        let reference = optional(cx, "reference", spec.reference.as_deref());
        let instructions = optional(cx, "instructions", spec.instructions.as_deref());
        let min = spec.min_criteria.unwrap_or(1);
        let max = spec.max_criteria.unwrap_or(20);
        if min == 0 {
            cx.err(&here, Some("min_criteria"), "must be at least 1");
        }
        if max == 0 || max > CAP {
            cx.err(
                &here,
                Some("max_criteria"),
                format!("must be from 1 to {CAP}"),
            );
        }
        if min > max {
            cx.err(
                &here,
                Some("min_criteria"),
                format!("is more than max_criteria ({max})"),
            );
        }
        let (judge, model) = if spec.judge.is_none() && spec.model.is_none() {
            (grader.judge.clone(), grader.model.clone())
        } else {
            (spec.judge.clone(), spec.model.clone())
        };
        let fields = JudgeFields {
            judge,
            model,
            sampling_params: spec.sampling_params.clone(),
            deadline_ms: spec.deadline_ms,
            ..JudgeFields::default()
        };
        // Room for 20 RaR items of a sentence each, with their JSON.
        let caller = Caller::compile(cx, &here, &fields, 4096);
        Some(Writer {
            caller: caller?,
            question: question?,
            reference: reference?,
            instructions: instructions?,
            reading: Arc::new(Reading {
                shape: spec.shape,
                min,
                max,
                weights,
                categories: categories.clone(),
            }),
            share: spec.share.unwrap_or(true),
            memo: Mutex::default(),
        })
    }

    /// The writer's request for this sample's row: messages and schema from `item.*` only.
    fn request(&self, s: &Sample) -> Result<JudgeCall, crate::template::Miss> {
        let r = &*self.reading;
        let (shape, example, weights) = match r.shape {
            Shape::Rar => (
                "{\"title\": \"2-4 words\", \"description\": \"<Category> Criteria: one sentence\", \"weight\": W}",
                "Each description starts with its category: `Essential Criteria:` (what a correct \
answer must contain; weight 5), `Important Criteria:` (what a good answer should contain; \
weight 3 or 4), `Optional Criteria:` (what makes it better; weight 1 or 2) or `Pitfall \
Criteria:` (a mistake a response might make, described as the mistake; weight -1 or -2).",
                "W an integer",
            ),
            Shape::Prorubric => (
                "{\"criterion\": \"one checkable statement\", \"weight\": W}",
                "Each criterion is one atomic statement a grader can check on its own. A \
positive weight (up to 10) is what a good response does, more for what matters more; a negative \
weight (down to -10) is a mistake a response must avoid, the criterion describing the mistake.",
                "W a non-zero number",
            ),
        };
        let mut system = format!(
            "You write grading rubrics. Given a question (and a reference answer, when one is \
shown), write the criteria a grader will check every response to this question against, each \
on its own. {example} The criteria are self-contained (a grader sees only the question, the \
response and the criterion), specific to this question, and never repeat each other. Respond \
with only a JSON object: {{\"criteria\": [{shape}, ...]}}, {weights}, with {} to {} criteria.",
            r.min, r.max
        );
        if let Some(i) = &self.instructions {
            system.push_str("\n\n");
            system.push_str(&i.render(s)?);
        }
        let mut user = format!("Question:\n{}", self.question.render(s)?);
        if let Some(rf) = &self.reference {
            let _ = write!(user, "\n\nReference answer:\n{}", rf.render(s)?);
        }
        let item = match r.shape {
            Shape::Rar => json!({"type": "object", "properties": {
                    "title": {"type": "string"}, "description": {"type": "string"},
                    "weight": {"type": "integer", "minimum": -5, "maximum": 5}},
                "required": ["title", "description", "weight"], "additionalProperties": false}),
            Shape::Prorubric => json!({"type": "object", "properties": {
                    "criterion": {"type": "string"},
                    "weight": {"type": "number", "minimum": -MAX_WEIGHT, "maximum": MAX_WEIGHT}},
                "required": ["criterion", "weight"], "additionalProperties": false}),
        };
        let schema = json!({"type": "object", "properties": {"criteria": {"type": "array",
            "items": item, "minItems": r.min, "maxItems": r.max}},
            "required": ["criteria"], "additionalProperties": false});
        Ok(self.caller.request(
            vec![("system".into(), system), ("user".into(), user)],
            Some(schema),
            None,
            None,
        ))
    }

    /// The content address of a request: the endpoint and everything sent.
    fn key(&self, call: &JudgeCall) -> [u8; 32] {
        let canon = json!({"endpoint": &*self.caller.judge.endpoint, "messages": call.messages,
            "temperature": call.temperature, "max_tokens": call.max_tokens,
            "schema": call.json_schema, "extra": call.extra});
        Sha256::digest(canon.to_string().as_bytes()).into()
    }

    /// The rubric for this sample's prompt: written by one call per distinct request, shared
    /// by every sample that makes it. The calls are counted on the sample that made them;
    /// the others count a cache hit.
    pub(super) async fn write(&self, s: &Sample, cx: &mut ScoreCtx) -> Result<Written, Outcome> {
        let call = self.request(s).map_err(|m| m.outcome(cx))?;
        let key = self.key(&call);
        let deadline = self.caller.deadline.map(|d: Duration| Instant::now() + d);
        let start = || -> Pending {
            let reply =
                self.caller
                    .judge
                    .judge
                    .call(&self.caller.judge.endpoint, call.clone(), deadline);
            let reading = self.reading.clone();
            async move {
                let reply = reply.await;
                let rubric = match &reply {
                    Ok(r) => reading.rubric(r).map(Arc::new),
                    Err(_) => Err(String::new()),
                };
                Done { reply, rubric }
            }
            .boxed()
            .shared()
        };
        let (pending, leader) = if self.share {
            let mut m = self.memo.lock().expect("memo lock");
            if let Some(p) = m.map.get(&key) {
                (p.clone(), false)
            } else {
                let p = start();
                m.map.insert(key, p.clone());
                m.order.push_back(key);
                while m.order.len() > MEMO_CAPACITY {
                    if let Some(old) = m.order.pop_front() {
                        m.map.remove(&old);
                    }
                }
                (p, true)
            }
        } else {
            (start(), true)
        };
        let done = pending.clone().await;
        let failed = done.reply.is_err() || done.rubric.is_err();
        if leader && failed && self.share {
            let mut m = self.memo.lock().expect("memo lock");
            if m.map.get(&key).is_some_and(|p| p.ptr_eq(&pending)) {
                m.map.remove(&key);
                m.order.retain(|k| *k != key);
            }
        }
        let endpoint = self.caller.judge.endpoint.clone();
        let reply = match done.reply {
            Ok(mut r) => {
                r.cached |= !leader;
                cx.judge_reply(&r);
                r
            }
            Err(f) => {
                if leader {
                    cx.judge_failed();
                }
                return Err(Outcome::error(
                    f.reason,
                    format!("rubric writer `{endpoint}`: {}", f.message),
                ));
            }
        };
        let criteria = done.rubric.map_err(|why| {
            Outcome::error(
                "invalid_generated_rubric",
                format!("rubric writer `{endpoint}`: {why}"),
            )
        })?;
        Ok(Written {
            criteria,
            endpoint,
            shared: !leader,
            cached: leader && reply.cached,
            digest: key[..16].iter().fold(String::new(), |mut h, b| {
                let _ = write!(h, "{b:02x}");
                h
            }),
            shape: self.reading.shape,
        })
    }
}

impl Reading {
    /// The reply as a rubric, strictly (see the module doc); `Err` says what is wrong.
    fn rubric(&self, reply: &JudgeReply) -> Result<Vec<Criterion>, String> {
        let m = verdict_object(reply)?;
        exact_keys(&m, &["criteria"], &[])?;
        let Some(items) = m["criteria"].as_array() else {
            return Err("`criteria` is not a list".into());
        };
        if items.is_empty() {
            return Err("the rubric has no criteria".into());
        }
        if items.len() < self.min {
            return Err(format!(
                "{} criteria, fewer than min_criteria ({})",
                items.len(),
                self.min
            ));
        }
        if items.len() > self.max {
            return Err(format!(
                "{} criteria, more than max_criteria ({})",
                items.len(),
                self.max
            ));
        }
        let mut seen = HashSet::new();
        for (i, it) in items.iter().enumerate() {
            let body = self.check(it).map_err(|e| format!("criterion {i}: {e}"))?;
            if !seen.insert(dedup_key(body)) {
                return Err(format!("criterion {i} repeats an earlier one"));
            }
        }
        criteria_of(items, self.weights, &self.categories).map_err(|e| describe(&e))
    }

    /// One criterion's keys, texts and weight for the shape; returns its body text.
    fn check<'a>(&self, it: &'a Value) -> Result<&'a str, String> {
        let Some(o) = it.as_object() else {
            return Err("not an object".into());
        };
        let (required, body_key): (&[&str], &str) = match self.shape {
            Shape::Rar => (&["title", "description", "weight"], "description"),
            Shape::Prorubric => (&["criterion", "weight"], "criterion"),
        };
        exact_keys(o, required, &[]).map_err(|e| e.replace("verdict", "criterion"))?;
        let text = |k: &str, max: usize| -> Result<&'a str, String> {
            let Some(t) = o[k].as_str() else {
                return Err(format!("`{k}` is not a string"));
            };
            if t.trim().is_empty() {
                return Err(format!("`{k}` is empty"));
            }
            if t.chars().count() > max {
                return Err(format!("`{k}` is longer than {max} characters"));
            }
            if let Some(d) = guard::delimiter_escape(&view(t).text) {
                return Err(format!(
                    "`{k}` writes the candidate's delimiter `{d}` (it would be shown to the grader beside the candidate)"
                ));
            }
            Ok(t)
        };
        if self.shape == Shape::Rar {
            text("title", MAX_TITLE)?;
        }
        let body = text(body_key, MAX_TEXT)?;
        let w = match o["weight"].as_f64() {
            Some(w) if w.is_finite() => w,
            _ => return Err(format!("`weight` is not a finite number: {}", o["weight"])),
        };
        if w == 0.0 || w.abs() > MAX_WEIGHT {
            return Err(format!(
                "`weight` {w} is outside ±{MAX_WEIGHT} or zero (a criterion that weighs nothing, or everything)"
            ));
        }
        if self.shape == Shape::Rar {
            let (category, rest) = strip_category(body);
            let Some(category) = category else {
                return Err("the description has no category prefix (`Essential Criteria:`, `Important Criteria:`, `Optional Criteria:`, `Pitfall Criteria:`)".into());
            };
            if rest.trim().is_empty() {
                return Err("the description has only its category".into());
            }
            if (category == "pitfall") != (w < 0.0) {
                return Err(format!(
                    "a {category} criterion with weight {w} (pitfalls weigh below 0, the others above)"
                ));
            }
            return Ok(rest);
        }
        Ok(body)
    }
}

/// Two criteria are alike when their words are, case and punctuation aside.
fn dedup_key(text: &str) -> String {
    view(text)
        .text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::script::ScriptJudge;
    use crate::{Program, Sample};

    const RUBRIC: &str = r#"{"criteria": [{"title": "Capital", "description": "Essential Criteria: Names Paris as the capital.", "weight": 5}, {"title": "Guess", "description": "Pitfall Criteria: Offers several cities.", "weight": -1}]}"#;

    fn reading(shape: Shape) -> Reading {
        Reading {
            shape,
            min: 2,
            max: 3,
            weights: WeightSource::Category,
            categories: CategoryWeights::default(),
        }
    }

    fn reply(content: &str) -> JudgeReply {
        JudgeReply {
            content: content.into(),
            finish_reason: Some("stop".into()),
            ..JudgeReply::default()
        }
    }

    #[test]
    fn replies_are_read_strictly() {
        let r = reading(Shape::Rar);
        let c = r.rubric(&reply(RUBRIC)).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].weight, c[0].category), (1.0, Some("essential")));
        assert_eq!((c[1].weight, c[1].category), (-0.9, Some("pitfall")));
        let bad = |content: &str| r.rubric(&reply(content)).unwrap_err();
        let one = |d: &str, w: &str| {
            format!(
                r#"{{"criteria": [{{"title": "A", "description": "Essential Criteria: Says a.", "weight": 5}}, {{"title": "B", "description": "{d}", "weight": {w}}}]}}"#
            )
        };
        assert!(bad(&one("Important Criteria: Says a.", "3")).contains("repeats"));
        assert!(bad(&one("Says b.", "3")).contains("category"));
        assert!(bad(&one("Pitfall Criteria: Says b.", "3")).contains("pitfall"));
        assert!(bad(&one("Important Criteria: Says b.", "50")).contains("outside"));
        assert!(bad(&one("Important Criteria: Says b.", "0")).contains("zero"));
        assert!(
            bad(&one("Important Criteria: </candidate_response> b.", "3")).contains("delimiter")
        );
        assert!(bad(&one(&"x".repeat(700), "3")).contains("longer"));
        assert!(bad(r#"{"criteria": []}"#).contains("no criteria"));
        assert!(bad(r#"{"criteria": [], "note": 1}"#).contains("unexpected key"));
        let mut cut = reply(RUBRIC);
        cut.finish_reason = Some("length".into());
        assert!(r.rubric(&cut).unwrap_err().contains("cut off"));
        let p = reading(Shape::Prorubric);
        let c = p
            .rubric(&reply(
                r#"{"criteria": [{"criterion": "Names Paris", "weight": 2}, {"criterion": "Names Lyon", "weight": -1.5}]}"#,
            ))
            .unwrap();
        assert_eq!((c[0].weight, c[1].weight), (2.0, -1.5));
        assert!(p
            .rubric(&reply(RUBRIC))
            .unwrap_err()
            .contains("has no `criterion`"));
    }

    #[test]
    fn one_call_per_prompt_and_never_the_candidate() {
        let judge = Arc::new(
            ScriptJudge::from_value(&json!([
                {"when": "You write grading rubrics", "content": RUBRIC},
                {"content": "{\"verdicts\": [{\"id\": 1, \"verdict\": true}, {\"id\": 2, \"verdict\": false}]}"}
            ]))
            .unwrap(),
        );
        let env = crate::exec::Env {
            judge: Some(judge.clone()),
            ..Default::default()
        };
        let spec = json!({"type": "rubric", "question": "{{item.q}}",
            "criteria": {"generate": {"question": "{{item.q}}", "reference": "{{item.a}}"}}});
        let p = Program::compile_with(&spec, env).unwrap();
        let item = |q: &str| json!({"q": q, "a": "Paris"});
        let outputs = [
            "Paris is the capital.",
            "It is Paris, on the Seine.",
            "Paris.",
        ];
        let mut usage = Vec::new();
        for o in outputs {
            let r = p.explain(&Sample::new(o, item("Capital of France?")));
            assert_eq!(r.reward, Some(1.0), "{r:?}");
            usage.push(r.usage.unwrap());
        }
        let r = p.explain(&Sample::new("Paris.", item("Capital of Italy?")));
        let d = r.trace.unwrap().detail.unwrap();
        assert_eq!(d["generated"]["shared"], false);
        assert_eq!(d["generated"]["criteria"][0]["category"], "essential");
        let writes: Vec<_> = judge
            .calls()
            .into_iter()
            .filter(|(_, c)| c.messages[0].1.contains("You write grading rubrics"))
            .collect();
        // One write per prompt, whatever the number of samples.
        assert_eq!(writes.len(), 2);
        for (_, c) in &writes {
            let body = serde_json::to_string(&c.messages).unwrap();
            for o in outputs {
                assert!(
                    !body.contains(o),
                    "the candidate reached the writer: {body}"
                );
            }
            assert!(body.contains("Reference answer:\\nParis"), "{body}");
            assert_eq!(c.temperature, Some(0.0));
        }
        // The first sample paid for the write, the others count a cache hit.
        assert_eq!((usage[0].judge_calls, usage[0].cache_hits), (2, 0));
        assert_eq!((usage[1].judge_calls, usage[1].cache_hits), (1, 1));
    }
}
