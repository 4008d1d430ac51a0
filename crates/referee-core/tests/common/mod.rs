//! Shared by the data-driven suites: turn a YAML case into a sample and check a result.

use referee_core::input::InputMapping;
use referee_core::{Program, Sample, ScoreResult};
use serde_json::Value;

/// A case's sample: `{output: "...", item: {...}}` shorthand, or `row:` in any input format.
pub fn sample_of(case: &Value) -> Sample {
    if let Some(row) = case.get("row") {
        return InputMapping::default()
            .sample(row.clone())
            .unwrap_or_else(|e| panic!("bad row in case: {e:?}"));
    }
    let out = case
        .get("output")
        .and_then(Value::as_str)
        .expect("case needs `output` or `row`");
    let item = case
        .get("item")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({}));
    Sample::new(out, item)
}

/// Checks `expect: {reward, status, reason, components}`; returns a description of each mismatch.
/// Every case states its reward (DESIGN.md §5): `reward: null` for one that must get none.
pub fn check(r: &ScoreResult, expect: &Value) -> Vec<String> {
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
            (Some(w), Some(g)) => {
                (w - g).abs()
                    <= expect
                        .get("tolerance")
                        .and_then(Value::as_f64)
                        .unwrap_or(1e-9)
            }
            _ => false,
        };
        if !ok {
            bad.push(format!("reward: want {want}, got {:?}", r.reward));
        }
    }
    let status = expect.get("status").and_then(Value::as_str).unwrap_or("ok");
    if status != r.status.as_str() {
        bad.push(format!(
            "status: want {status}, got {} ({:?})",
            r.status.as_str(),
            r.status
        ));
    }
    if let Some(want) = expect.get("reason").and_then(Value::as_str) {
        if r.reason() != Some(want) {
            bad.push(format!("reason: want {want}, got {:?}", r.reason()));
        }
    }
    for key in ["judge_calls", "cache_hits"] {
        if let Some(want) = expect.get(key).and_then(Value::as_u64) {
            let u = r.usage.unwrap_or_default();
            let got = if key == "judge_calls" {
                u.judge_calls
            } else {
                u.cache_hits
            };
            if got != want {
                bad.push(format!("{key}: want {want}, got {got}"));
            }
        }
    }
    if let Some(Value::Object(comps)) = expect.get("components") {
        for (k, want) in comps {
            let got = r
                .components
                .iter()
                .find(|(n, _)| &**n == k)
                .map(|(_, v)| *v);
            let ok = match (got, want.as_f64()) {
                (Some(Some(g)), Some(w)) => (g - w).abs() <= 1e-9,
                (Some(None), None) => want.is_null(),
                _ => false,
            };
            if !ok {
                bad.push(format!("component {k}: want {want}, got {got:?}"));
            }
        }
    }
    if let Some(want) = expect.get("step_rewards") {
        bad.extend(check_steps(r, want));
    }
    // `trace_contains`: a substring the explain tree must hold (a note saying why).
    if let Some(want) = expect.get("trace_contains").and_then(Value::as_str) {
        let trace = serde_json::to_string(&r.trace).unwrap_or_default();
        if !trace.contains(want) {
            bad.push(format!("trace: want a note containing `{want}`"));
        }
    }
    bad
}

/// `expect.step_rewards`: a list of `{start, end, value}` (and `component`, `turn` when given),
/// compared in order with the result's.
fn check_steps(r: &ScoreResult, want: &Value) -> Vec<String> {
    let got = r.step_rewards.as_deref().unwrap_or_default();
    let want = want.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut bad = Vec::new();
    if got.len() != want.len() {
        bad.push(format!(
            "step_rewards: want {} steps, got {got:?}",
            want.len()
        ));
        return bad;
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let gv = serde_json::to_value(g).expect("serializable");
        for (k, wv) in w.as_object().into_iter().flatten() {
            let ok = match (gv.get(k), wv.as_f64()) {
                (Some(x), Some(y)) if k == "value" => {
                    x.as_f64().is_some_and(|x| (x - y).abs() <= 1e-9)
                }
                (Some(x), _) => x == wv,
                (None, _) => wv.is_null(),
            };
            if !ok {
                bad.push(format!(
                    "step_rewards[{i}].{k}: want {wv}, got {:?}",
                    gv.get(k)
                ));
            }
        }
    }
    bad
}

#[allow(dead_code)] // used by traces.rs only
pub fn compile(spec: &Value) -> Program {
    Program::compile(spec).unwrap_or_else(|e| panic!("spec does not compile:\n{e}"))
}

/// The environment for a case: a scripted judge when the case (or its file) gives a `judge:`
/// script, or when the spec calls a judge (then it answers nothing: a call is a failure).
pub fn env_for(script: Option<&Value>) -> referee_core::exec::Env {
    let script = script.cloned().unwrap_or_else(|| serde_json::json!([]));
    let judge = referee_core::judge::script::ScriptJudge::from_value(&script)
        .unwrap_or_else(|e| panic!("bad judge script: {e}"));
    referee_core::exec::Env {
        judge: Some(std::sync::Arc::new(judge)),
        ..Default::default()
    }
}

/// Compiles a case's spec with [`env_for`].
pub fn compile_case(spec: &Value, script: Option<&Value>) -> Program {
    Program::compile_with(spec, env_for(script))
        .unwrap_or_else(|e| panic!("spec does not compile:\n{e}"))
}

pub fn load_yaml(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The YAML files of a folder, sorted, each with its file name and parsed contents.
pub fn yaml_docs(dir: &std::path::Path) -> Vec<(String, Value)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().to_string(),
                load_yaml(p),
            )
        })
        .collect()
}
