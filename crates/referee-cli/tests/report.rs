//! `referee report`, run as a real process on real `referee score` output and on hand-made
//! audit outputs of the shapes `eval`, `fuzz` and `compare` write. (The page in a real browser:
//! scripts/report_browser_test.py.)

mod common;

use common::{referee, root};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("report-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn score(spec: &str, input: &str, out: &Path, extra: &[&str]) {
    referee()
        .args(["score", spec, input, "-q", "-o"])
        .arg(out)
        .args(extra)
        .assert()
        .success();
}

fn report(results: &Path, extra: &[&str]) -> String {
    // Next to the results (each test's own scratch dir), or under the target dir for committed
    // fixtures: never into the source tree. The full file name keeps `x.jsonl` and `x.parquet`
    // apart.
    let name = format!("{}.html", results.file_name().unwrap().to_string_lossy());
    let out = if results.starts_with(root().join("fixtures")) {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-fixtures");
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    } else {
        results.with_file_name(name)
    };
    referee()
        .arg("report")
        .arg(results)
        .arg("-o")
        .arg(&out)
        .args(extra)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    self_contained(&html);
    html
}

/// Nothing in the page loads from anywhere: no URLs, no `src`, no `href`, and a CSP that says so.
fn self_contained(html: &str) {
    for bad in ["http://", "https://", " src=", " href=", "@import", "url("] {
        assert!(!html.contains(bad), "the report references `{bad}`");
    }
    assert!(html.contains("default-src 'none'"));
}

