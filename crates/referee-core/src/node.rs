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
}

/// A waiting node's first-pass outcome, replayed in a group's second pass so the two passes
/// agree (a sandbox or judge is not asked twice, and may not answer the same way twice).
struct Replayed {
    out: Outcome,
    note: Option<String>,
    detail: Option<serde_json::Value>,
    /// The judge usage the first pass spent on this node, reported again with the result.
    usage: crate::judge::Usage,
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
        match &self.imp {
            Imp::Async(_) => true,
            Imp::Sync(c) => c.children().iter().any(|n| n.waits()),
        }
    }

    /// Scores this node: runs the component, applies `on_error`, records the named component
    /// value, and (only when explaining) builds this node's trace.
    pub fn eval(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        if cx.explain {
            cx.stack.push(Trace::open(&self.meta));
        }
        let mut out = match &self.imp {
            Imp::Sync(c) => c.score(s, cx),
            // The scorer's thread waits here; a program with waiting nodes is scored on a pool
            // sized for waiting (Program::score_batch), so the executors see many runs at once.
            Imp::Async(c) => {
                let replay = (cx.group.is_some() && !c.group_aware())
                    .then(|| cx.memo.get(&self.meta.path).cloned())
                    .flatten()
                    .and_then(|m| m.downcast::<Replayed>().ok());
                if let Some(r) = replay {
                    if let Some(t) = cx.stack.last_mut() {
                        t.note.clone_from(&r.note);
                        t.detail.clone_from(&r.detail);
                    }
                    cx.usage.add(&r.usage);
                    r.out.clone()
                } else {
                    let before = cx.usage;
                    let out = futures::executor::block_on(c.score(s, cx));
                    if cx.collecting && !c.group_aware() {
                        let (note, detail) = cx
                            .stack
                            .last()
                            .map(|t| (t.note.clone(), t.detail.clone()))
                            .unwrap_or_default();
                        let kept = Replayed {
                            out: out.clone(),
                            note,
                            detail,
                            usage: cx.usage.since(&before),
                        };
                        cx.memo.insert(self.meta.path.clone(), Arc::new(kept));
                    }
                    out
                }
            }
        };
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
        if cx.explain {
            let mut t = cx.stack.pop().expect("trace stack balanced");
            t.close(&out);
            match cx.stack.last_mut() {
                Some(parent) => parent.children.push(t),
                None => cx.root = Some(t),
            }
        }
        out
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
    /// Group scoring (`Program::score_group`): what the first pass learned about the group.
    pub(crate) group: Option<Arc<GroupStats>>,
    /// Group scoring: what each node kept from the first pass, so the second does not redo it.
    pub(crate) memo: std::collections::HashMap<Arc<str>, Arc<dyn std::any::Any + Send + Sync>>,
    /// Group scoring, first pass: per node, which of its tests this sample passed.
    pub(crate) record: Vec<(Arc<str>, Vec<bool>)>,
    /// Group scoring: this is the first pass (waiting nodes keep their outcomes).
    pub(crate) collecting: bool,
    /// Judge calls, cache hits and tokens spent on this sample.
    pub(crate) usage: crate::judge::Usage,
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

    /// Attaches structured detail (per-test verdicts, ...) to the node being scored; only built
    /// when explaining.
    pub fn detail(&mut self, f: impl FnOnce() -> serde_json::Value) {
        if self.explain {
            if let Some(t) = self.stack.last_mut() {
                t.detail = Some(f());
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
