//! `referee eval` and `referee compare` as real processes on the committed fixtures under
//! `fixtures/eval/`: every number is checked against its hand computation (in the comments).

mod common;

use common::{referee, root};
use serde_json::{json, Value};

/// Runs with `--quiet` and returns the JSON report from stdout.
fn report(args: &[&str]) -> Value {
    let out = referee().args(args).arg("--quiet").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn eval(data: &str, extra: &[&str]) -> Value {
    let mut a = vec!["eval", "fixtures/eval/math.yaml", data];
    a.extend_from_slice(extra);
    report(&a)
}

fn close(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - want).abs() < 1e-12, "{got} != {want}");
}

fn subset<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["subsets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subset"] == name)
        .unwrap_or_else(|| panic!("no subset {name}"))
}

#[test]
fn rewardbench_v1_accuracy_per_subset() {
    let r = eval("fixtures/eval/rewardbench.jsonl", &[]);
    assert_eq!(r["kind"], "eval");
    assert_eq!(r["format"], "rewardbench");
    assert_eq!(r["spec"], "fixtures/eval/math.yaml");
    assert_eq!(r["rows"], 20);
    // rb-m10 has no `answer`: both responses fail with missing_field; counted, not a loss.
    assert_eq!(r["errors"], 1);
    assert_eq!(r["errors_by_reason"], json!({"missing_field": 1}));
    // math: right on m1 m2 m3 m4 m6 (hedged rejected) m8 m9; m5 ties (both correct), m7 is
    // mislabelled (the rejected answer is the right one): 7 of 9 scored.
    let m = subset(&r, "math");
    assert_eq!(
        (m["n"].as_u64(), m["scored"].as_u64(), m["errors"].as_u64()),
        (Some(10), Some(9), Some(1))
    );
    close(&m["accuracy"], 7.0 / 9.0);
    assert_eq!(m["ties"], 1);
    // format: marked beats unmarked on 8; f5 (both unmarked: 0 = 0) and f7 (both marked and
    // right) tie, and a tie is wrong.
    let f = subset(&r, "format");
    close(&f["accuracy"], 0.8);
    assert_eq!(f["ties"], 2);
    // Overall: 15 of 19 scored rows.
    close(&r["overall"]["accuracy"], 15.0 / 19.0);
    assert_eq!(r["overall"]["scored"], 19);
    assert_eq!(r["overall"]["ties"], 3);
    // No RewardBench subset, so no sections and no leaderboard score.
    assert!(r.get("sections").is_none());
    assert!(r["overall"].get("score").is_none());
    assert!(r.get("correlation").is_none());
}

#[test]
fn rewardbench_v1_sections_weighted_like_the_leaderboard() {
    let r = eval("fixtures/eval/rewardbench_sections.jsonl", &[]);
    let s = r["sections"].as_array().unwrap();
    let names: Vec<&str> = s.iter().map(|x| x["section"].as_str().unwrap()).collect();
    assert_eq!(names, ["Chat", "Reasoning", "Prior Sets (0.5 weight)"]);
    // Chat: alpacaeval-easy 1.0 (weight 100), mt-bench-easy 0.5 (28): 114/128.
    let chat = 114.0 / 128.0;
    close(&s[0]["accuracy"], chat);
    // Reasoning: math-prm 0.5 (weight 984), hep-python 1.0 (164): 656/1148.
    let reasoning = 656.0 / 1148.0;
    close(&s[1]["accuracy"], reasoning);
    close(&s[2]["accuracy"], 1.0);
    // Score: sections weighted 2, Prior Sets 1.
    close(
        &r["overall"]["score"],
        (2.0 * chat + 2.0 * reasoning + 1.0) / 5.0,
    );
    // The plain accuracy over all rows: 5 of 7 (s2 and s6 are wrong).
    close(&r["overall"]["accuracy"], 5.0 / 7.0);
}

