//! `referee score` on Parquet, run as a real process: the same rows give the same results as
//! the JSONL path, whichever way they go in and out, and written by Rust or by pyarrow.

mod common;

use common::{referee, root};
use referee_core::io::parquet::{write_rows, RowReader};
use serde_json::{json, Value};
use std::fs::File;
use std::path::{Path, PathBuf};

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("parquet-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The rows of a shipped JSONL file that are JSON (the examples hold a garbage line on
/// purpose; a Parquet file cannot).
fn json_rows(path: &str) -> Vec<Value> {
    std::fs::read_to_string(root().join(path))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn jsonl(rows: &[Value]) -> String {
    let mut s = String::new();
    for r in rows {
        s.push_str(&r.to_string());
        s.push('\n');
    }
    s
}

fn write_parquet(path: &Path, rows: &[Value]) {
    write_rows(File::create(path).unwrap(), rows).unwrap();
}

/// The JSONL path's results for `rows`, given on stdin.
fn score_jsonl(spec: &str, rows: &[Value], args: &[&str]) -> Vec<Value> {
    let out = referee()
        .args(["score", spec, "-q"])
        .args(args)
        .write_stdin(jsonl(rows))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn score_file(spec: &str, input: &Path, output: &Path, args: &[&str]) {
    let out = referee()
        .args(["score", spec, "-q"])
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read_parquet(path: &Path) -> (Vec<String>, Vec<Value>) {
    let mut r = RowReader::open(path, 1024).unwrap();
    let cols = r
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut rows = Vec::new();
    while let Some(b) = r.read_rows().unwrap() {
        rows.extend(b);
    }
    (cols, rows)
}

/// Checks a Parquet results file against the JSONL results of the same rows, column by column.
fn assert_same(parquet: &[Value], jsonl: &[Value], components: &[&str]) {
    assert_eq!(parquet.len(), jsonl.len(), "one result per input row");
    let f = |v: Option<&Value>| v.and_then(Value::as_f64);
    for (i, (p, j)) in parquet.iter().zip(jsonl).enumerate() {
        let id = match &j["id"] {
            Value::Number(n) => json!(n.as_i64().unwrap()),
            other => other.clone(),
        };
        assert_eq!(p["id"], id, "row {i} id");
        assert_eq!(f(p.get("reward")), f(j.get("reward")), "row {i} reward");
        assert_eq!(p["status"], j["status"], "row {i} status");
        for k in ["reason", "message", "line", "group_flag"] {
            assert_eq!(
                p.get(k).unwrap_or(&Value::Null),
                j.get(k).unwrap_or(&Value::Null),
                "row {i} {k}"
            );
        }
        for k in ["advantage", "group_reward"] {
            assert_eq!(f(p.get(k)), f(j.get(k)), "row {i} {k}");
        }
        for c in components {
            assert_eq!(f(p.get(*c)), f(j["components"].get(*c)), "row {i} {c}");
        }
        match p.get("trace").and_then(Value::as_str) {
            Some(t) => assert_eq!(
                serde_json::from_str::<Value>(t).unwrap(),
                j["trace"],
                "row {i} trace"
            ),
            None => assert!(j.get("trace").is_none(), "row {i} lost its trace"),
        }
    }
}

#[test]
fn verl_rows_written_by_rust_score_like_jsonl_with_groups_and_traces() {
    let d = scratch("verl");
    let rows = json_rows("examples/gsm8k/samples.jsonl");
    let input = d.join("gsm8k.parquet");
    write_parquet(&input, &rows);
    let out = d.join("results.parquet");
    let spec = "examples/grpo-group/spec.yaml";
    score_file(spec, &input, &out, &["--explain"]);
    let (cols, got) = read_parquet(&out);
    assert_eq!(
        cols,
        [
            "id",
            "reward",
            "status",
            "reason",
            "message",
            "line",
            "correct",
            "overlong",
            "advantage",
            "group_flag",
            "group_reward",
            "trace"
        ]
    );
    let want = score_jsonl(spec, &rows, &["--explain"]);
    assert_same(&got, &want, &["correct", "overlong"]);
    // verl's ids are `extra_info.index` integers, and stay integers.
    assert_eq!(got[3]["id"], json!(3));
    assert!(got.iter().any(|r| r["advantage"].as_f64().is_some()));
    assert!(
        got.iter().any(|r| r["status"] == "error"),
        "the row without a gold"
    );
}

#[test]
fn parquet_in_jsonl_out_is_the_jsonl_run_byte_for_byte() {
    let d = scratch("to-jsonl");
    let rows = json_rows("examples/gsm8k/samples.jsonl");
    let input = d.join("gsm8k.parquet");
    write_parquet(&input, &rows);
    let out = d.join("results.jsonl");
    score_file("examples/gsm8k/spec.yaml", &input, &out, &[]);
    let want = referee()
        .args(["score", "examples/gsm8k/spec.yaml", "-q"])
        .write_stdin(jsonl(&rows))
        .output()
        .unwrap()
        .stdout;
    assert_eq!(std::fs::read(&out).unwrap(), want);
}

#[test]
fn jsonl_in_parquet_out_keeps_error_rows_in_place() {
    let d = scratch("from-jsonl");
    let out = d.join("results.parquet");
    score_file(
        "examples/math/spec.yaml",
        &root().join("examples/math/samples.jsonl"),
        &out,
        &[],
    );
    let (_, got) = read_parquet(&out);
    let text = std::fs::read_to_string(root().join("examples/math/samples.jsonl")).unwrap();
    let want: Vec<Value> = String::from_utf8(
        referee()
            .args(["score", "examples/math/spec.yaml", "-q"])
            .write_stdin(text.clone())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect();
    assert_eq!(got.len(), text.lines().count());
    // String ids from JSONL are written as text.
    assert_eq!(got[0]["id"], "m1");
    assert_same(&got, &want, &["accuracy"]);
}

#[test]
fn parquet_input_without_o_writes_parquet_to_stdout() {
    let d = scratch("stdout");
    let input = d.join("rows.parquet");
    write_parquet(
        &input,
        &[json!({"id": "a", "completion": "x", "label": "x"})],
    );
    let out = referee()
        .args(["score", "fixtures/specs/label_eq.yaml", "-q"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"PAR1") && out.stdout.ends_with(b"PAR1"));
    let path = d.join("out.parquet");
    std::fs::write(&path, &out.stdout).unwrap();
    let (_, rows) = read_parquet(&path);
    assert_eq!(rows[0]["reward"], json!(1.0));
    assert_eq!(rows[0]["exact"], json!(1.0));
}

#[test]
fn unmappable_and_conversational_rows_match_jsonl() {
    let d = scratch("unmappable");
    // Keys missing from some rows: pyarrow and arrow-json make them null columns, which read
    // back as missing again.
    let rows = vec![
        json!({"id": "ok", "prompt": [{"role": "user", "content": "q"}],
               "completion": [{"role": "assistant", "content": "a"}], "label": "a"}),
        json!({"id": "no-completion", "prompt": [{"role": "user", "content": "q"}],
               "label": "a"}),
        json!({"id": "wrong", "prompt": [{"role": "user", "content": "q"}],
               "completion": [{"role": "assistant", "content": "b"}], "label": "a"}),
        json!({"id": "no-label",
               "completion": [{"role": "assistant", "content": "a"}]}),
    ];
    let input = d.join("trl.parquet");
    write_parquet(&input, &rows);
    let out = d.join("results.parquet");
    let spec = "fixtures/specs/label_eq.yaml";
    score_file(spec, &input, &out, &["--format", "trl"]);
    let (_, got) = read_parquet(&out);
    let want = score_jsonl(spec, &rows, &["--format", "trl"]);
    assert_same(&got, &want, &["exact"]);
    let statuses: Vec<&str> = got.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ok", "error", "ok", "error"]);
    assert_eq!(got[1]["reason"], "missing_field");
    assert_eq!(got[1]["line"], 2);
    assert_eq!(got[0]["reward"], json!(1.0));
    assert_eq!(got[2]["reward"], json!(0.0));
}

#[test]
fn pyarrow_written_fixture_scores_like_jsonl() {
    // fixtures/parquet/gsm8k_verl.parquet: the gsm8k example's JSON rows written by pyarrow
    // (snappy, its default), as verl's preprocessing scripts write them
    // (scripts/make_parquet_fixtures.py).
    let d = scratch("fixture");
    let out = d.join("results.parquet");
    let spec = "examples/grpo-group/spec.yaml";
    score_file(
        spec,
        &root().join("fixtures/parquet/gsm8k_verl.parquet"),
        &out,
        &[],
    );
    let (_, got) = read_parquet(&out);
    let want = score_jsonl(spec, &json_rows("examples/gsm8k/samples.jsonl"), &[]);
    assert_same(&got, &want, &["correct", "overlong"]);
}

/// A Python with pyarrow: `REFEREE_PYARROW_PYTHON` (scripts/test.sh points it at its venv), else
/// `python3`.
fn pyarrow_python() -> Option<String> {
    let py = std::env::var("REFEREE_PYARROW_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", "import pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

#[test]
fn pyarrow_written_zstd_file_with_maps_scores_like_jsonl() {
    let Some(py) = pyarrow_python() else {
        eprintln!("SKIPPED pyarrow_written_zstd_file_with_maps_scores_like_jsonl: pyarrow is not importable (set REFEREE_PYARROW_PYTHON to a Python that has it)");
        return;
    };
    let d = scratch("pyarrow");
    let rows = json_rows("examples/gsm8k/samples.jsonl");
    let src = d.join("rows.jsonl");
    std::fs::write(&src, jsonl(&rows)).unwrap();
    let input = d.join("rows.parquet");
    // A map column (pyarrow writes dict columns as structs unless told), zstd, small row groups.
    let script = r#"
import json, sys
import pyarrow as pa, pyarrow.parquet as pq
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    r["tags"] = [("split", "test"), ("idx", str(r.get("extra_info", {}).get("index")))]
t = pa.Table.from_pylist(rows)
t = t.set_column(t.schema.get_field_index("tags"), "tags",
                 pa.array([r["tags"] for r in rows], type=pa.map_(pa.string(), pa.string())))
pq.write_table(t, sys.argv[2], compression="zstd", row_group_size=4)
pq.write_table(t, sys.argv[2] + ".gz.parquet", compression="gzip")
"#;
    let st = std::process::Command::new(&py)
        .args(["-c", script])
        .arg(&src)
        .arg(&input)
        .status()
        .unwrap();
    assert!(st.success());
    let mut r = RowReader::open(&input, 100).unwrap();
    let first = r.read_rows().unwrap().unwrap();
    assert_eq!(first.len(), rows.len(), "row groups of 4 read as one batch");
    assert_eq!(first[0]["tags"], json!({"split": "test", "idx": "0"}));
    assert_eq!(first[0]["prompt"], rows[0]["prompt"]);
    assert_eq!(first[0]["reward_model"], rows[0]["reward_model"]);
    let out = d.join("results.parquet");
    let spec = "examples/grpo-group/spec.yaml";
    score_file(spec, &input, &out, &["--explain"]);
    let (_, got) = read_parquet(&out);
    let want = score_jsonl(spec, &rows, &["--explain"]);
    assert_same(&got, &want, &["correct", "overlong"]);
    // A codec this build leaves out is an I/O error that says what it reads, not a crash.
    let out = referee()
        .args(["score", spec, "-q"])
        .arg(d.join("rows.parquet.gz.parquet"))
        .arg("-o")
        .arg(d.join("gz.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("uncompressed, snappy and zstd"), "{err}");
}

#[test]
fn step_rewards_reach_jsonl_and_parquet_alike() {
    let d = scratch("steps");
    let spec = d.join("spec.yaml");
    std::fs::write(
        &spec,
        "type: each_step\nname: process\nsteps: {split: numbered}\n\
         grader: {type: regex, mode: forbid, pattern: wrong}\n",
    )
    .unwrap();
    let rows = vec![
        json!({"id": "a", "item": {}, "sample": {"output_text": "1. fine\n2. wrong here"}}),
        json!({"id": "b", "item": {}, "sample": {"output_text": ""}}),
        json!({"id": "c", "nothing": true}),
    ];
    let spec = spec.to_str().unwrap();
    let want = score_jsonl(spec, &rows, &[]);
    assert_eq!(
        want[0]["step_rewards"],
        json!([
            {"start": 0, "end": 7, "value": 1.0, "component": "process"},
            {"start": 8, "end": 21, "value": 0.0, "component": "process"}
        ])
    );
    assert_eq!(want[1]["step_rewards"], json!([]));
    assert!(
        want[2].get("step_rewards").is_none(),
        "an input error has no steps"
    );
    let input = d.join("rows.jsonl");
    std::fs::write(&input, jsonl(&rows)).unwrap();
    let out = d.join("results.parquet");
    score_file(spec, &input, &out, &[]);
    let (cols, got) = read_parquet(&out);
    assert!(cols.contains(&"step_rewards".to_string()), "{cols:?}");
    assert_same(&got, &want, &["process"]);
    for (p, j) in got.iter().zip(&want) {
        assert_eq!(p.get("step_rewards"), j.get("step_rewards"));
    }
}