fn card(html: &str, label: &str) -> String {
    let end = html
        .find(&format!(r#"<div class="k">{label}</div>"#))
        .unwrap_or_else(|| panic!("no card {label}"));
    let start = html[..end].rfind(r#"<div class="v">"#).unwrap() + r#"<div class="v">"#.len();
    html[start..end].trim_end_matches("</div>").to_string()
}

fn lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn scored_run_with_traces_and_groups() {
    let d = scratch("explain");
    let res = d.join("results.jsonl");
    score(
        "examples/grpo-group/spec.yaml",
        "examples/gsm8k/samples.jsonl",
        &res,
        &["--explain"],
    );
    let rows = lines(&res);
    let rewards: Vec<f64> = rows.iter().filter_map(|r| r["reward"].as_f64()).collect();
    let mean = rewards.iter().sum::<f64>() / rewards.len() as f64;
    let h = report(&res, &["--data", "examples/gsm8k/samples.jsonl"]);
    assert_eq!(card(&h, "rows"), "12");
    assert_eq!(
        card(&h, "mean reward"),
        format!("{mean:.4}").trim_end_matches('0')
    );
    assert_eq!(card(&h, "error"), "2");
    assert_eq!(card(&h, "ok"), "10");
    // One histogram for the reward and one per component.
    assert_eq!(
        h.matches(r#"<svg class="plot""#).count(),
        4,
        "reward, correct, overlong, variance"
    );
    assert!(h.contains("<td>invalid_json</td>"));
    // Groups from the input's `uid`: q1 mixed, q2 a single rewarded row (not comparable);
    // the garbage line and the row without a uid have none.
    assert_eq!(card(&h, "groups"), "2");
    assert_eq!(card(&h, "flat groups"), "0");
    assert_eq!(card(&h, "flat-group fraction"), "0");
    assert!(h.contains("1 group(s) have two or more rewards; 2 row(s) have no group"));
    // No timings in today's traces: omitted with a note.
    assert!(h.contains("no trace node carries a timing"));
    // Every row has its detail row with its trace tree (the first is the sum of two leaves).
    assert_eq!(h.matches(r#"<tr class="detail" hidden>"#).count(), 12);
    assert!(
        h.contains(r"<b>weighted_sum</b>") && h.contains(r#"<span class="name">correct</span>"#)
    );
    assert!(h.contains("line 10: line is not valid JSON"));
}

#[test]
fn scored_run_without_traces_or_groups() {
    let d = scratch("plain");
    let res = d.join("results.jsonl");
    score(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl",
        &res,
        &[],
    );
    let h = report(&res, &[]);
    assert_eq!(card(&h, "rows"), "15");
    assert!(h.contains("No groups: the results carry no <code>group</code>"));
    assert!(h.contains("the results have no traces"));
    assert!(h.contains("No trace: score with <code>--explain</code>"));
}

#[test]
fn parquet_results_report_like_jsonl_results() {
    let d = scratch("parquet");
    let (pq, js) = (d.join("results.parquet"), d.join("results.jsonl"));
    for out in [&pq, &js] {
        score(
            "examples/grpo-group/spec.yaml",
            "fixtures/parquet/gsm8k_verl.parquet",
            out,
            &["--explain"],
        );
    }
    let (a, b) = (report(&pq, &[]), report(&js, &[]));
    for k in ["rows", "mean reward", "ok", "error"] {
        assert_eq!(card(&a, k), card(&b, k), "{k}");
    }
    // Same body (the page names its source file, which differs).
    let body =
        |h: &str| h[h.find("<h2>Rewards").unwrap()..h.find("<h2>About").unwrap()].to_string();
    assert_eq!(body(&a), body(&b));
    // Groups from a Parquet input: verl's `uid`, q1 and q2 (one row has none).
    let h = report(&pq, &["--data", "fixtures/parquet/gsm8k_verl.parquet"]);
    assert_eq!(card(&h, "groups"), "2");
    assert!(h.contains("1 row(s) have no group"));
}

#[test]
fn groups_carried_by_the_results() {
    let d = scratch("groups");
    let res = d.join("results.jsonl");
    let rows = [
        ("a", 1.0),
        ("a", 1.0),
        ("b", 0.0),
        ("b", 1.0),
        ("c", 0.0),
        ("c", 0.0),
        ("c", 0.0),
    ];
    let text: String = rows
        .iter()
        .enumerate()
        .map(|(i, (g, r))| {
            format!(r#"{{"id":{i},"group":"{g}","reward":{r:.1},"status":"ok","components":{{}}}}"#)
                + "\n"
        })
        .collect();
    std::fs::write(&res, text).unwrap();
    let h = report(&res, &[]);
    assert_eq!(card(&h, "groups"), "3");
    assert_eq!(card(&h, "flat groups"), "2");
    assert_eq!(card(&h, "flat-group fraction"), "0.6667");
    // Variances 0, .25, 0: mean 1/12.
    assert_eq!(card(&h, "mean within-group variance"), "0.0833");
    assert!(h.contains("<tr><td>b</td><td>2</td><td>2</td><td>0.5</td><td>0.25</td><td></td></tr>"));
}

#[test]
fn slowest_components_from_trace_timings() {
    let h = report(&root().join("fixtures/report/timed_results.jsonl"), &[]);
    let t = &h[h.find("<h2>Slowest components").unwrap()..h.find("<h2>Samples").unwrap()];
    let rows: Vec<&str> = t.split("<tr><td><code>").skip(1).collect();
    // Totals: the root 11.5 ms, math_equiv 10.5 ms, regex 0.2 ms (from microseconds).
    assert!(
        rows[0].starts_with("/</code></td><td>weighted_sum</td><td>2</td><td>11.5</td>"),
        "{t}"
    );
    assert!(rows[1].starts_with("/inputs/0</code></td><td>math_equiv</td><td>2</td><td>10.5</td><td>5.25</td><td>8.5</td>"), "{t}");
    assert!(
        rows[2].starts_with("/inputs/1</code></td><td>regex</td><td>2</td><td>0.2</td>"),
        "{t}"
    );
    assert!(h.contains("judge_unparseable"));
}

#[test]
fn fuzz_report_has_the_verdict_and_rates_by_family() {
    let h = report(&root().join("fixtures/report/fuzz.json"), &[]);
    assert!(h.contains("Referee report: fuzz"));
    assert!(h.contains("FAILED"));
    assert!(h.contains("<title>answer_listing: 0.75</title>"));
    assert_eq!(
        h.matches(r#"<rect class="bar"#).count(),
        4,
        "one bar per family"
    );
    // Examples expand under their family; outputs are escaped.
    assert_eq!(h.matches(r#"class="row expandable""#).count(), 2);
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!h.contains("<script>alert"));
    assert!(h.contains("<td>step_inflation</td><td>12</td><td>0.04</td>"));
    // The spec (an object) is shown as written.
    assert!(
        h.contains("&quot;operation&quot;: &quot;ilike&quot;"),
        "{h}"
    );
}

#[test]
fn eval_and_compare_reports_show_their_numbers() {
    let h = report(&root().join("fixtures/report/eval.json"), &[]);
    assert!(h.contains("Referee report: eval (rewardbench)"));
    assert!(h.contains("<th>weighted_accuracy</th><td>0.8125</td>"));
    assert!(h.contains("<td>hep-python</td><td>12</td><td>0.75</td>"));
    assert!(h.contains("<td>spearman</td><td>0.5988</td><td>[0.38, 0.76]</td>"));
    // An undefined correlation (constant scores) is null, shown as such.
    assert!(h.contains(r#"<td>kendall_tau_b</td><td><span class="muted">null</span>"#));
    assert!(h.contains("<td>safety</td><td>8</td><td>0.75</td>"));
    assert_eq!(card(&h, "rows"), "40");
    let h = report(&root().join("fixtures/report/compare.json"), &[]);
    assert!(
        h.contains("31 (tp)")
            && h.contains("4 (fp)")
            && h.contains("2 (fn)")
            && h.contains("63 (tn)")
    );
    assert!(h.contains("<th>false_positive</th><td>0.0597</td>"));
    assert!(h.contains(r"<th>by_reason</th><td><code>{&quot;missing_field&quot;:3}</code></td>"));
    assert!(h.contains("<td>m7</td>"));
}

#[test]
fn unknown_kinds_and_garbage_still_render() {
    let d = scratch("odd");
    let odd = d.join("odd.json");
    std::fs::write(
        &odd,
        r#"{"kind": "something_new", "total": 3, "items": [{"a": 1}], "nested": {"x": {"y": [1, 2]}}}"#,
    )
    .unwrap();
    let h = report(&odd, &[]);
    assert!(h.contains("Referee report: something_new"));
    assert_eq!(card(&h, "total"), "3");
    // `referee explain`'s one pretty-printed result.
    let one = d.join("one.json");
    let out = referee()
        .args([
            "explain",
            "fixtures/specs/label_eq.yaml",
            r#"{"completion": "a", "label": "a"}"#,
        ])
        .output()
        .unwrap();
    std::fs::write(&one, out.stdout).unwrap();
    let h = report(&one, &[]);
    assert_eq!(card(&h, "rows"), "1");
    assert_eq!(card(&h, "mean reward"), "1");
    assert!(h.contains("<b>string_check</b>"));
    let junk = d.join("junk.jsonl");
    std::fs::write(&junk, "not json\n[1,2]\n").unwrap();
    let h = report(&junk, &[]);
    assert_eq!(card(&h, "rows"), "0");
    assert!(h.contains("2 line(s) of the file are not result objects"));
    referee()
        .args(["report", "no/such/results.jsonl", "-o"])
        .arg(d.join("x.html"))
        .assert()
        .code(3);
}

#[test]
fn slowest_components_of_a_real_code_run() {
    // code_exec records each test's wall time in its trace: the sandbox's real runs.
    let d = scratch("code");
    let res = d.join("results.jsonl");
    score(
        "examples/code/spec.yaml",
        "examples/code/rollouts.jsonl",
        &res,
        &["--explain"],
    );
    let scored = lines(&res)
        .iter()
        .filter(|r| r["trace"]["detail"]["tests"].is_array())
        .count();
    let h = report(&res, &[]);
    let t = &h[h.find("<h2>Slowest components").unwrap()..h.find("<h2>Samples").unwrap()];
    assert!(
        t.contains(&format!(
            "<tr><td><code>/grader</code></td><td>code_exec</td><td>{scored}</td>"
        )),
        "{t}"
    );
}