#[test]
fn rewardbench2_best_of_four_and_ties() {
    let r = eval("fixtures/eval/rewardbench2.jsonl", &[]);
    assert_eq!(r["format"], "rewardbench2");
    assert_eq!(r["rows"], 9);
    assert_eq!(r["errors"], 1); // m5 has no answer
                                // Math: m1 1; m2 chosen tied with one rejected at 1: 1/2; m3 all four 0: 1/4; m4 the chosen
                                // loses: 0. (1 + 0.5 + 0.25 + 0) / 4.
    let m = subset(&r, "Math");
    close(&m["accuracy"], 0.4375);
    assert_eq!(m["ties"], 2);
    // Ties: ref:1 accurate (1 > 0), ref:2 not (0 vs 0): 0.5. tied:1, tied:2 accurate: 1.0.
    // Both tied prompts: correct answers all 1 (spread 0), margins over incorrect 1:
    // preferred 1 > 0 on both = 1.0; hard min(ref, tied margin) > 0: prompt 1 yes (1),
    // prompt 2 no (ref margin 0) = 0.5; margin term tanh(min / spread - 1): prompt 1
    // tanh(1/0 - 1) = tanh(inf) = 1, prompt 2 0/0 = NaN, counted 0: mean 0.5.
    // 0.3 * 1 + 0.3 * 0.5 + 0.2 * 1 + 0.2 * 0.5 + 0.01 * 0.5 = 0.755.
    let t = subset(&r, "Ties");
    close(&t["ref_accuracy"], 0.5);
    close(&t["tied_accuracy"], 1.0);
    close(&t["correctness_preferred"], 1.0);
    close(&t["correctness_preferred_hard"], 0.5);
    close(&t["correctness_margin_score"], 0.5);
    close(&t["accuracy"], 0.755);
    // The leaderboard score: the mean of the subsets' scores.
    close(&r["overall"]["score"], f64::midpoint(0.4375, 0.755));
}

#[test]
fn scored_data_correlations_by_hand_with_seeded_intervals() {
    let args = ["--gold", "human", "--bootstrap", "200", "--seed", "7"];
    let r = eval("fixtures/eval/scores.jsonl", &args);
    assert_eq!(r["format"], "scores");
    assert_eq!(r["rows"], 11);
    assert_eq!(r["errors"], 2);
    assert_eq!(
        r["errors_by_reason"],
        json!({"missing_field": 1, "missing_gold": 1})
    );
    // mixed: rewards 1,1,1,0,0,0 against human 5,4,3,3,2,1.
    // Pearson: sxy 3, sxx 1.5, syy 10: 3/sqrt(15).
    // Spearman: ranks (5,5,5,2,2,2) and (6,5,3.5,3.5,2,1): 12/sqrt(13.5 * 17).
    // Kendall tau-b: C 8, D 0, n0 15, x-ties 6, y-ties 1: 8/sqrt(9 * 14).
    let m = subset(&r, "mixed");
    close(&m["pearson"]["value"], 3.0 / 15f64.sqrt());
    assert!(
        (m["spearman"]["value"].as_f64().unwrap() - 12.0 / (13.5f64 * 17.0).sqrt()).abs() < 1e-12
    );
    close(&m["kendall_tau_b"]["value"], 8.0 / 126f64.sqrt());
    // const: every reward 1: no correlation (null, never 0), and no interval.
    let c = subset(&r, "const");
    for k in ["pearson", "spearman", "kendall_tau_b"] {
        assert_eq!(c[k], json!({"value": null, "ci": null}), "{k}");
    }
    // Overall: rewards 1,1,1,0,0,0,1,1,1 against 5,4,3,3,2,1,5,3,4.
    // Pearson: sxy 4, sxx 2, syy 14: 4/sqrt(28). Spearman: 36/sqrt(40.5 * 57).
    // Kendall: C 16, D 0, n0 36, x-ties 18, y-ties 5: 16/sqrt(18 * 31).
    let corr = &r["correlation"];
    close(&corr["pearson"]["value"], 4.0 / 28f64.sqrt());
    close(&corr["spearman"]["value"], 36.0 / (40.5f64 * 57.0).sqrt());
    assert!(
        (corr["kendall_tau_b"]["value"].as_f64().unwrap() - 16.0 / 558f64.sqrt()).abs() < 1e-12
    );
    close(&r["overall"]["mean_reward"], 6.0 / 9.0);
    close(&r["overall"]["mean_gold"], 30.0 / 9.0);
    for k in ["pearson", "spearman", "kendall_tau_b"] {
        let v = corr[k]["value"].as_f64().unwrap();
        let ci = corr[k]["ci"].as_array().unwrap();
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= v && v <= hi && lo < hi, "{k}: {lo} {v} {hi}");
    }
    // The same seed draws the same intervals; another seed other ones; no resamples, none.
    assert_eq!(eval("fixtures/eval/scores.jsonl", &args), r);
    let other = eval(
        "fixtures/eval/scores.jsonl",
        &["--gold", "human", "--bootstrap", "200", "--seed", "8"],
    );
    assert_ne!(other["correlation"], r["correlation"]);
    assert_eq!(
        other["correlation"]["pearson"]["value"],
        corr["pearson"]["value"]
    );
    let none = eval(
        "fixtures/eval/scores.jsonl",
        &["--gold", "human", "--bootstrap", "0"],
    );
    assert_eq!(none["correlation"]["pearson"]["ci"], Value::Null);
}

