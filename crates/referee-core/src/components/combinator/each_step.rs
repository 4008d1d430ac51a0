//! # each_step
//! *What it scores:* the steps of a solution, each with a child grader, reduced to one process
//! reward: a rule per step (an arithmetic check, a format, a banned phrase), or any other
//! grader. The per-step values are the result's `step_rewards`, for trainers that give credit
//! per token (verl, OpenRLHF).
//!
//! *Spec:* `grader` (the child, scored once per step: the step is its `sample.output_text`, the
//! row's `item` is its item); `input` (the text to cut, default `{{sample.output_text}}`; the
//! spans are into it); `steps` (how to cut it: `split: paragraphs` (default), `lines`,
//! `numbered`, `regex` + `pattern`, `tag` + `tag`, `separator` + `separator`, `turns`;
//! `max_steps` (default 100), `min_chars` (default 1), `repeated: zero|keep`); `aggregate`:
//! `min` (default), `product`, `last`, `mean`, `fraction`, `first_error`, `sum`, `clip`,
//! `delta`; `threshold` (default 0.5): a step is right at or above it, and Clip's η; `if_none`
//! (default 0): the value with no steps; `outcome`: `{grader, when: correct|wrong, threshold}`,
//! process credit only when the outcome holds (or only when it does not).
//!
//! How each aggregate takes a policy that adds, repeats or pads steps, and what the segmenter
//! does against it (no text outside the steps, short steps merged, repeats and steps past the
//! cap scoring 0 ungraded), is in `referee_core::steps` and the README's process-rewards part.
//!
//! *Example:*
//! ```yaml
//! type: each_step
//! steps: {split: numbered, min_chars: 4}
//! aggregate: min
//! grader: {type: regex, mode: forbid, pattern: "\\?\\?\\?|TODO"}
//! outcome: {grader: {type: math_equiv, reference: "{{item.answer}}"}, when: correct}
//! ```
//!
//! *Score and failure modes:* the aggregate. A step on which the child does not apply is left
//! out; a step on which it failed (without `on_error`) fails the node, naming the step. No step
//! scores `if_none`. With `outcome`, an outcome that failed fails the node, and a shut gate
//! scores 0 without grading the steps. Every step (span, value, status) is in the trace
//! (`detail.steps`). Names inside `grader` are refused (one value per step), and so is an
//! `outcome` that waits on a judge or sandbox: put such an outcome in a `gate` around
//! each_step instead.

