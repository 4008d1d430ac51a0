//! # prm
//! *What it scores:* every step of a solution with a process reward model served over HTTP, in
//! one request per sample (batched across samples like `reward_model`), reduced to one process
//! reward; the per-step scores are the result's `step_rewards`. Qwen2.5-Math-PRM through vLLM's
//! `/pooling`, or Math-Shepherd through `/v1/completions` log-probabilities.
//!
//! *Spec:*
//! - `judge`: the endpoint by name in the file's `judges:` (`max_batch`, `batch_wait_ms` shape
//!   the batches).
//! - `api`: `pooling` (default): the text goes to `POST /pooling` with `task` (default
//!   `token_classify`; `task: null` leaves it out, for vLLM before 0.11.1 served with
//!   `--task reward`), and the score of step k is `data[i].data[k][positive_index]` (default 1:
//!   Qwen2.5-Math-PRM's softmaxed `[p_wrong, p_right]` row at its k-th `<extra_0>`). A
//!   Math-Shepherd model served as a pooling model (`"returned_token_ids": [648, 387]`) is this
//!   API with `positive_index: 0`. `math_shepherd`: `POST /v1/completions` with `echo: true`,
//!   `logprobs: top_logprobs` (default 20, at most the server's `--max-logprobs`),
//!   `max_tokens: 1`, `temperature: 0`; the score of a step is
//!   `exp(lp+) / (exp(lp+) + exp(lp-))` for `good_token` (default `+`) and `bad_token` (`-`) in
//!   the distribution of the token after its tag. The tag is found in the server's own returned
//!   tokens: where they spell the text sent (after at most two leading special tokens), each
//!   tag must be one token (leading spaces allowed); where they do not (vLLM decodes each echoed
//!   token alone, so SentencePiece tokens lose their leading space and byte-level pieces read
//!   U+FFFD), the tags are the tokens that read as the tag, exactly one per tag sent. Otherwise
//!   the sample is `judge_unparseable` with the reason; a key is matched exactly, else by the one key that is it with spaces
//!   trimmed (the decoded `" +"`).
//! - `input` (default `{{sample.output_text}}`) and `steps`: the text cut into steps and how,
//!   as `each_step` (spans are into `input`); `aggregate`, `threshold`, `if_none`, `outcome`: as
//!   `each_step` (`min` by default).
//! - `context` (default empty): the text before the steps, e.g. the question in the model's
//!   chat template (`"<|im_start|>user\n{{item.question}}<|im_end|>\n<|im_start|>assistant\n"`).
//! - `step_tag`: written after every step (default `<extra_0>` for `pooling`, `" ки"` for
//!   `math_shepherd`); `join`: between a tag and the next step (default empty, `"\n"` for
//!   `math_shepherd`, as in Math-Shepherd's data).
//! - `control_tokens`: the chat-template tokens removed from the policy's text (default
//!   ChatML/Qwen's `<|im_start|>`, `<|im_end|>`, `<|endoftext|>`, Llama 3's
//!   `<|begin_of_text|>`, `<|start_header_id|>`, `<|end_header_id|>`, `<|eot_id|>`, and
//!   `<extra_0>`, `ки`); a list given replaces it.
//! - `deadline_ms`: the most a sample waits for its scores.
//!
//! The policy's text is hostile: a step tag it writes would be one more scored position (the
//! PRM scores every tag token), and a control token would forge a turn. So, before the steps
//! are joined, every occurrence of the step tag (without its surrounding spaces) and of each
//! control token in the policy's steps is replaced by a space, repeated until none is left (a
//! removal cannot assemble a new one), and the tag is removed the same way from the values
//! `context` renders (control tokens only from its `sample.*` values: the row's own chat
//! template is kept). The request then holds exactly one tag per graded step; this is checked
//! before it is sent. Math-Shepherd's `ки` is also a Russian syllable: it is removed from
//! policy text (`руки` is sent as `ру `).
//!
//! *Example:*
//! ```yaml
//! type: prm
//! name: process
//! steps: {split: paragraphs, max_steps: 30}
//! aggregate: min
//! context: "<|im_start|>user\n{{item.question}}<|im_end|>\n<|im_start|>assistant\n"
//! ```
//!
//! *Score and failure modes:* the aggregate of the steps' scores. Repeated steps and steps past
//! `max_steps` score 0 and are not sent. Cached by content (endpoint, model, API and its
//! parameters, the full text), identical requests in flight made once. A server that fails or
//! times out is an error with its reason (`judge_http_5xx`, `judge_timeout`, ...); a reply with
//! a different number of scores than graded steps, a tag the server's tokens do not show, or a
//! distribution without both tokens (raise `top_logprobs`) is `judge_unparseable`: never a
//! guess, never a 0. Every step (span, value) is in the trace (`detail.steps`).

