//! # state_match
//! *What it scores:* an agent's outcome by the environment's final state, not by what the agent
//! says: the state after the rollout (a database, a booking, files) against the state the task
//! expects, as τ-bench and terminal-style agents check it.
//!
//! *Spec:* `expected` (required): a template, usually `{{item.expected_state}}`; `state` (default
//! `{{sample.state}}`); `mode`: `subset` (default: every field the expected state names must
//! match; other fields may be anything), `exact` (no other fields either) or `hash` (τ-bench's
//! check: the SHA-256 of the whole state's canonical JSON, keys sorted, no whitespace, whole
//! numbers without `.0`, ignored paths removed, against `expected` given as that hex digest or
//! as a state hashed the same way; all or nothing, the trace shows both digests); `ignore`: field
//! paths left out of the comparison (`updated_at`, `bookings[].id`: `[]` means every element);
//! `tolerance` (default 0): numbers match within this absolute difference; `reward`: `all`
//! (default: 1 when everything matches, else 0) or `fraction` (the share of the expected state's
//! leaf fields that match, so partial progress counts). An expected state given as JSON text
//! (`"{\"table\": 7}"`, as verl's `ground_truth` strings are) is read as the JSON it spells.
//!
//! Lists are compared element by element, in order, and must have the same length in both modes:
//! a booking list with one extra booking is not the expected one. Numbers compare by value (`7`
//! and `7.0` match); a number never matches the string that spells it (`"7"`), and `null` matches
//! only `null`.
//!
//! *Example:*
//! ```yaml
//! type: state_match
//! expected: "{{item.expected_state}}"
//! mode: subset
//! ignore: ["bookings[].created_at"]
//! ```
//!
//! *Score and failure modes:* 1 or 0 (`all`), or a fraction in [0, 1]. The trace lists each
//! differing field with what was expected and what was found (the first 20). A rollout whose
//! state lacks an expected field scores 0 for it: that is what the agent did not do. A row with
//! no state at all, or no expected state (missing or `null`), is a `missing_field` error:
//! nobody can score it.

