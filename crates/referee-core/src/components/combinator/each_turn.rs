//! # each_turn
//! *What it scores:* every selected turn of a trajectory with a child grader, then an aggregate:
//! each assistant turn's format, each tool call's arguments, a judge on each step. This is how
//! rewards that are decomposed per call (TIER, ToolRLA) or per step are written.
//!
//! *Spec:* `grader` (the child, scored once per turn); `role`: `assistant` (default), `tool`,
//! `user`, `system` or `any`; `tool`: only the turns of this tool (assistant turns that call it;
//! with `role: tool`, the results of calls to it, never an orphan tool turn that answers no
//! call); `index`: positions among the selected turns (`[0]`, `[-1]`: the last); `aggregate`:
//! `mean` (default), `min`, `max`, `sum`, `all` / `any` (1 when every / some turn holds, i.e.
//! scores ≥ `threshold`, default 1), `count` (turns that hold) or `fraction` (their share);
//! `if_none` (default 0): the value when no turn is selected.
//!
//! For the child, a turn is a sample of its own: `sample.output_text` is the turn's text (an
//! assistant's reasoning put back as its `<think>` section), `sample.output_tools` its tool
//! calls, `sample.messages` the conversation up to and including the turn; `item` and
//! `sample.state` (the final state) are the row's.
//!
//! *Example:*
//! ```yaml
//! type: each_turn
//! role: assistant
//! aggregate: fraction
//! grader: {type: format, style: r1}
//! ```
//!
//! *Score and failure modes:* the aggregate. A turn on which the child does not apply is left
//! out; a turn on which it failed (without `on_error`) fails the node, naming the turn. No turn
//! selected scores `if_none`: a policy that never called the tool did not make its calls well,
//! so the default is 0, not a vacuous 1. Each turn's value is in the trace (`detail.turns`),
//! with its recorded tokens and latency when the trainer gave them.
//! Names inside `grader` are refused: they would name one value per turn.

