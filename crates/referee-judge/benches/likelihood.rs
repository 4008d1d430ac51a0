//! Prompt-logprob and embedding calls (the `likelihood` and `embedding_similarity` graders'
//! paths) against a raw HTTP loop. Not a test: `cargo bench -p referee-judge --bench likelihood`
//! (`benches/likelihood/README.md`). Self-contained: the endpoint is an axum server on loopback
//! in this process (its own runtime thread), answering `/v1/completions` in vLLM's echo shape
//! and `/v1/embeddings`, after `delay` ms, counting requests and texts.
//!
//! 1. **Overhead**: one text per call, one call at a time, delay 0: a raw `reqwest` POST of the
//!    same body (reply parsed as JSON) vs `Pool::prompt_logprobs` and `Pool::embed`
//!    (`max_batch: 1`): µs per call, medians over rounds.
//! 2. **Texts per request**: 512 prompt-logprob calls at once against a 20 ms server,
//!    `max_batch` 1, 8, 32, 64: requests, texts per request, wall time.
//! 3. **GRPO batch**: 64 prompts × 8 rollouts scored by a SAR-style `likelihood` spec (context
//!    with the rollout's reasoning, and a baseline context shared by the group), a quarter of
//!    the rollouts repeating another of their prompt: texts sent with the cache off (in-flight
//!    sharing only), a memory cache cold, and the same batch again warm.
//!
//! Env: `REFEREE_BENCH_ROUNDS` (default 5). Prints one JSON object.

use axum::{extract::State, routing::post, Json, Router};
use futures::future::join_all;
use referee_core::exec::Env;
use referee_core::judge::{EmbedCall, EndpointConfig, Judge, PromptCall, PromptLogprobApi};
use referee_core::{Program, Sample};
use referee_judge::Pool;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Default)]
struct Counts {
    requests: AtomicU64,
    texts: AtomicU64,
    delay_ms: AtomicU64,
}

fn prompts(body: &Value, key: &str) -> Vec<String> {
    match &body[key] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

async fn hold(c: &Counts, n: usize) {
    c.requests.fetch_add(1, Ordering::Relaxed);
    c.texts.fetch_add(n as u64, Ordering::Relaxed);
    let d = c.delay_ms.load(Ordering::Relaxed);
    if d > 0 {
        tokio::time::sleep(Duration::from_millis(d)).await;
    }
}

/// vLLM's echo without generation: whitespace-led word tokens, the first without a logprob.
async fn completions(State(c): State<Arc<Counts>>, Json(body): Json<Value>) -> Json<Value> {
    let texts = prompts(&body, "prompt");
    hold(&c, texts.len()).await;
    let choices: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut tokens = Vec::new();
            let mut start = 0;
            let mut prev_word = false;
            for (k, ch) in t.char_indices() {
                if ch.is_whitespace() && prev_word {
                    tokens.push(&t[start..k]);
                    start = k;
                }
                prev_word = !ch.is_whitespace();
            }
            tokens.push(&t[start..]);
            let mut off = 0;
            let offsets: Vec<usize> = tokens
                .iter()
                .map(|tok| {
                    let o = off;
                    off += tok.chars().count();
                    o
                })
                .collect();
            let lps: Vec<Value> = (0..tokens.len())
                .map(|k| {
                    if k == 0 {
                        Value::Null
                    } else {
                        json!(-0.5 - (k % 7) as f64 / 10.0)
                    }
                })
                .collect();
            json!({"index": i, "text": t, "finish_reason": "length",
                   "logprobs": {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets,
                                "top_logprobs": Value::Null}})
        })
        .collect();
    Json(json!({"object": "text_completion", "model": body["model"], "choices": choices}))
}

async fn embeddings(State(c): State<Arc<Counts>>, Json(body): Json<Value>) -> Json<Value> {
    let texts = prompts(&body, "input");
    hold(&c, texts.len()).await;
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let h = t
                .bytes()
                .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            let v: Vec<f64> = (0..64)
                .map(|k| ((h >> (k % 60)) & 0xff) as f64 / 255.0)
                .collect();
            json!({"index": i, "object": "embedding", "embedding": v})
        })
        .collect();
    Json(json!({"object": "list", "model": body["model"], "data": data}))
}

