//! The model graders end to end, as the CLI runs them: a spec file with its `judges:` and
//! `judge_cache:` sections, compiled with the HTTP connector, scored against real processes on
//! loopback: llama-server (tiny model for exact protocol checks, SmolLM2 for a semantic smoke
//! test), a misbehaving endpoint (`scripts/fault_server.py`) and `redis-server`.

mod common;

use common::{fault_server, redis_server, LlamaServer};
use referee_core::exec::Env;
use referee_core::summary::Summary;
use referee_core::{Program, Sample, ScoreResult};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn compile(spec: &str) -> Program {
    let env = Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    Program::compile_str_with(spec, env).unwrap_or_else(|e| panic!("{e}\n{spec}"))
}

fn summary(rs: &[ScoreResult]) -> Summary {
    let mut s = Summary::default();
    for r in rs {
        s.add(r);
    }
    s
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("referee-judge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn samples(outputs: &[&str]) -> Vec<Sample> {
    outputs
        .iter()
        .map(|o| Sample::new(*o, json!({"q": "What is the capital of France?"})))
        .collect()
}

#[test]
fn score_model_on_a_real_server_is_cached_across_runs_and_deduplicated_in_a_batch() {
    let server = LlamaServer::start("tiny");
    let dir = tmp("file-cache");
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{}", model: "{}", max_concurrency: 2}}
judge_cache: {{backend: file, path: "{}"}}
grader:
  type: score_model
  name: quality
  steps: false
  range: [0, 9]
  soft: true
  sampling_params: {{max_completions_tokens: 200}}
  input:
    - {{role: system, content: Rate the answer from 0 to 9.}}
    - {{role: user, content: "Question: {{{{item.q}}}}\nAnswer: {{{{sample.output_text}}}}"}}
"#,
        server.base_url,
        server.model,
        dir.join("judge.redb").display()
    );
    // A GRPO-shaped group: three distinct completions, each twice.
    let batch = samples(&[
        "Paris is the capital of France.",
        "The capital is Lyon.",
        "I am not sure, maybe Marseille.",
        "Paris is the capital of France.",
        "The capital is Lyon.",
        "I am not sure, maybe Marseille.",
    ]);
    let first = referee_core::score::samples(&compile(&spec), &batch, true).0;
    for r in &first {
        assert_eq!(r.status.as_str(), "ok", "{r:?}");
        let v = r.reward.unwrap();
        assert!((0.0..=9.0).contains(&v), "{v}");
    }
    for i in 0..3 {
        assert_eq!(
            first[i].reward,
            first[i + 3].reward,
            "same completion, same reward"
        );
    }
    let s = summary(&first);
    let u = s.judge.unwrap();
    assert_eq!((u.judge_calls, u.cache_hits), (3, 3), "{u:?}");
    assert!(u.prompt_tokens > 0 && u.completion_tokens > 0);
    assert_eq!(
        first[0].usage.unwrap().judge_calls + first[3].usage.unwrap().judge_calls,
        1
    );
    let trace = serde_json::to_string(&first[0].trace).unwrap();
    assert!(trace.contains("judge `default` scored"), "{trace}");

    // A new process (a new pool on the same file) pays for nothing and gets the same rewards.
    let again = referee_core::score::samples(&compile(&spec), &batch, false).0;
    let u = summary(&again).judge.unwrap();
    assert_eq!((u.judge_calls, u.cache_hits), (0, 6), "{u:?}");
    let rewards = |rs: &[ScoreResult]| rs.iter().map(|r| r.reward).collect::<Vec<_>>();
    assert_eq!(rewards(&first), rewards(&again));

    // With the cache off, every sample is judged.
    let off = spec.replace("backend: file", "backend: off");
    let u = summary(&referee_core::score::samples(&compile(&off), &batch, false).0)
        .judge
        .unwrap();
    assert_eq!((u.judge_calls, u.cache_hits), (6, 0), "{u:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn label_model_soft_verdicts_and_prefilters_on_a_real_server() {
    let server = LlamaServer::start("tiny");
    let spec = format!(
        r#"
judges: {{local: {{base_url: "{}", model: "{}"}}}}
judge_cache: {{backend: memory}}
grader:
  type: label_model
  labels: ["yes", "no"]
  passing_labels: ["yes"]
  steps: false
  soft: true
  sampling_params: {{max_completions_tokens: 200}}
  input: [{{role: user, content: "Is this answer correct? {{{{sample.output_text}}}}"}}]
"#,
        server.base_url, server.model
    );
    let p = compile(&spec);
    let rs = referee_core::score::samples(
        &p,
        &samples(&["Paris is the capital of France.", "Thought process:", ":"]),
        true,
    )
    .0;
    assert_eq!(rs[0].status.as_str(), "ok", "{:?}", rs[0]);
    let v = rs[0].reward.unwrap();
    assert!((0.0..=1.0).contains(&v), "{v}");
    for r in &rs[1..] {
        assert_eq!((r.reward, r.status.as_str()), (Some(0.0), "ok"));
        assert_eq!(r.usage.unwrap().judge_calls, 0, "prefiltered: no call");
    }
}

/// A fault endpoint with fast retries, behind a one-node spec; returns the results and time.
fn against(
    mode: &str,
    extra: &[&str],
    endpoint: &str,
    node: &str,
    outputs: &[&str],
) -> (Vec<ScoreResult>, Duration, common::Proc) {
    let srv = fault_server(mode, extra);
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{}", model: fault, backoff_ms: 10, {endpoint}}}
judge_cache: {{backend: off}}
grader: {{type: score_model, steps: false, {node} input: [{{role: user, content: "{{{{sample.output_text}}}}"}}]}}
"#,
        srv.info["base_url"].as_str().unwrap()
    );
    let p = compile(&spec);
    let t = Instant::now();
    let rs = referee_core::score::samples(&p, &samples(outputs), false).0;
    (rs, t.elapsed(), srv)
}

