//! The compiled tree: nodes, the component contract, and the per-sample context (DESIGN.md §4).

use crate::outcome::{Outcome, Status};
use crate::sample::Sample;
use serde::Serialize;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A pure rule verifier, or an aggregator whose children are all sync. Runs on the rayon pool.
pub trait SyncComponent: Send + Sync {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome;
    /// The child nodes, in spec order (used at compile time to list component names).
    fn children(&self) -> Vec<&Node> {
        Vec::new()
    }
    /// When this node's value is a plain weighted sum of its children's (every child applying),
    /// the weights: what trainers that sum rewards themselves are given (`crate::parts`).
    fn linear_weights(&self) -> Option<Vec<f64>> {
        None
    }
    /// Whether the node reports a spread (`ScoreCtx::report_spread`), the `<name>.std`
    /// component beside its own.
    fn spread(&self) -> bool {
        false
    }
}

/// A component that waits (sandboxes, judges): it returns a future, which the I/O crates
/// complete from their own threads or runtimes.
pub trait AsyncComponent: Send + Sync {
    fn score<'a>(
        &'a self,
        s: &'a Sample,
        cx: &'a mut ScoreCtx,
    ) -> Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;
    /// Whether the value depends on the sample's group (scored again in a group's second pass,
    /// from what it kept); every other waiting node's first-pass outcome is replayed.
    fn group_aware(&self) -> bool {
        false
    }
    /// The lowest and highest value the component can score, when it is bounded (before
    /// `on_error`, which the node adds).
    fn bounds(&self) -> Option<(f64, f64)> {
        None
    }
    /// What it costs, when its type alone does not say (a node that waits on a child: the
    /// child's cost).
    fn cost(&self) -> Option<Cost> {
        None
    }
    /// Whether the node reports a spread (`ScoreCtx::report_spread`), the `<name>.std`
    /// component beside its own.
    fn spread(&self) -> bool {
        false
    }
}

/// What a waiting node produced for one sample, kept so every later evaluation of the tree
/// (the next round, a group's second pass) replays it instead of asking the sandbox or judge
/// again, which may not answer the same way twice.
pub(crate) struct Done {
    pub(crate) out: Outcome,
    note: Option<String>,
    detail: Option<serde_json::Value>,
    /// The judge usage spent on this node, reported again with the result.
    usage: crate::judge::Usage,
    /// Group-aware nodes are scored again in a group's second pass, so they are not replayed
    /// across passes.
    pub(crate) group_aware: bool,
    /// The per-step credit the node gave (step components), replayed with its outcome.
    steps: Vec<crate::steps::StepReward>,
    /// The spread it reported (`samples:`), replayed as its `<name>.std` component.
    spread: Option<f64>,
    /// What a group-aware node kept in a group's first pass, and the tests it passed.
    kept: Option<(Arc<dyn std::any::Any + Send + Sync>, Vec<bool>)>,
}

/// What scoring costs, in the order children are started where the value cannot change:
/// rules before sandboxes before judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cost {
    Rule,
    Sandbox,
    Judge,
}

impl Cost {
    pub fn as_str(self) -> &'static str {
        match self {
            Cost::Rule => "rule",
            Cost::Sandbox => "sandbox",
            Cost::Judge => "judge",
        }
    }
}

pub enum Imp {
    Sync(Box<dyn SyncComponent>),
    Async(Box<dyn AsyncComponent>),
}

/// What every node carries besides its behaviour: where it is in the spec, its `type`, and the
/// node-level fields `name` and `on_error`.
#[derive(Debug, Clone)]
pub struct Meta {
    pub kind: &'static str,
    pub path: Arc<str>,
    pub name: Option<Arc<str>>,
    pub on_error: Option<f64>,
    /// The most expensive thing this node or a node below it does.
    pub cost: Cost,
    /// `<name>.std`: the component that carries the node's spread, for a named node that
    /// reports one (several samples of a judge, an ensemble).
    pub spread: Option<Arc<str>>,
}

pub struct Node {
    pub meta: Meta,
    pub imp: Imp,
}

impl Node {
    pub fn is_sync(&self) -> bool {
        matches!(self.imp, Imp::Sync(_))
    }

    /// Whether this node or any node below it waits on I/O.
    pub fn waits(&self) -> bool {
        self.meta.cost > Cost::Rule
    }

