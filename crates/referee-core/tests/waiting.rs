//! Programs that wait, scored as futures driven together (DESIGN.md §4): many judge calls in
//! flight at once without a thread each, independent judges of one sample called together, and
//! cost order: a combinator whose cheap children already decide its value never starts its
//! judges, and a gate never starts the branch it does not take.

use futures::channel::oneshot;
use futures::future::BoxFuture;
use referee_core::exec::Env;
use referee_core::judge::{Judge, JudgeCall, JudgeFailure, JudgeReply};
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Answers `{"result": 1}`, but only once `at_once` calls are waiting together: a batch that is
/// not really in flight at once never finishes.
struct Barrier {
    at_once: usize,
    waiting: Mutex<Vec<oneshot::Sender<()>>>,
    calls: AtomicUsize,
}

impl Barrier {
    fn new(at_once: usize) -> Arc<Barrier> {
        Arc::new(Barrier {
            at_once,
            waiting: Mutex::new(Vec::new()),
            calls: AtomicUsize::new(0),
        })
    }
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Judge for Barrier {
    fn call(
        &self,
        _endpoint: &str,
        _call: JudgeCall,
        _deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<JudgeReply, JudgeFailure>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        {
            let mut w = self.waiting.lock().unwrap();
            w.push(tx);
            if w.len() >= self.at_once {
                for t in w.drain(..) {
                    let _ = t.send(());
                }
            }
        }
        Box::pin(async move {
            let _ = rx.await;
            Ok(JudgeReply {
                content: r#"{"steps": [], "result": 1}"#.into(),
                finish_reason: Some("stop".into()),
                structured: true,
                attempts: 1,
                ..JudgeReply::default()
            })
        })
    }
    fn endpoints(&self) -> Vec<String> {
        vec!["default".into()]
    }
}

fn judge(name: &str) -> Value {
    json!({"type": "score_model", "name": name, "model": "m",
           "input": [{"role": "user", "content": "Grade: {{sample.output_text}}"}]})
}

fn compile(grader: &Value, j: &Arc<Barrier>) -> Program {
    let env = Env {
        judge: Some(j.clone()),
        ..Env::default()
    };
    Program::compile_with(grader, env).unwrap()
}

/// Runs `f` on a thread and fails the test (rather than hanging it) after 60 s.
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the judge calls were not in flight together")
}

#[test]
fn a_batch_keeps_all_its_judge_calls_in_flight_at_once() {
    let n = 300;
    let j = Barrier::new(n);
    let p = compile(&judge("j"), &j);
    let batch: Vec<Sample> = (0..n)
        .map(|i| Sample::new(format!("answer {i}"), json!({})))
        .collect();
    let rs = within_a_minute(move || referee_core::score::samples(&p, &batch, false).0);
    assert_eq!(rs.len(), n);
    assert!(rs.iter().all(|r| r.reward == Some(1.0)), "{:?}", rs[0]);
    assert_eq!(j.calls(), n);
}

#[test]
fn the_independent_judges_of_one_sample_are_called_together() {
    let j = Barrier::new(3);
    let spec = json!({"type": "weighted_sum", "normalize": "sum", "weights": [1, 1, 1],
                      "inputs": [judge("a"), {"type": "max", "inputs": [judge("b")]}, judge("c")]});
    let p = compile(&spec, &j);
    let r = within_a_minute(move || p.score(&Sample::new("x", json!({}))));
    assert_eq!(r.reward, Some(1.0));
    assert_eq!(j.calls(), 3);
}

#[test]
fn the_samples_of_one_grader_are_in_flight_together() {
    let j = Barrier::new(4);
    let mut spec = judge("j");
    spec["samples"] = json!(4);
    let p = compile(&spec, &j);
    let r = within_a_minute(move || p.score(&Sample::new("x", json!({}))));
    assert_eq!(r.reward, Some(1.0));
    assert_eq!(j.calls(), 4);
    let c: std::collections::HashMap<_, _> = r.components.iter().cloned().collect();
    assert_eq!(c[&Arc::from("j.std")], Some(0.0));
}

/// What one sample's call carried: its temperature, seed, `n` and choice.
type Sent = (Option<f64>, Option<i64>, Option<u64>, Option<u32>);

fn sampled_calls(samples: Value, sampling: Value) -> Vec<Sent> {
    use referee_core::judge::script::ScriptJudge;
    let script = Arc::new(
        ScriptJudge::from_value(&json!([{"content": "{\"steps\": [], \"result\": 1}"}])).unwrap(),
    );
    let mut spec = judge("j");
    spec["samples"] = samples;
    spec["sampling_params"] = sampling;
    let env = Env {
        judge: Some(script.clone()),
        ..Env::default()
    };
    let p = Program::compile_with(&spec, env).unwrap();
    assert_eq!(p.score(&Sample::new("x", json!({}))).reward, Some(1.0));
    let mut calls: Vec<_> = script
        .calls()
        .into_iter()
        .map(|(_, c)| {
            (
                c.temperature,
                c.extra.get("seed").and_then(Value::as_i64),
                c.extra.get("n").and_then(Value::as_u64),
                c.choice,
            )
        })
        .collect();
    calls.sort_by_key(|c| (c.1, c.3));
    calls
}

