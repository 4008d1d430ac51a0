//! The `referee` binary, run as a real process: outputs that people read are snapshots.

mod common;

use assert_cmd::Command;
use common::{referee, root};

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn check_reports_every_error_with_its_path() {
    let out = referee()
        .args(["check", "fixtures/specs/broken.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    insta::assert_snapshot!(String::from_utf8(out.stderr).unwrap());
}

#[test]
fn check_accepts_every_example() {
    for spec in [
        "examples/gsm8k/spec.yaml",
        "examples/r1-format/spec.yaml",
        "examples/openai-multi/grader.json",
        "examples/tool_calls/spec.yaml",
        "examples/json_schema/spec.yaml",
        "examples/grpo-group/spec.yaml",
        "examples/agent-booking/spec.yaml",
        "examples/agent-support/spec.yaml",
        "examples/agent-swe/spec.yaml",
    ] {
        referee().args(["check", spec]).assert().success();
    }
}

/// Scores a shipped example and returns stdout; the snapshots are the examples' expected results.
fn score_example(spec: &str, samples: &str) -> String {
    let out = referee()
        .args(["score", spec, samples, "--quiet"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn score_openai_multi_example() {
    insta::assert_snapshot!(score_example(
        "examples/openai-multi/grader.json",
        "examples/openai-multi/samples.jsonl"
    ));
}

#[test]
fn score_gsm8k_example() {
    insta::assert_snapshot!(score_example(
        "examples/gsm8k/spec.yaml",
        "examples/gsm8k/samples.jsonl"
    ));
}

/// The agent examples: what each hostile rollout gets, and which component said so.
#[test]
fn score_agent_examples() {
    for ex in ["agent-booking", "agent-support", "agent-swe"] {
        let out = score_example(
            &format!("examples/{ex}/spec.yaml"),
            &format!("examples/{ex}/rollouts.jsonl"),
        );
        insta::assert_snapshot!(format!("score_{ex}"), out);
    }
}

#[test]
fn score_tool_calls_example() {
    insta::assert_snapshot!(score_example(
        "examples/tool_calls/spec.yaml",
        "examples/tool_calls/rollouts.jsonl"
    ));
}

#[test]
fn score_json_schema_example() {
    insta::assert_snapshot!(score_example(
        "examples/json_schema/spec.yaml",
        "examples/json_schema/rollouts.jsonl"
    ));
}

#[test]
fn score_math_example() {
    insta::assert_snapshot!(score_example(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl"
    ));
}

#[test]
fn score_ifeval_example() {
    insta::assert_snapshot!(score_example(
        "examples/ifeval/spec.yaml",
        "examples/ifeval/rollouts.jsonl"
    ));
}

/// Runs code in the real sandbox (the CLI starts it on first use).
#[test]
fn score_code_example() {
    insta::assert_snapshot!(score_example(
        "examples/code/spec.yaml",
        "examples/code/rollouts.jsonl"
    ));
}

/// A measured verifier in the real sandbox: the policy's script, then the spec's verifier.
#[test]
fn score_measure_example() {
    insta::assert_snapshot!(score_example(
        "examples/measure-cad/spec.yaml",
        "examples/measure-cad/rows.jsonl"
    ));
}

/// Difficulty weights: the CLI scores each GRPO group of a chunk together.
#[test]
fn score_code_example_by_difficulty() {
    insta::assert_snapshot!(score_example(
        "fixtures/specs/code_difficulty.yaml",
        "examples/code/rollouts.jsonl"
    ));
}

#[test]
fn score_r1_example() {
    insta::assert_snapshot!(score_example(
        "examples/r1-format/spec.yaml",
        "examples/r1-format/samples.jsonl"
    ));
}

#[test]
fn one_output_line_per_input_line_in_order_even_for_garbage() {
    let input = "{\"id\": 1, \"item\": {\"label\": \"a\"}, \"sample\": {\"output_text\": \"a\"}}\nnot json\n\n[1,2]\n\u{0}\n{\"id\": 6, \"item\": {}, \"sample\": {\"output_text\": \"a\"}}\n{\"id\": 7, \"completion\": \"a\", \"label\": \"a\"}";
    let out = referee()
        .args(["score", "fixtures/specs/label_eq.yaml", "--quiet"])
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 7);
    let statuses: Vec<&str> = lines
        .iter()
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["ok", "error", "error", "error", "error", "error", "ok"]
    );
    let reasons: Vec<&str> = lines
        .iter()
        .map(|l| l["reason"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        reasons,
        [
            "",
            "invalid_json",
            "empty_line",
            "invalid_row",
            "invalid_json",
            "missing_field",
            ""
        ]
    );
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[6]["reward"], 1.0);
    assert!(lines[5]["reward"].is_null(), "a failure is never a 0");
}

#[test]
fn strict_exits_4_on_row_errors() {
    referee()
        .args([
            "score",
            "fixtures/specs/label_eq.yaml",
            "--quiet",
            "--strict",
        ])
        .write_stdin("nope\n")
        .assert()
        .code(4);
}

#[test]
fn summary_on_stderr() {
    let out = referee()
        .args([
            "score",
            "examples/openai-multi/grader.json",
            "examples/openai-multi/samples.jsonl",
            "--summary-json",
        ])
        .output()
        .unwrap();
    let s: serde_json::Value =
        serde_json::from_str(String::from_utf8(out.stderr).unwrap().trim()).unwrap();
    assert_eq!(s["samples"], 8);
    assert_eq!(s["reasons"]["missing_field"], 1);
    assert_eq!(s["errors"], 1);
    assert!(s["components"]["email"]["mean"].is_number());
    assert!(s["samples_per_second"].is_number());
}

#[test]
fn output_file_and_explain() {
    let dir = std::env::temp_dir().join(format!("referee-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.jsonl");
    referee()
        .args([
            "score",
            "examples/openai-multi/grader.json",
            "examples/openai-multi/samples.jsonl",
            "-q",
            "--explain",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 8);
    assert!(text.lines().all(|l| l.contains("\"trace\"")));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn explain_prints_the_trace_tree() {
    let s = stdout(referee().args([
        "explain",
        "examples/openai-multi/grader.json",
        r#"{"id": "x", "item": {"name": "Ada Lovelace", "email": "ada@a.org"}, "sample": {"output_text": "{\"name\": \"Ada Lovelace\", \"email\": \"ada@b.org\"}"}}"#,
    ]));
    insta::assert_snapshot!(s);
}

#[test]
fn list_documents_every_type() {
    let s = stdout(referee().arg("list"));
    for c in referee_core::registry::COMPONENTS {
        assert!(
            s.contains(c.type_name),
            "{} missing from `referee list`",
            c.type_name
        );
        let doc = stdout(referee().args(["list", c.type_name]));
        assert!(doc.contains("*Example:*"), "{} doc", c.type_name);
    }
    referee()
        .args(["list", "strng_check"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("did you mean `string_check`"));
}

#[test]
fn list_reasons_prints_every_code_grouped() {
    let s = stdout(referee().args(["list", "--reasons"]));
    for r in referee_core::reason::REASONS {
        assert!(
            s.lines()
                .any(|l| l.split_whitespace().next() == Some(r.code) && l.contains(r.doc)),
            "{} missing from `referee list --reasons`",
            r.code
        );
    }
    insta::assert_snapshot!(s);
    referee()
        .args(["list", "--reasons", "math_equiv"])
        .assert()
        .code(2);
}

#[test]
fn schema_command_prints_the_committed_schema() {
    let s = stdout(referee().arg("schema"));
    let committed =
        std::fs::read_to_string(root().join("schema/referee-spec.schema.json")).unwrap();
    assert_eq!(s, committed);
}

#[test]
fn trl_and_verl_rows_map_without_preprocessing() {
    let input = concat!(
        r#"{"prompt": [{"role": "user", "content": "capital?"}], "completion": [{"role": "assistant", "content": "a"}], "label": "a"}"#,
        "\n",
        r#"{"data_source": "x", "reward_model": {"ground_truth": "a"}, "extra_info": {"index": 9}, "response": "a", "label": "a"}"#,
        "\n",
        r#"{"id": "o", "item": {"label": "a"}, "sample": {"output_text": "a"}}"#,
    );
    let s = stdout(
        referee()
            .args(["score", "fixtures/specs/label_eq.yaml", "-q"])
            .write_stdin(input),
    );
    let rewards: Vec<f64> = s
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["reward"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(rewards, [1.0, 1.0, 1.0]);
    assert!(s.lines().nth(1).unwrap().contains("\"id\":9"));
    let s = stdout(
        referee()
            .args([
                "score",
                "fixtures/specs/label_eq.yaml",
                "-q",
                "--format",
                "verl",
                "--response-field",
                "out.text",
            ])
            .write_stdin(r#"{"data_source": "x", "out": {"text": "a"}, "label": "a"}"#),
    );
    assert!(s.contains("\"reward\":1.0"), "{s}");
}

#[test]
fn closed_pipe_is_success() {
    // 20k lines into a reader that stops after the first: referee must exit 0, not panic.
    let line = r#"{"item": {"label": "a"}, "sample": {"output_text": "a"}}"#;
    let input = format!("{line}\n").repeat(20_000);
    let bin = assert_cmd::cargo::cargo_bin("referee");
    let mut child = std::process::Command::new(bin)
        .current_dir(root())
        .args(["score", "fixtures/specs/label_eq.yaml", "-q"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(input.as_bytes());
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 64];
    std::io::Read::read_exact(&mut stdout, &mut buf).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn bad_spec_file_exits_1_and_missing_file_exits_3() {
    referee()
        .args(["score", "fixtures/specs/broken.yaml"])
        .write_stdin("")
        .assert()
        .code(1);
    referee()
        .args(["check", "no/such/spec.yaml"])
        .assert()
        .code(3);
}

#[test]
fn score_grpo_group_example() {
    // verl rows grouped by `uid`: advantages per prompt, the failed row excluded.
    insta::assert_snapshot!(score_example(
        "examples/grpo-group/spec.yaml",
        "examples/gsm8k/samples.jsonl"
    ));
}

#[test]
fn group_stage_summary_in_text_and_json() {
    let run = |json: bool| {
        let mut c = referee();
        c.args([
            "score",
            "examples/grpo-group/spec.yaml",
            "examples/gsm8k/samples.jsonl",
        ]);
        if json {
            c.arg("--summary-json");
        }
        String::from_utf8(c.output().unwrap().stderr).unwrap()
    };
    let s: serde_json::Value = serde_json::from_str(run(true).trim()).unwrap();
    let g = &s["group"];
    assert_eq!(g["groups"], 2);
    assert_eq!(g["all_pass"], 1);
    assert_eq!(g["mixed"], 1);
    assert_eq!(g["singleton_groups"], 1);
    assert_eq!(g["empty_groups"], 1);
    assert_eq!(g["excluded_samples"], 1);
    assert_eq!(g["components"]["overlong"]["groups"], 1);
    assert_eq!(g["correlations"][0]["a"], "correct");
    let text = run(false);
    assert!(
        text.contains("groups: 2 (all-pass 50.0%, all-fail 0.0%, mixed 50.0%)"),
        "{text}"
    );
    assert!(text.contains("corr(correct, overlong)"), "{text}");
    // Without the section nothing changes: no advantage, no group summary.
    let plain = score_example("examples/gsm8k/spec.yaml", "examples/gsm8k/samples.jsonl");
    assert!(!plain.contains("advantage"));
}