    /// The node below this one (or this one) at `path`.
    pub(crate) fn find(&self, path: &str) -> Option<&Node> {
        if *self.meta.path == *path {
            return Some(self);
        }
        match &self.imp {
            Imp::Sync(c) => c
                .children()
                .into_iter()
                .filter(|n| path.starts_with(&*n.meta.path))
                .find_map(|n| n.find(path)),
            Imp::Async(_) => None,
        }
    }

    /// The lowest and highest value this node can take, when known: a combinator that already
    /// holds a value no pending child can beat leaves them unstarted (`min`, `max`).
    pub fn bounds(&self) -> Option<(f64, f64)> {
        let (lo, hi) = match &self.imp {
            Imp::Async(c) => c.bounds()?,
            Imp::Sync(_) => return None,
        };
        Some(match self.meta.on_error {
            Some(v) => (lo.min(v), hi.max(v)),
            None => (lo, hi),
        })
    }

    /// Evaluates this node for one round of a sample (DESIGN.md §4): a sync component runs; a
    /// waiting node replays what it produced earlier, or, the first time, is put on the
    /// round's list of nodes to start (`ScoreCtx::pending`) and is *unresolved* this round.
    /// Any node above an unresolved one is unresolved too, unless a combinator's resolved
    /// children already decide its value; the scorer starts the pending nodes together and
    /// evaluates again until nothing is pending. Applies `on_error`, records the named
    /// component, and (only when explaining) builds this node's trace.
    pub fn eval(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        if cx.explain {
            cx.stack.push(Trace::open(&self.meta));
        }
        let mark = cx.pending.len();
        let steps_mark = cx.steps.len();
        let mut out = match &self.imp {
            Imp::Sync(c) => c.score(s, cx),
            Imp::Async(_) => {
                if let Some(d) = cx.done.get(&self.meta.path).cloned() {
                    if let Some(t) = cx.stack.last_mut() {
                        t.note.clone_from(&d.note);
                        t.detail.clone_from(&d.detail);
                    }
                    cx.usage.add(&d.usage);
                    cx.steps.extend(d.steps.iter().cloned());
                    cx.spread = d.spread;
                    if let (true, Some((data, passes))) = (cx.collecting, &d.kept) {
                        cx.memo.insert(self.meta.path.clone(), data.clone());
                        cx.record.push((self.meta.path.clone(), passes.clone()));
                    }
                    d.out.clone()
                } else {
                    cx.pending.push((self.meta.path.clone(), self.meta.cost));
                    Outcome::not_applicable()
                }
            }
        };
        let unresolved = cx.pending.len() > mark;
        if unresolved {
            // A placeholder: this round's value is not the node's value, and no parent uses it.
            out = Outcome::not_applicable();
        } else {
            if matches!(out.status, Status::Ok) && !out.value.is_finite() {
                out = Outcome::error(
                    "non_finite",
                    format!("{} computed {}", self.meta.kind, out.value),
                );
            }
            if let (Status::Error(_), Some(v)) = (&out.status, self.meta.on_error) {
                out.value = v;
            }
            if let Some(name) = &self.meta.name {
                cx.components.push((name.clone(), component_value(&out)));
            }
            let spread = cx.spread.take();
            if let Some(name) = &self.meta.spread {
                cx.components.push((
                    name.clone(),
                    spread.filter(|v| v.is_finite() && out.usable()),
                ));
            }
            // Step credit a component gave is labelled with the node that gave it.
            for r in &mut cx.steps[steps_mark..] {
                if r.component.is_empty() {
                    r.component = self
                        .meta
                        .name
                        .clone()
                        .unwrap_or_else(|| self.meta.kind.into());
                }
            }
        }
        if cx.explain {
            let mut t = cx.stack.pop().expect("trace stack balanced");
            if unresolved {
                t.status = "skipped";
            } else {
                t.close(&out);
            }
            match cx.stack.last_mut() {
                Some(parent) => parent.children.push(t),
                None => cx.root = Some(t),
            }
        }
        out
    }
}

