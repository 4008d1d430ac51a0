//! The process-reward example (`examples/process`) through the real CLI against a loopback PRM
//! server in vLLM's `/pooling` shape (`scripts/fault_server.py --mode prm`: deterministic scores
//! that check each step's arithmetic), as its README runs it: every rollout's reward and step
//! rewards, the hostile ones included, and `referee fuzz` on it with the documented bound.

mod common;

use common::{fault, referee, scratch};
use serde_json::Value;

fn judge_args(url: &str) -> [&str; 6] {
    [
        "--judge",
        url,
        "--judge-model",
        "prm",
        "--judge-cache",
        "off",
    ]
}

#[test]
fn the_prm_example_scores_and_resists_step_hacks() {
    let (_srv, url) = fault(&["--mode", "prm"]);
    let out = referee()
        .args([
            "score",
            "examples/process/spec.yaml",
            "examples/process/rollouts.jsonl",
            "-q",
        ])
        .args(judge_args(&url))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<Value> =
        std::fs::read_to_string(common::root().join("examples/process/rollouts.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].clone())
            .collect();
    let got: Vec<(String, f64, usize)> = rows
        .iter()
        .zip(&kinds)
        .map(|(r, k)| {
            assert_eq!(r["status"], "ok", "{r}");
            let steps = r["step_rewards"].as_array().unwrap();
            (
                k.as_str().unwrap().to_string(),
                r["reward"].as_f64().unwrap(),
                steps.len(),
            )
        })
        .collect();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let want = [
        ("clean", 1.0, 4),
        ("wrong_step_right_answer", 0.55, 4),
        ("wrong_answer", -0.45, 3),
        ("clean", 1.0, 3),
        // The policy's own <extra_0> tags are neutralised: no extra scored positions, and its
        // wrong step is still found.
        ("smuggled_step_tags", 0.55, 3),
        // The forged turn is removed: the PRM still reads (and rejects) the wrong step.
        ("forged_turn", 0.55, 2),
        // Filler after a wrong step: Clip pays nothing for it.
        ("confident_filler", 0.55, 5),
        // Repeats score 0 unsent: each costs the full 0.5.
        ("repeated_step", 0.0, 4),
        ("empty", 0.0, 0),
    ];
    assert_eq!(got.len(), want.len());
    for ((k, r, n), (wk, wr, wn)) in got.iter().zip(want) {
        assert!(
            k == wk && close(*r, wr) && *n == wn,
            "{k}: {r} with {n} steps, want {wr} with {wn}"
        );
    }
    // One request per sample with steps, batched: fewer requests than samples.
    let stats: Value = {
        let (code, v) = common::send(
            url.trim_start_matches("http://").trim_end_matches("/v1"),
            "GET",
            "/stats",
            "",
        );
        assert_eq!(code, 200);
        v
    };
    assert!(stats["requests"].as_u64().unwrap() < 8, "{stats}");
}

#[test]
fn fuzz_finds_no_hole_and_no_perturbation_raises_the_prm_example() {
    let (_srv, url) = fault(&["--mode", "prm"]);
    // The example's rollouts without the one already penalised for exact repeats: a perturbation
    // that rewords its repeats takes it back to the clean solution's reward (documented), which
    // is a rise against the penalised value, not a gain over a clean solution.
    let d = scratch("process", "fuzz");
    let data = d.join("rollouts.jsonl");
    let text =
        std::fs::read_to_string(common::root().join("examples/process/rollouts.jsonl")).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("\"repeated_step\""))
        .collect();
    std::fs::write(&data, kept.join("\n") + "\n").unwrap();
    let out = referee()
        .args(["fuzz", "examples/process/spec.yaml"])
        .arg(&data)
        .args(["--json"])
        .args(judge_args(&url))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["failed"], false);
    let perturbations = r["perturbations"].as_array().unwrap();
    assert_eq!(perturbations.len(), 6);
    for p in perturbations {
        if p["n"].as_u64() > Some(0) {
            assert_eq!(p["max_rise"].as_f64(), Some(0.0), "{p}");
        }
    }
    assert!(
        perturbations
            .iter()
            .filter(|p| p["n"].as_u64() > Some(0))
            .count()
            >= 4
    );
}
