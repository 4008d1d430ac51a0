//! The compiled program and per-sample results.

use crate::compile::{kind_of, CompileError, CompileErrors, Compiler};
use crate::exec::Env;
use crate::group::{GroupReport, GroupStage};
use crate::node::{Node, ScoreCtx};
use crate::outcome::Status;
use crate::result::ScoreResult;
use crate::sample::Sample;
use rayon::prelude::*;
use serde_json::Value;
use std::sync::Arc;

/// Top-level keys of a spec file besides the grader node itself.
const FILE_FIELDS: &[&str] = &["grader", "description", "judges", "judge_cache", "group"];

/// A compiled spec: immutable, `Send + Sync`, shared behind `Arc` by every scorer.
pub struct Program {
    root: Node,
    /// Some node waits on a sandbox or judge: batches run on a pool sized for waiting.
    waits: bool,
    /// Some node's value depends on the other samples of its group (scored in two passes).
    grouped: bool,
    /// Every named component, in spec order, so every result has the same keys.
    names: Vec<Arc<str>>,
    /// Some node calls a judge: results carry `usage`.
    judged: bool,
    /// The `group:` section (advantages, flat groups, diagnostics); `None` when off.
    group: Option<GroupStage>,
    /// Item fields to digest while parsing rows ([`crate::input::InputMapping::for_program`]).
    item_digests: Vec<Arc<str>>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("root", &self.root.meta.kind)
            .field("components", &self.names)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// Compiles a spec given as text: JSON, or YAML (a superset of JSON for our purposes).
    pub fn compile_str(src: &str) -> Result<Program, CompileErrors> {
        Program::compile_str_with(src, Env::default())
    }

    /// Compiles a spec given as text, with executors for the graders that run code or call
    /// judges.
    pub fn compile_str_with(src: &str, env: Env) -> Result<Program, CompileErrors> {
        let value = parse_spec_text(src)?;
        Program::compile_with(&value, env)
    }

    /// Compiles a spec file's JSON: either one grader node, or `{grader: node, description}`.
    pub fn compile(spec: &Value) -> Result<Program, CompileErrors> {
        Program::compile_with(spec, Env::default())
    }

    /// [`Program::compile`] with executors.
    pub fn compile_with(spec: &Value, env: Env) -> Result<Program, CompileErrors> {
        let mut cx = Compiler::with_env(env);
        let mut group_section = None;
        let (node_value, path) = match spec {
            Value::Object(m) if !m.contains_key("type") && m.contains_key("grader") => {
                cx.setup_judges(m.get("judges"), m.get("judge_cache"));
                for (k, v) in m {
                    if !FILE_FIELDS.contains(&k.as_str()) {
                        cx.error(
                            format!("/{}", crate::compile::escape(k)),
                            None,
                            format!(
                                "unknown top-level field `{k}`{}; expected one of `grader`, `description`, `judges`, `judge_cache`, `group`",
                                crate::compile::did_you_mean(k, FILE_FIELDS)
                            ),
                        );
                    } else if k == "description" && !v.is_string() {
                        cx.error(
                            "/description",
                            None,
                            format!("expected a string, found {}", kind_of(v)),
                        );
                    }
                }
                group_section = m.get("group");
                (&m["grader"], "/grader")
            }
            other => {
                cx.setup_judges(None, None);
                (other, "")
            }
        };
        let root = cx.node(node_value, path);
        let group = match (group_section, &root) {
            (Some(v), Some(r)) => {
                let mut names = Vec::new();
                collect_names(r, &mut names);
                GroupStage::compile(v, &names, &mut cx)
            }
            _ => None,
        };
        let cx_grouped = cx.grouped();
        let judged = cx.judged();
        let item_digests = cx.item_digests().to_vec();
        let errors = cx.into_errors();
        match root {
            Some(root) if errors.is_empty() => {
                let mut names = Vec::new();
                collect_names(&root, &mut names);
                let waits = root.waits();
                Ok(Program {
                    root,
                    waits,
                    grouped: cx_grouped,
                    names,
                    judged,
                    group,
                    item_digests,
                })
            }
            _ => {
                let mut errors = errors;
                if errors.is_empty() {
                    errors.push(CompileError {
                        path: path.to_string(),
                        node_type: None,
                        message: "spec did not compile".into(),
                    });
                }
                Err(CompileErrors(errors))
            }
        }
    }

    /// The component names in spec order: the keys of every result's `components`.
    pub fn component_names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// The item fields this program reads faster with a digest made while parsing.
    pub fn item_digest_fields(&self) -> &[Arc<str>] {
        &self.item_digests
    }

    /// Whether some node calls a judge, so every result carries `usage`.
    pub fn judged(&self) -> bool {
        self.judged
    }