/// A waiting node run on its own for one sample: the future the scorer drives, with a context
/// of its own (so many run at once), returning what later rounds replay.
pub(crate) async fn run_waiting(node: &Node, s: &Sample, seed: &Seed) -> Done {
    let Imp::Async(c) = &node.imp else {
        unreachable!("only waiting nodes are started")
    };
    let mut cx = ScoreCtx::new(seed.explain);
    cx.group.clone_from(&seed.group);
    cx.collecting = seed.collecting;
    if let Some(m) = &seed.memo {
        if let Some(d) = m.get(&node.meta.path) {
            cx.memo.insert(node.meta.path.clone(), d.clone());
        }
    }
    // Notes and detail land on this trace, which the evaluation that replays the node copies.
    cx.stack.push(Trace::open(&node.meta));
    let out = c.score(s, &mut cx).await;
    let t = cx.stack.pop().expect("the node's trace");
    let kept = cx
        .record
        .pop()
        .and_then(|(path, passes)| cx.memo.remove(&path).map(|d| (d, passes)));
    Done {
        out,
        note: t.note,
        detail: t.detail,
        usage: cx.usage,
        group_aware: c.group_aware(),
        kept,
        steps: cx.steps,
        spread: cx.spread,
    }
}

/// What every evaluation and every waiting node of one sample's pass share.
#[derive(Clone, Default)]
pub(crate) struct Seed {
    pub(crate) explain: bool,
    pub(crate) group: Option<Arc<GroupStats>>,
    /// A group's first pass (group-aware nodes keep what they saw).
    pub(crate) collecting: bool,
    /// In a group's second pass: what the sample's nodes kept in the first.
    pub(crate) memo: Option<Arc<Memo>>,
}

pub(crate) type Memo = std::collections::HashMap<Arc<str>, Arc<dyn std::any::Any + Send + Sync>>;

impl Seed {
    pub(crate) fn ctx(&self, done: std::collections::HashMap<Arc<str>, Arc<Done>>) -> ScoreCtx {
        let mut cx = ScoreCtx::new(self.explain);
        cx.group.clone_from(&self.group);
        cx.collecting = self.collecting;
        cx.done = done;
        cx
    }
}

fn component_value(o: &Outcome) -> Option<f64> {
    o.usable().then_some(o.value)
}

/// Per-sample mutable state. Created fresh for each sample; the program itself is immutable.
#[derive(Default)]
pub struct ScoreCtx {
    explain: bool,
    pub(crate) components: Vec<(Arc<str>, Option<f64>)>,
    stack: Vec<Trace>,
    pub(crate) root: Option<Trace>,
    /// Group scoring (a group's second pass): what the first pass learned about the group.
    pub(crate) group: Option<Arc<GroupStats>>,
    /// Group scoring: what each node kept from the first pass, so the second does not redo it.
    pub(crate) memo: Memo,
    /// Group scoring, first pass: per node, which of its tests this sample passed.
    pub(crate) record: Vec<(Arc<str>, Vec<bool>)>,
    /// Group scoring: this is the first pass (waiting nodes keep their outcomes).
    pub(crate) collecting: bool,
    /// Judge calls, cache hits and tokens spent on this sample.
    pub(crate) usage: crate::judge::Usage,
    /// What this sample's waiting nodes produced in earlier rounds, by path.
    pub(crate) done: std::collections::HashMap<Arc<str>, Arc<Done>>,
    /// The waiting nodes this round reached that have not run yet, with their cost.
    pub(crate) pending: Vec<(Arc<str>, Cost)>,
    /// Per-step credit from the step components scored so far (`step_rewards`).
    pub(crate) steps: Vec<crate::steps::StepReward>,
    /// The spread the node being scored reported, taken by its evaluation.
    pub(crate) spread: Option<f64>,
    /// Which of a grader's several samples this context scores (`samples:`).
    pub(crate) draw: Option<Draw>,
}

/// One of `n` samples of a model grader: the seed or choice its judge calls use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Draw {
    pub index: u32,
    pub n: u32,
    /// The `n` samples are the choices of one call (`n` in the request), not `n` calls.
    pub choices: bool,
}

/// What one group's first pass found: per node path, the fraction of the group's samples that
/// passed each of its tests (only where every sample that ran it had the same tests).
#[derive(Debug, Default)]
pub struct GroupStats {
    pub rates: std::collections::HashMap<Arc<str>, Vec<f64>>,
    pub size: usize,
}

