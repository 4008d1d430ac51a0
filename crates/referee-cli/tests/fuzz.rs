//! `referee fuzz` as a real process: exit codes, the JSON report, the table, and the code
//! example fuzzed through the real sandbox.

mod common;

use common::{fault, referee};
use serde_json::Value;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("referee-fuzz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn a_weak_spec_fails_with_exit_5_and_writes_the_report() {
    let out_path = tmp("substring.json");
    let out = referee()
        .args([
            "fuzz",
            "fixtures/fuzz/weak/substring.yaml",
            "fixtures/fuzz/weak/data.jsonl",
            "-o",
        ])
        .arg(&out_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("answer_listing"), "{table}");
    assert!(table.contains("<- HOLE"));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(r["kind"], "fuzz");
    assert_eq!(r["spec"], "fixtures/fuzz/weak/substring.yaml");
    assert_eq!(r["threshold"], 0.5);
    assert_eq!(r["failed"], true);
    let passed: Vec<&str> = r["families"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["passed"].as_u64() > Some(0))
        .map(|f| f["family"].as_str().unwrap())
        .collect();
    assert_eq!(
        passed,
        ["truncated", "answer_listing", "format_correct_wrong"]
    );
    assert_eq!(r["perturbations"].as_array().unwrap().len(), 6);
}

#[test]
fn a_sound_spec_passes_and_max_rate_gates() {
    let out = referee()
        .args([
            "fuzz",
            "fixtures/fuzz/final_answer.yaml",
            "fixtures/fuzz/weak/data.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
    // A weak spec under a tolerated pass rate of 100%: exit 0; JSON on stdout with --json.
    let out = referee()
        .args([
            "fuzz",
            "fixtures/fuzz/weak/last_number.yaml",
            "fixtures/fuzz/weak/data.jsonl",
            "--max-rate",
            "1",
            "--json",
            "--no-perturb",
            "--families",
            "answer_listing,exploits",
            "--per-row",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["failed"], false);
    let fams = r["families"].as_array().unwrap();
    assert_eq!(fams.len(), 2);
    assert_eq!(fams[1]["family"], "exploits:numeric");
    assert_eq!(fams[0]["variants"], 12, "2 per row, 6 rows");
    assert!(r["perturbations"].as_array().unwrap().is_empty());
}

#[test]
fn usage_errors() {
    let out = referee()
        .args([
            "fuzz",
            "fixtures/fuzz/final_answer.yaml",
            "fixtures/fuzz/weak/data.jsonl",
            "--families",
            "nope",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unknown fuzz family `nope`"), "{err}");
    let out = referee()
        .args([
            "fuzz",
            "fixtures/specs/broken.yaml",
            "fixtures/fuzz/weak/data.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a spec that does not compile");
    let out = referee()
        .args(["fuzz", "fixtures/fuzz/final_answer.yaml", "missing.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "unreadable data");
}

/// The code example through the real sandbox: every variant runs the row's tests; none passes.
#[test]
fn code_example_finds_nothing_in_the_sandbox() {
    let out = referee()
        .args([
            "fuzz",
            "examples/code/spec.yaml",
            "examples/code/rollouts.jsonl",
            "--per-row",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{r:#}");
    let fams = r["families"].as_array().unwrap();
    let exploits = fams
        .iter()
        .find(|f| f["family"] == "exploits:code_exec")
        .unwrap();
    assert!(exploits["variants"].as_u64().unwrap() >= 16);
    assert!(fams.iter().all(|f| f["passed"] == 0));
    // The same variants really ran: at threshold -1 every variant with a reward passes, and
    // a sandbox failure would have none (an error has no reward without `on_error`).
    let out = referee()
        .args([
            "fuzz",
            "examples/code/spec.yaml",
            "examples/code/rollouts.jsonl",
            "--per-row",
            "2",
            "--families",
            "exploits",
            "--threshold=-1",
            "--examples",
            "1000",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &r["families"][0];
    assert_eq!(f["passed"], f["variants"], "{f:#}");
    assert!(f["examples"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["status"] == "ok" && e["reward"] == 0.0));
}

/// A judge without prefilter against a real HTTP endpoint that gives every answer full marks:
/// the content-free families pass, and the variants are judged concurrently (one batch).
#[test]
fn a_judge_without_prefilter_over_http() {
    let judge = fault(&[
        "--mode",
        "ok",
        "--delay",
        "0.5",
        "--content",
        r#"{"steps": [{"description": "check", "conclusion": "perfect"}], "result": 10}"#,
    ]);
    let start = std::time::Instant::now();
    let out = referee()
        .args([
            "fuzz",
            "fixtures/fuzz/weak/judge_no_prefilter.yaml",
            "fixtures/fuzz/weak/data.jsonl",
            "--families",
            "empty,master_key,judge_injection",
            "--per-row",
            "2",
            "--no-perturb",
            "--json",
            "--judge-cache",
            "off",
            "--judge",
            &judge.1,
        ])
        .output()
        .unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in r["families"].as_array().unwrap() {
        assert_eq!(f["variants"], 12, "{f:#}");
        assert_eq!(f["passed"], 12, "{f:#}");
    }
    // 36 calls of 0.5 s each: 18 s one after another.
    assert!(secs < 9.0, "judge calls were not concurrent: {secs:.1}s");
}
