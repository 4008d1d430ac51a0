//! Isolated execution of untrusted code for Referee (the `Sandbox` of `referee_core::exec`).
//!
//! A [`Pool`] of slots, each a warm Python zygote in its own user, mount, network, IPC and UTS
//! namespaces and cgroup. A job's tests go to a slot in batches (up to 16 tests of one job):
//! each batch gets new PID, mount, IPC and UTS namespaces, a fresh tmpfs, uid 1000 with no
//! capabilities, hard rlimits, no_new_privs and seccomp, and its init forks one process per
//! test, killing whatever a test left before the next (see `zygote.py` and `native.c`). Tests of
//! one job share the batch's working directory; different jobs (samples) never share anything.
//! The zygote's request loop and each batch's setup are C (`native.c`, built by
//! `build.rs` and sent to the zygote as a sealed memfd): the zygote runs no Python between
//! clones, so the pages of its heap stay shared with the runs instead of being copied. A run's
//! inputs travel as sealed memfds and its outputs come back as memfds: the
//! zygote, whose memory every run inherits, never holds any run's data, and a compiled binary
//! exists only as a descriptor handed to its own job's runs. The number of slots is the number
//! of batches that can be alive at once, machine-wide
//! for this process: the limit is enforced by construction, not by a counter.
//!
//! Linux only; needs root (to map the ids of two users into each slot's namespace and to manage
//! cgroups). [`Pool::start`] says plainly why when it cannot run.

mod cgroup;
pub mod lang;
mod seccomp;
mod slot;

use referee_core::exec::{BoxFuture, Job, JobFailure, Limits, Run, RunEnd, RunOutput, Sandbox};
use serde_json::{json, Value};
use slot::{sealed_memfd, Request, SlotOutput, Zygote};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How the pool is set up. `Config::default()` reads `REFEREE_SANDBOX_SLOTS`, `REFEREE_PYTHON`,
/// `REFEREE_SANDBOX_DEBUG` and `REFEREE_SANDBOX_CGROUPS` from the environment (compilers:
/// `REFEREE_CXX`, `REFEREE_CC`, see [`lang`]).
#[derive(Debug, Clone)]
pub struct Config {
    /// Runs alive at once (default: the number of CPUs).
    pub slots: usize,
    /// The Python interpreter (default: /usr/bin/python3, else `python3` on PATH).
    pub python: Option<PathBuf>,
    /// Show the zygotes' stderr.
    pub debug: bool,
    /// Use cgroups for memory, process and CPU limits when the machine offers them (default);
    /// without, hard rlimits (address space, process count) are the limits.
    pub cgroups: bool,
}

impl Default for Config {
    fn default() -> Self {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Config {
            slots: env("REFEREE_SANDBOX_SLOTS")
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
                .clamp(1, 256),
            python: env("REFEREE_PYTHON").map(PathBuf::from),
            debug: env("REFEREE_SANDBOX_DEBUG").is_some(),
            cgroups: env("REFEREE_SANDBOX_CGROUPS").is_none_or(|v| v != "0"),
        }
    }
}