use crate::compile::{sync, At, Child, Compiler};
use crate::node::{AsyncComponent, Cost, Imp, Node, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::steps::reduce::{Credit, Gate, OutcomeSpec, StepAggregate, StepScore};
use crate::steps::segment::{Segmenter, StepsSpec};
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EachStepSpec {
    /// The grader applied to each step (the step is its `sample.output_text`).
    pub grader: Child,
    /// The text cut into steps (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// How the text is cut into steps.
    #[serde(default)]
    pub steps: Option<StepsSpec>,
    /// `min` (default), `product`, `last`, `mean`, `fraction`, `first_error`, `sum`, `clip`, `delta`.
    #[serde(default)]
    pub aggregate: StepAggregate,
    /// A step is right at or above this (default 0.5); Clip's η.
    #[serde(default)]
    pub threshold: Option<f64>,
    /// The value when there are no steps (default 0).
    #[serde(default)]
    pub if_none: Option<f64>,
    /// Process credit only when this outcome holds (`when: correct`) or does not (`wrong`).
    #[serde(default)]
    pub outcome: Option<OutcomeSpec>,
}

pub struct EachStep {
    child: Node,
    input: Template,
    segmenter: Segmenter,
    credit: Credit,
    gate: Option<Gate>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<Imp> {
    let spec: EachStepSpec = cx.spec(v, at)?;
    let input = match &spec.input {
        Some(t) => cx.template(t, at, "input"),
        None => Some(Template::output_text()),
    };
    let segmenter = Segmenter::compile(spec.steps.as_ref(), cx, at);
    if spec.input.is_some() && segmenter.as_ref().is_some_and(Segmenter::on_turns) {
        cx.err(
            at,
            Some("input"),
            "`split: turns` cuts the trajectory: `input` does not apply",
        );
    }
    let credit = Credit::compile(spec.aggregate, spec.threshold, spec.if_none, cx, at);
    let gate = spec.outcome.as_ref().map(|o| Gate::compile(o, cx, at));
    let child = cx.child(&spec.grader, at, "grader")?;
    if let Some(p) = super::each_turn::named(&child) {
        cx.err(
            at,
            Some("grader"),
            format!("{p} has a `name`: inside each_step it would name one value per step; name the each_step node instead"),
        );
    }
    if let Some(Some(g)) = &gate {
        if let Some(p) = super::each_turn::named(&g.node).filter(|_| child.waits()) {
            cx.err(
                at,
                Some("outcome"),
                format!("{p} has a `name`, and this each_step waits on its grader, so the name would not reach `components`: name it in a `gate` around each_step instead"),
            );
        }
        if g.node.waits() {
            cx.err(
                at,
                Some("outcome"),
                "the outcome waits on a judge or sandbox: put each_step in a `gate` whose `if` is that outcome instead",
            );
        }
    }
    let (input, segmenter, credit) = (input?, segmenter?, credit?);
    let gate = match gate {
        Some(g) => Some(g?),
        None => None,
    };
    if cx.has_errors() {
        return None;
    }
    cx.gives_steps();
    let c = EachStep {
        child,
        input,
        segmenter,
        credit,
        gate,
    };
    Some(if c.child.waits() {
        Imp::Async(Box::new(c))
    } else {
        sync(c)
    })
}

/// A step as a sample of its own: the step's text, the row's item and id.
fn step_sample(s: &Sample, text: &str) -> Sample {
    let mut ts = Sample::new(text, s.item.clone());
    ts.id.clone_from(&s.id);
    ts
}

impl EachStep {
    fn text<'s>(&'s self, s: &'s Sample, cx: &mut ScoreCtx) -> Result<Cow<'s, str>, Outcome> {
        if self.segmenter.on_turns() {
            return Ok(Cow::Borrowed(""));
        }
        self.input.render(s).map_err(|m| m.outcome(cx))
    }
}

impl SyncComponent for EachStep {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        if let Err(o) = Gate::admit(self.gate.as_ref(), s, cx, "graded") {
            return o;
        }
        let text = match self.text(s, cx) {
            Ok(t) => t,
            Err(o) => return o,
        };
        let seg = self.segmenter.segment(s, &text);
        // One sample for every step of the row: the item is cloned once, not per step.
        let mut ts = step_sample(s, "");
        let scores: Vec<StepScore> = seg
            .steps
            .iter()
            .map(|st| {
                if !st.graded() {
                    return StepScore::ungraded();
                }
                ts.set_output(st.text);
                let mut tcx = ScoreCtx::new(cx.explaining());
                let out = self.child.eval(&ts, &mut tcx);
                StepScore {
                    out: Some(out),
                    note: tcx.root.and_then(|t| t.note),
                }
            })
            .collect();
        self.credit.finish(&seg, &scores, cx)
    }

    fn children(&self) -> Vec<&Node> {
        let mut c: Vec<&Node> = self.gate.iter().map(|g| &g.node).collect();
        c.push(&self.child);
        c
    }
}

impl AsyncComponent for EachStep {
    fn score<'a>(
        &'a self,
        s: &'a Sample,
        cx: &'a mut ScoreCtx,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            if let Err(o) = Gate::admit(self.gate.as_ref(), s, cx, "graded") {
                return o;
            }
            let text = match self.text(s, cx) {
                Ok(t) => t,
                Err(o) => return o,
            };
            let seg = self.segmenter.segment(s, &text);
            let samples: Vec<Option<Sample>> = seg
                .steps
                .iter()
                .map(|st| st.graded().then(|| step_sample(s, st.text)))
                .collect();
            let explain = cx.explaining();
            let runs = samples.iter().map(|ts| async move {
                match ts {
                    Some(ts) => Some(crate::score::drive::nested(&self.child, ts, explain).await),
                    None => None,
                }
            });
            let done = futures::future::join_all(runs).await;
            let scores: Vec<StepScore> = done
                .into_iter()
                .map(|d| match d {
                    None => StepScore::ungraded(),
                    Some((out, tcx)) => {
                        cx.usage.add(&tcx.usage);
                        StepScore {
                            out: Some(out),
                            note: tcx.root.and_then(|t| t.note),
                        }
                    }
                })
                .collect();
            self.credit.finish(&seg, &scores, cx)
        })
    }

    fn cost(&self) -> Option<Cost> {
        Some(self.child.meta.cost)
    }
}
