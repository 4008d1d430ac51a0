//! The code graders against a real sandbox: the correctness suites (`fixtures/code/suite`) and
//! the exploit corpus (`fixtures/exploits/code.*.yaml`), then a check that the machine is
//! clean: no process, cgroup, mount or temporary directory left behind.
//!
//! One test function on purpose: the pool is shared by everything and dropped at the end, which
//! is what the cleanliness check inspects. Needs Linux and root, like the sandbox itself; it
//! fails (never skips) when the sandbox cannot start, and says why.

use referee_core::exec::Env;
use referee_core::{Program, Sample, ScoreResult};
use referee_sandbox::{Config, Pool};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `REFEREE_CORPUS=code.python` runs only the files whose name contains it (for debugging).
fn yaml_files(dir: &Path, prefix: &str) -> Vec<(String, Value)> {
    let only = std::env::var("REFEREE_CORPUS").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml")
                && p.file_name().unwrap().to_string_lossy().starts_with(prefix)
                && p.file_name().unwrap().to_string_lossy().contains(&only)
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let v: Value =
                serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().to_string(), v)
        })
        .collect()
}

/// The first failed test's `why`, and the node's note, of the first node that ran tests.
fn first_why(t: &Value) -> Option<(String, String)> {
    if let Some(tests) = t["detail"]["tests"].as_array() {
        let why = tests
            .iter()
            .find_map(|x| x["why"].as_str())
            .unwrap_or("")
            .to_string();
        return Some((why, t["note"].as_str().unwrap_or("").to_string()));
    }
    t["children"].as_array()?.iter().find_map(first_why)
}

/// The per-test verdicts of the first node in the trace that ran tests.
fn verdicts(t: &Value) -> Option<Vec<String>> {
    if let Some(tests) = t["detail"]["tests"].as_array() {
        return Some(
            tests
                .iter()
                .map(|x| x["verdict"].as_str().unwrap_or("?").to_string())
                .collect(),
        );
    }
    t["children"].as_array()?.iter().find_map(verdicts)
}

/// Every case and exploit states its reward (DESIGN.md §5): `reward: null` for one that must
/// get none.
fn check(r: &ScoreResult, expect: &Value) -> Vec<String> {
    let mut bad = Vec::new();
    if expect.get("reward").is_none() {
        bad.push(format!(
            "`expect` states no `reward` (write `reward: null` when it must get none); got {:?}",
            r.reward
        ));
    }
    if let Some(want) = expect.get("reward") {
        let ok = match (want.as_f64(), r.reward) {
            (None, None) => want.is_null(),
            (Some(w), Some(g)) => (w - g).abs() <= expect["tolerance"].as_f64().unwrap_or(1e-9),
            _ => false,
        };
        if !ok {
            bad.push(format!("reward: want {want}, got {:?}", r.reward));
        }
    }
    let status = expect["status"].as_str().unwrap_or("ok");
    if status != r.status.as_str() {
        bad.push(format!("status: want {status}, got {:?}", r.status));
    }
    if let Some(want) = expect["reason"].as_str() {
        if r.reason() != Some(want) {
            bad.push(format!("reason: want {want}, got {:?}", r.reason()));
        }
    }
    let trace = serde_json::to_value(&r.trace).unwrap();
    let got = verdicts(&trace);
    if let Some(want) = expect["verdicts"].as_array() {
        let want: Vec<&str> = want.iter().filter_map(Value::as_str).collect();
        if got
            .as_deref()
            .map(|g| g.iter().map(String::as_str).collect::<Vec<_>>())
            != Some(want.clone())
        {
            bad.push(format!("verdicts: want {want:?}, got {got:?}"));
        }
    }
    // `why_contains`: the first failed test's reason holds this text (Python's own error line).
    // `note_contains`: the node's note does (which block was graded, the prefix).
    for (key, pick) in [("why_contains", 0), ("note_contains", 1)] {
        if let Some(want) = expect[key].as_str() {
            // A grader that runs no tests (`measure`) has only its note.
            let got = first_why(&trace)
                .map(|w| if pick == 0 { w.0 } else { w.1 })
                .or_else(|| (pick == 1).then(|| trace["note"].as_str().unwrap_or("").to_string()));
            if !got.as_deref().is_some_and(|g| g.contains(want)) {
                bad.push(format!("{key}: want {want:?}, got {got:?}"));
            }
        }
    }
    if let Some(any) = expect["verdicts_any_of"].as_array() {
        let any: Vec<&str> = any.iter().filter_map(Value::as_str).collect();
        match &got {
            Some(g) if !g.is_empty() && g.iter().all(|v| any.contains(&v.as_str())) => {}
            _ => bad.push(format!("verdicts: want all in {any:?}, got {got:?}")),
        }
    }
    bad
}

