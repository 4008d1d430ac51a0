//! The judge examples (`examples/rubric`, `examples/pairwise`, `examples/process-judge`) through the real CLI against a
//! real llama-server (the tiny model, started by `scripts/judge_server.py`), as their READMEs
//! run them. The tiny model's verdicts are gibberish, so the checks are on what must hold
//! whatever the judge says: prefiltered rows score 0 without a call, the rest are judged with
//! the right number of calls, and nothing is a silent 0.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Server(Value);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("python3")
            .arg(root().join("scripts/judge_server.py"))
            .args(["stop", "--pid", &self.0["pid"].to_string()])
            .status();
    }
}

fn server() -> Server {
    server_with("tiny", &[])
}

fn server_with(model: &str, flags: &[&str]) -> Server {
    let out = std::process::Command::new("python3")
        .arg(root().join("scripts/judge_server.py"))
        .args(["start", "--model", model])
        .args(flags)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    Server(serde_json::from_str(s.lines().last().unwrap()).unwrap())
}

fn score(example: &str, s: &Server) -> Vec<Value> {
    run(
        &format!("examples/{example}/spec.yaml"),
        &format!("examples/{example}/rollouts.jsonl"),
        s,
    )
}

/// `referee score SPEC ROWS` against the server, no cache; the results.
fn run(spec: &str, rows: &str, s: &Server) -> Vec<Value> {
    let out = Command::cargo_bin("referee")
        .unwrap()
        .current_dir(root())
        .args(["score", spec, rows])
        .args(["--judge", s.0["base_url"].as_str().unwrap()])
        .args(["--judge-model", "judge", "--judge-cache", "off"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("judge: "),
        "the summary reports judge usage: {err}"
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn check(rows: &[Value], prefiltered: &[&str], calls: u64) {
    for r in rows {
        let id = r["id"].as_str().unwrap();
        let u = &r["usage"];
        if prefiltered.contains(&id) {
            assert_eq!(
                (r["reward"].as_f64(), r["status"].as_str()),
                (Some(0.0), Some("ok")),
                "{r}"
            );
            assert_eq!(u["judge_calls"], 0, "{r}");
        } else {
            assert_eq!(u["judge_calls"], calls, "{r}");
            match r["status"].as_str() {
                Some("ok") => assert!(
                    r["reward"]
                        .as_f64()
                        .is_some_and(|v| (0.0..=1.0).contains(&v)),
                    "{r}"
                ),
                // A gibberish judge may ramble past max_tokens: a stated failure, not a score.
                _ => assert_eq!(r["reason"], "judge_unparseable", "{r}"),
            }
        }
    }
}

#[test]
fn the_rubric_and_pairwise_examples_run_against_a_real_server() {
    let s = server();
    let rubric = score("rubric", &s);
    assert_eq!(rubric.len(), 6);
    // Five criteria, four per call: two calls per judged row.
    check(&rubric, &["q1-c", "q1-d", "q2-b"], 2);
    let pairwise = score("pairwise", &s);
    assert_eq!(pairwise.len(), 5);
    // Both orders: two calls per judged row.
    check(&pairwise, &["p1-c", "p2-b"], 2);
}

#[test]
fn the_step_judge_example_runs_against_a_real_server() {
    let s = server();
    let rows = score("process-judge", &s);
    assert_eq!(rows.len(), 5);
    // One call per judged solution, all its steps in it; the gate (a wrong answer), the
    // policy's own verdict line and a master key score 0 without one.
    check(&rows, &["j3", "j4", "j5"], 1);
    for r in rows
        .iter()
        .filter(|r| r["status"] == "ok" && r["usage"]["judge_calls"] == 1)
    {
        assert!(!r["step_rewards"].as_array().unwrap().is_empty(), "{r}");
    }
}

/// OpenAI's `text_similarity` with `cosine`, the grader file unchanged, and the set-to-set
/// findings spec, through the CLI against llama-server's `/v1/embeddings` (SmolLM2, mean
/// pooling). Real embeddings have no fixed scale, so the checks are on order and structure.
#[test]
fn the_similarity_examples_run_against_real_embeddings() {
    let s = server_with("smol", &["--embedding"]);
    let rows = "examples/similarity/rows.jsonl";
    let reward = |rows: &[Value], id: &str| -> f64 {
        let r = rows.iter().find(|r| r["id"] == id).unwrap();
        assert_eq!(r["status"], "ok", "{r}");
        r["reward"].as_f64().unwrap()
    };
    let cos = run("examples/similarity/grader.json", rows, &s);
    assert!((reward(&cos, "same") - 1.0).abs() < 1e-4, "{cos:?}");
    assert!(reward(&cos, "close") > reward(&cos, "unrelated"), "{cos:?}");
    assert_eq!(reward(&cos, "empty"), 0.0);
    let empty = cos.iter().find(|r| r["id"] == "empty").unwrap();
    assert_eq!(empty["usage"]["judge_calls"], 0, "{empty}");
    let set = run("examples/similarity/findings.yaml", rows, &s);
    assert!((reward(&set, "same") - 1.0).abs() < 1e-9, "{set:?}");
    // One finding repeated three times is one unit: precision 1, recall 1/2.
    assert!(
        (reward(&set, "repeated") - 2.0 / 3.0).abs() < 1e-9,
        "{set:?}"
    );
    // Both findings plus two unrelated sentences: precision 1/2, recall 1.
    assert!((reward(&set, "padded") - 2.0 / 3.0).abs() < 1e-9, "{set:?}");
    assert!(reward(&set, "unrelated") < reward(&set, "same"));
}