impl GroupStats {
    /// Pass rates from the first pass's records of every sample in the group.
    pub(crate) fn from_records(records: &[Vec<(Arc<str>, Vec<bool>)>]) -> GroupStats {
        let mut sums: std::collections::HashMap<Arc<str>, Option<(Vec<f64>, usize)>> =
            std::collections::HashMap::new();
        for rec in records {
            for (path, passes) in rec {
                let e = sums
                    .entry(path.clone())
                    .or_insert_with(|| Some((vec![0.0; passes.len()], 0)));
                match e {
                    Some((acc, n)) if acc.len() == passes.len() => {
                        for (a, p) in acc.iter_mut().zip(passes) {
                            *a += f64::from(u8::from(*p));
                        }
                        *n += 1;
                    }
                    _ => *e = None,
                }
            }
        }
        GroupStats {
            rates: sums
                .into_iter()
                .filter_map(|(k, v)| {
                    v.map(|(acc, n)| (k, acc.into_iter().map(|a| a / n as f64).collect()))
                })
                .collect(),
            size: records.len(),
        }
    }
}

impl ScoreCtx {
    pub fn new(explain: bool) -> Self {
        ScoreCtx {
            explain,
            ..ScoreCtx::default()
        }
    }

    pub fn explaining(&self) -> bool {
        self.explain
    }

    /// The group's first-pass statistics, when scoring a group's second pass.
    pub fn group(&self) -> Option<&GroupStats> {
        self.group.as_deref()
    }

    /// Whether this is a group's first pass (group-aware nodes record what they saw).
    pub fn collecting(&self) -> bool {
        self.collecting
    }