use crate::compile::{sync, At, Compiler, Number};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StateMatchSpec {
    /// The state the task expects (a template, usually `{{item.expected_state}}`).
    pub expected: String,
    /// The final state (default `{{sample.state}}`).
    #[serde(default)]
    pub state: Option<String>,
    /// `subset` (default), `exact` or `hash`.
    #[serde(default)]
    pub mode: StateMode,
    /// Field paths left out of the comparison; `[]` stands for every element of a list.
    #[serde(default)]
    pub ignore: Vec<String>,
    /// Numbers match within this absolute difference (default 0).
    #[serde(default)]
    pub tolerance: Option<Number>,
    /// `all` (default) or `fraction`.
    #[serde(default)]
    pub reward: StateReward,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateMode {
    #[default]
    Subset,
    Exact,
    /// τ-bench's check: the whole state's digest against the expected one.
    Hash,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateReward {
    #[default]
    All,
    Fraction,
}

pub struct StateMatch {
    expected: Template,
    state: Template,
    mode: StateMode,
    /// Each ignored path as its segments (`[]` is `"[]"`).
    ignore: Vec<Vec<String>>,
    tolerance: f64,
    reward: StateReward,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: StateMatchSpec = cx.spec(v, at)?;
    let expected = cx.template(&spec.expected, at, "expected");
    let state = cx.template(
        spec.state.as_deref().unwrap_or("{{sample.state}}"),
        at,
        "state",
    );
    let tolerance = spec.tolerance.map_or(0.0, |n| n.0);
    let mut ok = true;
    if tolerance < 0.0 {
        cx.err(
            at,
            Some("tolerance"),
            format!("`tolerance` must be ≥ 0, found {tolerance}"),
        );
        ok = false;
    }
    let mut ignore = Vec::new();
    for (i, p) in spec.ignore.iter().enumerate() {
        if let Some(segs) = path_segments(p) {
            ignore.push(segs);
        } else {
            cx.err(
                at,
                Some("ignore"),
                format!("entry {i}, `{p}`, is not a field path (`a.b`, `list[].field`)"),
            );
            ok = false;
        }
    }
    if spec.mode == StateMode::Hash && (spec.reward == StateReward::Fraction || tolerance > 0.0) {
        cx.err(
            at,
            Some("mode"),
            "`mode: hash` is all or nothing: it takes neither `reward: fraction` nor `tolerance`",
        );
        ok = false;
    }
    let (expected, state) = (expected?, state?);
    ok.then(|| {
        sync(StateMatch {
            expected,
            state,
            mode: spec.mode,
            ignore,
            tolerance,
            reward: spec.reward,
        })
    })
}

/// `a.b[].c` as `["a", "b", "[]", "c"]`; `None` for an empty segment.
fn path_segments(p: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for part in p.split('.') {
        let (name, lists) = match part.find("[]") {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty() || !lists.replace("[]", "").is_empty() {
            return None;
        }
        out.push(name.to_string());
        for _ in 0..lists.len() / 2 {
            out.push("[]".into());
        }
    }
    Some(out)
}

/// The comparison of one state: leaf fields counted and matched, and the differences found.
#[derive(Default)]
struct Diff {
    leaves: usize,
    matched: usize,
    differences: Vec<(String, String)>,
}

impl StateMatch {
    fn ignored(&self, path: &[String]) -> bool {
        self.ignore.iter().any(|p| p.as_slice() == path)
    }

    fn compare(
        &self,
        want: &Value,
        got: Option<&Value>,
        path: &mut Vec<String>,
        at: &str,
        d: &mut Diff,
    ) {
        if self.ignored(path) {
            return;
        }
        match (want, got) {
            (Value::Object(w), Some(Value::Object(g))) => {
                for (k, wv) in w {
                    path.push(k.clone());
                    self.compare(wv, g.get(k), path, &format!("{at}.{k}"), d);
                    path.pop();
                }
                if self.mode == StateMode::Exact {
                    for (k, gv) in g {
                        path.push(k.clone());
                        if !w.contains_key(k) && !self.ignored(path) {
                            d.leaves += 1;
                            d.differences.push((
                                format!("{at}.{k}"),
                                format!("not expected, found {}", short(gv)),
                            ));
                        }
                        path.pop();
                    }
                }
            }
            (Value::Array(w), Some(Value::Array(g))) => {
                if w.len() != g.len() {
                    // The length is a field of its own: a list with an extra element differs.
                    d.leaves += 1;
                    d.differences.push((
                        at.to_string(),
                        format!("expected {} elements, found {}", w.len(), g.len()),
                    ));
                }
                path.push("[]".into());
                for (i, wv) in w.iter().enumerate() {
                    self.compare(wv, g.get(i), path, &format!("{at}[{i}]"), d);
                }
                path.pop();
            }
            (Value::Object(_) | Value::Array(_), _) => {
                let n = leaf_count(want);
                d.leaves += n;
                d.differences.push((
                    at.to_string(),
                    match got {
                        None => "missing".to_string(),
                        Some(g) => format!("expected {}, found {}", kind(want), short(g)),
                    },
                ));
            }
            (w, g) => {
                d.leaves += 1;
                if g.is_some_and(|g| self.same(w, g)) {
                    d.matched += 1;
                } else {
                    d.differences.push((
                        at.to_string(),
                        match g {
                            None => format!("expected {}, missing", short(w)),
                            Some(g) => format!("expected {}, found {}", short(w), short(g)),
                        },
                    ));
                }
            }
        }
    }

    fn same(&self, w: &Value, g: &Value) -> bool {
        match (w, g) {
            (Value::Number(a), Value::Number(b)) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= self.tolerance,
                _ => a == b,
            },
            _ => w == g,
        }
    }
}

impl StateMatch {
    /// `mode: hash`: SHA-256 of the state's canonical JSON (ignored paths removed) against the
    /// expected digest, or against the expected state's digest when it is given as a state.
    fn hash_match(&self, want: &Value, got: &Value, cx: &mut ScoreCtx) -> Outcome {
        let want_digest = match want {
            Value::String(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                h.to_ascii_lowercase()
            }
            Value::String(h) => {
                return Outcome::error(
                    "missing_field",
                    format!(
                        "{}: a hash mode expected state is a SHA-256 hex digest or a state, found the text {}",
                        self.expected.source(),
                        short(&Value::String(h.clone()))
                    ),
                )
            }
            other => self.digest(other),
        };
        let got_digest = self.digest(got);
        let same = want_digest == got_digest;
        cx.note(|| {
            if same {
                format!("the final state's digest matches ({})", &got_digest[..12])
            } else {
                format!(
                    "the final state's digest {} is not the expected {}",
                    &got_digest[..12],
                    &want_digest[..12]
                )
            }
        });
        cx.detail(|| json!({"state_sha256": got_digest, "expected_sha256": want_digest}));
        Outcome::bool(same)
    }

    fn digest(&self, v: &Value) -> String {
        use sha2::{Digest as _, Sha256};
        use std::fmt::Write as _;
        let mut v = v.clone();
        for p in &self.ignore {
            remove_path(&mut v, p);
        }
        let text = crate::trajectory::canonical_json(&v);
        Sha256::digest(text.as_bytes())
            .iter()
            .fold(String::with_capacity(64), |mut out, b| {
                let _ = write!(out, "{b:02x}");
                out
            })
    }
}

/// Removes the field at `path` (`[]`: in every element of a list).
fn remove_path(v: &mut Value, path: &[String]) {
    match (path.first().map(String::as_str), v) {
        (Some("[]"), Value::Array(a)) => {
            for x in a {
                remove_path(x, &path[1..]);
            }
        }
        (Some(k), Value::Object(m)) if path.len() == 1 => {
            m.shift_remove(k);
        }
        (Some(k), Value::Object(m)) => {
            if let Some(x) = m.get_mut(k) {
                remove_path(x, &path[1..]);
            }
        }
        _ => {}
    }
}

fn leaf_count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaf_count).sum::<usize>().max(1),
        Value::Array(a) => a.iter().map(leaf_count).sum::<usize>().max(1),
        _ => 1,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        _ => "a value",
    }
}

