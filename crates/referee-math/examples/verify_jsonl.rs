//! Verifies every `{"gold": .., "completion": ..}` line of a JSONL file and times each call.
//!
//! ```sh
//! cargo build --release -p referee-math --example verify_jsonl
//! taskset -c 0 target/release/examples/verify_jsonl benches/data/math_pairs.jsonl > verdicts.jsonl
//! ```
//!
//! The whole file is read and parsed first; then each pair is verified with
//! `Verifier::new(Options::default())` (gold bare, strict extraction) and timed on its own with
//! `Instant` (the verdict is dropped inside the timer). Stdout gets one line per input line, in
//! order: `{"status":"correct","ns":1234}`. Stderr gets one summary line, JSON:
//! `{"n", "repeat", "loop_wall_ns", "sum_call_ns", "loop_cpu_ns", "peak_rss_kib", "unstable",
//! "statuses"}`, where `loop_cpu_ns` is this thread's CPU time over all passes (from
//! `/proc/thread-self/schedstat`, which advances in scheduler ticks, so it needs a loop of
//! 100 ms or more; `null` when unavailable) and `peak_rss_kib` is `VmHWM` from
//! `/proc/self/status`.
//!
//! `--repeat K` (default 1) makes K passes over the file: `ns` is then the median of the K
//! timings of that pair (robust to preemption on a shared core), the status is the first pass's,
//! and `unstable` counts pairs whose status changed between passes (it should be 0).
//!
//! A panic inside the verifier is caught and reported as status `panic` (the first few panic
//! messages go to stderr), so one bad row does not lose the run.

use std::collections::BTreeMap;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use referee_math::{Answer, Gold, Options, Verifier};

static PANICS_SHOWN: AtomicUsize = AtomicUsize::new(0);
const MAX_PANICS_SHOWN: usize = 5;

fn main() -> ExitCode {
    let mut path = None;
    let mut repeat: usize = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--repeat" {
            match args.next().and_then(|k| k.parse().ok()) {
                Some(k) if k >= 1 => repeat = k,
                _ => {
                    eprintln!("verify_jsonl: --repeat needs a positive integer");
                    return ExitCode::from(2);
                }
            }
        } else if path.is_none() {
            path = Some(arg);
        } else {
            eprintln!("verify_jsonl: unexpected argument {arg}");
            return ExitCode::from(2);
        }
    }
    let Some(path) = path else {
        eprintln!("usage: verify_jsonl PAIRS.jsonl [--repeat K] > verdicts.jsonl");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("verify_jsonl: cannot read {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("verify_jsonl: {path}:{}: {e}", i + 1);
                return ExitCode::from(2);
            }
        };
        let field = |k: &str| {
            row.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let (Some(gold), Some(completion)) = (field("gold"), field("completion")) else {
            eprintln!(
                "verify_jsonl: {path}:{}: needs string fields gold and completion",
                i + 1
            );
            return ExitCode::from(2);
        };
        pairs.push((gold, completion));
    }
    drop(text);

    panic::set_hook(Box::new(|info| {
        if PANICS_SHOWN.fetch_add(1, Ordering::Relaxed) < MAX_PANICS_SHOWN {
            eprintln!("verify_jsonl: verifier panicked: {info}");
        }
    }));

    let verifier = Verifier::new(Options::default());
    let n = pairs.len();
    let mut statuses_first: Vec<&'static str> = Vec::with_capacity(n);
    let mut times: Vec<Vec<u64>> = vec![Vec::with_capacity(repeat); n];
    let mut unstable = 0usize;
    let cpu_start = thread_cpu_ns();
    let loop_start = Instant::now();
    for pass in 0..repeat {
        for (i, (gold, completion)) in pairs.iter().enumerate() {
            let t = Instant::now();
            let status = panic::catch_unwind(AssertUnwindSafe(|| {
                verifier
                    .verify(Gold(gold), Answer(completion))
                    .status
                    .as_str()
            }))
            .unwrap_or("panic");
            let ns = t.elapsed().as_nanos() as u64;
            times[i].push(ns);
            if pass == 0 {
                statuses_first.push(status);
            } else if statuses_first[i] != status {
                unstable += 1;
            }
        }
    }
    let loop_wall_ns = loop_start.elapsed().as_nanos() as u64;
    let loop_cpu_ns = match (cpu_start, thread_cpu_ns()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let results: Vec<(&str, u64)> = statuses_first
        .iter()
        .zip(&mut times)
        .map(|(&status, t)| {
            t.sort_unstable();
            (status, t[t.len() / 2])
        })
        .collect();

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    let mut sum_call_ns: u64 = 0;
    for &(status, ns) in &results {
        *statuses.entry(status).or_default() += 1;
        sum_call_ns += ns;
        if writeln!(out, r#"{{"status":"{status}","ns":{ns}}}"#).is_err() {
            return ExitCode::from(1);
        }
    }
    if out.flush().is_err() {
        return ExitCode::from(1);
    }
    let summary = serde_json::json!({
        "n": results.len(),
        "repeat": repeat,
        "loop_wall_ns": loop_wall_ns,
        "sum_call_ns": sum_call_ns,
        "loop_cpu_ns": loop_cpu_ns,
        "peak_rss_kib": peak_rss_kib(),
        "unstable": unstable,
        "statuses": statuses,
    });
    eprintln!("{summary}");
    ExitCode::SUCCESS
}

/// CPU time of the calling thread in nanoseconds: the first field of
/// `/proc/thread-self/schedstat` (Linux with schedstats; `None` elsewhere).
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Peak resident set size of this process in KiB (`VmHWM`), Linux only.
fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