fn stats(srv: &common::Proc) -> serde_json::Value {
    let url = format!("http://127.0.0.1:{}/stats", srv.info["port"]);
    let body = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
            &url,
        ])
        .output()
        .unwrap()
        .stdout;
    serde_json::from_slice(&body).unwrap()
}

fn requests(srv: &common::Proc) -> u64 {
    stats(srv)["requests"].as_u64().unwrap()
}

#[test]
fn a_stalled_server_is_a_timeout_and_a_stuck_sample_meets_its_deadline() {
    let (rs, took, _s) = against(
        "stall",
        &[],
        "timeout_ms: 300, max_retries: 1",
        "",
        &["Paris is the capital."],
    );
    assert_eq!(rs[0].reason(), Some("judge_timeout"), "{rs:?}");
    assert_eq!(rs[0].reward, None, "a timeout is not a 0");
    assert!(took < Duration::from_secs(5), "{took:?}");

    let (rs, took, _s) = against(
        "stall",
        &[],
        "timeout_ms: 60000, max_retries: 3",
        "deadline_ms: 500,",
        &["Paris is the capital."],
    );
    assert_eq!(rs[0].reason(), Some("judge_deadline"), "{rs:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn server_errors_are_retried_then_reported_and_on_error_decides_the_reward() {
    let (rs, _, s) = against(
        "500",
        &[],
        "max_retries: 2",
        "on_error: 0.5,",
        &["Paris is the capital."],
    );
    assert_eq!(rs[0].reason(), Some("judge_http_5xx"), "{rs:?}");
    assert_eq!(
        rs[0].reward,
        Some(0.5),
        "on_error's reward, status still error"
    );
    assert_eq!(rs[0].status.as_str(), "error");
    assert_eq!(requests(&s), 3, "one call and two retries");
    assert_eq!(rs[0].usage.unwrap().judge_errors, 1);
}

#[test]
fn malformed_replies_are_unparseable_not_scores() {
    let (rs, _, _s) = against("garbage", &[], "max_retries: 0", "", &["Paris."]);
    assert_eq!(rs[0].reason(), Some("judge_unparseable"), "{rs:?}");
    let (rs, _, _s) = against("prose", &[], "max_retries: 0", "", &["Paris."]);
    assert_eq!(rs[0].reason(), Some("judge_unparseable"), "{rs:?}");
    assert_eq!(rs[0].reward, None);
}

#[test]
fn a_server_killed_mid_batch_fails_the_remaining_samples_with_a_reason() {
    let outputs: Vec<String> = (0..8)
        .map(|i| format!("Answer number {i} is Paris."))
        .collect();
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut srv = fault_server("ok", &["--delay", "0.25"]);
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{}", model: fault, max_concurrency: 1, max_retries: 1, backoff_ms: 10, timeout_ms: 5000}}
judge_cache: {{backend: off}}
grader: {{type: score_model, steps: false, input: [{{role: user, content: "{{{{sample.output_text}}}}"}}]}}
"#,
        srv.info["base_url"].as_str().unwrap()
    );
    let p = compile(&spec);
    let batch = samples(&refs);
    let rs = std::thread::scope(|sc| {
        let h = sc.spawn(|| referee_core::score::samples(&p, &batch, false).0);
        std::thread::sleep(Duration::from_millis(800));
        srv.kill();
        h.join().unwrap()
    });
    let ok = rs.iter().filter(|r| r.status.as_str() == "ok").count();
    let failed: Vec<_> = rs.iter().filter_map(ScoreResult::reason).collect();
    assert!(ok >= 1, "some samples were judged before the kill: {rs:?}");
    assert!(!failed.is_empty(), "the rest failed: {rs:?}");
    for r in &rs {
        if r.status.as_str() == "ok" {
            assert_eq!(r.reward, Some(1.0));
        } else {
            assert!(
                matches!(r.reason(), Some("judge_connection" | "judge_timeout")),
                "{r:?}"
            );
            assert_eq!(r.reward, None);
        }
    }
}

