//! # embedding_similarity
//! *What it scores:* semantic similarity from an embeddings endpoint (`/v1/embeddings`: vLLM,
//! llama-server `--embedding`, OpenAI): the cosine between the answer and a reference, or the
//! closest of several; or, in set mode, how well the answer's sentences (lines, list items)
//! cover the reference's, matched one to one (report sentences against reference findings).
//!
//! *Spec:*
//! - `judge`: the embeddings endpoint by name in `judges:`.
//! - `input`: what is graded (default `{{sample.output_text}}`, its thinking section removed
//!   unless `reasoning: keep`).
//! - `reference`: a template; one that is a single item field holding a list gives several
//!   references. Or `references`: a list of templates.
//! - `mode` over several references: `closest` (default: the best) or `mean`.
//! - `set` (optional): `{unit: sentences | lines | items, assign: optimal | greedy,
//!   threshold: 0.8, score: f1 | precision | recall | chamfer, max_units: 64}`. Both sides are
//!   split into units, repeated units dropped, and matched one to one: a unit matches when its
//!   cosine is at least `threshold`. `chamfer` scores 1 − the Chamfer distance. An answer's
//!   units beyond `max_units` are not embedded but count as unmatched.
//! - `copy`: `{action: allow | penalize, reward: 0}`: what an answer that contains a reference
//!   verbatim (folded, case and punctuation ignored) scores. `allow` (default) when matching
//!   the reference is the point; `penalize` where the policy can see the reference (it is in
//!   the prompt), so pasting it must not pay.
//! - `pass_threshold`: the trace says whether it passed. `deadline_ms`.
//!
//! *Example:*
//! ```yaml
//! type: embedding_similarity
//! name: findings
//! reference: "{{item.findings}}"
//! set: {unit: sentences, threshold: 0.85, score: f1}
//! ```
//!
//! *Score and failure modes:* the cosine (in [-1, 1], as OpenAI's `cosine`) or the set score
//! (precision, recall, F1 in [0, 1]; `chamfer`'s 1 − distance in [-1, 1]). An empty answer scores 0 without a call (servers refuse empty input); an empty
//! reference is an error `empty_reference`, a reference with more than `max_units` units
//! `reference_too_long`; a failed call its `judge_*` reason. Vectors are cached by content and
//! the texts of concurrent samples batched into one request.

use crate::compile::{waits, At, Compiler, JudgeRef};
use crate::exec::BoxFuture;
use crate::judge::EmbedCall;
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::{value_text, Template};
use crate::text::matching::{self, Assign, Unit};
use crate::text::reasoning::{strip_reasoning, Reasoning};
use crate::text::restate::restates;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingSimilaritySpec {
    #[serde(default)]
    pub judge: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub reference: Option<String>,
    #[serde(default)]
    pub references: Option<Vec<String>>,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default)]
    pub set: Option<SetSpec>,
    #[serde(default)]
    pub copy: CopySpec,
    #[serde(default)]
    pub reasoning: Reasoning,
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Closest,
    Mean,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSpec {
    #[serde(default)]
    pub unit: Unit,
    #[serde(default)]
    pub assign: Assign,
    pub threshold: f64,
    #[serde(default)]
    pub score: SetScore,
    #[serde(default = "default_max_units")]
    pub max_units: usize,
}