#[test]
fn best_of_n_selection_with_ties_as_expected_value() {
    let r = eval("fixtures/eval/best_of_n.jsonl", &["--correct", "correct"]);
    assert_eq!(r["format"], "best-of-n");
    // b1: the top response (the only boxed 4) is correct: 1. b2: two boxed 4s tie at the top,
    // one correct: 1/2. b3: nothing marked, all three tie, one correct: 1/3. b4: the top
    // (boxed 8) is not flagged correct: 0.
    let o = &r["overall"];
    close(&o["accuracy"], (1.0 + 0.5 + 1.0 / 3.0) / 4.0);
    close(&o["oracle"], 0.75);
    close(&o["random"], (2.0 / 3.0 + 1.0 / 3.0 + 1.0 / 3.0) / 4.0);
    assert_eq!(o["ties"], 2);
    assert_eq!(r["subsets"], json!([]));
}

#[test]
fn the_example_evaluates_the_math_spec() {
    let r = report(&[
        "eval",
        "examples/math/spec.yaml",
        "examples/eval/rewardbench.jsonl",
    ]);
    assert_eq!(r["rows"], 9);
    assert_eq!(r["errors"], 0);
    close(&subset(&r, "math-prm")["accuracy"], 1.0);
    close(&subset(&r, "format")["accuracy"], 0.75);
    close(&r["overall"]["accuracy"], 8.0 / 9.0);
    close(&r["overall"]["score"], 1.0);
}