#[test]
fn replicas_share_verdicts_through_redis() {
    let (_redis, url) = redis_server();
    let srv = fault_server("ok", &["--content", "{\"result\": 0.75}"]);
    let spec = format!(
        r#"
judges: {{default: {{base_url: "{}", model: fault}}}}
judge_cache: {{backend: redis, url: "{url}"}}
grader: {{type: score_model, steps: false, input: [{{role: user, content: "{{{{sample.output_text}}}}"}}]}}
"#,
        srv.info["base_url"].as_str().unwrap()
    );
    let batch = samples(&["Paris.", "Lyon.", "Nice."]);
    let a = referee_core::score::samples(&compile(&spec), &batch, false).0;
    let u = summary(&a).judge.unwrap();
    assert_eq!((u.judge_calls, u.cache_hits), (3, 0));
    assert!(a.iter().all(|r| r.reward == Some(0.75)));
    // Another replica (its own pool and connection) finds every verdict.
    let b = referee_core::score::samples(&compile(&spec), &batch, false).0;
    let u = summary(&b).judge.unwrap();
    assert_eq!((u.judge_calls, u.cache_hits), (0, 3));
    assert_eq!(requests(&srv), 3);
}

#[test]
fn a_wrong_redis_url_is_a_spec_error_at_start_not_silent_misses() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // bound then freed: nothing listens there
    let spec = format!(
        r#"
judges: {{default: {{base_url: "http://127.0.0.1:9/v1", model: m}}}}
judge_cache: {{backend: redis, url: "redis://127.0.0.1:{port}/0"}}
grader: {{type: score_model, input: [{{role: user, content: "{{{{sample.output_text}}}}"}}]}}
"#
    );
    let env = Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    let e = Program::compile_str_with(&spec, env)
        .unwrap_err()
        .to_string();
    assert!(e.contains("/judges") && e.contains("redis"), "{e}");
}

#[test]
fn smollm2_judges_a_real_question_with_parseable_verdicts() {
    let server = LlamaServer::start("smol");
    let spec = format!(
        r#"
judges: {{default: {{base_url: "{}", model: "{}"}}}}
judge_cache: {{backend: off}}
grader:
  type: label_model
  labels: ["yes", "no"]
  passing_labels: ["yes"]
  steps: false
  sampling_params: {{max_completions_tokens: 16}}
  input:
    - {{role: system, content: You check answers to geography questions.}}
    - {{role: user, content: "Question: {{{{item.q}}}}\nIs this answer correct? {{{{sample.output_text}}}}"}}
"#,
        server.base_url, server.model
    );
    let rs = referee_core::score::samples(
        &compile(&spec),
        &samples(&[
            "Paris is the capital of France.",
            "The capital of France is Berlin.",
        ]),
        true,
    )
    .0;
    // A 135M model's verdicts are not asserted, only that they are verdicts.
    for r in &rs {
        assert_eq!(r.status.as_str(), "ok", "{r:?}");
        assert!(matches!(r.reward, Some(v) if v == 0.0 || v == 1.0));
        assert_eq!(r.usage.unwrap().judge_calls, 1);
    }
}