#[test]
fn samples_sample_at_temperature_one_with_their_own_seeds_unless_told() {
    assert_eq!(
        sampled_calls(json!(3), json!({})),
        vec![
            (Some(1.0), Some(0), None, None),
            (Some(1.0), Some(1), None, None),
            (Some(1.0), Some(2), None, None)
        ]
    );
    assert_eq!(
        sampled_calls(json!(2), json!({"temperature": 0.7, "seed": 40})),
        vec![
            (Some(0.7), Some(40), None, None),
            (Some(0.7), Some(41), None, None)
        ]
    );
    // One grader without samples is unchanged: greedy, no seed (its cache keys stay valid).
    assert_eq!(
        sampled_calls(json!(1), json!({})),
        vec![(Some(0.0), None, None, None)]
    );
    // Choices: the same request (same seed, `n`), each sample reading its own choice.
    assert_eq!(
        sampled_calls(json!({"n": 3, "via": "choices"}), json!({"seed": 5})),
        vec![
            (Some(1.0), Some(5), Some(3), Some(0)),
            (Some(1.0), Some(5), Some(3), Some(1)),
            (Some(1.0), Some(5), Some(3), Some(2))
        ]
    );
}

#[test]
fn all_of_never_starts_its_judge_when_a_rule_child_already_fails() {
    let j = Barrier::new(1);
    let spec = json!({"type": "all_of", "inputs": [
        judge("quality"), {"type": "contains", "name": "cites", "keywords": ["[1]"]}]});
    let p = compile(&spec, &j);
    let r = p.explain(&Sample::new("no citation", json!({})));
    assert_eq!(r.reward, Some(0.0));
    assert_eq!(j.calls(), 0);
    let c: std::collections::HashMap<_, _> = r.components.iter().cloned().collect();
    assert_eq!(c[&Arc::from("quality")], None);
    assert_eq!(c[&Arc::from("cites")], Some(0.0));
    let t = serde_json::to_value(r.trace.unwrap()).unwrap();
    assert_eq!(t["children"][0]["status"], "skipped");
    assert!(
        t["children"][0]["note"]
            .as_str()
            .unwrap()
            .starts_with("not started"),
        "{t}"
    );
    // When the rule child holds, the judge decides.
    let r = p.score(&Sample::new("see [1]", json!({})));
    assert_eq!(r.reward, Some(1.0));
    assert_eq!(j.calls(), 1);
}

#[test]
fn product_at_zero_and_min_at_the_judges_floor_leave_the_judge_unstarted() {
    let j = Barrier::new(1);
    let zero = json!({"type": "const", "value": 0});
    for kind in ["product", "min"] {
        let p = compile(
            &json!({"type": kind, "inputs": [judge("j"), zero.clone()]}),
            &j,
        );
        assert_eq!(
            p.score(&Sample::new("x", json!({}))).reward,
            Some(0.0),
            "{kind}"
        );
    }
    // A minimum above the judge's floor (0) does not decide: the judge is called.
    let half = json!({"type": "const", "value": 0.5});
    let p = compile(&json!({"type": "min", "inputs": [judge("j"), half]}), &j);
    assert_eq!(p.score(&Sample::new("x", json!({}))).reward, Some(0.5));
    assert_eq!(j.calls(), 1);
}

#[test]
fn a_failed_rule_child_leaves_its_siblings_judge_unstarted() {
    let j = Barrier::new(1);
    // The item has no `gold`: the numeric child cannot score, so the sum fails whatever the
    // judge would say.
    let spec = json!({"type": "weighted_sum", "normalize": "none", "weights": [1, 1],
                      "inputs": [judge("j"), {"type": "numeric", "reference": "{{item.gold}}"}]});
    let p = compile(&spec, &j);
    let r = p.score(&Sample::new("42", json!({})));
    assert_eq!(r.reward, None, "{r:?}");
    assert_eq!(r.status.as_str(), "error");
    assert_eq!(j.calls(), 0);
}

#[test]
fn a_gate_with_a_judged_condition_starts_only_the_branch_it_takes() {
    let j = Barrier::new(1);
    let spec =
        json!({"type": "gate", "if": judge("cond"), "then": judge("yes"), "else": judge("no")});
    let p = compile(&spec, &j);
    let r = p.score(&Sample::new("x", json!({})));
    assert_eq!(r.reward, Some(1.0));
    assert_eq!(j.calls(), 2);
    let c: std::collections::HashMap<_, _> = r.components.iter().cloned().collect();
    assert_eq!(c[&Arc::from("yes")], Some(1.0));
    assert_eq!(c[&Arc::from("no")], None);
}

#[test]
fn each_turn_judges_every_turn_of_a_trajectory_at_once() {
    let j = Barrier::new(3);
    let mut per_turn = judge("unused");
    per_turn.as_object_mut().unwrap().remove("name");
    let spec =
        json!({"type": "each_turn", "name": "steps", "aggregate": "min", "grader": per_turn});
    let p = compile(&spec, &j);
    let mut s = Sample::new("three", json!({}));
    s.messages = Some(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "assistant", "content": "three"}
    ]));
    let r = within_a_minute(move || p.explain(&s));
    assert_eq!(r.reward, Some(1.0), "{r:?}");
    assert_eq!(j.calls(), 3, "one judge call per assistant turn");
    let t = serde_json::to_value(r.trace.unwrap()).unwrap();
    let turns: Vec<u64> = t["detail"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [1, 2, 3]);
    assert_eq!(
        r.usage.unwrap().judge_calls,
        3,
        "the turns' judge calls are the sample's"
    );
}