/// What every slot shares: resolved paths, the seccomp programs, the cgroup interface.
pub(crate) struct Shared {
    python: PathBuf,
    /// The compiled languages this machine has a compiler for.
    compilers: Vec<(&'static lang::Compiled, PathBuf)>,
    /// Host directories bound read-only into every sandbox besides /usr (e.g. a Python prefix).
    binds: Vec<PathBuf>,
    seccomp: seccomp::Programs,
    cgroups: Option<cgroup::Version>,
    debug: bool,
    uid_base: u32,
    pool_id: u32,
}

impl Shared {
    /// The host uids of a slot: root of its namespace (the zygote) and uid 1000 (the runs).
    /// Distinct per slot and per Referee process, and far from any real account.
    fn host_ids(&self, slot: usize) -> (u32, u32) {
        let b = self.uid_base + 2 * slot as u32;
        (b, b + 1)
    }
}

/// One batch for a slot: tests of one job with the same mode and limits (see `batches`).
struct Task {
    reqs: Vec<Request>,
    /// Hand back the result memfd itself (a compile's binary) instead of its bytes.
    keep_result: bool,
    done: Box<dyn FnOnce(Result<Vec<SlotOutput>, String>) + Send>,
}

struct Queue {
    tasks: Mutex<(VecDeque<Task>, bool)>,
    cv: Condvar,
    slots: usize,
}

impl Queue {
    /// Queues a job's test runs as batches, their outputs collected in order.
    fn push_job(&self, reqs: Vec<Request>, collect: &Arc<Collect>) {
        let mut q = self.tasks.lock().expect("queue");
        let mut at = 0;
        for batch in batches(reqs, self.slots, q.0.len()) {
            let (c, first, n) = (collect.clone(), at, batch.len());
            at += n;
            q.0.push_back(Task {
                reqs: batch,
                keep_result: false,
                done: Box::new(move |r| c.put_batch(first, n, r)),
            });
        }
        drop(q);
        self.cv.notify_all();
    }
}

/// Splits a job's runs into batches. A batch costs one set of namespaces and mounts (the
/// costliest part of a run) and then one fork per test, but runs its tests one after another
/// on one slot: while the queue is short a job is spread over the slots so its tests still run
/// side by side; when other work is waiting, the slots are busy anyway and a batch takes up to
/// `MAX_TESTS` tests. Only consecutive runs with the same header share a batch.
fn batches(reqs: Vec<Request>, slots: usize, queued: usize) -> Vec<Vec<Request>> {
    let n = reqs.len();
    let size = if queued >= slots {
        slot::MAX_TESTS
    } else {
        n.div_ceil(slots.max(1)).clamp(1, slot::MAX_TESTS)
    };
    let mut out: Vec<Vec<Request>> = Vec::new();
    for r in reqs {
        match out.last_mut() {
            Some(b) if b.len() < size && b[0].header == r.header => b.push(r),
            _ => out.push(vec![r]),
        }
    }
    out
}

/// Pools started by this process so far (a pool's id, in every name it leaves on the host).
static POOLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// The sandbox: slots, their threads and the shared queue of runs.
pub struct Pool {
    shared: Arc<Shared>,
    queue: Arc<Queue>,
    threads: Vec<std::thread::JoinHandle<()>>,
    slots: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// Starts the slots. Fails (with the reason) when this machine cannot sandbox: not Linux, not
    /// root, no user namespaces, no Python.
    pub fn start(config: &Config) -> Result<Pool, String> {
        if !cfg!(target_os = "linux") {
            return Err("the sandbox needs Linux namespaces".into());
        }
        if !nix::unistd::geteuid().is_root() {
            return Err(
                "the sandbox needs root to map its users and set cgroup limits; \
                        run as root (or in a container where you are root)"
                    .into(),
            );
        }
        let (python, prefix) = resolve_python(config.python.as_deref())?;
        let mut binds = Vec::new();
        if !prefix.starts_with("/usr") {
            binds.push(prefix);
        }
        let cgroups = if config.cgroups {
            cgroup::detect()
        } else {
            None
        };
        if let Some(v) = cgroups {
            cgroup::reap_stale(v);
        }
        // Pools of one process are told apart by a counter, in every name they leave on the host.
        let pool_id = POOLS.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::new(Shared {
            python,
            compilers: lang::available(),
            binds,
            seccomp: seccomp::programs()?,
            cgroups,
            debug: config.debug,
            uid_base: 0x4000_0000 + ((std::process::id() * 8 + pool_id) % 0x10000) * 0x200,
            pool_id,
        });
        // The first zygote starts here so a machine that cannot sandbox fails now, clearly.
        let first = Zygote::spawn(&shared, 0)?;
        let queue = Arc::new(Queue {
            tasks: Mutex::new((VecDeque::new(), false)),
            cv: Condvar::new(),
            slots: config.slots,
        });
        let mut threads = Vec::new();
        let mut first = Some(first);
        for i in 0..config.slots {
            let (shared, queue, z) = (shared.clone(), queue.clone(), first.take());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("sandbox-slot-{i}"))
                    .spawn(move || slot_loop(&shared, &queue, i, z))
                    .map_err(|e| e.to_string())?,
            );
        }
        Ok(Pool {
            shared,
            queue,
            threads,
            slots: config.slots,
        })
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The name of this pool's cgroup, its only trace on the host while it runs (for leak
    /// checks).
    pub fn cgroup_name(&self) -> String {
        format!("referee-{}-{}", std::process::id(), self.shared.pool_id)
    }

