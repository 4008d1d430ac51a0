//! The data-driven suite of the group stage: `tests/group/*.yaml`, each
//! `{spec, judge?, cases: [{name, spec?, judge?, samples: [{output, item?, group?}], expect:
//! {reward?, status?, reason?, advantage?, flag?, report?, judge_calls?}}], compile_errors:
//! [{spec, errors: [substr]}]}`. `report` is matched as a subset of the batch's `GroupReport`
//! JSON. `judge` is a scripted judge (`judge::script`) for the modes that call one.

#[allow(dead_code)]
mod common;

use referee_core::{Program, Sample};
use serde_json::Value;
use std::path::PathBuf;

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9,
        _ => a == b,
    }
}

/// Whether `want` is contained in `got` (objects by key, arrays element-wise).
fn subset(want: &Value, got: &Value, at: &str, bad: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                match g.get(k) {
                    Some(gv) => subset(v, gv, &format!("{at}.{k}"), bad),
                    None => bad.push(format!("{at}.{k}: missing")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                subset(a, b, &format!("{at}[{i}]"), bad);
            }
        }
        _ if num_eq(want, got) => {}
        _ => bad.push(format!("{at}: want {want}, got {got}")),
    }
}

fn sample(v: &Value) -> Sample {
    let mut s = common::sample_of(v);
    s.group = match v.get("group") {
        None => Some("g".into()),
        Some(Value::Null) => None,
        Some(g) => Some(g.as_str().expect("group id").into()),
    };
    s
}

fn per_sample(want: &Value, got: &[Value], what: &str, bad: &mut Vec<String>) {
    if let Some(w) = want.get(what) {
        subset(w, &Value::Array(got.to_vec()), what, bad);
    }
}

#[test]
fn every_group_suite_passes() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/group");
    let mut n = 0;
    let mut failures = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let doc: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for case in doc["cases"].as_array().into_iter().flatten() {
            n += 1;
            let name = case["name"].as_str().unwrap_or("?");
            let spec = case.get("spec").unwrap_or(&doc["spec"]);
            let judge = case.get("judge").or(doc.get("judge")).map(|j| {
                std::sync::Arc::new(
                    referee_core::judge::script::ScriptJudge::from_value(j)
                        .unwrap_or_else(|e| panic!("{name}: {e}")),
                )
            });
            let env = referee_core::exec::Env {
                judge: judge.clone().map(|j| j as _),
                ..Default::default()
            };
            let p = Program::compile_with(spec, env).unwrap_or_else(|e| panic!("{name}: {e}"));
            let samples: Vec<Sample> = case["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(sample)
                .collect();
            let (rs, report) = referee_core::score::samples(&p, &samples, false);
            let json: Vec<Value> = rs
                .iter()
                .map(|r| serde_json::to_value(r.with_id(None, None)).unwrap())
                .collect();
            let field = |k: &str| -> Vec<Value> {
                json.iter()
                    .map(|j| j.get(k).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            let want = &case["expect"];
            let mut bad = Vec::new();
            per_sample(want, &field("reward"), "reward", &mut bad);
            per_sample(want, &field("status"), "status", &mut bad);
            per_sample(want, &field("reason"), "reason", &mut bad);
            if let (Some(w), Some(j)) = (want.get("judge_calls"), &judge) {
                if w.as_u64() != Some(j.calls().len() as u64) {
                    bad.push(format!("judge_calls: want {w}, got {}", j.calls().len()));
                }
            }
            per_sample(want, &field("group_flag"), "flag", &mut bad);
            per_sample(want, &field("group_reward"), "group_reward", &mut bad);
            if want.get("advantage") == Some(&Value::String("absent".into())) {
                if json.iter().any(|j| j.get("advantage").is_some()) {
                    bad.push("advantage: want absent".into());
                }
            } else {
                per_sample(want, &field("advantage"), "advantage", &mut bad);
                if json.iter().any(|j| j.get("advantage").is_none()) {
                    bad.push("advantage: missing from a result".into());
                }
            }
            if let Some(w) = want.get("report") {
                let got = serde_json::to_value(report.expect("stage on")).unwrap();
                subset(w, &got, "report", &mut bad);
            }
            if !bad.is_empty() {
                failures.push(format!("{} / {name}: {}", path.display(), bad.join("; ")));
            }
        }
        for ce in doc["compile_errors"].as_array().into_iter().flatten() {
            n += 1;
            let text = match Program::compile(&ce["spec"]) {
                Ok(_) => {
                    failures.push(format!("{}: compiled: {}", path.display(), ce["spec"]));
                    continue;
                }
                Err(e) => e.to_string(),
            };
            for s in ce["errors"].as_array().unwrap() {
                if !text.contains(s.as_str().unwrap()) {
                    failures.push(format!("{}: `{s}` not in {text}", path.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n >= 25, "only {n} cases");
}

#[test]
fn a_spec_without_group_section_writes_no_advantage() {
    let p = Program::compile_str("{type: contains, keywords: [x]}").unwrap();
    let mk = || {
        let mut s = Sample::new("x", serde_json::json!({}));
        s.group = Some("g".into());
        s
    };
    let (rs, report) = referee_core::score::samples(&p, &[mk(), mk()], false);
    assert!(report.is_none());
    let j = serde_json::to_value(rs[0].with_id(None, None)).unwrap();
    assert!(j.get("advantage").is_none() && j.get("group_flag").is_none());
}

#[test]
fn a_batch_gets_the_stage_and_one_sample_does_not() {
    let p = Program::compile_str(
        "{grader: {type: contains, keywords: [x]}, group: {advantage: dr_grpo}}",
    )
    .unwrap();
    let mut a = Sample::new("x", serde_json::json!({}));
    let mut b = Sample::new("y", serde_json::json!({}));
    a.group = Some("g".into());
    b.group = Some("g".into());
    let batch = [a, b];
    let (rs, _) = referee_core::score::samples(&p, &batch, false);
    let a = &batch[0];
    assert_eq!(rs[0].group.unwrap().advantage, Some(0.5));
    assert_eq!(rs[1].group.unwrap().advantage, Some(-0.5));
    assert!(p.score(a).group.is_none());
}