    pub fn score(&self, s: &Sample) -> ScoreResult {
        self.run(s, false)
    }

    /// Scores and builds the full explanation tree.
    pub fn explain(&self, s: &Sample) -> ScoreResult {
        self.run(s, true)
    }

    /// Whether scoring waits on I/O (a sandbox, a judge). Such programs are scored with many
    /// samples in flight rather than one per core.
    pub fn waits(&self) -> bool {
        self.waits
    }

    /// Whether some node's value depends on the rest of the sample's group (difficulty weights):
    /// such programs score a group at a time ([`Program::score_group`]).
    pub fn grouped(&self) -> bool {
        self.grouped
    }

    /// Scores the samples of one group (GRPO rollouts of one prompt) together, results in input
    /// order. A program whose nodes do not look at the group scores each on its own. Otherwise
    /// there are two passes: the first runs every sample and records what each group-aware node
    /// saw; the second scores each sample again with the group's statistics, from what the
    /// first pass kept (no test runs twice).
    /// With a `group:` section, the group stage then runs on the group (its diagnostics are
    /// dropped; [`Program::score_batch_report`] returns them).
    pub fn score_group(&self, samples: &[&Sample], explain: bool) -> Vec<ScoreResult> {
        let mut rs = self.score_group_unstaged(samples, explain);
        if let Some(g) = &self.group {
            let refs: Vec<Option<&Sample>> = samples.iter().map(|s| Some(*s)).collect();
            g.apply(&mut rs, &[(0..samples.len()).collect()], &self.names, &refs);
        }
        rs
    }

    /// The `group:` section, when the spec has one.
    pub fn group_stage(&self) -> Option<&GroupStage> {
        self.group.as_ref()
    }

    /// Runs the group stage (if any) on results already scored: `groups` are indices into
    /// `results` (see [`group_indices`]). For shells that gather groups themselves.
    /// `samples[i]` is the sample `results[i]` was scored from (`None` for input that never
    /// became a sample); the stage reads them only for `majority_vote`.
    pub fn apply_group_stage(
        &self,
        results: &mut [ScoreResult],
        groups: &[Vec<usize>],
        samples: &[Option<&Sample>],
    ) -> Option<GroupReport> {
        self.group
            .as_ref()
            .map(|g| g.apply(results, groups, &self.names, samples))
    }

    /// [`Program::score_group`] without the group stage: the rewards of one group, scored
    /// together when some node needs the group.
    pub fn score_group_unstaged(&self, samples: &[&Sample], explain: bool) -> Vec<ScoreResult> {
        if !self.grouped {
            return self.par_map(samples.len(), |i| self.run(samples[i], explain));
        }
        // Explaining here too, so the notes of replayed nodes reach the second pass's trace.
        let (records, memos): (Vec<_>, Vec<_>) = self
            .par_map(samples.len(), |i| {
                let mut cx = ScoreCtx::new(explain);
                cx.collecting = true;
                self.run_with(samples[i], &mut cx);
                (cx.record, cx.memo)
            })
            .into_iter()
            .unzip();
        let stats = Arc::new(crate::node::GroupStats::from_records(&records));
        self.par_map(samples.len(), |i| {
            let mut cx = ScoreCtx::new(explain);
            cx.group = Some(stats.clone());
            cx.memo.clone_from(&memos[i]);
            self.run_with(samples[i], &mut cx)
        })
    }

    /// Scores many samples in parallel, results in input order: on the rayon pool for pure rule
    /// specs, on a pool of waiting threads (`REFEREE_IN_FLIGHT`, default 64) otherwise. A grouped
    /// program scores each group (by `Sample::group`) together.
    pub fn score_batch(&self, samples: &[Sample], explain: bool) -> Vec<ScoreResult> {
        self.score_batch_report(samples, explain).0
    }

    /// Rows as a shell received them, each mapped to a sample or already an error result: the
    /// samples are scored in one batch, and every row gets `(its sample's id, its result)` in
    /// input order, so a bad row is an error result in its place, never a dropped one.
    pub fn score_rows(
        &self,
        rows: Vec<Result<Sample, Box<ScoreResult>>>,
        explain: bool,
    ) -> Vec<(Option<Value>, ScoreResult)> {
        let mut out: Vec<Option<(Option<Value>, ScoreResult)>> =
            (0..rows.len()).map(|_| None).collect();
        let mut ok_idx = Vec::new();
        let mut ok = Vec::new();
        for (i, r) in rows.into_iter().enumerate() {
            match r {
                Ok(s) => {
                    ok_idx.push(i);
                    ok.push(s);
                }
                Err(e) => out[i] = Some((None, *e)),
            }
        }
        let scored = self.score_batch(&ok, explain);
        for ((i, s), r) in ok_idx.into_iter().zip(ok).zip(scored) {
            out[i] = Some((s.id, r));
        }
        out.into_iter()
            .map(|o| o.expect("every row has a result"))
            .collect()
    }