    /// Whether limits are set with cgroups (else with rlimits only).
    pub fn uses_cgroups(&self) -> bool {
        self.shared.cgroups.is_some()
    }

    /// The host uids this pool's zygotes and runs use (for leak checks).
    pub fn host_uid_range(&self) -> std::ops::Range<u32> {
        let (lo, _) = self.shared.host_ids(0);
        lo..lo + 2 * self.slots as u32
    }

    fn submit(&self, task: Task) {
        let mut q = self.queue.tasks.lock().expect("queue");
        q.0.push_back(task);
        drop(q);
        self.queue.cv.notify_one();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        {
            let mut q = self.queue.tasks.lock().expect("queue");
            q.1 = true;
            for t in q.0.drain(..) {
                (t.done)(Err("the sandbox is shutting down".into()));
            }
        }
        self.queue.cv.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(v) = self.shared.cgroups {
            cgroup::remove_top(v, self.shared.pool_id);
        }
    }
}

/// A slot's thread: owns one zygote, runs tasks one at a time, replaces the zygote if it breaks.
fn slot_loop(shared: &Shared, queue: &Queue, slot: usize, mut zygote: Option<Zygote>) {
    // Warm up now, not on the first task: the slots start side by side. A failure here is
    // retried (and reported) when a task comes.
    if zygote.is_none() {
        zygote = Zygote::spawn(shared, slot).ok();
    }
    loop {
        let task = {
            let mut q = queue.tasks.lock().expect("queue");
            loop {
                if q.1 {
                    if let Some(z) = zygote.take() {
                        z.kill();
                    }
                    return;
                }
                if let Some(t) = q.0.pop_front() {
                    break t;
                }
                q = queue.cv.wait(q).expect("queue");
            }
        };
        let mut outcome = Err(String::new());
        // A zygote that broke is replaced and the run tried once more on the new one.
        for _attempt in 0..2 {
            if zygote.is_none() {
                match Zygote::spawn(shared, slot) {
                    Ok(z) => zygote = Some(z),
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            let z = zygote.as_mut().expect("spawned");
            match z.run(&task.reqs, task.keep_result) {
                Ok(out) => {
                    outcome = Ok(out);
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    if let Some(z) = zygote.take() {
                        z.kill();
                    }
                }
            }
        }
        (task.done)(outcome);
    }
}

type JobResult = Result<Vec<RunOutput>, JobFailure>;

/// Collects the outputs of a job's runs and completes its future when the last one is in.
struct Collect {
    outs: Mutex<Vec<Option<RunOutput>>>,
    left: AtomicUsize,
    tx: Mutex<Option<futures::channel::oneshot::Sender<JobResult>>>,
}

impl Collect {
    fn new(n: usize, tx: futures::channel::oneshot::Sender<JobResult>) -> Arc<Collect> {
        Arc::new(Collect {
            outs: Mutex::new(vec![None; n]),
            left: AtomicUsize::new(n),
            tx: Mutex::new(Some(tx)),
        })
    }

    /// The outputs of a batch of `n` runs, the first of which is run `first` of the job. A
    /// broken slot fails the batch's runs as sandbox failures (never as scores).
    fn put_batch(&self, first: usize, n: usize, r: Result<Vec<SlotOutput>, String>) {
        let outs: Vec<RunOutput> = match r {
            Ok(v) if v.len() == n => v.into_iter().map(|o| o.out).collect(),
            Ok(v) => vec![failed(&format!("{} outputs for {n} runs", v.len())); n],
            Err(e) => vec![failed(&e); n],
        };
        {
            let mut slots = self.outs.lock().expect("outs");
            for (i, o) in outs.into_iter().enumerate() {
                slots[first + i] = Some(o);
            }
        }
        if self.left.fetch_sub(n, Ordering::AcqRel) == n {
            self.finish(Ok(()));
        }
    }

    fn finish(&self, r: Result<(), JobFailure>) {
        let outs = std::mem::take(&mut *self.outs.lock().expect("outs"));
        let v = r.map(|()| {
            outs.into_iter()
                .map(|o| o.expect("every run reported"))
                .collect()
        });
        if let Some(tx) = self.tx.lock().expect("tx").take() {
            let _ = tx.send(v);
        }
    }
}

/// A run the sandbox could not carry out.
fn failed(e: &str) -> RunOutput {
    RunOutput {
        end: RunEnd::SetupFailed(format!("sandbox failure: {e}")),
        stdout: Vec::new(),
        stderr_tail: String::new(),
        result: None,
        cpu_ms: 0.0,
        wall_ms: 0.0,
    }
}

/// Limits in the zygote's terms.
fn limits_json(l: &Limits, cgroups: bool) -> Value {
    let mut v = json!({
        "cpu_ms": l.cpu_ms,
        "wall_ms": l.wall_ms,
        "output_bytes": l.output_bytes,
        "file_bytes": l.output_bytes.max(1 << 20),
        "disk_bytes": l.memory_bytes.clamp(1 << 20, 64 << 20),
        "processes": l.processes,
    });
    if !cgroups {
        // Without a memory cgroup the address-space rlimit is the only memory bound; virtual
        // size runs ahead of resident memory, hence the headroom.
        v["address_space_bytes"] = json!(l.memory_bytes + (512 << 20));
    }
    v
}

const COMPILE_LIMITS: Limits = Limits {
    cpu_ms: 20_000,
    wall_ms: 30_000,
    memory_bytes: 1 << 30,
    output_bytes: 64 << 20,
    processes: 32,
};

impl Sandbox for Pool {
    fn languages(&self) -> Vec<String> {
        std::iter::once("python".to_string())
            .chain(
                self.shared
                    .compilers
                    .iter()
                    .map(|(c, _)| c.name.to_string()),
            )
            .collect()
    }

    fn execute(&self, job: Job) -> BoxFuture<'static, Result<Vec<RunOutput>, JobFailure>> {
        let (tx, rx) = futures::channel::oneshot::channel();
        let fut = Box::pin(async move {
            rx.await
                .unwrap_or_else(|_| Err(JobFailure::Internal("the sandbox stopped".into())))
        });
        let fail = |tx: futures::channel::oneshot::Sender<_>, f: JobFailure| {
            let _ = tx.send(Err(f));
        };
        if job.runs.is_empty() {
            let _ = tx.send(Ok(Vec::new()));
            return fut;
        }
        let cg = self.shared.cgroups.is_some();
        // The code goes to every run of the job as one sealed memfd.
        let code = match sealed_memfd(job.source.as_bytes()) {
            Ok(fd) => Arc::new(fd),
            Err(e) => {
                fail(tx, JobFailure::Internal(e));
                return fut;
            }
        };
        match &*job.language {
            "python" => {
                let reqs: Result<Vec<Request>, String> = job
                    .runs
                    .iter()
                    .map(|run| python_request(run, &code, &job.limits, cg))
                    .collect();
                let reqs = match reqs {
                    Ok(r) => r,
                    Err(e) => {
                        fail(tx, JobFailure::Internal(e));
                        return fut;
                    }
                };
                let collect = Collect::new(reqs.len(), tx);
                self.queue.push_job(reqs, &collect);
            }
            name => {
                let Some((lang, compiler)) =
                    self.shared.compilers.iter().find(|(c, _)| c.name == name)
                else {
                    let known = lang::COMPILED.iter().any(|c| c.name == name);
                    fail(
                        tx,
                        JobFailure::Unsupported(if known {
                            format!("no compiler for `{name}` on this machine")
                        } else {
                            format!("language `{name}` is not supported")
                        }),
                    );
                    return fut;
                };
                if job.runs.iter().any(|r| !matches!(r, Run::Stdio { .. })) {
                    fail(
                        tx,
                        JobFailure::Unsupported(format!(
                            "`{name}` programs run only stdin/stdout tests"
                        )),
                    );
                    return fut;
                }
                let compile = Request {
                    header: json!({
                        "mode": "compile",
                        "limits": limits_json(&COMPILE_LIMITS, cg),
                        "file": format!("/tmp/{}", lang.file),
                        "output": "/tmp/a.out",
                        "argv": lang.argv(compiler),
                    }),
                    blobs: vec![("code", code)],
                    memory_bytes: COMPILE_LIMITS.memory_bytes,
                    processes: COMPILE_LIMITS.processes,
                    output_bytes: COMPILE_LIMITS.output_bytes,
                    wall_ms: COMPILE_LIMITS.wall_ms,
                };
                let queue = self.queue.clone();
                let limits = job.limits.clone();
                let runs = job.runs.clone();
                self.submit(Task {
                    reqs: vec![compile],
                    keep_result: true,
                    done: Box::new(move |r| {
                        let r = r.and_then(|v| {
                            v.into_iter()
                                .next()
                                .ok_or_else(|| "no output from the compile".to_string())
                        });
                        compiled(r, &runs, &limits, cg, &queue, tx);
                    }),
                });
            }
        }
        fut
    }
}

/// After a compile: seal the binary (the compile's result memfd) and queue the test runs, each
/// given the binary by descriptor. No file of it exists anywhere a run could name.
fn compiled(
    r: Result<SlotOutput, String>,
    runs: &[Run],
    limits: &Limits,
    cg: bool,
    queue: &Queue,
    tx: futures::channel::oneshot::Sender<JobResult>,
) {
    let fail = |tx: futures::channel::oneshot::Sender<JobResult>, f: JobFailure| {
        let _ = tx.send(Err(f));
    };
    let (out, binary) = match r {
        Err(e) => return fail(tx, JobFailure::Internal(format!("sandbox failure: {e}"))),
        Ok(o) => (o.out, o.result_fd),
    };
    let binary = match (&out.end, binary) {
        (RunEnd::Exited(0), Some(b)) => b,
        (RunEnd::Timeout, _) => {
            return fail(
                tx,
                JobFailure::CompileError("the compiler ran out of time".into()),
            )
        }
        (RunEnd::MemoryLimit, _) => {
            return fail(
                tx,
                JobFailure::CompileError("the compiler ran out of memory".into()),
            )
        }
        (RunEnd::SetupFailed(e), _) => return fail(tx, JobFailure::Internal(e.clone())),
        _ => return fail(tx, JobFailure::CompileError(out.stderr_tail)),
    };
    if let Err(e) = slot::seal(&binary) {
        return fail(tx, JobFailure::Internal(e));
    }
    let binary = Arc::new(binary);
    let mut reqs = Vec::with_capacity(runs.len());
    for run in runs {
        let Run::Stdio { stdin } = run else {
            unreachable!("checked before compiling")
        };
        match sealed_memfd(stdin) {
            Ok(stdin) => reqs.push(Request {
                header: json!({"mode": "exec", "limits": limits_json(limits, cg)}),
                blobs: vec![("binary", binary.clone()), ("stdin", Arc::new(stdin))],
                memory_bytes: limits.memory_bytes,
                processes: limits.processes,
                output_bytes: limits.output_bytes,
                wall_ms: limits.wall_ms,
            }),
            Err(e) => return fail(tx, JobFailure::Internal(e)),
        }
    }
    let collect = Collect::new(reqs.len(), tx);
    queue.push_job(reqs, &collect);
}

/// A Python run: the job's code, and this run's inputs each in a sealed memfd of its own.
fn python_request(run: &Run, code: &Arc<OwnedFd>, l: &Limits, cg: bool) -> Result<Request, String> {
    let fd = |data: &[u8]| sealed_memfd(data).map(Arc::new);
    let mut blobs = vec![("code", code.clone())];
    let mut header = match run {
        Run::Stdio { stdin } => {
            blobs.push(("stdin", fd(stdin)?));
            json!({"mode": "stdio"})
        }
        Run::Call { entry_point, args } => {
            blobs.push(("args", fd(args.as_bytes())?));
            json!({"mode": "call", "entry_point": &**entry_point})
        }
        Run::Assert {
            test,
            setup,
            check,
            entry_point,
        } => {
            blobs.push(("test", fd(test.as_bytes())?));
            if let Some(s) = setup {
                blobs.push(("setup", fd(s.as_bytes())?));
            }
            json!({"mode": "assert", "check": check.as_deref(), "entry_point": entry_point.as_deref()})
        }
        Run::Grade { sample, item } => {
            blobs.push(("sample", fd(sample.as_bytes())?));
            blobs.push(("item", fd(item.as_bytes())?));
            json!({"mode": "grade"})
        }
        Run::Measure {
            stdin,
            verifier,
            input,
            program,
            program_wall_ms,
            must_succeed,
        } => {
            blobs.push(("stdin", fd(stdin)?));
            blobs.push(("verifier", fd(verifier.as_bytes())?));
            blobs.push(("measure_input", fd(input.as_bytes())?));
            json!({"mode": "measure", "program": program, "program_wall_ms": program_wall_ms,
                   "must_succeed": must_succeed})
        }
    };
    header["limits"] = limits_json(l, cg);
    Ok(Request {
        header,
        blobs,
        memory_bytes: l.memory_bytes,
        processes: l.processes,
        output_bytes: l.output_bytes,
        wall_ms: l.wall_ms,
    })
}

/// The interpreter to run and the prefix it needs mounted. A pyenv-style shim is a shell
/// script, so the real executable is asked for, never assumed.
fn resolve_python(configured: Option<&Path>) -> Result<(PathBuf, PathBuf), String> {
    let candidate = match configured {
        Some(p) => p.to_path_buf(),
        None if Path::new("/usr/bin/python3").exists() => PathBuf::from("/usr/bin/python3"),
        None => which("python3").ok_or("no python3 found (set REFEREE_PYTHON)")?,
    };
    let out = std::process::Command::new(&candidate)
        .args([
            "-I",
            "-S",
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix)",
        ])
        .output()
        .map_err(|e| format!("{}: {e}", candidate.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let (Some(exe), Some(prefix)) = (lines.next(), lines.next()) else {
        return Err(format!("{} did not run", candidate.display()));
    };
    let exe = std::fs::canonicalize(exe).map_err(|e| format!("{exe}: {e}"))?;
    Ok((exe, PathBuf::from(prefix)))
}

pub(crate) fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
            .and_then(|f| std::fs::canonicalize(f).ok())
    })
}