/// step_judge on SmolLM2 through llama-server's `json_schema` mode: one call per solution
/// labels every graded step; the schema fixes the number of verdicts, so each solution is
/// scored with one value per step (repeats scoring 0 unseen), or failed with a reason.
#[test]
fn smollm2_labels_every_step_of_a_solution_in_one_structured_call() {
    let server = LlamaServer::start("smol");
    let spec = |reasons: bool, soft: bool, tokens: u32| {
        format!(
            r#"
judges: {{default: {{base_url: "{}", model: "{}"}}}}
judge_cache: {{backend: off}}
grader:
  type: step_judge
  name: process
  question: "{{{{item.q}}}}"
  steps: {{split: numbered}}
  aggregate: mean
  reasons: {reasons}
  soft: {soft}
  sampling_params: {{max_completions_tokens: {tokens}}}
"#,
            server.base_url, server.model
        )
    };
    let q = json!({"q": "What is (2 + 3) * 2?"});
    let solutions = [
        ("1. 2 + 3 = 5.\n2. 5 * 2 = 10.\n3. The answer is 10.", 3),
        ("1. 2 + 3 = 6.\n2. 6 * 2 = 12.\n3. The answer is 12.", 3),
        ("1. First add: 2 + 3 = 5.\n2. Then multiply by two.\n3. 5 * 2 = 10.\n4. So the answer is 10.", 4),
        // The repeat is not shown: two verdicts asked, three step rewards given.
        ("1. 2 + 3 = 5.\n2. 2 + 3 = 5.\n3. 5 * 2 = 10.", 3),
    ];
    let batch: Vec<Sample> = solutions
        .iter()
        .map(|(o, _)| Sample::new(*o, q.clone()))
        .collect();
    // Labels only, soft: the grammar leaves the model nothing to get wrong but the labels.
    let rs = referee_core::score::samples(&compile(&spec(false, true, 200)), &batch, true).0;
    for (r, (out, steps)) in rs.iter().zip(&solutions) {
        assert_eq!(r.status.as_str(), "ok", "{out}: {r:?}");
        assert_eq!(r.usage.unwrap().judge_calls, 1, "one call per solution");
        let sr = r.step_rewards.as_ref().expect("step rewards");
        assert_eq!(sr.len(), *steps, "{out}: {sr:?}");
        assert!(sr.iter().all(|s| (0.0..=1.0).contains(&s.value)), "{sr:?}");
        let mean = sr.iter().map(|s| s.value).sum::<f64>() / sr.len() as f64;
        assert!((r.reward.unwrap() - mean).abs() < 1e-9);
        let trace = serde_json::to_string(&r.trace).unwrap();
        // llama-server returns top_logprobs under the grammar: every label is located.
        assert!(!trace.contains("could not be located"), "{trace}");
        assert!(
            sr.iter().any(|s| s.value > 0.0 && s.value < 1.0),
            "soft: {sr:?}"
        );
        let shown = if out.contains("2. 2 + 3") { 2 } else { *steps };
        assert!(
            trace.contains(&format!("labelled {shown} steps in one call")),
            "{trace}"
        );
    }
    assert_eq!(
        rs[3].step_rewards.as_ref().unwrap()[1].value,
        0.0,
        "the repeat"
    );
    // With a reason before each label the 135M model may ramble: every solution is scored or
    // failed with a reason, never a silent 0.
    let rs = referee_core::score::samples(&compile(&spec(true, false, 400)), &batch, true).0;
    for (r, (out, steps)) in rs.iter().zip(&solutions) {
        if r.status.as_str() == "ok" {
            let sr = r.step_rewards.as_ref().unwrap();
            assert_eq!(sr.len(), *steps, "{out}");
            assert!(
                sr.iter().all(|s| s.value == 0.0 || s.value == 1.0),
                "{sr:?}"
            );
        } else {
            assert_eq!(r.reward, None, "{r:?}");
            assert_eq!(r.reason(), Some("judge_unparseable"), "{r:?}");
        }
    }
}

