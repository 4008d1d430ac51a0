//! # code_exec
//! *What it scores:* the code in a completion, run in the sandbox against the item's unit tests:
//! the fraction passed (or all-pass, per-test weights, or weights from the GRPO group's pass rates). Every test runs in its own
//! isolated process (own PID, mount, IPC and UTS namespaces, no network, no capabilities,
//! cgroup and rlimit limits, seccomp), and every verdict is computed outside the sandbox:
//! expected outputs never enter it, return values are compared structurally by Referee, and
//! an early exit, a swallowed exception or a test that never ran is a failure.
//!
//! *Spec:*
//! - `input` (template, default `{{sample.output_text}}`): the completion holding the code.
//! - `extract`: `auto` (default: with an entry point, the last fenced block, tagged with the
//!   language or untagged, that defines it, later usage-only blocks left out; without one, the
//!   last block that is a whole program; see `solution.rs` for the rule and why),
//!   `last_block`, `first_block`, or `none` (the input is the code).
//! - `prefix` (template): code run before the solution, as its own code (never joined to it as
//!   text), e.g. `{{item.prompt}}` for HumanEval, whose prompt holds the imports and helpers
//!   the answer uses. Default: for HumanEval-shaped rows (a `check(candidate)` test, Python)
//!   whose `item.prompt` is text defining the entry point, that prompt; otherwise none.
//!   `prefix: ""` turns it off.
//! - `language`: `python` (default), `cpp` or `c` (the sandbox's `lang` table: a compiled
//!   language is compiled once per sample, in the sandbox, and runs stdin/stdout tests); may be
//!   a template such as `{{item.language}}`.
//! - `tests` (template, required): the tests. Shapes read: stdin/stdout lists
//!   `[{input, output}]`; APPS/TACO `{inputs, outputs, fn_name?}` (also as a JSON string);
//!   CodeContests `{input: [..], output: [..]}`; call tests `[{args, expected}]`;
//!   LiveCodeBench `[{input, output, testtype: stdin|functional}]`; HumanEval test code with
//!   `def check(candidate)`; MBPP assert lists. A test object may carry a `weight`.
//! - `format`: `auto` (default: by shape), `stdio`, `call` or `assert`.
//! - `entry_point` (template): the function (or `Solution` method) call and HumanEval tests use;
//!   optional when the tests name it (`fn_name`).
//! - `setup` (template): code run before assert tests (MBPP `test_setup_code`).
//! - `reward`: `fraction` (default, over all tests), `all_pass`, `weighted` (per-test weights
//!   from `weights`, a template giving one number per test, or from the tests' `weight` fields),
//!   or `difficulty` (each test weighted 1 − the share of the sample's GRPO group that passes
//!   it: tests every rollout passes earn nothing, so hard-coding the public examples does not
//!   pay; the group is scored together, in two passes that run each test once; a sample with
//!   no group falls back to `fraction`).
//! - `compare`: `mode` `lines` (default: trailing spaces and trailing blank lines ignored),
//!   `tokens` or `exact`; `float_tolerance` (numbers within it, absolute or relative; off by
//!   default for stdout, 1e-9 relative for returned floats); `case_sensitive` (default true).
//! - `limits`: per test, `time` (CPU seconds, default 2), `wall` (seconds, default
//!   2·time + 1), `memory_mb` (256), `output_kb` (4096), `processes` (32).
//!
//! *Example:*
//! ```yaml
//! type: code_exec
//! name: tests
//! language: python
//! tests: "{{item.tests}}"
//! entry_point: "{{item.entry_point}}"
//! reward: fraction
//! limits: {time: 2, memory_mb: 256}
//! ```
//!
//! *Score and failure modes:* passed/total (or 1/0 for `all_pass`, or the passed weight share).
//! The trace lists every test's verdict (`passed`, `wrong_answer`, `runtime_error`, `timeout`,
//! `memory_limit`, `output_limit`, `compile_error`) with the first differing line or the error.
//! What the policy got wrong scores 0 with status ok: no code block, code that does not
//! compile, crashes, limits. What nobody can score is an error, never a 0: malformed or missing
//! tests (`bad_tests`), a language the sandbox does not run (`unsupported_language`), no
//! sandbox on this machine (`sandbox_unavailable`) or a sandbox failure (`sandbox_error`).

