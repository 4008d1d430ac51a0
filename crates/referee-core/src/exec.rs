//! The sandbox contract (DESIGN.md §4): what graders that run code ask of an executor. The core
//! declares it; `referee-sandbox` implements it; shells put an implementation in the [`Env`]
//! given to `compile`. Verdicts are computed by the graders from raw outputs, never by the
//! executor, so an executor is only trusted to run code and report what happened.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Hard limits for one test run, set from outside the untrusted process.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// CPU time of the run's whole process tree.
    pub cpu_ms: u64,
    /// Wall-clock time (sleeping and blocking count here).
    pub wall_ms: u64,
    pub memory_bytes: u64,
    /// Captured stdout (and any one file written) may not exceed this.
    pub output_bytes: u64,
    pub processes: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            cpu_ms: 2_000,
            wall_ms: 5_000,
            memory_bytes: 256 << 20,
            output_bytes: 4 << 20,
            processes: 32,
        }
    }
}

/// One run of the program: a test, or a call of a grader.
#[derive(Debug, Clone)]
pub enum Run {
    /// Run as a program with this stdin.
    Stdio { stdin: Arc<[u8]> },
    /// Load as a module and call `entry_point` with these JSON arguments (a list); the run's
    /// `result` is the return value as tagged JSON (`{"value": ..}`) or `{"error": ..}`.
    Call {
        entry_point: Arc<str>,
        args: Arc<str>,
    },
    /// Run test code against the program in a separate process: `check` (if given) is called with
    /// the proxy for `entry_point`; otherwise the test code's own statements are the test. The
    /// `result` is `{"passed": bool, "error"?: ..}`.
    Assert {
        test: Arc<str>,
        setup: Option<Arc<str>>,
        check: Option<Arc<str>>,
        entry_point: Option<Arc<str>>,
    },
    /// The program is a grader: call `grade(sample, item)`; `result` is `{"value": f}` or `{"error": ..}`.
    Grade { sample: Arc<str>, item: Arc<str> },
    /// A measured verifier: the job's code (when `program`) runs first as a program with
    /// `stdin`, in a process of its own, for at most `program_wall_ms`; then everything it
    /// left running is killed, and the spec author's `verifier` (Python) runs with `input`
    /// (JSON, read only once the program has ended, plus the program's outcome) on its stdin.
    /// What the verifier prints goes to a descriptor created after the program died, and from
    /// there to the result channel, which the program never held: `result` is
    /// `{"program": .., "report": text, "verifier_error"?: ..}`, or `{"program": ..}` alone
    /// when `must_succeed` and the program failed, or `{"compile_error": ..}`.
    Measure {
        stdin: Arc<[u8]>,
        verifier: Arc<str>,
        input: Arc<str>,
        program: bool,
        program_wall_ms: u64,
        must_succeed: bool,
    },
}

/// A program and the runs to make of it.
#[derive(Debug, Clone)]
pub struct Job {
    pub language: Arc<str>,
    pub source: Arc<str>,
    pub runs: Vec<Run>,
    pub limits: Limits,
}

/// How one run ended, as the executor observed it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    Exited(i32),
    Signaled(i32),
    Timeout,
    MemoryLimit,
    OutputLimit,
    /// The run never reached the untrusted code (the sandbox itself failed).
    SetupFailed(String),
}

#[derive(Debug, Clone)]
pub struct RunOutput {
    pub end: RunEnd,
    pub stdout: Vec<u8>,
    /// The last few KiB of stderr, for the trace.
    pub stderr_tail: String,
    /// What the harness wrote on its result channel (call, assert and grade runs).
    pub result: Option<Vec<u8>>,
    pub cpu_ms: f64,
    pub wall_ms: f64,
}

/// Why a job produced no runs at all.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum JobFailure {
    /// The program did not compile: every test fails with `compile_error`.
    CompileError(String),
    /// The executor cannot run this language or run kind.
    Unsupported(String),
    /// The executor is not usable on this machine (no namespaces, not allowed, ...).
    Unavailable(String),
    /// The executor failed; nothing is known about the program.
    Internal(String),
}

impl JobFailure {
    /// The outcome of a grader whose job failed this way (a compile error is the program's
    /// fault and is judged per test by the grader, so it does not come here).
    pub fn outcome(self) -> crate::outcome::Outcome {
        use crate::outcome::Outcome;
        match self {
            JobFailure::Unsupported(m) => Outcome::error("unsupported_language", m),
            JobFailure::Unavailable(m) => Outcome::error("sandbox_unavailable", m),
            JobFailure::CompileError(m) | JobFailure::Internal(m) => {
                Outcome::error("sandbox_error", m)
            }
        }
    }
}