#[test]
fn reward_models_are_called_in_batches_through_each_api_and_cached() {
    let srv = fault_server("rm", &["--delay", "0.05"]);
    let outputs: Vec<String> = (0..12).map(|i| "x".repeat(i)).collect();
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let batch = samples(&refs);
    let mut sent = 0;
    for (api, index, sign) in [
        ("pooling", 0, 1.0),
        ("pooling", 1, -1.0),
        ("classify", 1, 1.0),
        ("openrlhf", 0, 1.0),
    ] {
        let spec = format!(
            r#"
judges: {{rm: {{base_url: "{}", model: rm, max_batch: 8, batch_wait_ms: 30}}}}
judge_cache: {{backend: memory}}
grader: {{type: reward_model, api: {api}, index: {index}}}
"#,
            srv.info["base_url"].as_str().unwrap()
        );
        let p = compile(&spec);
        let rs = referee_core::score::samples(&p, &batch, false).0;
        for (r, o) in rs.iter().zip(&outputs) {
            let want = sign * (o.len() % 10) as f64 / 10.0;
            assert_eq!(r.reward, Some(want), "{api}[{index}] for {o:?}: {r:?}");
        }
        let u = summary(&rs).judge.unwrap();
        assert_eq!(u.judge_calls, 12);
        // The same texts again: every reward from the cache, nothing sent.
        let again = summary(&referee_core::score::samples(&p, &batch, false).0)
            .judge
            .unwrap();
        assert_eq!((again.judge_calls, again.cache_hits), (0, 12));
        sent += 12;
    }
    let s = stats(&srv);
    let sizes: Vec<u64> = s["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(sizes.iter().sum::<u64>(), sent, "{sizes:?}");
    assert!(
        sizes.len() < sent as usize / 2,
        "texts were batched: {sizes:?}"
    );
    assert!(sizes.iter().all(|&n| n <= 8), "max_batch holds: {sizes:?}");
}

#[test]
fn reference_judge_commits_first_once_per_question_on_a_real_server() {
    let server = LlamaServer::start("tiny");
    let spec = format!(
        r#"
judges: {{default: {{base_url: "{}", model: "{}"}}}}
judge_cache: {{backend: memory}}
grader:
  type: reference_judge
  question: "{{{{item.q}}}}"
  reference: Paris
  commit_first: true
  explain: false
  sampling_params: {{max_completions_tokens: 400}}
"#,
        server.base_url, server.model
    );
    let rs = referee_core::score::samples(
        &compile(&spec),
        &samples(&["Paris.", "Lyon.", "It is Paris, on the Seine."]),
        true,
    )
    .0;
    for r in &rs {
        // The tiny model's answers are gibberish: a verdict, or a stated failure.
        match r.status.as_str() {
            "ok" => assert!(matches!(r.reward, Some(v) if v == 0.0 || v == 1.0), "{r:?}"),
            _ => assert_eq!(r.reason(), Some("judge_unparseable"), "{r:?}"),
        }
    }
    // The blind call is the same for the three rollouts of the question: one call, two hits;
    // then one equivalence call per rollout (none when the blind answer was unparseable).
    let u = summary(&rs).judge.unwrap();
    assert_eq!(u.cache_hits, 2, "{u:?}");
    let judged = rs.iter().any(|r| r.status.as_str() == "ok");
    assert_eq!(u.judge_calls, if judged { 4 } else { 1 }, "{u:?} {rs:?}");
}

#[test]
fn flat_groups_are_broken_by_a_judged_tournament_on_a_real_server() {
    let server = LlamaServer::start("tiny");
    let spec = format!(
        r#"
judges: {{default: {{base_url: "{}", model: "{}"}}}}
judge_cache: {{backend: off}}
grader: {{type: const, value: 1, name: c}}
group:
  advantage: grpo
  tie_break: {{anchors: 2, spread: 0.1, question: "{{{{item.q}}}}"}}
"#,
        server.base_url, server.model
    );
    let mut batch = samples(&[
        "Paris is the capital of France.",
        "It is Paris.",
        "Paris, on the Seine.",
        "The capital city is Paris.",
    ]);
    for s in &mut batch {
        s.group = Some("g".into());
    }
    let p = compile(&spec);
    let rs = referee_core::score::samples(&p, &batch, true).0;
    // The group is flat (every reward 1), so the tournament goes to the judge: 4 rollouts, 2
    // anchors, both orders. Whatever the tiny model prefers, every rollout keeps its raw reward
    // and is marked; the advantages come from the spread values.
    for r in &rs {
        assert_eq!(r.reward, Some(1.0), "the raw reward is untouched: {r:?}");
        let g = r.group.as_ref().expect("the stage ran");
        let flag = format!("{:?}", g.flag);
        assert!(flag.contains("TieBreak") || flag.contains("Flat"), "{flag}");
        assert!(g.advantage.is_some_and(f64::is_finite), "{g:?}");
    }
}
