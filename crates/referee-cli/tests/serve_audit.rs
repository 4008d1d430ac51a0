//! The audits over HTTP (`POST /v1/fuzz`, `/v1/eval`, `/v1/compare`) against a real
//! `referee serve` process on loopback: each report is the CLI's `--json` report on the same
//! data and options (the report's spec name aside: the server names a program, the CLI a file),
//! bad input is a 4xx with the reason, the request limits of `/v1/score` apply, and a long fuzz
//! does not hold up other requests.

mod common;

use common::{post, root, send, serve, Server};
use serde_json::{json, Value};
use std::process::Command;
use std::time::{Duration, Instant};

/// The specs the tests audit, registered by name.
fn server() -> Server {
    serve(&[
        "--spec",
        "last_number=fixtures/fuzz/weak/last_number.yaml",
        "--spec",
        "substring=fixtures/fuzz/weak/substring.yaml",
        "--spec",
        "step_count=fixtures/fuzz/weak/step_count.yaml",
        "--spec",
        "math=fixtures/eval/math.yaml",
        "--spec",
        "lenient=fixtures/eval/lenient.yaml",
    ])
}

fn rows(path: &str) -> Vec<Value> {
    std::fs::read_to_string(root().join(path))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The CLI's JSON report (exit codes 0, or 5 for a fuzz that found holes).
fn cli(args: &[&str]) -> Value {
    let out = Command::new(assert_cmd::cargo::cargo_bin("referee"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 5)),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The server's report equals the CLI's once `field` (what each calls the spec) is set the same.
fn same(mut server: Value, cli: &Value, fields: &[(&str, Value)]) {
    for (f, v) in fields {
        assert_eq!(server[*f], *v, "{f}");
        server[*f] = cli[*f].clone();
    }
    assert_eq!(&server, cli);
}

#[test]
fn fuzz_reports_are_the_clis() {
    let srv = server();
    let data = rows("fixtures/fuzz/weak/data.jsonl");
    // A registered program with every default: the report names the program.
    for name in ["last_number", "step_count"] {
        let path = format!("fixtures/fuzz/weak/{name}.yaml");
        let want = cli(&["fuzz", &path, "fixtures/fuzz/weak/data.jsonl", "--json"]);
        let (s, got) = post(
            &srv.addr,
            "/v1/fuzz",
            &json!({"program": name, "rows": data}),
        );
        assert_eq!(s, 200, "{got}");
        assert_eq!(got["failed"], true);
        same(got, &want, &[("spec", json!(name))]);
    }
    // An inline spec with options: the report's spec is null.
    let text = std::fs::read_to_string(root().join("fixtures/fuzz/weak/substring.yaml")).unwrap();
    let want = cli(&[
        "fuzz",
        "fixtures/fuzz/weak/substring.yaml",
        "fixtures/fuzz/weak/data.jsonl",
        "--json",
        "--families",
        "answer_listing,truncated,exploits",
        "--per-row",
        "3",
        "--seed",
        "9",
        "--no-perturb",
        "--examples",
        "1",
        "--rows",
        "4",
        "--max-rate",
        "0.4",
    ]);
    let (s, got) = post(
        &srv.addr,
        "/v1/fuzz",
        &json!({"spec": text, "rows": data, "options": {
            "families": ["answer_listing", "truncated", "exploits"], "per_row": 3, "seed": 9,
            "perturb": false, "examples": 1, "rows": 4, "max_rate": 0.4}}),
    );
    assert_eq!(s, 200, "{got}");
    assert!(got["perturbations"].as_array().unwrap().is_empty());
    same(got, &want, &[("spec", Value::Null)]);
}

#[test]
fn eval_and_compare_reports_are_the_clis() {
    let srv = server();
    let cases: [(&str, &[&str], Value); 4] = [
        ("fixtures/eval/rewardbench.jsonl", &[], json!({})),
        ("fixtures/eval/rewardbench2.jsonl", &[], json!(null)),
        (
            "fixtures/eval/scores.jsonl",
            &["--gold", "human", "--bootstrap", "200", "--seed", "7"],
            json!({"gold": "human", "bootstrap": 200, "seed": 7}),
        ),
        (
            "fixtures/eval/best_of_n.jsonl",
            &["--correct", "correct"],
            json!({"correct": "correct"}),
        ),
    ];
    for (data, flags, options) in cases {
        let mut args = vec!["eval", "fixtures/eval/math.yaml", data, "-q"];
        args.extend(flags);
        let want = cli(&args);
        let (s, got) = post(
            &srv.addr,
            "/v1/eval",
            &json!({"program": "math", "rows": rows(data), "options": options}),
        );
        assert_eq!(s, 200, "{data}: {got}");
        same(got, &want, &[("spec", json!("math"))]);
    }
    // The shipped example, as an inline spec.
    let spec = std::fs::read_to_string(root().join("examples/math/spec.yaml")).unwrap();
    let want = cli(&[
        "eval",
        "examples/math/spec.yaml",
        "examples/eval/rewardbench.jsonl",
        "-q",
    ]);
    let (s, got) = post(
        &srv.addr,
        "/v1/eval",
        &json!({"spec": spec, "rows": rows("examples/eval/rewardbench.jsonl")}),
    );
    assert_eq!(s, 200, "{got}");
    same(got, &want, &[("spec", Value::Null)]);

    let data = rows("fixtures/eval/compare.jsonl");
    let want = cli(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/math.yaml",
        "fixtures/eval/compare.jsonl",
        "-q",
        "--subset-field",
        "correct",
    ]);
    let (s, got) = post(
        &srv.addr,
        "/v1/compare",
        &json!({"program": "lenient", "program_b": "math", "rows": data,
                "options": {"subset_field": "correct"}}),
    );
    assert_eq!(s, 200, "{got}");
    same(got, &want, &[("a", json!("lenient")), ("b", json!("math"))]);
    let want = cli(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/compare.jsonl",
        "-q",
        "--label",
        "correct",
        "--threshold",
        "0.9",
    ]);
    let (s, got) = post(
        &srv.addr,
        "/v1/compare",
        &json!({"program": "lenient", "rows": data,
                "options": {"label": "correct", "threshold": 0.9}}),
    );
    assert_eq!(s, 200, "{got}");
    assert_eq!(got["b"], "label:correct");
    same(got, &want, &[("a", json!("lenient"))]);
}

