//! # text_similarity
//! *What it scores:* OpenAI's text similarity, accepted verbatim: how close the input is to the
//! reference by `evaluation_metric`: `fuzzy_match`, `bleu`, `gleu`, `meteor`, `rouge_1` …
//! `rouge_5`, `rouge_l`, or `cosine`: the cosine of the two texts' embeddings from an
//! embeddings endpoint (`/v1/embeddings`; OpenAI uses `text-embedding-3-large`), the endpoint
//! being the spec's only or `default` judge (`--judge URL --judge-model NAME` for a grader file
//! as OpenAI writes it), or the one named by `judge` (Referee's extension). `cosine` works as
//! `embedding_similarity` with one reference: vectors cached and batched, an empty input
//! scores 0 without a call.
//!
//! *Spec:* `input` (template, default `{{sample.output_text}}`), `reference` (template),
//! `evaluation_metric`, `pass_threshold` (optional: the trace says whether it passed; the value
//! is the similarity itself, as in OpenAI's RFT), `judge` (`cosine` only).
//!
//! *Example:*
//! ```yaml
//! type: text_similarity
//! name: summary
//! input: "{{sample.output_text}}"
//! reference: "{{item.summary}}"
//! evaluation_metric: rouge_l
//! pass_threshold: 0.5
//! ```
//!
//! *Score and failure modes:* a similarity in [0,1]; metric definitions and their anchors
//! are documented in `referee_core::text`. A template field missing from the item fails with
//! `missing_field`.

use crate::compile::{sync, At, Compiler};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::{render_pair, Template};
use crate::text;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextSimilaritySpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// What it is compared with.
    pub reference: String,
    pub evaluation_metric: Metric,
    /// Pass/fail line shown in the trace.
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    /// `cosine`: the embeddings endpoint by name (default: the spec's only or `default` one).
    #[serde(default)]
    pub judge: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    FuzzyMatch,
    Bleu,
    Gleu,
    Meteor,
    Cosine,
    #[serde(rename = "rouge_1")]
    Rouge1,
    #[serde(rename = "rouge_2")]
    Rouge2,
    #[serde(rename = "rouge_3")]
    Rouge3,
    #[serde(rename = "rouge_4")]
    Rouge4,
    #[serde(rename = "rouge_5")]
    Rouge5,
    #[serde(rename = "rouge_l")]
    RougeL,
}

pub struct TextSimilarity {
    input: Template,
    reference: Template,
    metric: Metric,
    pass_threshold: Option<f64>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: TextSimilaritySpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let reference = cx.template(&spec.reference, at, "reference");
    if spec.evaluation_metric == Metric::Cosine {
        let judge = cx.judge(at, spec.judge.as_deref(), None);
        return Some(
            crate::components::judge::embedding_similarity::cosine_grader(
                judge?,
                input?,
                reference?,
                spec.pass_threshold,
            ),
        );
    }
    if spec.judge.is_some() {
        cx.err(at, Some("judge"), "only `cosine` calls an endpoint");
        return None;
    }
    Some(sync(TextSimilarity {
        input: input?,
        reference: reference?,
        metric: spec.evaluation_metric,
        pass_threshold: spec.pass_threshold,
    }))
}

impl SyncComponent for TextSimilarity {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let (input, reference) = match render_pair(&self.input, &self.reference, s) {
            Ok(pair) => pair,
            Err(m) => return m.outcome(cx),
        };
        let (a, b) = (&*input, &*reference);
        let v = match self.metric {
            Metric::FuzzyMatch => text::fuzzy_match(a, b),
            Metric::Bleu => text::bleu(a, b),
            Metric::Gleu => text::gleu(a, b),
            Metric::Meteor => text::meteor(a, b),
            Metric::Rouge1 => text::rouge_n(a, b, 1),
            Metric::Rouge2 => text::rouge_n(a, b, 2),
            Metric::Rouge3 => text::rouge_n(a, b, 3),
            Metric::Rouge4 => text::rouge_n(a, b, 4),
            Metric::Rouge5 => text::rouge_n(a, b, 5),
            Metric::RougeL => text::rouge_l(a, b),
            Metric::Cosine => unreachable!("cosine compiles to an embedding grader"),
        };
        cx.note(|| match self.pass_threshold {
            Some(t) => format!(
                "{:?} = {v:.4}; {} threshold {t}",
                self.metric,
                if v >= t { "passes" } else { "below" }
            ),
            None => format!("{:?} = {v:.4}", self.metric),
        });
        Outcome::ok(v)
    }
}