use super::solution::{self, code_blocks, tag_matches};
use super::testcases::{self, Comparator, CompareMode, Expect, Format, TestCase};
use crate::compile::{waits, At, Compiler};
use crate::exec::{BoxFuture, Job, JobFailure, Limits, RunEnd, RunOutput, Sandbox};
use crate::node::{shorten, AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;

/// Code longer than this is not run (OpenAI's python grader caps source at 256 kB too).
const MAX_CODE_BYTES: usize = 256 << 10;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeExecSpec {
    /// The completion holding the code (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub extract: Extract,
    /// `python` (default), `cpp` or `c`, or a template.
    #[serde(default)]
    pub language: Option<String>,
    /// The tests (template), e.g. `{{item.tests}}`.
    pub tests: String,
    #[serde(default)]
    pub format: Format,
    /// Function or `Solution` method name for call and HumanEval tests (template).
    #[serde(default)]
    pub entry_point: Option<String>,
    /// Code run before assert tests (template).
    #[serde(default)]
    pub setup: Option<String>,
    /// Code run before the solution, as its own code (template); default: a HumanEval row's
    /// prompt when it defines the entry point.
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub reward: Reward,
    /// Per-test weights for `reward: weighted` (template giving a list of numbers).
    #[serde(default)]
    pub weights: Option<String>,
    #[serde(default)]
    pub compare: CompareSpec,
    #[serde(default)]
    pub limits: LimitsSpec,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Extract {
    /// The block that holds the solution (see `solution.rs`).
    #[default]
    Auto,
    LastBlock,
    FirstBlock,
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reward {
    /// Passed / total, over every test.
    #[default]
    Fraction,
    /// 1 only when every test passes.
    AllPass,
    /// Weight of the passed tests / total weight.
    Weighted,
    /// Tests weighted by how hard the sample's group found them: weight 1 − (the share of the
    /// group's rollouts that pass the test). Tests every rollout passes earn nothing, so
    /// memorising the public examples does not pay; a group of one falls back to `fraction`.
    Difficulty,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareSpec {
    #[serde(default)]
    pub mode: CompareMode,
    #[serde(default)]
    pub float_tolerance: Option<f64>,
    #[serde(default)]
    pub case_sensitive: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsSpec {
    /// CPU seconds per test (default 2).
    #[serde(default)]
    pub time: Option<f64>,
    /// Wall-clock seconds per test (default 2·time + 1).
    #[serde(default)]
    pub wall: Option<f64>,
    #[serde(default)]
    pub memory_mb: Option<u64>,
    #[serde(default)]
    pub output_kb: Option<u64>,
    #[serde(default)]
    pub processes: Option<u32>,
}

/// The defaults of a sandboxed grader's `limits` (a grader that runs heavier code, like a
/// measured verifier, starts from more).
#[derive(Debug, Clone, Copy)]
pub struct LimitDefaults {
    pub time: f64,
    pub memory_mb: u64,
    pub output_kb: u64,
}

impl LimitDefaults {
    pub const CODE_EXEC: LimitDefaults = LimitDefaults {
        time: 2.0,
        memory_mb: 256,
        output_kb: 4096,
    };
}

impl LimitsSpec {
    /// The limits, each checked against its range (every bad one reported); the wall clock
    /// defaults to 2·time + 1 seconds.
    pub fn compile(&self, cx: &mut Compiler, at: &At, d: LimitDefaults) -> Option<Limits> {
        let time = self.time.unwrap_or(d.time);
        let mut ok = true;
        for (field, x, lo, hi) in [
            ("time", Some(time), 0.01, 600.0),
            ("wall", self.wall, 0.01, 1800.0),
            ("memory_mb", self.memory_mb.map(|m| m as f64), 8.0, 65536.0),
            (
                "output_kb",
                self.output_kb.map(|m| m as f64),
                1.0,
                1_048_576.0,
            ),
            ("processes", self.processes.map(f64::from), 1.0, 4096.0),
        ] {
            if let Some(x) = x {
                if !(lo..=hi).contains(&x) {
                    cx.err(
                        at,
                        Some("limits"),
                        format!("`limits.{field}` must be between {lo} and {hi}, found {x}"),
                    );
                    ok = false;
                }
            }
        }
        ok.then(|| Limits {
            cpu_ms: (time * 1000.0) as u64,
            wall_ms: (self.wall.unwrap_or(2.0 * time + 1.0) * 1000.0) as u64,
            memory_bytes: self.memory_mb.unwrap_or(d.memory_mb) << 20,
            output_bytes: self.output_kb.unwrap_or(d.output_kb) << 10,
            processes: self.processes.unwrap_or(32),
        })
    }
}

pub struct CodeExec {
    input: Template,
    extract: Extract,
    language: Template,
    tests: Template,
    format: Format,
    entry_point: Option<Template>,
    setup: Option<Template>,
    prefix: Option<Template>,
    reward: Reward,
    weights: Option<Template>,
    compare: Comparator,
    limits: Limits,
    sandbox: Option<Arc<dyn Sandbox>>,
    /// The sandbox's languages, asked once (a template language is checked per sample).
    languages: Vec<String>,
    /// This node's path: the key of what it keeps between a group's two passes.
    path: Arc<str>,
}

/// Per-test verdicts: the verdict, why, CPU ms, wall ms.
type Verdicts = Vec<(Verdict, Option<String>, f64, f64)>;

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: CodeExecSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let language = cx.template(spec.language.as_deref().unwrap_or("python"), at, "language");
    let tests = cx.template(&spec.tests, at, "tests");
    let entry_point = opt_template(cx, spec.entry_point.as_deref(), at, "entry_point");
    let setup = opt_template(cx, spec.setup.as_deref(), at, "setup");
    let prefix = opt_template(cx, spec.prefix.as_deref(), at, "prefix");
    let weights = opt_template(cx, spec.weights.as_deref(), at, "weights");
    let sandbox = cx.env().sandbox.clone();
    let languages = sandbox
        .as_ref()
        .map(|sb| sb.languages())
        .unwrap_or_default();
    if let (Some(l), Some(_)) = (&language, &sandbox) {
        if l.is_literal() && !languages.iter().any(|x| x == l.source()) {
            cx.err(
                at,
                Some("language"),
                format!(
                    "the sandbox runs {}, not `{}`",
                    languages.join(", "),
                    l.source()
                ),
            );
        }
    }
    if spec.reward != Reward::Weighted && spec.weights.is_some() {
        cx.err(
            at,
            Some("weights"),
            "`weights` is only read with `reward: weighted`",
        );
    }
    let limits = spec.limits.compile(cx, at, LimitDefaults::CODE_EXEC);
    let mut ok = limits.is_some();
    if let Some(t) = spec.compare.float_tolerance {
        if !(0.0..1.0).contains(&t) {
            cx.err(
                at,
                Some("compare"),
                "`compare.float_tolerance` must be in [0, 1)",
            );
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    let limits = limits?;
    if spec.reward == Reward::Difficulty {
        cx.needs_group();
    }
    Some(waits(CodeExec {
        input: input?,
        extract: spec.extract,
        language: language?,
        tests: tests?,
        format: spec.format,
        entry_point: entry_point?,
        setup: setup?,
        prefix: prefix?,
        reward: spec.reward,
        weights: weights?,
        compare: Comparator {
            mode: spec.compare.mode,
            float_tolerance: spec.compare.float_tolerance,
            case_sensitive: spec.compare.case_sensitive.unwrap_or(true),
        },
        limits,
        sandbox,
        languages,
        path: at.path.as_str().into(),
    }))
}

/// `Some(None)` when the field is absent, `None` on a compile error.
#[allow(clippy::option_option)]
fn opt_template(
    cx: &mut Compiler,
    src: Option<&str>,
    at: &At,
    field: &str,
) -> Option<Option<Template>> {
    match src {
        None => Some(None),
        Some(s) => cx.template(s, at, field).map(Some),
    }
}

/// Renders an optional item field; a field missing from this item is simply absent.
fn optional(t: Option<&Template>, s: &Sample) -> Option<String> {
    let v = t?.render(s).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// The per-test verdict the trace shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    WrongAnswer,
    RuntimeError,
    Timeout,
    MemoryLimit,
    OutputLimit,
    CompileError,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::WrongAnswer => "wrong_answer",
            Verdict::RuntimeError => "runtime_error",
            Verdict::Timeout => "timeout",
            Verdict::MemoryLimit => "memory_limit",
            Verdict::OutputLimit => "output_limit",
            Verdict::CompileError => "compile_error",
        }
    }
}

/// Judges one run against its test; `Err` (reason, message) when nobody can know the verdict:
/// the sandbox failed, or the dataset's test code is broken.
pub fn judge(
    out: &RunOutput,
    expect: &Expect,
    cmp: &Comparator,
) -> Result<(Verdict, Option<String>), (&'static str, String)> {
    let result: Option<Value> = out
        .result
        .as_ref()
        .map(|r| serde_json::from_slice(r).unwrap_or(Value::Null));
    if let Some(Value::Object(m)) = &result {
        if let Some(e) = m.get("compile_error") {
            return Ok((Verdict::CompileError, Some(shorten(&value_str(e)))));
        }
    }
    let stderr = || {
        let t = out.stderr_tail.trim();
        (!t.is_empty()).then(|| last_line(t))
    };
    match &out.end {
        RunEnd::SetupFailed(e) => return Err(("sandbox_error", e.clone())),
        RunEnd::Timeout => return Ok((Verdict::Timeout, None)),
        RunEnd::MemoryLimit => return Ok((Verdict::MemoryLimit, None)),
        RunEnd::OutputLimit => return Ok((Verdict::OutputLimit, None)),
        RunEnd::Signaled(sig) => {
            return Ok((
                Verdict::RuntimeError,
                Some(format!("killed by signal {sig}")),
            ))
        }
        RunEnd::Exited(code) if *code != 0 => {
            let verdict = if out.stderr_tail.contains("MemoryError") {
                Verdict::MemoryLimit
            } else {
                Verdict::RuntimeError
            };
            return Ok((
                verdict,
                Some(stderr().unwrap_or_else(|| format!("exit code {code}"))),
            ));
        }
        RunEnd::Exited(_) => {}
    }
    match expect {
        Expect::Stdout(want) => {
            let got = String::from_utf8_lossy(&out.stdout);
            Ok(match cmp.stdout(want, &got) {
                None => (Verdict::Passed, None),
                Some(d) => (Verdict::WrongAnswer, Some(d)),
            })
        }
        Expect::Value {
            want,
            unwrap_single,
        } => {
            let Some(Value::Object(m)) = &result else {
                return Ok((
                    Verdict::RuntimeError,
                    Some("the program ended without returning from the call".into()),
                ));
            };
            if let Some(e) = m.get("error") {
                return Ok((Verdict::RuntimeError, Some(last_line(&value_str(e)))));
            }
            let Some(got) = m.get("value").filter(|_| m.len() == 1) else {
                return Ok((Verdict::RuntimeError, Some("malformed result".into())));
            };
            let single = match want {
                Value::Array(w) if *unwrap_single && w.len() == 1 => Some(&w[0]),
                _ => None,
            };
            if cmp.value(got, want) || single.is_some_and(|w| cmp.value(got, w)) {
                Ok((Verdict::Passed, None))
            } else {
                Ok((
                    Verdict::WrongAnswer,
                    Some(format!(
                        "expected {}, got {}",
                        shorten(&single.unwrap_or(want).to_string()),
                        shorten(&got.to_string())
                    )),
                ))
            }
        }
        Expect::Passes => {
            let Some(Value::Object(m)) = &result else {
                return Ok((
                    Verdict::RuntimeError,
                    Some("the tests did not finish".into()),
                ));
            };
            // Only the trusted half of the assert harness writes this channel.
            if let Some(e) = m.get("bad_tests") {
                return Err((
                    "bad_tests",
                    format!("the test code is broken: {}", last_line(&value_str(e))),
                ));
            }
            if m.get("passed") == Some(&Value::Bool(true)) && m.len() == 1 {
                return Ok((Verdict::Passed, None));
            }
            if m.get("timeout") == Some(&Value::Bool(true)) {
                return Ok((Verdict::Timeout, None));
            }
            let err = m.get("error").map(value_str).unwrap_or_default();
            // The harness's own wrapper says nothing a reader needs: Python's error line does.
            let err = match err
                .trim()
                .strip_prefix("RuntimeError: the solution failed to load: ")
            {
                Some(why) => format!("failed to load: {why}"),
                None => err,
            };
            let v = if err.starts_with("AssertionError") {
                Verdict::WrongAnswer
            } else if err.contains("MemoryError") {
                Verdict::MemoryLimit
            } else {
                Verdict::RuntimeError
            };
            Ok((v, Some(last_line(&err))))
        }
    }
}

fn value_str(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn last_line(s: &str) -> String {
    shorten(s.trim().lines().last().unwrap_or(""))
}

/// The code of a completion by the `extract` rule (see `solution.rs`); `None` when no block
/// of the language is there.
pub fn extract_code<'a>(
    extract: Extract,
    text: &'a str,
    language: &str,
    entry_point: Option<&str>,
) -> Option<solution::Chosen<'a>> {
    if extract == Extract::None {
        return Some(solution::Chosen {
            index: 0,
            of: 1,
            code: text,
            after: 0,
        });
    }
    let blocks: Vec<&str> = code_blocks(text)
        .into_iter()
        .filter(|(info, _)| tag_matches(info, language))
        .map(|(_, body)| body)
        .collect();
    let at = |index: usize| solution::Chosen {
        index,
        of: blocks.len(),
        code: blocks[index],
        after: blocks.len() - 1 - index,
    };
    match extract {
        Extract::FirstBlock => (!blocks.is_empty()).then(|| at(0)),
        Extract::LastBlock => blocks.len().checked_sub(1).map(at),
        _ => solution::choose(&blocks, entry_point, language),
    }
}

impl CodeExec {
    fn extract<'a>(
        &self,
        text: &'a str,
        language: &str,
        entry_point: Option<&str>,
    ) -> Option<solution::Chosen<'a>> {
        extract_code(self.extract, text, language, entry_point)
    }

    /// The prefix for this sample: the spec's, or by default a HumanEval row's prompt when it
    /// defines the entry point (Python, a `check(candidate)` test).
    fn prefix_for(
        &self,
        s: &Sample,
        language: &str,
        tests: &[TestCase],
        entry_point: Option<&str>,
    ) -> Option<String> {
        if let Some(t) = &self.prefix {
            return optional(Some(t), s);
        }
        let humaneval = tests
            .iter()
            .any(|t| matches!(&t.run, crate::exec::Run::Assert { check: Some(_), .. }));
        let prompt = s.item.get("prompt").and_then(Value::as_str)?;
        let ep = entry_point?;
        (language == "python" && humaneval && solution::defines(prompt, ep))
            .then(|| prompt.to_string())
    }

    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let language = match self.language.render(s) {
            Ok(l) => l.trim().to_ascii_lowercase(),
            Err(m) => return m.outcome(cx),
        };
        let language = match language.as_str() {
            "python3" | "py" => "python".to_string(),
            "c++" | "cxx" => "cpp".to_string(),
            _ => language,
        };
        let tests_value = match self.tests.render_value(s) {
            Ok(v) => v,
            Err(m) => {
                return Outcome::error("bad_tests", format!("no tests: {}", m.message));
            }
        };
        let entry_point = optional(self.entry_point.as_ref(), s);
        let setup = optional(self.setup.as_ref(), s);
        let tests = match testcases::parse(
            &tests_value,
            self.format,
            entry_point.as_deref(),
            setup.as_deref(),
        ) {
            Ok(t) => t,
            Err(e) => return Outcome::error("bad_tests", e),
        };
        let weights = match self.weights_for(&tests, s) {
            Ok(w) => w,
            Err(e) => return Outcome::error("bad_weights", e),
        };
        let Some(sandbox) = &self.sandbox else {
            return Outcome::error(
                "sandbox_unavailable",
                "code_exec needs a sandbox and none was given (the CLI, server and Python \
                 package start one on Linux)",
            );
        };
        if !self.languages.contains(&language) {
            return Outcome::error(
                "unsupported_language",
                format!(
                    "the sandbox runs {}, not `{language}`",
                    self.languages.join(", ")
                ),
            );
        }
        // The function the tests call: the spec's, else the one the tests name (`fn_name`).
        let ep = entry_point.clone().or_else(|| {
            tests.iter().find_map(|t| match &t.run {
                crate::exec::Run::Call { entry_point, .. } => Some(entry_point.to_string()),
                crate::exec::Run::Assert { entry_point, .. } => {
                    entry_point.as_ref().map(ToString::to_string)
                }
                _ => None,
            })
        });
        let Some(chosen) = self.extract(&text, &language, ep.as_deref()) else {
            cx.note(|| format!("scored 0: no {language} code block in the completion"));
            cx.detail(|| json!({"language": language, "verdict": "no_code"}));
            return Outcome::ok(0.0);
        };
        let code = chosen.code;
        let prefix = self.prefix_for(s, &language, &tests, ep.as_deref());
        let (source, exec_line) = match &prefix {
            Some(p) if language == "python" => solution::with_prefix(code, p),
            _ => (code.to_string(), 0),
        };
        if code.len() > MAX_CODE_BYTES {
            cx.note(|| {
                format!(
                    "scored 0: the code is {} bytes, over the 256 KiB cap",
                    code.len()
                )
            });
            return Outcome::ok(0.0);
        }
        // A group's second pass: the tests already ran in the first.
        let kept = cx
            .memo(&self.path)
            .and_then(|m| m.downcast::<Verdicts>().ok());
        // In a second pass, a node that did not run in the first (a gate opened differently)
        // has no share in the group's rates: it is scored by fraction, not by rates that never
        // counted it.
        let counted = kept.is_some();
        let verdicts: Verdicts = if let Some(v) = kept {
            (*v).clone()
        } else {
            match self.execute(sandbox, &language, &source, &tests).await {
                Ok(mut v) => {
                    for t in &mut v {
                        t.1 = t.1.take().map(|w| solution::solution_lines(&w, exec_line));
                    }
                    v
                }
                Err(o) => return o,
            }
        };
        if self.reward == Reward::Difficulty && cx.collecting() {
            let passes = verdicts.iter().map(|v| v.0 == Verdict::Passed).collect();
            cx.keep(&self.path, Arc::new(verdicts.clone()), passes);
        }
        let passed = verdicts.iter().filter(|v| v.0 == Verdict::Passed).count();
        let total = verdicts.len();
        let mut difficulty: Option<Vec<f64>> = None;
        let value = match self.reward {
            Reward::Fraction => passed as f64 / total as f64,
            Reward::AllPass => f64::from(u8::from(passed == total)),
            Reward::Difficulty => {
                let rates = cx
                    .group()
                    .filter(|g| g.size >= 2 && counted)
                    .and_then(|g| g.rates.get(&self.path))
                    .filter(|r| r.len() == total);
                match rates {
                    Some(r) => {
                        let w: Vec<f64> = r.iter().map(|p| 1.0 - p).collect();
                        let sum: f64 = w.iter().sum();
                        // `+ 0.0`: an empty float sum is -0.0, which would print as a negative 0.
                        let got: f64 = verdicts
                            .iter()
                            .zip(&w)
                            .filter(|(v, _)| v.0 == Verdict::Passed)
                            .map(|(_, w)| w)
                            .sum::<f64>()
                            + 0.0;
                        difficulty = Some(w);
                        if sum <= 1e-12 {
                            // Every rollout passed every test: nothing tells them apart.
                            passed as f64 / total as f64
                        } else {
                            got / sum
                        }
                    }
                    None => passed as f64 / total as f64,
                }
            }
            Reward::Weighted => {
                let w = weights.as_deref().unwrap_or(&[]);
                let sum: f64 = w.iter().sum();
                let got: f64 = verdicts
                    .iter()
                    .zip(w)
                    .filter(|(v, _)| v.0 == Verdict::Passed)
                    .map(|(_, w)| w)
                    .sum::<f64>()
                    + 0.0;
                got / sum
            }
        };
        cx.note(|| {
            let mut counts: Vec<(&str, usize)> = Vec::new();
            for v in &verdicts {
                if v.0 != Verdict::Passed {
                    match counts.iter_mut().find(|c| c.0 == v.0.as_str()) {
                        Some(c) => c.1 += 1,
                        None => counts.push((v.0.as_str(), 1)),
                    }
                }
            }
            let rest: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
            let first = verdicts
                .iter()
                .enumerate()
                .find(|(_, v)| v.0 != Verdict::Passed)
                .map(|(i, v)| {
                    format!(
                        "; test {}: {}{}",
                        i + 1,
                        v.0.as_str(),
                        v.1.as_ref().map(|w| format!(" ({w})")).unwrap_or_default()
                    )
                })
                .unwrap_or_default();
            let weighted = match (&self.reward, &difficulty) {
                (Reward::Difficulty, Some(_)) => "; weighted by the group's difficulty",
                (Reward::Difficulty, None) => "; no group to weigh difficulty by: fraction",
                _ => "",
            };
            let mut how = String::new();
            if chosen.of > 1 {
                how = format!("; block {} of {}", chosen.index + 1, chosen.of);
                if chosen.after > 0 {
                    how = format!("{how} ({} later left out)", chosen.after);
                }
            }
            if exec_line > 0 {
                how.push_str("; prefix run first");
            }
            if rest.is_empty() {
                format!("{passed}/{total} tests passed ({language}{how}){weighted}")
            } else {
                format!(
                    "{passed}/{total} tests passed ({language}{how}; {}){first}{weighted}",
                    rest.join(", ")
                )
            }
        });
        cx.detail(|| {
            let mut d = json!({
                "language": language,
                "passed": passed,
                "total": total,
                "tests": verdicts.iter().map(|(v, why, cpu, wall)| {
                    let mut t = json!({"verdict": v.as_str(), "cpu_ms": round2(*cpu), "wall_ms": round2(*wall)});
                    if let Some(w) = why { t["why"] = json!(w); }
                    t
                }).collect::<Vec<_>>(),
            });
            if let Some(w) = &difficulty {
                d["weights"] = json!(w.iter().map(|x| round2(*x)).collect::<Vec<_>>());
            }
            if chosen.of > 1 {
                d["block"] = json!({"index": chosen.index + 1, "of": chosen.of,
                                    "left_out_after": chosen.after});
            }
            if exec_line > 0 {
                d["prefix"] = json!(true);
            }
            d
        });
        Outcome::ok(value)
    }

    /// Runs the tests in the sandbox and judges each run. `Err` is the node's outcome when
    /// nobody can know the verdicts.
    async fn execute(
        &self,
        sandbox: &Arc<dyn Sandbox>,
        language: &str,
        code: &str,
        tests: &[TestCase],
    ) -> Result<Verdicts, Outcome> {
        let job = Job {
            language: language.into(),
            source: code.into(),
            runs: tests.iter().map(|t| t.run.clone()).collect(),
            limits: self.limits.clone(),
        };
        match sandbox.execute(job).await {
            Ok(outs) => {
                let mut v = Vec::with_capacity(outs.len());
                for (o, t) in outs.iter().zip(tests) {
                    match judge(o, &t.expect, &self.compare) {
                        Ok((verdict, why)) => v.push((verdict, why, o.cpu_ms, o.wall_ms)),
                        Err((reason, e)) => return Err(Outcome::error(reason, e)),
                    }
                }
                Ok(v)
            }
            Err(JobFailure::CompileError(msg)) => {
                let first = msg.lines().find(|l| l.contains("error")).map(shorten);
                Ok(tests
                    .iter()
                    .map(|_| (Verdict::CompileError, first.clone(), 0.0, 0.0))
                    .collect())
            }
            Err(other) => Err(other.outcome()),
        }
    }

    fn weights_for(&self, tests: &[TestCase], s: &Sample) -> Result<Option<Vec<f64>>, String> {
        if self.reward != Reward::Weighted {
            return Ok(None);
        }
        let w: Vec<f64> = match &self.weights {
            Some(t) => {
                let v = t.render_value(s).map_err(|m| m.message)?;
                let v = match &*v {
                    Value::String(text) => serde_json::from_str(text)
                        .map_err(|_| "`weights` must be a list of numbers".to_string())?,
                    other => other.clone(),
                };
                v.as_array()
                    .ok_or("`weights` must be a list of numbers")?
                    .iter()
                    .map(|x| x.as_f64().filter(|x| x.is_finite() && *x >= 0.0))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or("`weights` must be numbers ≥ 0")?
            }
            None => tests
                .iter()
                .map(|t| t.weight)
                .collect::<Option<Vec<f64>>>()
                .ok_or("`reward: weighted` needs `weights` or a `weight` on every test")?,
        };
        if w.len() != tests.len() {
            return Err(format!("{} weights for {} tests", w.len(), tests.len()));
        }
        if w.iter().sum::<f64>() <= 0.0 {
            return Err("the weights sum to 0".into());
        }
        Ok(Some(w))
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

impl AsyncComponent for CodeExec {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }

    fn group_aware(&self) -> bool {
        self.reward == Reward::Difficulty
    }

    /// A share of the tests (or of their weights).
    fn bounds(&self) -> Option<(f64, f64)> {
        Some((0.0, 1.0))
    }
}