/// The server's base URL and counters; it runs until the process exits.
fn serve() -> (String, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new()
                .route("/v1/completions", post(completions))
                .route("/v1/embeddings", post(embeddings))
                .with_state(c);
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    (format!("http://{addr}/v1"), counts)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn pool(base: &str, max_batch: usize, wait_ms: u64, concurrency: usize) -> Pool {
    let mut cfg = EndpointConfig::new(base, "bench");
    cfg.max_batch = max_batch;
    cfg.batch_wait_ms = wait_ms;
    cfg.max_concurrency = concurrency;
    Pool::new(BTreeMap::from([("e".to_string(), cfg)])).unwrap()
}

/// A question, a reasoning and a reference of realistic length (~300 chars in all).
fn text(i: usize) -> String {
    format!(
        "Question {i}: explain why the sky looks blue at noon and red at sunset.\nReasoning: light scatters off molecules; shorter wavelengths scatter more (case {i}), so at noon blue dominates while at sunset the longer path removes it.\nAnswer: Rayleigh scattering, case {i}."
    )
}

fn overhead(base: &str, rounds: usize) -> Value {
    let n = 300;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = rt.block_on(async { reqwest::Client::new() });
    let p = pool(base, 1, 0, 8);
    let (mut raw, mut lp, mut raw_e, mut emb) = (vec![], vec![], vec![], vec![]);
    for round in 0..=rounds {
        let tag = format!("r{round}");
        let t = Instant::now();
        rt.block_on(async {
            for i in 0..n {
                let body = json!({"model": "bench", "prompt": [format!("{tag} {}", text(i))], "max_tokens": 0,
                                  "echo": true, "logprobs": 0, "temperature": 0});
                let r = http.post(format!("{base}/completions")).json(&body).send().await.unwrap();
                let v: Value = r.json().await.unwrap();
                assert!(v["choices"][0]["logprobs"]["tokens"].is_array());
            }
        });
        let a = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            let call = PromptCall {
                api: PromptLogprobApi::Echo,
                text: format!("{tag}p {}", text(i)),
            };
            futures::executor::block_on(p.prompt_logprobs("e", call, None)).unwrap();
        }
        let b = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        rt.block_on(async {
            for i in 0..n {
                let body = json!({"model": "bench", "input": [format!("{tag}e {}", text(i))], "encoding_format": "float"});
                let r = http.post(format!("{base}/embeddings")).json(&body).send().await.unwrap();
                let v: Value = r.json().await.unwrap();
                assert!(v["data"][0]["embedding"].is_array());
            }
        });
        let c = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            let call = EmbedCall {
                text: format!("{tag}q {}", text(i)),
            };
            futures::executor::block_on(p.embed("e", call, None)).unwrap();
        }
        let d = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        if round > 0 {
            raw.push(a);
            lp.push(b);
            raw_e.push(c);
            emb.push(d);
        }
    }
    let (raw, lp, raw_e, emb) = (
        median(&mut raw),
        median(&mut lp),
        median(&mut raw_e),
        median(&mut emb),
    );
    json!({"calls_per_round": n, "rounds": rounds,
           "completions_us": {"raw": raw, "pool": lp, "ratio": lp / raw},
           "embeddings_us": {"raw": raw_e, "pool": emb, "ratio": emb / raw_e}})
}