/// Scores one file's entries (all at once, so runs of many samples overlap in the pool).
fn run_file(env: &Env, file: &str, doc: &Value, key: &str) -> (usize, Vec<String>) {
    let default_spec = &doc["spec"];
    let entries = doc[key].as_array().cloned().unwrap_or_default();
    let mut failures = Vec::new();
    // Entries sharing the file's spec are scored as one batch; others one by one.
    let mut batch = Vec::new();
    for e in &entries {
        let name = e
            .get("name")
            .or_else(|| e.get("exploit"))
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if key == "exploits" {
            assert!(
                e["why"].is_string(),
                "{file} `{name}`: every exploit says `why`"
            );
        }
        let spec = e.get("spec").unwrap_or(default_spec);
        let program = match Program::compile_with(spec, env.clone()) {
            Ok(p) => p,
            Err(err) => {
                failures.push(format!("{file} `{name}`: spec does not compile: {err}"));
                continue;
            }
        };
        // `row:` gives the case in any input format (messages, state); else output + item.
        let sample = match e.get("row") {
            Some(row) => match referee_core::input::InputMapping::default().sample(row.clone()) {
                Ok(s) => s,
                Err(err) => {
                    failures.push(format!("{file} `{name}`: bad row: {}", err.message));
                    continue;
                }
            },
            None => Sample::new(
                e["output"].as_str().unwrap_or_default(),
                e.get("item")
                    .cloned()
                    .unwrap_or(Value::Object(serde_json::Map::default())),
            ),
        };
        batch.push((name, program, sample, e["expect"].clone()));
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = batch
            .iter()
            .map(|(name, program, sample, expect)| {
                s.spawn(move || {
                    let r = program.explain(sample);
                    check(&r, expect)
                        .into_iter()
                        .map(|b| {
                            format!(
                                "{file} `{name}`: {b}\n      trace: {}",
                                serde_json::to_string(&r.trace).unwrap_or_default()
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            failures.extend(h.join().unwrap());
        }
    });
    (entries.len(), failures)
}

fn leftovers(pid: u32, uids: std::ops::Range<u32>, cgroup: &str) -> Vec<String> {
    let mut out = Vec::new();
    for c in ["memory", "pids", "cpu", "unified", ""] {
        let p = Path::new("/sys/fs/cgroup").join(c).join(cgroup);
        if p.exists() {
            out.push(format!("cgroup {} left behind", p.display()));
        }
    }
    for e in std::fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with("referee-sandbox-")
        {
            out.push(format!("{} left behind", e.path().display()));
        }
    }
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u32>().ok())
        };
        if field("PPid:") == Some(pid) {
            out.push(format!(
                "process {} (child of the test) left behind",
                e.file_name().to_string_lossy()
            ));
        }
        if field("Uid:").is_some_and(|u| uids.contains(&u)) {
            let name = status
                .lines()
                .filter(|l| {
                    ["Name:", "State:", "PPid:", "Uid:", "NSpid:"]
                        .iter()
                        .any(|k| l.starts_with(k))
                })
                .collect::<Vec<_>>()
                .join(" ");
            let cg = std::fs::read_to_string(e.path().join("cgroup")).unwrap_or_default();
            let name = format!("{name} cgroups: {}", cg.replace('\n', " "));
            out.push(format!(
                "process {} ({name}) with a sandbox uid left behind",
                e.file_name().to_string_lossy()
            ));
        }
    }
    out
}

#[test]
fn suites_and_exploits_in_a_real_sandbox_leave_the_machine_clean() {
    let mounts_before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let pool = Pool::start(&Config::default())
        .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let uids = pool.host_uid_range();
    let cgroup = pool.cgroup_name();
    let pool = Arc::new(pool);
    let env = Env {
        sandbox: Some(pool.clone()),
        ..Env::default()
    };
    let mut n = 0;
    let mut failures = Vec::new();
    for (file, doc) in yaml_files(&root().join("fixtures/code/suite"), "") {
        let (k, f) = run_file(&env, &file, &doc, "cases");
        n += k;
        failures.extend(f);
    }
    for (file, doc) in yaml_files(&root().join("fixtures/exploits"), "code.") {
        let (k, f) = run_file(&env, &file, &doc, "exploits");
        n += k;
        failures.extend(f);
    }
    drop(env);
    let pool = Arc::try_unwrap(pool).unwrap_or_else(|_| panic!("pool still shared"));
    drop(pool);
    assert!(n > 0, "no cases found");
    assert!(
        failures.is_empty(),
        "{} of {n} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let left = leftovers(std::process::id(), uids, &cgroup);
    assert!(
        left.is_empty(),
        "the machine is not clean:\n{}",
        left.join("\n")
    );
    let mounts_after = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert_eq!(
        mounts_before, mounts_after,
        "the test's mount table changed"
    );
}
