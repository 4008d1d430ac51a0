//! # python
//! *What it scores:* OpenAI's python grader, accepted verbatim: `source` defines
//! `grade(sample, item) -> float`, run inside Referee's sandbox (no network, no host files, hard
//! limits), once per sample. `sample` holds `output_text` (and `output_json` when the text is
//! JSON; `output_tools`, `choices`, and for agents the trajectory's `messages` and the
//! environment's final `state`, when the row has them); `item` is the dataset row.
//!
//! *Spec:* `source` (the grader's Python code), `pass_threshold` (optional: the trace says
//! whether it passed; the value is the grade itself), `image_tag` (accepted for compatibility
//! and ignored: the sandbox runs the machine's Python with the standard library), `limits`
//! (per call, as in `code_exec`: `time` CPU seconds, default 10; `memory_mb`, default 1024).
//!
//! *Example:*
//! ```yaml
//! type: python
//! name: exact
//! source: |
//!   def grade(sample, item) -> float:
//!       return 1.0 if sample["output_text"].strip() == item["answer"] else 0.0
//! ```
//!
//! *Score and failure modes:* the float `grade` returns. The grader is the spec author's code,
//! so anything it does wrong is an error, never a 0: an exception, a non-number or a
//! non-finite result (`python_error`), running out of time or memory (`python_timeout`,
//! `python_memory`); a source with a syntax error fails every sample the same way.
//!
//! *Running the model's code:* a grader that `exec`s it hands it its own process: the result
//! channel and the item in memory. Call `referee_run(code, stdin="", timeout=10)` instead (a
//! global in the grader's module): the code runs in a fresh interpreter, a process of its own
//! holding only its stdin, stdout and stderr; everything it starts is killed before the call
//! returns `{exit_code, signal, timed_out, output_limit, stdout, stderr}`. The grader's result
//! travels as before, where the code cannot write (`fixtures/exploits/code.python.yaml`, G1
//! and G2).

use crate::compile::{waits, At, Compiler};
use crate::exec::{BoxFuture, Job, Limits, Run, RunEnd, Sandbox};
use crate::node::{shorten, AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PythonSpec {
    /// Python source defining `grade(sample, item) -> float`.
    pub source: String,
    /// Accepted for OpenAI compatibility; the machine's Python runs the grader.
    #[serde(default)]
    pub image_tag: Option<String>,
    /// Pass/fail line shown in the trace.
    #[serde(default)]
    pub pass_threshold: Option<f64>,
    #[serde(default)]
    pub limits: Option<PythonLimits>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PythonLimits {
    /// CPU seconds per call (default 10).
    #[serde(default)]
    pub time: Option<f64>,
    #[serde(default)]
    pub memory_mb: Option<u64>,
}

pub struct Python {
    source: Arc<str>,
    pass_threshold: Option<f64>,
    limits: Limits,
    sandbox: Option<Arc<dyn Sandbox>>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: PythonSpec = cx.spec(v, at)?;
    if !spec.source.contains("def grade") {
        cx.err(
            at,
            Some("source"),
            "the source must define `grade(sample, item)`",
        );
        return None;
    }
    if spec.source.len() > 256 << 10 {
        cx.err(at, Some("source"), "the source is over 256 KiB");
        return None;
    }
    let l = spec.limits.unwrap_or_default();
    let time = l.time.unwrap_or(10.0);
    if !(0.01..=600.0).contains(&time) {
        cx.err(
            at,
            Some("limits"),
            "`limits.time` must be between 0.01 and 600 seconds",
        );
        return None;
    }
    Some(waits(Python {
        source: spec.source.into(),
        pass_threshold: spec.pass_threshold,
        limits: Limits {
            cpu_ms: (time * 1000.0) as u64,
            wall_ms: (time * 2000.0) as u64 + 1000,
            memory_bytes: l.memory_mb.unwrap_or(1024).clamp(16, 65536) << 20,
            output_bytes: 1 << 20,
            processes: 16,
        },
        sandbox: cx.env().sandbox.clone(),
    }))
}

/// What sandboxed Python code is given of a sample (OpenAI's `sample` argument): `output_text`,
/// and where the row has them `output_json`, `output_tools`, `choices`, `messages`, `state`.
pub fn sample_json(s: &Sample) -> Value {
    let mut sample = json!({"output_text": s.output_text});
    if let Some(j) = s.output_json() {
        sample["output_json"] = j.clone();
    }
    if let Some(t) = &s.output_tools {
        sample["output_tools"] = t.clone();
    }
    if let Some(c) = &s.choices {
        sample["choices"] = c.clone();
    }
    if let Some(m) = &s.messages {
        sample["messages"] = m.clone();
    }
    if let Some(st) = &s.state {
        sample["state"] = st.clone();
    }
    sample
}

impl Python {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let Some(sandbox) = &self.sandbox else {
            return Outcome::error(
                "sandbox_unavailable",
                "the python grader runs in a sandbox and none was given",
            );
        };
        let sample = sample_json(s);
        let job = Job {
            language: "python".into(),
            source: self.source.clone(),
            runs: vec![Run::Grade {
                sample: sample.to_string().into(),
                item: s.item.to_string().into(),
            }],
            limits: self.limits.clone(),
        };
        let out = match sandbox.execute(job).await {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(_) => return Outcome::error("sandbox_error", "the sandbox returned no run"),
            Err(e) => return e.outcome(),
        };
        match &out.end {
            RunEnd::Timeout => {
                return Outcome::error("python_timeout", "the grader ran out of time")
            }
            RunEnd::MemoryLimit => {
                return Outcome::error("python_memory", "the grader ran out of memory")
            }
            RunEnd::SetupFailed(e) => return Outcome::error("sandbox_error", e.clone()),
            _ => {}
        }
        let result: Option<Value> = out
            .result
            .as_ref()
            .and_then(|r| serde_json::from_slice(r).ok());
        let Some(Value::Object(m)) = result else {
            let why = out
                .stderr_tail
                .trim()
                .lines()
                .last()
                .unwrap_or("")
                .to_string();
            return Outcome::error(
                "python_error",
                format!(
                    "the grader ended without a result ({:?}) {}",
                    out.end,
                    shorten(&why)
                ),
            );
        };
        if let Some(e) = m.get("compile_error").or_else(|| m.get("error")) {
            let e = e.as_str().unwrap_or_default();
            return Outcome::error(
                "python_error",
                shorten(e.trim().lines().last().unwrap_or(e)),
            );
        }
        match m.get("value").and_then(Value::as_f64) {
            Some(v) if v.is_finite() => {
                cx.note(|| match self.pass_threshold {
                    Some(t) if v >= t => format!("grade {v} (passed, threshold {t})"),
                    Some(t) => format!("grade {v} (failed, threshold {t})"),
                    None => format!("grade {v}"),
                });
                Outcome::ok(v)
            }
            _ => Outcome::error(
                "python_error",
                "grade returned a value that is not a finite number",
            ),
        }
    }
}

impl AsyncComponent for Python {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }
}
