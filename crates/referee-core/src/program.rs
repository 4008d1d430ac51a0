//! The compiled program and per-sample results.

use crate::compile::{kind_of, CompileError, CompileErrors, Compiler};
use crate::exec::Env;
use crate::group::GroupStage;
use crate::node::Node;
use crate::result::ScoreResult;
use crate::sample::Sample;
use serde_json::Value;
use std::sync::Arc;

/// Top-level keys of a spec file besides the grader node itself.
const FILE_FIELDS: &[&str] = &["grader", "description", "judges", "judge_cache", "group"];

/// A compiled spec: immutable, `Send + Sync`, shared behind `Arc` by every scorer.
// The flags are independent facts about the tree (waits, grouped, judged, dense), not states.
#[allow(clippy::struct_excessive_bools)]
pub struct Program {
    pub(crate) root: Node,
    /// Some node waits on a sandbox or judge: batches are scored as futures driven together.
    pub(crate) waits: bool,
    /// Some node's value depends on the other samples of its group (scored in two passes).
    pub(crate) grouped: bool,
    /// Every named component, in spec order, so every result has the same keys.
    pub(crate) names: Vec<Arc<str>>,
    /// Some node calls a judge: results carry `usage`.
    pub(crate) judged: bool,
    /// Some node gives per-step credit: results carry `step_rewards`.
    pub(crate) dense: bool,
    /// The `group:` section (advantages, flat groups, diagnostics); `None` when off.
    pub(crate) group: Option<GroupStage>,
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
        let dense = cx.dense();
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
                    dense,
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

    /// Whether results carry per-step credit (`step_rewards`).
    pub fn dense(&self) -> bool {
        self.dense
    }

    /// Scores one sample on its own (no group stage): a convenience over [`crate::score`].
    pub fn score(&self, s: &Sample) -> ScoreResult {
        crate::score::one(self, s, false)
    }

    /// Scores one sample and builds the full explanation tree.
    pub fn explain(&self, s: &Sample) -> ScoreResult {
        crate::score::one(self, s, true)
    }

    /// Whether scoring waits on I/O (a sandbox, a judge). Such programs are scored with many
    /// samples in flight rather than one per core.
    pub fn waits(&self) -> bool {
        self.waits
    }

    /// Whether some node's value depends on the rest of the sample's group (difficulty weights):
    /// such programs score a group at a time, in two passes ([`crate::score`]).
    pub fn grouped(&self) -> bool {
        self.grouped
    }

    /// The `group:` section, when the spec has one.
    pub fn group_stage(&self) -> Option<&GroupStage> {
        self.group.as_ref()
    }
}

fn collect_names(n: &Node, out: &mut Vec<Arc<str>>) {
    if let Some(name) = &n.meta.name {
        out.push(name.clone());
    }
    if let Some(spread) = &n.meta.spread {
        out.push(spread.clone());
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