#[test]
fn eval_writes_the_report_and_prints_the_table() {
    let dir = std::env::temp_dir().join(format!("referee-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.json");
    let out = referee()
        .args([
            "eval",
            "fixtures/eval/math.yaml",
            "fixtures/eval/rewardbench.jsonl",
            "-o",
        ])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(written, eval("fixtures/eval/rewardbench.jsonl", &[]));
    std::fs::remove_dir_all(&dir).ok();
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
}

#[test]
fn eval_strict_exits_4_on_errors_and_unknown_data_is_a_usage_error() {
    let out = referee()
        .args([
            "eval",
            "fixtures/eval/math.yaml",
            "fixtures/eval/rewardbench.jsonl",
            "--strict",
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    // Scored rows without --gold: the format cannot be told.
    let out = referee()
        .args([
            "eval",
            "fixtures/eval/math.yaml",
            "fixtures/eval/compare.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --gold FIELD"));
}

#[test]
fn compare_two_specs() {
    // a = lenient (last number anywhere), b = strict (marked answers only).
    // c1 boxed 4: both pass (tp). c2 "might be 4", c3 bare "4", c5 "5, not 4": a passes, b
    // fails (fp). c4 boxed 5: both fail (tn). c6 has no answer: an error on both sides.
    let r = report(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/math.yaml",
        "fixtures/eval/compare.jsonl",
    ]);
    assert_eq!(r["kind"], "compare");
    assert_eq!(r["a"], "fixtures/eval/lenient.yaml");
    assert_eq!(r["b"], "fixtures/eval/math.yaml");
    assert_eq!(r["threshold"], 0.5);
    assert_eq!(r["matrix"], json!({"tp": 1, "fp": 3, "fn": 0, "tn": 1}));
    assert_eq!(r["errors"]["both"], 1);
    assert_eq!(r["errors"]["total"], 1);
    assert_eq!(r["errors"]["by_reason"], json!({"missing_field": 2}));
    close(&r["rates"]["false_positive"], 0.75);
    close(&r["rates"]["false_negative"], 0.0);
    close(&r["rates"]["disagreement"], 0.6);
    let ids: Vec<&str> = r["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c2", "c3", "c5"]);
    assert_eq!(
        r["disagreements"][0],
        json!({"id": "c2", "line": 2, "a": 1.0, "b": 0.0, "output": "the answer might be 4"})
    );
}

#[test]
fn compare_with_a_label_column() {
    let out = referee()
        .args([
            "compare",
            "fixtures/eval/lenient.yaml",
            "fixtures/eval/compare.jsonl",
            "--label",
            "correct",
            "-o",
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!(String::from_utf8(out.stdout).unwrap());
    // Against the labels: c1 tp, c2 fp, c3 tp (the bare "4" is labelled right), c4 tn,
    // c5 fp; c6: a cannot score it (no answer), the label can: an a-only error.
    let r = report(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/compare.jsonl",
        "--label",
        "correct",
    ]);
    assert_eq!(r["b"], "label:correct");
    assert_eq!(r["matrix"], json!({"tp": 2, "fp": 2, "fn": 0, "tn": 1}));
    assert_eq!(r["errors"]["a_only"], 1);
    close(&r["rates"]["false_positive"], 2.0 / 3.0);
    close(&r["rates"]["disagreement"], 0.4);
    assert_eq!(r["disagreements"][1]["b"], false);
    assert!(r.get("subsets").is_none());
    // A higher threshold moves nothing here (rewards are 0 or 1); above 1 everything fails.
    let r = report(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/compare.jsonl",
        "--label",
        "correct",
        "--threshold",
        "1.5",
    ]);
    assert_eq!(r["matrix"], json!({"tp": 0, "fp": 0, "fn": 2, "tn": 3}));
    close(&r["rates"]["false_negative"], 1.0);
}

#[test]
fn compare_usage_errors() {
    // --label with a second spec, and a missing data file argument.
    let out = referee()
        .args([
            "compare",
            "fixtures/eval/lenient.yaml",
            "fixtures/eval/math.yaml",
            "fixtures/eval/compare.jsonl",
            "--label",
            "correct",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no second spec"));
    let out = referee()
        .args([
            "compare",
            "fixtures/eval/lenient.yaml",
            "fixtures/eval/compare.jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn out_of_range_options_are_usage_errors() {
    let out = referee()
        .args([
            "eval",
            "fixtures/eval/math.yaml",
            "fixtures/eval/scores.jsonl",
            "--gold",
            "human",
            "--confidence",
            "95",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = referee()
        .args([
            "compare",
            "fixtures/eval/lenient.yaml",
            "fixtures/eval/compare.jsonl",
            "--label",
            "correct",
            "--threshold",
            "NaN",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn compare_per_subset() {
    // The fixture's ids as subsets would be one row each; group by the label instead, as a
    // VerifyBench user groups by `answer_type`: rows labelled true (c1, c3, c6) and false.
    let r = report(&[
        "compare",
        "fixtures/eval/lenient.yaml",
        "fixtures/eval/math.yaml",
        "fixtures/eval/compare.jsonl",
        "--subset-field",
        "correct",
    ]);
    let subs = r["subsets"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    // false: c2 fp, c4 tn, c5 fp.
    assert_eq!(subs[0]["subset"], "false");
    assert_eq!(
        subs[0]["matrix"],
        json!({"tp": 0, "fp": 2, "fn": 0, "tn": 1})
    );
    close(&subs[0]["rates"]["false_positive"], 2.0 / 3.0);
    assert_eq!(subs[0]["rates"]["false_negative"], Value::Null);
    // true: c1 tp, c3 fp, c6 an error on both sides.
    assert_eq!(subs[1]["subset"], "true");
    assert_eq!(
        (subs[1]["n"].as_u64(), subs[1]["errors"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(
        subs[1]["matrix"],
        json!({"tp": 1, "fp": 1, "fn": 0, "tn": 0})
    );
}

#[test]
fn parquet_data_gives_the_same_report() {
    // RewardBench's files on the Hub are Parquet: the same rows, written as Parquet, must give
    // the same numbers as the JSON Lines file.
    let text = std::fs::read_to_string(root().join("fixtures/eval/rewardbench.jsonl")).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let dir = std::env::temp_dir().join(format!("referee-eval-pq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rewardbench.parquet");
    referee_core::io::parquet::write_rows(std::fs::File::create(&path).unwrap(), &rows).unwrap();
    let from_parquet = report(&["eval", "fixtures/eval/math.yaml", path.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(from_parquet, eval("fixtures/eval/rewardbench.jsonl", &[]));
}

#[test]
fn step_labelled_data_reports_first_error_accuracy() {
    let r = report(&[
        "eval",
        "fixtures/eval/steps.yaml",
        "fixtures/eval/steps.jsonl",
    ]);
    assert_eq!(r["format"], "steps");
    assert_eq!(
        (r["rows"].as_u64(), r["errors"].as_u64()),
        (Some(4), Some(0))
    );
    // p1 found at step 1; p4's error (step 0: "3 + 3 = 7") is not caught by the regex: missed.
    // p2 clean; p3 wrongly flagged at step 1.
    let o = &r["overall"];
    close(&o["error_accuracy"], 0.5);
    close(&o["correct_accuracy"], 0.5);
    close(&o["f1"], 0.5);
    // p4's two wrong steps, neither found.
    close(&o["step_recall"], 0.0);
    close(&subset(&r, "gsm8k")["f1"], 1.0);
}