/// A sandbox that starts its pool on first use, for shells that compile specs which may never
/// run code (`referee check`, a rule-only spec): no zygote is started until a run is asked for.
/// If the pool cannot start, every job fails with `Unavailable` and the reason.
pub struct Lazy {
    config: Config,
    pool: std::sync::OnceLock<Result<Pool, String>>,
    compiled: Vec<&'static str>,
    /// Runs of the jobs in flight (a server's `/metrics` reads it).
    in_flight: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Takes a job's runs off the in-flight count when its future ends, however it ends.
struct InFlight(std::sync::Arc<std::sync::atomic::AtomicUsize>, usize);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .fetch_sub(self.1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Lazy {
    pub fn new(config: Config) -> Lazy {
        Lazy {
            config,
            pool: std::sync::OnceLock::new(),
            compiled: lang::available().iter().map(|(c, _)| c.name).collect(),
            in_flight: std::sync::Arc::default(),
        }
    }

    /// The pool, started now if it was not yet.
    pub fn pool(&self) -> Result<&Pool, &str> {
        self.pool
            .get_or_init(|| Pool::start(&self.config))
            .as_ref()
            .map_err(String::as_str)
    }
}

impl Sandbox for Lazy {
    fn runs_in_flight(&self) -> Option<usize> {
        Some(self.in_flight.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn languages(&self) -> Vec<String> {
        if let Some(Ok(p)) = self.pool.get() {
            return p.languages();
        }
        std::iter::once("python")
            .chain(self.compiled.iter().copied())
            .map(String::from)
            .collect()
    }

    fn execute(&self, job: Job) -> BoxFuture<'static, Result<Vec<RunOutput>, JobFailure>> {
        match self.pool() {
            Ok(p) => {
                let runs = job.runs.len();
                self.in_flight
                    .fetch_add(runs, std::sync::atomic::Ordering::Relaxed);
                let guard = InFlight(self.in_flight.clone(), runs);
                let work = p.execute(job);
                Box::pin(async move {
                    let _guard = guard;
                    work.await
                })
            }
            Err(e) => {
                let e = e.to_string();
                Box::pin(async move { Err(JobFailure::Unavailable(e)) })
            }
        }
    }
}
