//! `samples:` on the wire: a loopback chat server records every request body and answers by
//! the request's seed (`via: calls`) or with `n` choices (`via: choices`); the tests check that
//! each sample is its own request with its own seed and cache key, that an `n`-choice call is one
//! request shared by its samples even without a cache, and that a server ignoring `n` fails the
//! samples it did not answer instead of scoring them.

use axum::routing::post;
use axum::{Json, Router};
use referee_core::exec::Env;
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<Value>>>;

/// The verdict for a seed or a choice: 1 for even, 0 for odd.
fn verdict(i: u64) -> Value {
    json!({"message": {"content": format!("{{\"result\": {}}}", u64::from(i % 2 == 0))},
           "finish_reason": "stop", "index": i})
}

/// A chat server answering by seed, or with `n` choices (only one when `honours_n` is false,
/// as llama-server does), after 200 ms so concurrent samples overlap.
fn serve(honours_n: bool) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let keep = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new().route(
                "/v1/chat/completions",
                post(move |Json(b): Json<Value>| {
                    let keep = keep.clone();
                    async move {
                        keep.lock().unwrap().push(b.clone());
                        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                        let n = b["n"].as_u64().filter(|_| honours_n).unwrap_or(1);
                        let choices: Vec<Value> = match b["seed"].as_u64() {
                            Some(s) if n == 1 => vec![verdict(s)],
                            _ => (0..n).rev().map(verdict).collect(),
                        };
                        Json(json!({"choices": choices,
                                    "usage": {"prompt_tokens": 50, "completion_tokens": 4 * n}}))
                    }
                }),
            );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}/v1", rx.recv().unwrap()), seen)
}

fn program(base: &str, cache: &str, samples: &str) -> Program {
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{base}", model: "judge"}}
judge_cache: {{backend: {cache}}}
grader:
  type: score_model
  name: quality
  steps: false
  samples: {samples}
  input:
    - {{role: user, content: "Grade 0 or 1: {{{{sample.output_text}}}}"}}
"#
    );
    let env = Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    Program::compile_str_with(&spec, env).unwrap_or_else(|e| panic!("{e}\n{spec}"))
}

fn component(r: &referee_core::ScoreResult, name: &str) -> Option<f64> {
    r.components
        .iter()
        .find(|(n, _)| &**n == name)
        .and_then(|(_, v)| *v)
}

#[test]
fn each_sample_is_a_request_with_its_own_seed_and_cache_key() {
    let (base, seen) = serve(true);
    let p = program(&base, "memory", "3");
    let s = Sample::new("Paris is the capital of France.", json!({}));
    let r = &referee_core::score::samples(&p, std::slice::from_ref(&s), false).0[0];
    // Seeds 0, 1, 2 answer 1, 0, 1.
    assert!((r.reward.unwrap() - 2.0 / 3.0).abs() < 1e-9, "{r:?}");
    assert!((component(r, "quality.std").unwrap() - (2f64 / 9.0).sqrt()).abs() < 1e-9);
    let mut seeds: Vec<(u64, f64)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["seed"].as_u64().unwrap(),
                b["temperature"].as_f64().unwrap(),
            )
        })
        .collect();
    seeds.sort_by_key(|s| s.0);
    assert_eq!(seeds, vec![(0, 1.0), (1, 1.0), (2, 1.0)]);
    assert!(seen.lock().unwrap().iter().all(|b| b.get("n").is_none()));
    assert_eq!(r.usage.unwrap().judge_calls, 3);
    // Scored again: every sample is its own cache entry, so all three hit and none is sent.
    let again = &referee_core::score::samples(&p, &[s], false).0[0];
    assert_eq!(again.reward, r.reward);
    assert_eq!(
        (
            again.usage.unwrap().judge_calls,
            again.usage.unwrap().cache_hits
        ),
        (0, 3)
    );
    assert_eq!(seen.lock().unwrap().len(), 3);
}

#[test]
fn choices_are_one_request_shared_by_the_samples_without_a_cache() {
    let (base, seen) = serve(true);
    let p = program(&base, "off", "{n: 3, via: choices}");
    let batch = vec![
        Sample::new("Paris is the capital of France.", json!({})),
        Sample::new(
            "Water boils at 100 degrees Celsius at sea level.",
            json!({}),
        ),
    ];
    let rs = referee_core::score::samples(&p, &batch, false).0;
    for r in &rs {
        // Choices 0, 1, 2 answer 1, 0, 1 (sent out of order; read by index).
        assert!((r.reward.unwrap() - 2.0 / 3.0).abs() < 1e-9, "{r:?}");
        let u = r.usage.unwrap();
        assert_eq!((u.judge_calls, u.cache_hits), (1, 2), "{u:?}");
    }
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one request per candidate");
    for b in &bodies {
        assert_eq!(b["n"], 3);
        assert!(b.get("seed").is_none(), "{b}");
        assert_eq!(b["temperature"], 1.0);
    }
}

#[test]
fn a_server_that_ignores_n_fails_the_samples_instead_of_scoring_them() {
    let (base, _) = serve(false);
    let p = program(&base, "off", "{n: 3, via: choices}");
    let r = &referee_core::score::samples(
        &p,
        &[Sample::new("Paris is the capital of France.", json!({}))],
        false,
    )
    .0[0];
    assert_eq!(r.reward, None, "{r:?}");
    assert_eq!(r.reason(), Some("judge_config"));
    let f = r.status.clone();
    let msg = format!("{f:?}");
    assert!(msg.contains("does not support `n`"), "{msg}");
    assert_eq!(component(r, "quality"), None);
}