#[test]
fn bad_input_is_refused_with_the_reason() {
    let srv = serve(&[
        "--spec",
        "math=fixtures/eval/math.yaml",
        "--max-batch",
        "20",
        "--max-body-bytes",
        "20000",
    ]);
    let data = rows("fixtures/fuzz/weak/data.jsonl");
    let cases = [
        (
            "/v1/fuzz",
            json!({"program": "math", "rows": data, "options": {"per_rows": 2}}),
            400,
            "unknown field `per_rows`",
        ),
        (
            "/v1/fuzz",
            json!({"program": "math", "rows": data, "options": {"families": ["nope"]}}),
            400,
            "nope",
        ),
        (
            "/v1/fuzz",
            json!({"program": "math", "rows": [{"nothing": 1}]}),
            400,
            "no rows to fuzz",
        ),
        (
            "/v1/eval",
            json!({"program": "math", "rows": data, "options": {"confidence": 2}}),
            400,
            "--confidence must be between 0 and 1",
        ),
        (
            "/v1/eval",
            json!({"program": "math", "rows": data, "options": {"format": "csv"}}),
            400,
            "unknown eval format `csv`",
        ),
        (
            "/v1/eval",
            json!({"program": "math", "rows": [{"foo": 1}]}),
            400,
            "cannot tell the data format",
        ),
        (
            "/v1/compare",
            json!({"program": "math", "rows": data}),
            400,
            "a label field",
        ),
        (
            "/v1/compare",
            json!({"program": "math", "program_b": "math", "rows": data,
                   "options": {"label": "x"}}),
            400,
            "no second spec",
        ),
        (
            "/v1/eval",
            json!({"program": "math", "program_b": "math", "rows": data}),
            400,
            "/v1/compare",
        ),
        (
            "/v1/fuzz",
            json!({"rows": data}),
            400,
            "one of `spec` and `program`",
        ),
        (
            "/v1/fuzz",
            json!({"program": "nope", "rows": data}),
            404,
            "no program `nope`",
        ),
        (
            "/v1/compare",
            json!({"program": "math", "program_b": "nope", "rows": data}),
            404,
            "no program `nope`",
        ),
        (
            "/v1/eval",
            json!({"spec": {"type": "no_such_grader"}, "rows": data}),
            422,
            "the spec has 1 error",
        ),
        (
            "/v1/fuzz",
            json!({"program": "math", "rows": vec![json!({}); 21]}),
            413,
            "at most 20",
        ),
    ];
    for (path, body, status, needle) in cases {
        let (s, v) = post(&srv.addr, path, &body);
        assert_eq!(s, status, "{path} {body}: {v}");
        assert!(v["message"].as_str().unwrap().contains(needle), "{v}");
    }
    let (_, v) = post(
        &srv.addr,
        "/v1/eval",
        &json!({"spec": {"type": "no_such_grader"}, "rows": data}),
    );
    assert_eq!(v["error"], "spec_error");
    assert!(!v["errors"].as_array().unwrap().is_empty(), "{v}");
    // The body limit: refused before it is read whole.
    let big = json!({"program": "math", "rows": [{"pad": "x".repeat(30_000)}]});
    let (s, _) = post(&srv.addr, "/v1/fuzz", &big);
    assert_eq!(s, 413);
}

/// A fuzz that takes seconds runs on a blocking thread in one of the scoring slots: meanwhile
/// `/healthz` and `/v1/score` are answered at once.
#[test]
fn a_long_fuzz_does_not_hold_up_other_requests() {
    let srv = server();
    let data: Vec<Value> = rows("fixtures/fuzz/weak/data.jsonl")
        .into_iter()
        .cycle()
        .take(4000)
        .collect();
    let body = json!({"program": "step_count", "rows": data, "options": {"per_row": 64}});
    let addr = srv.addr.clone();
    let started = Instant::now();
    let fuzz = std::thread::spawn(move || {
        let r = post(&addr, "/v1/fuzz", &body);
        (r, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(800));
    let t = Instant::now();
    let (s, _) = send(&srv.addr, "GET", "/healthz", "");
    assert_eq!(s, 200);
    let (s, v) = post(
        &srv.addr,
        "/v1/score",
        &json!({"program": "last_number", "samples": [rows("fixtures/fuzz/weak/data.jsonl")[0]]}),
    );
    assert_eq!(s, 200, "{v}");
    let other = t.elapsed();
    // The property itself: both were answered while the fuzz was still running.
    let fuzz_still_running = !fuzz.is_finished();
    let ((s, v), fuzz_took) = fuzz.join().unwrap();
    assert_eq!(s, 200, "{v}");
    assert!(v["families"].as_array().unwrap().len() > 3);
    assert!(
        fuzz_still_running,
        "other requests ({other:?}) were answered only after the fuzz ({fuzz_took:?}) ended"
    );
    assert!(other < Duration::from_secs(10), "{other:?}");
}