fn batching(base: &str, counts: &Counts, rounds: usize) -> Value {
    counts.delay_ms.store(20, Ordering::Relaxed);
    let mut out = Vec::new();
    for max_batch in [1usize, 8, 32, 64] {
        let mut walls = Vec::new();
        let mut per = (0, 0);
        for round in 0..rounds {
            let p = pool(base, max_batch, 5, 8);
            let (r0, t0) = (
                counts.requests.load(Ordering::Relaxed),
                counts.texts.load(Ordering::Relaxed),
            );
            let t = Instant::now();
            let calls = (0..512).map(|i| {
                p.prompt_logprobs(
                    "e",
                    PromptCall {
                        api: PromptLogprobApi::Echo,
                        text: format!("b{max_batch}-{round} {}", text(i)),
                    },
                    None,
                )
            });
            let rs = futures::executor::block_on(join_all(calls));
            assert!(rs.iter().all(Result::is_ok));
            walls.push(t.elapsed().as_secs_f64() * 1e3);
            per = (
                counts.requests.load(Ordering::Relaxed) - r0,
                counts.texts.load(Ordering::Relaxed) - t0,
            );
        }
        out.push(
            json!({"max_batch": max_batch, "requests": per.0, "texts": per.1,
                        "texts_per_request": per.1 as f64 / per.0 as f64,
                        "wall_ms": median(&mut walls)}),
        );
    }
    counts.delay_ms.store(0, Ordering::Relaxed);
    json!(out)
}

fn grpo(base: &str, counts: &Counts) -> Value {
    counts.delay_ms.store(20, Ordering::Relaxed);
    let spec = |cache: &str| {
        format!(
            r#"
judges:
  policy: {{base_url: "{base}", model: bench, max_batch: 64, max_concurrency: 8}}
judge_cache: {{backend: {cache}}}
grader:
  type: likelihood
  name: sar
  judge: policy
  context: "Q: {{{{item.question}}}}\n{{{{sample.reasoning}}}}\nAnswer:"
  baseline: "Q: {{{{item.question}}}}\nAnswer:"
  target: " {{{{item.reference}}}}"
  reduce: mean_logprob
  leak: {{reward: -10}}
"#
        )
    };
    // 64 prompts × 8 rollouts; rollouts 6 and 7 repeat rollouts 0 and 1 (a quarter repeat).
    let batch: Vec<Sample> = (0..64)
        .flat_map(|p| {
            (0..8).map(move |r| {
                let k = if r >= 6 { r - 6 } else { r };
                Sample::new(
                    format!("<think>light scatters off molecules, attempt {k} of prompt {p}; shorter wavelengths scatter more</think> done"),
                    json!({"question": format!("why is the sky blue? ({p})"), "reference": "Rayleigh scattering by air molecules."}),
                )
            })
        })
        .collect();
    let env = || Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    let mut rows = Vec::new();
    for (mode, cache, runs) in [("cache off", "off", 1), ("memory cache", "memory", 2)] {
        let program = Program::compile_str_with(&spec(cache), env()).unwrap();
        for run in 0..runs {
            let (r0, t0) = (
                counts.requests.load(Ordering::Relaxed),
                counts.texts.load(Ordering::Relaxed),
            );
            let t = Instant::now();
            let (results, _) = referee_core::score::samples(&program, &batch, false);
            let wall = t.elapsed().as_secs_f64() * 1e3;
            assert!(
                results.iter().all(|r| r.reward.is_some()),
                "{:?}",
                results[0]
            );
            let hits: u64 = results
                .iter()
                .filter_map(|r| r.usage.map(|u| u.cache_hits))
                .sum();
            rows.push(json!({
                "mode": if runs == 2 { format!("{mode} {}", if run == 0 { "cold" } else { "warm" }) } else { mode.to_string() },
                "rollouts": batch.len(), "calls": 2 * batch.len(),
                "texts_sent": counts.texts.load(Ordering::Relaxed) - t0,
                "requests": counts.requests.load(Ordering::Relaxed) - r0,
                "shared_or_cached": hits, "wall_ms": wall,
            }));
        }
    }
    counts.delay_ms.store(0, Ordering::Relaxed);
    json!(rows)
}

fn main() {
    let rounds: usize = std::env::var("REFEREE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let (base, counts) = serve();
    let out = json!({
        "overhead": overhead(&base, rounds),
        "batching": batching(&base, &counts, rounds.min(3)),
        "grpo": grpo(&base, &counts),
    });
    println!("{}", serde_json::to_string_pretty(&out).unwrap());
}