fn short(v: &Value) -> String {
    crate::node::shorten(&v.to_string())
}

impl SyncComponent for StateMatch {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        // The expected state first: a broken dataset row is an error whatever the rollout did.
        let want = match self.expected.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        // The dataset's side, read as datasets write it: `null` (a column Hugging Face filled
        // for a row without one) is no expected state, and JSON text (verl's `ground_truth`
        // strings) is the state it spells. Compared as they are, every rollout would score 0.
        let want = match &*want {
            Value::Null => {
                return Outcome::error(
                    "missing_field",
                    format!("{}: the expected state is null", self.expected.source()),
                )
            }
            Value::String(t) => match serde_json::from_str::<Value>(t) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => std::borrow::Cow::Owned(v),
                _ => want,
            },
            _ => want,
        };
        let got = match self.state.render_value(s) {
            Ok(v) => v,
            Err(m) => return m.outcome(cx),
        };
        if self.mode == StateMode::Hash {
            return self.hash_match(&want, &got, cx);
        }
        let mut d = Diff::default();
        self.compare(&want, Some(&got), &mut Vec::new(), "state", &mut d);
        let all = d.differences.is_empty();
        let value = match self.reward {
            StateReward::All => f64::from(u8::from(all)),
            StateReward::Fraction if all => 1.0,
            StateReward::Fraction => d.matched as f64 / d.leaves.max(1) as f64,
        };
        cx.note(|| {
            if all {
                format!("the final state matches ({} fields)", d.leaves)
            } else {
                format!(
                    "{} of {} fields match; {}",
                    d.matched,
                    d.leaves,
                    d.differences
                        .iter()
                        .take(3)
                        .map(|(p, w)| format!("{p}: {w}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        });
        cx.detail(|| {
            json!({"differences": d.differences.iter().take(20)
                .map(|(p, w)| json!({"field": p, "difference": w})).collect::<Vec<_>>()})
        });
        Outcome::ok(value)
    }
}