    /// What a node kept from the group's first pass.
    pub fn memo(&self, path: &str) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.memo.get(path).cloned()
    }

    /// Keeps something for the group's second pass (and records the tests it passed).
    pub fn keep(
        &mut self,
        path: &Arc<str>,
        data: Arc<dyn std::any::Any + Send + Sync>,
        passes: Vec<bool>,
    ) {
        self.memo.insert(path.clone(), data);
        self.record.push((path.clone(), passes));
    }

    /// Gives per-step credit (`step_rewards`): `(start, end, turn, value)` per step, char
    /// offsets as [`crate::steps::StepReward`] says, `on_output` when they are spans of the
    /// sample's output text; labelled with the node when it finishes.
    pub fn step_rewards(
        &mut self,
        on_output: bool,
        steps: impl IntoIterator<Item = (usize, usize, Option<usize>, f64)>,
    ) {
        let unlabelled: Arc<str> = Arc::from("");
        self.steps
            .extend(
                steps
                    .into_iter()
                    .map(|(start, end, turn, value)| crate::steps::StepReward {
                        start,
                        end,
                        value,
                        component: unlabelled.clone(),
                        turn,
                        token_start: None,
                        token_end: None,
                        on_output,
                    }),
            );
    }

    /// Which of a grader's samples this context scores, when it takes several.
    pub fn draw(&self) -> Option<Draw> {
        self.draw
    }

    /// The spread of the values the node being scored reduced (the `<name>.std` component).
    pub fn report_spread(&mut self, std: f64) {
        self.spread = Some(std);
    }

    /// A context for one sample of the node being scored: same sample and group, its own
    /// usage, steps and trace (taken back by [`ScoreCtx::join`]).
    pub(crate) fn fork(&self, draw: Draw) -> ScoreCtx {
        let mut cx = ScoreCtx::new(self.explain);
        cx.group.clone_from(&self.group);
        cx.draw = Some(draw);
        if let Some(t) = self.stack.last() {
            let mut t = t.clone();
            t.note = None;
            t.detail = None;
            t.children.clear();
            cx.stack.push(t);
        }
        cx
    }

    /// Takes back a fork's usage; returns its step credit, note and detail.
    pub(crate) fn join(
        &mut self,
        mut child: ScoreCtx,
    ) -> (
        Vec<crate::steps::StepReward>,
        Option<String>,
        Option<serde_json::Value>,
    ) {
        self.usage.add(&child.usage);
        let (note, detail) = child
            .stack
            .pop()
            .map_or((None, None), |t| (t.note, t.detail));
        (std::mem::take(&mut child.steps), note, detail)
    }

    /// Counts a judge reply (a call, or a cache hit) against this sample.
    pub fn judge_reply(&mut self, r: &crate::judge::JudgeReply) {
        self.usage.reply(r);
    }

    /// Counts a reward-model reply against this sample.
    pub fn reward_reply(&mut self, r: &crate::judge::RewardReply) {
        self.usage.reward(r);
    }

    /// Counts a judge call that failed.
    pub fn judge_failed(&mut self) {
        self.usage.judge_calls += 1;
        self.usage.judge_errors += 1;
    }

    /// The number of waiting nodes pending so far: a combinator takes it before scoring its
    /// children, to tell which of them are unresolved and to withdraw their requests.
    pub(crate) fn mark(&self) -> usize {
        self.pending.len()
    }

    /// A combinator's resolved children decide its value: the waiting nodes its children asked
    /// for since `mark` are not started, and (when explaining) their traces say why.
    pub(crate) fn decided(&mut self, mark: usize, why: impl FnOnce() -> String) {
        if self.pending.len() == mark {
            return;
        }
        self.pending.truncate(mark);
        if self.explain {
            let why = why();
            if let Some(t) = self.stack.last_mut() {
                for c in &mut t.children {
                    mark_skipped(c, &why);
                }
            }
        }
    }

    /// Cost order for a combinator whose cheap children may decide it: of the waiting nodes
    /// asked for since `mark`, only the cheapest kind starts this round.
    pub(crate) fn cheapest_first(&mut self, mark: usize) {
        if let Some(min) = self.pending[mark..].iter().map(|p| p.1).min() {
            let mut i = 0;
            self.pending.retain(|p| {
                i += 1;
                i <= mark || p.1 == min
            });
        }
    }

    /// Attaches structured detail (per-test verdicts, ...) to the node being scored; only built
    /// when explaining.
    pub fn detail(&mut self, f: impl FnOnce() -> serde_json::Value) {
        if self.explain {
            if let Some(t) = self.stack.last_mut() {
                t.detail = Some(f());
            }
        }
    }

    /// Adds one key to the node's detail (made an object when there is none yet), so a part
    /// of a grader that ran first (a rubric writer) can add its account to whatever the rest
    /// wrote. Only built when explaining.
    pub fn detail_insert(&mut self, key: &str, f: impl FnOnce() -> serde_json::Value) {
        if self.explain {
            if let Some(t) = self.stack.last_mut() {
                let d = t
                    .detail
                    .get_or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
                if let serde_json::Value::Object(m) = d {
                    m.insert(key.to_string(), f());
                }
            }
        }
    }

    /// Attaches a human reason to the node being scored. The closure only runs when explaining,
    /// so the fast path builds no strings.
    pub fn note(&mut self, f: impl FnOnce() -> String) {
        if self.explain {
            if let Some(t) = self.stack.last_mut() {
                let n = f();
                match &mut t.note {
                    Some(existing) => {
                        existing.push_str("; ");
                        existing.push_str(&n);
                    }
                    None => t.note = Some(n),
                }
            }
        }
    }
}

/// Notes why a skipped subtree did not run, on its skipped nodes that say nothing yet.
fn mark_skipped(t: &mut Trace, why: &str) {
    if t.status == "skipped" {
        if t.note.is_none() {
            t.note = Some(why.to_string());
        }
        for c in &mut t.children {
            mark_skipped(c, why);
        }
    }
}

/// The first 80 characters of a text, for notes.
pub fn shorten(t: &str) -> String {
    match t.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

/// The explanation tree: per node, its value, status and a short human reason.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Trace {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Arc<str>>,
    pub path: Arc<str>,
    pub value: Option<f64>,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Trace>,
}

impl Trace {
    fn open(m: &Meta) -> Self {
        Trace {
            kind: m.kind,
            name: m.name.clone(),
            path: m.path.clone(),
            value: None,
            status: "ok",
            reason: None,
            note: None,
            detail: None,
            children: Vec::new(),
        }
    }

    fn close(&mut self, o: &Outcome) {
        self.value = component_value(o);
        match &o.status {
            Status::Ok => {}
            Status::NotApplicable => self.status = "not_applicable",
            Status::Error(f) => {
                self.status = "error";
                self.reason = Some(format!("{}: {}", f.reason, f.message));
            }
        }
    }
}