use crate::compile::{waits, At, Compiler, JudgeRef};
use crate::exec::BoxFuture;
use crate::judge::{StepApi, StepCall};
use crate::node::{AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::steps::reduce::{Credit, Gate, OutcomeSpec, StepAggregate, StepScore};
use crate::steps::segment::{Segmented, Segmenter, StepsSpec};
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::time::{Duration, Instant};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrmSpec {
    #[serde(default)]
    pub judge: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// `pooling` (default, vLLM `/pooling`) or `math_shepherd` (`/v1/completions` logprobs).
    #[serde(default)]
    pub api: PrmApi,
    /// The text cut into steps (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The text sent before the steps (default empty).
    #[serde(default)]
    pub context: Option<String>,
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
    /// Written after every step (default `<extra_0>`; `" ки"` for `math_shepherd`).
    #[serde(default)]
    pub step_tag: Option<String>,
    /// Written between a tag and the next step (default empty; `"\n"` for `math_shepherd`).
    #[serde(default)]
    pub join: Option<String>,
    /// Chat-template tokens removed from the policy's text (a list replaces the default).
    #[serde(default)]
    pub control_tokens: Option<Vec<String>>,
    /// `pooling`: the `task` sent (default `token_classify`; `null` leaves it out).
    #[serde(default = "default_task")]
    pub task: Option<String>,
    /// `pooling`: the column of a tag's row that is the step score (default 1).
    #[serde(default)]
    pub positive_index: Option<usize>,
    /// `math_shepherd`: the token meaning "this step is right" (default `+`).
    #[serde(default)]
    pub good_token: Option<String>,
    /// `math_shepherd`: the token meaning "this step is wrong" (default `-`).
    #[serde(default)]
    pub bad_token: Option<String>,
    /// `math_shepherd`: the log-probabilities asked for per position (default 20).
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    #[serde(default)]
    pub deadline_ms: Option<u64>,
}

/// serde's `default =` needs the field's type: a missing `task` is `token_classify`, a `null` one
/// is left out.
#[allow(clippy::unnecessary_wraps)]
fn default_task() -> Option<String> {
    Some("token_classify".into())
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PrmApi {
    #[default]
    Pooling,
    MathShepherd,
}

/// The default `control_tokens`.
pub const CONTROL_TOKENS: &[&str] = &[
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<extra_0>",
    "ки",
];

pub struct Prm {
    judge: JudgeRef,
    api: StepApi,
    input: Template,
    context: Option<Template>,
    segmenter: Segmenter,
    credit: Credit,
    gate: Option<Gate>,
    /// Written after each step; `core` is the tag without its spaces (what is removed from
    /// policy text and counted), at `core_at` chars into `tag`.
    tag: String,
    core: String,
    core_at: usize,
    join: String,
    /// Removed from policy text: the core tag first, then the control tokens.
    banned: Vec<String>,
    deadline: Option<Duration>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: PrmSpec = cx.spec(v, at)?;
    let shepherd = spec.api == PrmApi::MathShepherd;
    let misplaced: [(bool, &str); 5] = [
        (
            shepherd && spec.task != default_task() && spec.task.is_some(),
            "task",
        ),
        (shepherd && spec.positive_index.is_some(), "positive_index"),
        (!shepherd && spec.good_token.is_some(), "good_token"),
        (!shepherd && spec.bad_token.is_some(), "bad_token"),
        (!shepherd && spec.top_logprobs.is_some(), "top_logprobs"),
    ];
    for (bad, field) in misplaced {
        if bad {
            let api = if shepherd { "pooling" } else { "math_shepherd" };
            cx.err(
                at,
                Some(field),
                format!("`{field}` is for `api: {api}` only"),
            );
        }
    }
    let input = cx.input(spec.input.as_deref(), at);
    let context = match &spec.context {
        Some(t) => cx.template(t, at, "context").map(Some),
        None => Some(None),
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
    if let Some(Some(g)) = &gate {
        if let Some(p) = crate::components::combinator::each_turn::named(&g.node) {
            cx.err(
                at,
                Some("outcome"),
                format!("{p} has a `name`, and prm waits on its model, so the name would not reach `components`: name it in a `gate` around prm instead"),
            );
        }
        if g.node.waits() {
            cx.err(
                at,
                Some("outcome"),
                "the outcome waits on a judge or sandbox: put prm in a `gate` whose `if` is that outcome instead",
            );
        }
    }
    let tag = spec
        .step_tag
        .clone()
        .unwrap_or_else(|| if shepherd { " ки" } else { "<extra_0>" }.into());
    let core = tag.trim().to_string();
    let core_at = tag[..tag.len() - tag.trim_start().len()].chars().count();
    let join = spec
        .join
        .clone()
        .unwrap_or_else(|| if shepherd { "\n" } else { "" }.into());
    if core.is_empty() {
        cx.err(
            at,
            Some("step_tag"),
            "`step_tag` must not be empty or blank",
        );
    } else if let Some(b) = border(&core) {
        cx.err(
            at,
            Some("step_tag"),
            format!("`step_tag` `{core}` begins and ends with `{b}`: a step ending in `{b}` would make a second tag with it; use a tag that does not overlap itself"),
        );
    } else {
        if join.contains(core.as_str()) || touches(&join, &core) {
            cx.err(
                at,
                Some("join"),
                format!("`join` must not contain or run into the step tag `{core}`"),
            );
        }
        if let Some(t) = context.as_ref().and_then(Option::as_ref) {
            if t.literal_text().contains(core.as_str()) {
                cx.err(
                    at,
                    Some("context"),
                    format!(
                        "`context` contains the step tag `{core}`: it would be scored as a step"
                    ),
                );
            }
        }
    }
    let controls: Vec<String> = match spec.control_tokens {
        Some(c) => c,
        None => CONTROL_TOKENS.iter().map(|s| (*s).to_string()).collect(),
    };
    // A blank token would be replaced by a space forever (and would erase the text's spacing).
    if controls.iter().any(|c| c.trim().is_empty()) {
        cx.err(
            at,
            Some("control_tokens"),
            "`control_tokens` must not hold an empty or blank string",
        );
    }
    let api = if shepherd {
        StepApi::MathShepherd {
            good: spec.good_token.clone().unwrap_or_else(|| "+".into()),
            bad: spec.bad_token.clone().unwrap_or_else(|| "-".into()),
            top_logprobs: spec.top_logprobs.unwrap_or(20),
        }
    } else {
        StepApi::Pooling {
            task: spec.task.clone(),
            index: spec.positive_index.unwrap_or(1),
        }
    };
    if let StepApi::MathShepherd {
        good,
        bad,
        top_logprobs,
    } = &api
    {
        if good.trim().is_empty() || bad.trim().is_empty() || good.trim() == bad.trim() {
            cx.err(
                at,
                Some("good_token"),
                "`good_token` and `bad_token` must be two different, non-blank tokens",
            );
        }
        if *top_logprobs == 0 {
            cx.err(
                at,
                Some("top_logprobs"),
                "`top_logprobs` must be at least 1",
            );
        }
    }
    let judge = cx.judge(at, spec.judge.as_deref(), spec.model.as_deref());
    let (input, context, segmenter, credit, judge) =
        (input?, context?, segmenter?, credit?, judge?);
    let gate = match gate {
        Some(g) => Some(g?),
        None => None,
    };
    if cx.has_errors() {
        return None;
    }
    cx.gives_steps();
    let mut banned = vec![core.clone()];
    banned.extend(controls.into_iter().filter(|c| *c != core));
    Some(waits(Prm {
        judge,
        api,
        input,
        context,
        segmenter,
        credit,
        gate,
        tag,
        core,
        core_at,
        join,
        banned,
        deadline: spec.deadline_ms.map(Duration::from_millis),
    }))
}

/// The longest proper prefix of `t` that is also its suffix, if any: a tag with one could be
/// completed across a step's end, so the count of tags would no longer be the count of steps.
fn border(t: &str) -> Option<&str> {
    (1..t.len())
        .rev()
        .filter(|&n| t.is_char_boundary(n) && t.is_char_boundary(t.len() - n))
        .find(|&n| t[..n] == t[t.len() - n..])
        .map(|n| &t[..n])
}

/// Whether `join` ends with the start of `tag` or starts with its end (a step's text could
/// then complete a tag across it).
fn touches(join: &str, tag: &str) -> bool {
    (1..tag.len())
        .filter(|&n| tag.is_char_boundary(n))
        .any(|n| join.ends_with(&tag[..n]) || join.starts_with(&tag[n..]))
}

/// `text` with every occurrence of each of `banned` replaced by a space, until none is left,
/// and how many were replaced. A space rather than nothing, so that `2<|im_end|>3` does not
/// become the number `23`; repeated, so `<extra<extra_0>_0>` does not become a tag.
pub fn sanitise<'a>(text: &'a str, banned: &[impl AsRef<str>]) -> (Cow<'a, str>, usize) {
    let mut out = Cow::Borrowed(text);
    let mut n = 0;
    loop {
        let mut changed = false;
        for b in banned {
            let b = b.as_ref();
            if !b.is_empty() && out.contains(b) {
                n += out.matches(b).count();
                out = Cow::Owned(out.replace(b, " "));
                changed = true;
            }
        }
        if !changed {
            return (out, n);
        }
    }
}

/// The request text and where its tags are.
struct Request {
    text: String,
    tags: Vec<(usize, usize)>,
    /// Occurrences of tags and control tokens removed from the policy's text.
    removed: usize,
}

impl Prm {
    /// The context, then each graded step sanitised with its tag after it.
    fn request(
        &self,
        s: &Sample,
        seg: &Segmented<'_>,
        cx: &mut ScoreCtx,
    ) -> Result<Request, Outcome> {
        let removed = std::cell::Cell::new(0);
        let core = std::slice::from_ref(&self.core);
        let mut text = match &self.context {
            None => String::new(),
            Some(t) => t
                .render_with(s, &|from_policy, v| {
                    let (clean, n) = if from_policy {
                        sanitise(v, &self.banned)
                    } else {
                        sanitise(v, core)
                    };
                    removed.set(removed.get() + n);
                    clean.into_owned()
                })
                .map_err(|m| m.outcome(cx))?,
        };
        let mut chars = text.chars().count();
        let (tag_chars, join_chars) = (self.tag.chars().count(), self.join.chars().count());
        let core_chars = self.core.chars().count();
        let mut tags = Vec::new();
        for st in seg.steps.iter().filter(|st| st.graded()) {
            if !tags.is_empty() {
                text.push_str(&self.join);
                chars += join_chars;
            }
            let (clean, n) = sanitise(st.text, &self.banned);
            removed.set(removed.get() + n);
            text.push_str(&clean);
            chars += clean.chars().count();
            let a = chars + self.core_at;
            tags.push((a, a + core_chars));
            text.push_str(&self.tag);
            chars += tag_chars;
        }
        // By construction (a tag that cannot overlap itself, removed from every policy text);
        // checked, since the row's context could still end in the start of a tag.
        let found = text.matches(self.core.as_str()).count();
        if found != tags.len() {
            return Err(Outcome::error(
                "judge_config",
                format!(
                    "the request would hold {found} step tags `{}` for {} steps (the context runs into a tag?)",
                    self.core,
                    tags.len()
                ),
            ));
        }
        Ok(Request {
            text,
            tags,
            removed: removed.get(),
        })
    }

    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let started = Instant::now();
        if let Err(o) = Gate::admit(self.gate.as_ref(), s, cx, "sent") {
            return o;
        }
        let text = if self.segmenter.on_turns() {
            Cow::Borrowed("")
        } else {
            match self.input.render(s) {
                Ok(t) => t,
                Err(m) => return m.outcome(cx),
            }
        };
        let seg = self.segmenter.segment(s, &text);
        let graded = seg.steps.iter().filter(|st| st.graded()).count();
        if graded == 0 {
            let none: Vec<StepScore> = seg.steps.iter().map(|_| StepScore::ungraded()).collect();
            return self.credit.finish(&seg, &none, cx);
        }
        let req = match self.request(s, &seg, cx) {
            Ok(r) => r,
            Err(o) => return o,
        };
        let call = StepCall {
            api: self.api.clone(),
            text: req.text,
            tags: req.tags,
        };
        let r = self
            .judge
            .judge
            .step_rewards(
                &self.judge.endpoint,
                call,
                self.deadline.map(|d| started + d),
            )
            .await;
        let reply = match r {
            Ok(r) => {
                cx.usage.steps(&r);
                r
            }
            Err(f) => {
                cx.judge_failed();
                return f.outcome();
            }
        };
        if reply.values.len() != graded {
            return Outcome::error(
                "judge_unparseable",
                format!(
                    "the model gave {} step scores for {graded} graded steps",
                    reply.values.len()
                ),
            );
        }
        if let Some(k) = reply.values.iter().position(|v| !v.is_finite()) {
            return Outcome::error(
                "judge_unparseable",
                format!("step {k}'s score is not a finite number"),
            );
        }
        cx.note(|| {
            format!(
                "prm `{}` scored {graded} steps in one request (batch of {}){}{}",
                self.judge.endpoint,
                reply.batch_size,
                if reply.cached { " [cache hit]" } else { "" },
                if req.removed > 0 {
                    format!(
                        "; step tags or control tokens replaced in the policy's text: {}",
                        req.removed
                    )
                } else {
                    String::new()
                }
            )
        });
        let mut values = reply.values.into_iter();
        let scores: Vec<StepScore> = seg
            .steps
            .iter()
            .map(|st| {
                if st.graded() {
                    StepScore::of(Outcome::ok(values.next().unwrap_or(f64::NAN)))
                } else {
                    StepScore::ungraded()
                }
            })
            .collect();
        self.credit.finish(&seg, &scores, cx)
    }
}

impl AsyncComponent for Prm {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitising_replaces_until_nothing_is_left() {
        let banned = ["<extra_0>", "<|im_end|>"];
        let (t, n) = sanitise("a<extra_0>b", &banned);
        assert_eq!((t.as_ref(), n), ("a b", 1));
        // Removing the inner tag must not assemble an outer one.
        let (t, _) = sanitise("<extra<extra_0>_0>", &banned);
        assert!(!t.contains("<extra_0>"), "{t}");
        let (t, _) = sanitise("<|im_<extra_0>end|>x", &banned);
        assert!(!t.contains("<|im_end|>") && !t.contains("<extra_0>"), "{t}");
        assert!(matches!(sanitise("clean", &banned).0, Cow::Borrowed(_)));
    }

    #[test]
    fn self_overlapping_tags_are_found() {
        assert_eq!(border("<extra_0>"), None);
        assert_eq!(border("ки"), None);
        assert_eq!(border("abab"), Some("ab"));
        assert_eq!(border("aa"), Some("a"));
        assert!(touches("<ext", "<extra_0>"));
        assert!(touches("_0>\n", "<extra_0>"));
        assert!(!touches("\n", "<extra_0>"));
    }
}