use super::{display_path, one};
use crate::compile::{sync, At, Child, Compiler};
use crate::node::{AsyncComponent, Cost, Imp, Node, ScoreCtx, SyncComponent};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::{message_output, Sample};
use crate::trajectory::Turn;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EachTurnSpec {
    /// The grader applied to each selected turn.
    pub grader: Child,
    /// `assistant` (default), `tool`, `user`, `system` or `any`.
    #[serde(default)]
    pub role: Option<String>,
    /// Only the turns of this tool: assistant turns calling it, or (`role: tool`) its results.
    #[serde(default)]
    pub tool: Option<String>,
    /// Positions among the selected turns; negative counts from the end.
    #[serde(default)]
    pub index: Option<Vec<i64>>,
    /// `mean` (default), `min`, `max`, `sum`, `all`, `any`, `count` or `fraction`.
    #[serde(default)]
    pub aggregate: Aggregate,
    /// A turn holds when its value is at least this (default 1): for all/any/count/fraction.
    #[serde(default = "one")]
    pub threshold: f64,
    /// The value when no turn is selected (default 0).
    #[serde(default)]
    pub if_none: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Aggregate {
    #[default]
    Mean,
    Min,
    Max,
    Sum,
    All,
    Any,
    Count,
    Fraction,
}

const ROLES: [&str; 5] = ["assistant", "tool", "user", "system", "any"];

pub struct EachTurn {
    child: Node,
    role: Option<String>,
    tool: Option<String>,
    index: Option<Vec<i64>>,
    aggregate: Aggregate,
    threshold: f64,
    if_none: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<Imp> {
    let spec: EachTurnSpec = cx.spec(v, at)?;
    let mut ok = true;
    let role = spec.role.unwrap_or_else(|| "assistant".into());
    if !ROLES.contains(&role.as_str()) {
        cx.err(
            at,
            Some("role"),
            format!("`role` must be one of {}, found `{role}`", ROLES.join(", ")),
        );
        ok = false;
    }
    if spec.tool.is_some() && !matches!(role.as_str(), "assistant" | "tool") {
        cx.err(
            at,
            Some("tool"),
            "`tool` selects assistant turns calling the tool or (`role: tool`) its results; \
             it does not apply to other roles",
        );
        ok = false;
    }
    if !spec.threshold.is_finite() || spec.if_none.is_some_and(|x| !x.is_finite()) {
        cx.err(at, None, "`threshold` and `if_none` must be finite numbers");
        ok = false;
    }
    let child = cx.child(&spec.grader, at, "grader")?;
    if let Some(p) = named(&child) {
        cx.err(
            at,
            Some("grader"),
            format!(
                "{p} has a `name`: inside each_turn it would name one value per turn; \
                 name the each_turn node instead"
            ),
        );
        ok = false;
    }
    if !ok {
        return None;
    }
    let c = EachTurn {
        role: (role != "any").then_some(role),
        tool: spec.tool,
        index: spec.index,
        aggregate: spec.aggregate,
        threshold: spec.threshold,
        if_none: spec.if_none.unwrap_or(0.0),
        child,
    };
    Some(if c.child.waits() {
        Imp::Async(Box::new(c))
    } else {
        sync(c)
    })
}

/// The path of a named node in `n`'s subtree, as far as it can be seen (sync nodes).
pub(crate) fn named(n: &Node) -> Option<String> {
    if n.meta.name.is_some() {
        return Some(display_path(&n.meta.path).to_string());
    }
    match &n.imp {
        Imp::Sync(c) => c.children().into_iter().find_map(named),
        Imp::Async(_) => None,
    }
}

/// What one turn scored.
struct TurnScore {
    turn: usize,
    role: String,
    tokens: Option<u64>,
    latency_ms: Option<f64>,
    out: Outcome,
    note: Option<String>,
}

impl EachTurn {
    /// The selected turns, in order.
    fn select<'t>(&self, s: &'t Sample) -> Vec<&'t Turn> {
        let t = s.trajectory();
        let picked: Vec<&Turn> = t
            .turns
            .iter()
            .filter(|u| self.role.as_deref().is_none_or(|r| u.is(r)))
            .filter(|u| match &self.tool {
                None => true,
                Some(name) if u.is("tool") => u.answers.is_some_and(|c| t.calls[c].name == *name),
                Some(name) => t.calls[u.calls.clone()].iter().any(|c| c.name == *name),
            })
            .collect();
        match &self.index {
            None => picked,
            Some(ix) => ix
                .iter()
                .filter_map(|&i| {
                    let n = picked.len() as i64;
                    let j = if i < 0 { n + i } else { i };
                    (0..n).contains(&j).then(|| picked[j as usize])
                })
                .collect(),
        }
    }

    fn aggregate(&self, scores: &[TurnScore], cx: &mut ScoreCtx) -> Outcome {
        cx.detail(|| {
            json!({"turns": scores.iter().map(|t| {
                let mut o = json!({"turn": t.turn, "role": t.role, "status": t.out.status.as_str(),
                    "value": t.out.usable().then_some(t.out.value)});
                if let Some(f) = t.out.failure() {
                    o["reason"] = json!(format!("{}: {}", f.reason, f.message));
                }
                if let Some(n) = &t.note {
                    o["note"] = json!(n);
                }
                if let Some(k) = t.tokens {
                    o["tokens"] = json!(k);
                }
                if let Some(l) = t.latency_ms {
                    o["latency_ms"] = json!(l);
                }
                o
            }).collect::<Vec<_>>()})
        });
        if let Some(t) = scores.iter().find(|t| t.out.is_error() && !t.out.usable()) {
            let f = t.out.failure().expect("an error has a failure");
            return Outcome::error(
                f.reason.clone(),
                format!("turn {} ({}): {}", t.turn, self.child.meta.kind, f.message),
            );
        }
        let mut st = StatusAcc::default();
        let values: Vec<f64> = scores
            .iter()
            .filter(|t| t.out.usable())
            .inspect(|t| st.add(&t.out))
            .map(|t| t.out.value)
            .collect();
        if scores.is_empty() {
            cx.note(|| format!("no turn selected: {}", self.if_none));
            return Outcome::ok(self.if_none);
        }
        if values.is_empty() {
            cx.note(|| "the grader applies to none of the selected turns".into());
            return Outcome::not_applicable();
        }
        let n = values.len() as f64;
        let holds = values
            .iter()
            .filter(|v| **v >= self.threshold - 1e-9)
            .count();
        let value = match self.aggregate {
            Aggregate::Mean => values.iter().sum::<f64>() / n,
            Aggregate::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
            Aggregate::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Aggregate::Sum => values.iter().sum(),
            Aggregate::All => f64::from(u8::from(holds == values.len())),
            Aggregate::Any => f64::from(u8::from(holds > 0)),
            Aggregate::Count => holds as f64,
            Aggregate::Fraction => holds as f64 / n,
        };
        cx.note(|| {
            format!(
                "{} turns scored, {holds} at ≥ {}; {:?} {value}",
                values.len(),
                self.threshold,
                self.aggregate
            )
            .to_lowercase()
        });
        st.finish(value)
    }
}