    /// [`Program::score_batch`], with the group stage's diagnostics for the batch (`None` when
    /// the spec has no `group:` section).
    pub fn score_batch_report(
        &self,
        samples: &[Sample],
        explain: bool,
    ) -> (Vec<ScoreResult>, Option<GroupReport>) {
        if !self.grouped && self.group.is_none() {
            return (
                self.par_map(samples.len(), |i| self.run(&samples[i], explain)),
                None,
            );
        }
        let groups = group_indices(samples.iter().map(|s| s.group.as_deref()).enumerate());
        let mut out = if self.grouped {
            let mut out: Vec<Option<ScoreResult>> = vec![None; samples.len()];
            for idx in &groups {
                let members: Vec<&Sample> = idx.iter().map(|&i| &samples[i]).collect();
                for (r, &i) in self
                    .score_group_unstaged(&members, explain)
                    .into_iter()
                    .zip(idx)
                {
                    out[i] = Some(r);
                }
            }
            out.into_iter()
                .map(|r| r.expect("every sample scored"))
                .collect()
        } else {
            self.par_map(samples.len(), |i| self.run(&samples[i], explain))
        };
        let refs: Vec<Option<&Sample>> = samples.iter().map(Some).collect();
        let report = self.apply_group_stage(&mut out, &groups, &refs);
        (out, report)
    }

    /// `f(0..n)` in parallel, in order: one task per item on the waiting pool when the program
    /// waits, on the rayon pool otherwise.
    fn par_map<T: Send>(&self, n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
        if self.waits {
            waiting_pool().install(|| (0..n).into_par_iter().with_max_len(1).map(&f).collect())
        } else {
            (0..n).into_par_iter().map(&f).collect()
        }
    }

    fn run(&self, s: &Sample, explain: bool) -> ScoreResult {
        if self.grouped {
            return self.score_group_unstaged(&[s], explain).remove(0);
        }
        self.run_with(s, &mut ScoreCtx::new(explain))
    }

    fn run_with(&self, s: &Sample, cx: &mut ScoreCtx) -> ScoreResult {
        let out = self.root.eval(s, cx);
        let reward = out.usable().then_some(out.value);
        let status = match out.status {
            Status::Ok => Status::Ok,
            Status::NotApplicable => Status::NotApplicable,
            Status::Error(f) => Status::Error(f),
        };
        // Fixed key order and set: nodes skipped by a gate still appear, as null.
        let mut components: Vec<(Arc<str>, Option<f64>)> =
            self.names.iter().map(|n| (n.clone(), None)).collect();
        for (name, v) in std::mem::take(&mut cx.components) {
            if let Some(slot) = components.iter_mut().find(|(n, _)| *n == name) {
                slot.1 = v;
            }
        }
        ScoreResult {
            reward,
            status,
            components,
            trace: cx.root.take(),
            usage: self.judged.then_some(cx.usage),
            group: None,
        }
    }
}

/// The indices of the items of each group, groups in order of first appearance; an item with no
/// group is a group of its own. Takes `(index, group)` pairs.
pub fn group_indices<'a>(
    items: impl IntoIterator<Item = (usize, Option<&'a str>)>,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, g) in items {
        match g {
            Some(g) => {
                let k = *index.entry(g).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[k].push(i);
            }
            None => groups.push(vec![i]),
        }
    }
    groups
}

/// Samples in flight for programs that wait: their threads mostly sleep on a sandbox or judge.
pub fn in_flight() -> usize {
    std::env::var("REFEREE_IN_FLIGHT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
        .clamp(1, 4096)
}

/// The pool programs that wait are scored on (shells use it for their own batching).
pub fn waiting_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(in_flight())
            .thread_name(|i| format!("referee-wait-{i}"))
            .build()
            .expect("thread pool")
    })
}

fn collect_names(n: &Node, out: &mut Vec<Arc<str>>) {
    if let Some(name) = &n.meta.name {
        out.push(name.clone());
    }
    if let crate::node::Imp::Sync(c) = &n.imp {
        for child in c.children() {
            collect_names(child, out);
        }
    }
}

/// Parses spec text. JSON is tried first so JSON error messages stay precise for JSON files.
pub fn parse_spec_text(src: &str) -> Result<Value, CompileErrors> {
    let trimmed = src.trim_start();
    if trimmed.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<Value>(src) {
            return Ok(v);
        }
    }
    serde_yaml_ng::from_str::<Value>(src).map_err(|e| {
        CompileErrors(vec![CompileError {
            path: String::new(),
            node_type: None,
            message: format!("spec is neither valid JSON nor valid YAML: {e}"),
        }])
    })
}