fn default_max_units() -> usize {
    64
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SetScore {
    #[default]
    F1,
    Precision,
    Recall,
    Chamfer,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CopySpec {
    #[serde(default)]
    pub action: CopyAction,
    #[serde(default)]
    pub reward: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CopyAction {
    #[default]
    Allow,
    Penalize,
}

pub struct EmbeddingSimilarity {
    judge: JudgeRef,
    input: Template,
    references: Vec<Template>,
    mode: Mode,
    set: Option<SetSpec>,
    copy: CopySpec,
    reasoning: Reasoning,
    pass_threshold: Option<f64>,
    deadline: Option<Duration>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: EmbeddingSimilaritySpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let sources: Vec<String> = match (&spec.reference, &spec.references) {
        (Some(r), None) => vec![r.clone()],
        (None, Some(rs)) if !rs.is_empty() => rs.clone(),
        _ => {
            cx.err(
                at,
                Some("reference"),
                "give `reference` (a template) or `references` (a non-empty list of templates), not both",
            );
            return None;
        }
    };
    let mut references = Vec::new();
    for (i, r) in sources.iter().enumerate() {
        references.push(cx.template(r, at, &format!("references/{i}")));
    }
    if let Some(s) = &spec.set {
        if !(-1.0..=1.0).contains(&s.threshold) || s.max_units == 0 {
            cx.err(
                at,
                Some("set"),
                "`threshold` is a cosine in [-1, 1] and `max_units` at least 1",
            );
            return None;
        }
    }
    let judge = cx.judge(at, spec.judge.as_deref(), spec.model.as_deref());
    let references: Option<Vec<Template>> = references.into_iter().collect();
    Some(waits(EmbeddingSimilarity {
        judge: judge?,
        input: input?,
        references: references?,
        mode: spec.mode,
        set: spec.set,
        copy: spec.copy,
        reasoning: spec.reasoning,
        pass_threshold: spec.pass_threshold,
        deadline: spec.deadline_ms.map(Duration::from_millis),
    }))
}

/// OpenAI's `text_similarity` with `evaluation_metric: cosine`: one reference, the plain
/// cosine, the output as written.
pub fn cosine_grader(
    judge: JudgeRef,
    input: Template,
    reference: Template,
    pass_threshold: Option<f64>,
) -> crate::node::Imp {
    waits(EmbeddingSimilarity {
        judge,
        input,
        references: vec![reference],
        mode: Mode::Closest,
        set: None,
        copy: CopySpec::default(),
        reasoning: Reasoning::Keep,
        pass_threshold,
        deadline: None,
    })
}

/// The cosine of two vectors (0 when either is all zeros or they differ in length).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        (dot / (na.sqrt() * nb.sqrt())).clamp(-1.0, 1.0)
    }
}

impl EmbeddingSimilarity {
    /// The references as texts: each template, a list field giving one per element.
    fn references(&self, s: &Sample) -> Result<Vec<String>, crate::template::Miss> {
        let mut out = Vec::new();
        for t in &self.references {
            match &*t.render_value(s)? {
                Value::Array(a) => out.extend(a.iter().map(value_text)),
                v => out.push(value_text(v)),
            }
        }
        Ok(out)
    }

    /// Embeds every distinct text (one call each; the pool batches and caches them).
    async fn embed(
        &self,
        texts: &[&str],
        deadline: Option<Instant>,
        cx: &mut ScoreCtx,
    ) -> Result<HashMap<String, Arc<[f32]>>, Outcome> {
        let mut distinct: Vec<&str> = texts.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let calls = distinct.iter().map(|t| {
            self.judge.judge.embed(
                &self.judge.endpoint,
                EmbedCall {
                    text: (*t).to_string(),
                },
                deadline,
            )
        });
        let replies = futures::future::join_all(calls).await;
        let mut out = HashMap::new();
        let mut failed = None;
        for (t, r) in distinct.iter().zip(replies) {
            match r {
                Ok(r) => {
                    cx.usage.embedding(&r);
                    out.insert((*t).to_string(), r.vector);
                }
                Err(f) => {
                    cx.judge_failed();
                    failed = failed.or(Some(f));
                }
            }
        }
        match failed {
            Some(f) => Err(f.outcome()),
            None => Ok(out),
        }
    }

    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let deadline = self.deadline.map(|d| Instant::now() + d);
        let input = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let answer = if self.reasoning == Reasoning::Strip && self.input.reads_sample() {
            strip_reasoning(&input).text.trim().to_string()
        } else {
            input.trim().to_string()
        };
        let refs = match self.references(s) {
            Ok(r) => r,
            Err(m) => return m.outcome(cx),
        };
        let refs: Vec<String> = refs.iter().map(|r| r.trim().to_string()).collect();
        if refs.is_empty() || refs.iter().any(String::is_empty) {
            return Outcome::error("empty_reference", "a reference is empty");
        }
        if answer.is_empty() {
            cx.note(|| "the answer is empty: scored 0 without a call".into());
            return Outcome::ok(0.0);
        }
        if let Some(r) = refs.iter().find(|r| restates(&answer, r)) {
            match self.copy.action {
                CopyAction::Penalize => {
                    let reward = self.copy.reward;
                    cx.note(|| {
                        format!(
                            "the answer contains the reference {:?}: scored {reward}",
                            crate::node::shorten(r)
                        )
                    });
                    return Outcome::ok(reward);
                }
                CopyAction::Allow => cx.note(|| "the answer contains a reference verbatim".into()),
            }
        }
        let scores = match &self.set {
            None => self.whole(&answer, &refs, deadline, cx).await,
            Some(set) => self.sets(set, &answer, &refs, deadline, cx).await,
        };
        let scores = match scores {
            Ok(v) => v,
            Err(o) => return o,
        };
        let value = match self.mode {
            Mode::Closest => scores.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Mode::Mean => scores.iter().sum::<f64>() / scores.len() as f64,
        };
        cx.note(|| {
            let per: Vec<String> = scores.iter().map(|x| format!("{x:.4}")).collect();
            let pass = self.pass_threshold.map_or(String::new(), |t| {
                format!(
                    "; {} threshold {t}",
                    if value >= t { "passes" } else { "below" }
                )
            });
            format!(
                "{} {value:.4} over {} reference(s) [{}]{pass}",
                if self.references.len() > 1 || scores.len() > 1 {
                    format!("{:?}", self.mode).to_lowercase()
                } else {
                    "similarity".into()
                },
                scores.len(),
                per.join(", ")
            )
        });
        Outcome::ok(value)
    }

    /// The cosine of the answer to each reference.
    async fn whole(
        &self,
        answer: &str,
        refs: &[String],
        deadline: Option<Instant>,
        cx: &mut ScoreCtx,
    ) -> Result<Vec<f64>, Outcome> {
        let mut texts: Vec<&str> = vec![answer];
        texts.extend(refs.iter().map(String::as_str));
        let v = self.embed(&texts, deadline, cx).await?;
        Ok(refs
            .iter()
            .map(|r| cosine(&v[answer], &v[r.as_str()]))
            .collect())
    }

    /// The set score of the answer's units against each reference's.
    async fn sets(
        &self,
        set: &SetSpec,
        answer: &str,
        refs: &[String],
        deadline: Option<Instant>,
        cx: &mut ScoreCtx,
    ) -> Result<Vec<f64>, Outcome> {
        let (units, repeats) = matching::dedup(&matching::split(answer, set.unit));
        let over = units.len().saturating_sub(set.max_units);
        let units = &units[..units.len().min(set.max_units)];
        let mut ref_units = Vec::new();
        for r in refs {
            let (u, _) = matching::dedup(&matching::split(r, set.unit));
            if u.len() > set.max_units {
                return Err(Outcome::error(
                    "reference_too_long",
                    format!(
                        "a reference has {} units, more than `max_units` ({})",
                        u.len(),
                        set.max_units
                    ),
                ));
            }
            ref_units.push(u);
        }
        if units.is_empty() {
            cx.note(|| "the answer has no units: scored 0".into());
            return Ok(vec![0.0; refs.len()]);
        }
        let mut texts: Vec<&str> = units.to_vec();
        texts.extend(ref_units.iter().flatten().copied());
        let v = self.embed(&texts, deadline, cx).await?;
        let mut out = Vec::new();
        for (k, ru) in ref_units.iter().enumerate() {
            let sim: Vec<Vec<f64>> = units
                .iter()
                .map(|a| ru.iter().map(|b| cosine(&v[*a], &v[*b])).collect())
                .collect();
            let m = matching::match_sets(&sim, set.threshold, set.assign);
            // Units past `max_units` were not embedded: they count as unmatched.
            let n = units.len() + over;
            let precision = m.pairs.len() as f64 / n as f64;
            let f1 = if precision + m.recall > 0.0 {
                2.0 * precision * m.recall / (precision + m.recall)
            } else {
                0.0
            };
            let score = match set.score {
                SetScore::F1 => f1,
                SetScore::Precision => precision,
                SetScore::Recall => m.recall,
                SetScore::Chamfer => 1.0 - m.chamfer,
            };
            cx.note(|| {
                format!(
                    "reference {k}: {} of {n} answer units matched {} of {} reference units (≥ {}): precision {precision:.3}, recall {:.3}, f1 {f1:.3}, chamfer distance {:.3}{}",
                    m.pairs.len(),
                    m.pairs.len(),
                    ru.len(),
                    set.threshold,
                    m.recall,
                    m.chamfer,
                    match (repeats, over) {
                        (0, 0) => String::new(),
                        _ => format!("; {repeats} repeated units dropped, {over} past max_units"),
                    }
                )
            });
            out.push(score);
        }
        Ok(out)
    }
}

impl AsyncComponent for EmbeddingSimilarity {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}