/// A turn as a sample of its own (see the module doc).
fn turn_sample(s: &Sample, turn: &Turn) -> Sample {
    let msgs = s.messages.as_ref().and_then(Value::as_array);
    let (text, tools) = match msgs.and_then(|m| m.get(turn.index)) {
        Some(m) => match message_output(m) {
            Some(o) => (o.text, o.tools),
            None => (turn.text.clone(), None),
        },
        None => (s.output_text.clone(), s.output_tools.clone()),
    };
    let mut ts = Sample::new(text, s.item.clone());
    ts.id.clone_from(&s.id);
    ts.output_tools = tools;
    ts.messages = msgs.map(|m| Value::Array(m[..=turn.index.min(m.len() - 1)].to_vec()));
    ts.state.clone_from(&s.state);
    ts
}

fn scored(turn: &Turn, out: Outcome, tcx: &ScoreCtx) -> TurnScore {
    TurnScore {
        turn: turn.index,
        role: turn.role.clone(),
        tokens: turn.tokens,
        latency_ms: turn.latency_ms,
        out,
        note: tcx.root.as_ref().and_then(|t| t.note.clone()),
    }
}

impl SyncComponent for EachTurn {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let scores: Vec<TurnScore> = self
            .select(s)
            .into_iter()
            .map(|turn| {
                let ts = turn_sample(s, turn);
                let mut tcx = ScoreCtx::new(cx.explaining());
                let out = self.child.eval(&ts, &mut tcx);
                scored(turn, out, &tcx)
            })
            .collect();
        self.aggregate(&scores, cx)
    }
}

impl AsyncComponent for EachTurn {
    fn score<'a>(
        &'a self,
        s: &'a Sample,
        cx: &'a mut ScoreCtx,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>> {
        Box::pin(async move {
            let turns = self.select(s);
            let samples: Vec<Sample> = turns.iter().map(|t| turn_sample(s, t)).collect();
            let explain = cx.explaining();
            let runs = samples
                .iter()
                .map(|ts| crate::score::drive::nested(&self.child, ts, explain));
            let done = futures::future::join_all(runs).await;
            let scores: Vec<TurnScore> = turns
                .iter()
                .zip(done)
                .map(|(turn, (out, tcx))| {
                    cx.usage.add(&tcx.usage);
                    scored(turn, out, &tcx)
                })
                .collect();
            self.aggregate(&scores, cx)
        })
    }

    fn cost(&self) -> Option<Cost> {
        Some(self.child.meta.cost)
    }
}