pub trait Sandbox: Send + Sync {
    /// Runs every run of the job (concurrently, within the executor's own limit); the outputs are
    /// in the order of `job.runs`.
    fn execute(&self, job: Job) -> BoxFuture<'static, Result<Vec<RunOutput>, JobFailure>>;
    /// The languages this executor runs (checked at compile time).
    fn languages(&self) -> Vec<String>;
    /// Runs executing or waiting for a slot right now, where the executor counts them (for a
    /// server's metrics).
    fn runs_in_flight(&self) -> Option<usize> {
        None
    }
}

/// What I/O graders get at compile time. Empty by default: a spec that needs a sandbox (or a
/// judge) and gets none is a compile error that says so.
#[derive(Clone, Default)]
pub struct Env {
    pub sandbox: Option<Arc<dyn Sandbox>>,
    /// A judge given directly (tests, or a shell that manages its own endpoints). A spec's
    /// `judges:` section, when present, is connected through `connect` instead.
    pub judge: Option<Arc<dyn crate::judge::Judge>>,
    pub connect: Option<Arc<dyn crate::judge::JudgeConnect>>,
    /// Endpoints the shell defines (e.g. from command-line flags); they are added to a spec's
    /// own section and win on a name both define.
    pub endpoints: std::collections::BTreeMap<String, crate::judge::EndpointConfig>,
    /// The shell's cache choice, which overrides the spec's `judge_cache:`.
    pub judge_cache: Option<crate::judge::CacheConfig>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("sandbox", &self.sandbox.is_some())
            .field("judge", &self.judge.is_some())
            .field("connect", &self.connect.is_some())
            .field("endpoints", &self.endpoints.keys().collect::<Vec<_>>())
            .field("judge_cache", &self.judge_cache)
            .finish()
    }
}

/// A shell's judge options (the CLI's `--judge`, `--judge-model`, `--judge-cache`; Python's
/// `compile(judge=, judge_model=, judge_cache=, judge_fallback=)`), turned into an [`Env`] here
/// so every shell reads them the same way.
#[derive(Debug, Clone, Default)]
pub struct JudgeOptions {
    /// An endpoint named `default`: for specs without a `judges:` section (OpenAI grader
    /// files), or to point a spec's `default` at another server.
    pub judge: Option<String>,
    /// The model name sent to `judge` (default: `judge`).
    pub judge_model: Option<String>,
    /// `off`, `memory`, `redis://...`, or a file path; overrides the spec's `judge_cache:`.
    pub judge_cache: Option<String>,
    /// `judge` for a spec without a `judges:` section only: a trainer's own judge router
    /// (verl's `reward_router_address`), which must not override a spec's judges.
    pub judge_fallback: Option<String>,
}

impl JudgeOptions {
    /// These options for one spec: the fallback becomes `judge` when the spec has no `judges:`
    /// section of its own and no `judge` was given.
    #[must_use]
    pub fn for_spec(&self, spec: &serde_json::Value) -> JudgeOptions {
        let mut o = self.clone();
        let has_section = spec.get("judges").is_some_and(|j| !j.is_null());
        if o.judge.is_none() && !has_section {
            o.judge = o.judge_fallback.clone();
        }
        o.judge_fallback = None;
        o
    }

    /// The endpoints the options define: `default`, when `judge` is given.
    pub fn endpoints(&self) -> std::collections::BTreeMap<String, crate::judge::EndpointConfig> {
        let mut m = std::collections::BTreeMap::new();
        if let Some(url) = &self.judge {
            m.insert(
                "default".to_string(),
                crate::judge::EndpointConfig::new(
                    url.clone(),
                    self.judge_model.clone().unwrap_or_else(|| "judge".into()),
                ),
            );
        }
        m
    }

    /// The cache choice, when one was given.
    pub fn cache(&self) -> Option<crate::judge::CacheConfig> {
        Some(crate::judge::CacheConfig::from_flag(
            self.judge_cache.as_deref()?,
        ))
    }

    /// The executors a shell compiles with: its sandbox and judge connector, and these options'
    /// endpoints and cache.
    pub fn env(
        &self,
        sandbox: Option<Arc<dyn Sandbox>>,
        connect: Arc<dyn crate::judge::JudgeConnect>,
    ) -> Env {
        Env {
            sandbox,
            judge: None,
            connect: Some(connect),
            endpoints: self.endpoints(),
            judge_cache: self.cache(),
        }
    }
}
