//! Judge-call overhead and throughput (not a test; see `benches/judge/README.md`).
//!
//! Run through `python3 benches/judge/run.py`, which starts the servers and passes:
//! - `REFEREE_BENCH_LLAMA`: a llama-server base URL (tiny model): per-call overhead of Referee's
//!   client and of a whole `score_model` sample over a raw reqwest loop, same requests, same
//!   server, interleaved rounds;
//! - `REFEREE_BENCH_SLOW`: a server that answers every call after a fixed delay, handling calls
//!   concurrently: throughput against the concurrency limit, and the cache's and in-batch
//!   dedup's effect on a GRPO-shaped batch with repeated completions.
//!
//! Prints one JSON object.

use referee_core::exec::Env;
use referee_core::judge::{EndpointConfig, Judge, JudgeCall};
use referee_core::{Program, Sample};
use referee_judge::{ChatRequest, Client, Message, Pool};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Keeps the last call a grader made, so the raw loop can send exactly the same request.
struct Recorder {
    inner: Pool,
    last: std::sync::Mutex<Option<JudgeCall>>,
}

impl Judge for Recorder {
    fn call(
        &self,
        endpoint: &str,
        call: JudgeCall,
        deadline: Option<Instant>,
    ) -> futures::future::BoxFuture<
        'static,
        Result<referee_core::judge::JudgeReply, referee_core::judge::JudgeFailure>,
    > {
        *self.last.lock().unwrap() = Some(call.clone());
        self.inner.call(endpoint, call, deadline)
    }
    fn endpoints(&self) -> Vec<String> {
        self.inner.endpoints()
    }
}

/// Per-call latency (ms) of the same request (the one `score_model` sends: system notice and
/// format instructions, the delimited candidate, the `json_schema` response format) through:
/// a raw reqwest POST, Referee's `Client::chat`, the `Pool` (the graders' path: spawned on the
/// judge runtime, awaited from a plain executor), and a whole `score_model` sample (rendering,
/// prefilter, call, strict parsing). Every call has its own candidate text, so llama-server's
/// prompt cache favours no path, and the order of the paths rotates.
fn overhead(base: &str, rounds: usize, n: usize) -> Value {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let raw = reqwest::Client::new();
    let url = format!("{base}/chat/completions");
    let mut cfg = EndpointConfig::new(base, "judge");
    cfg.max_retries = 0;
    let client = rt.block_on(async { Client::new(cfg.clone()) }).unwrap();
    let pool = Pool::new(BTreeMap::from([("default".to_string(), cfg.clone())])).unwrap();
    let recorder = Arc::new(Recorder {
        inner: Pool::new(BTreeMap::from([("default".to_string(), cfg)])).unwrap(),
        last: std::sync::Mutex::default(),
    });
    let spec = r#"
type: score_model
steps: false
prefilter: false
sampling_params: {max_completions_tokens: 8}
input: [{role: user, content: "Rate this answer to 2+2: {{sample.output_text}}"}]
"#;
    let env = Env {
        judge: Some(recorder.clone()),
        ..Env::default()
    };
    let program = Program::compile_str_with(spec, env).unwrap();
    program.score(&Sample::new("CANDIDATE", json!({})));
    let template = recorder.last.lock().unwrap().clone().unwrap();
    let call_for = |text: &str| {
        let mut c = template.clone();
        for m in &mut c.messages {
            m.1 = m.1.replace("CANDIDATE", text);
        }
        c
    };
    let body_for = |c: &JudgeCall| {
        json!({"model": "judge", "temperature": c.temperature, "max_tokens": c.max_tokens,
               "messages": c.messages.iter().map(|(r, t)| json!({"role": r, "content": t})).collect::<Vec<_>>(),
               "response_format": {"type": "json_schema", "json_schema":
                   {"name": "verdict", "schema": c.json_schema, "strict": true}}})
    };
    let mut times: [Vec<f64>; 4] = Default::default();
    let mut k = 0usize;
    for _ in 0..rounds {
        for i in 0..n {
            for step in 0..4 {
                let path = (i + step) % 4;
                k += 1;
                let text = format!("The answer is {k}.");
                let c = call_for(&text);
                let t = Instant::now();
                match path {
                    0 => rt.block_on(async {
                        let resp = raw.post(&url).json(&body_for(&c)).send().await.unwrap();
                        let v: Value = resp.json().await.unwrap();
                        assert!(v["choices"][0]["message"]["content"].is_string());
                    }),
                    1 => {
                        let req = ChatRequest {
                            messages: c
                                .messages
                                .iter()
                                .map(|(r, t)| Message {
                                    role: r.clone(),
                                    content: t.clone(),
                                    media: Vec::new(),
                                })
                                .collect(),
                            temperature: c.temperature,
                            max_tokens: c.max_tokens,
                            json_schema: c.json_schema.clone(),
                            ..ChatRequest::default()
                        };
                        rt.block_on(client.chat(&req, None)).unwrap();
                    }
                    2 => {
                        futures::executor::block_on(pool.call("default", c, None)).unwrap();
                    }
                    _ => {
                        let r = program.score(&Sample::new(text, json!({})));
                        assert_eq!(r.usage.unwrap().judge_calls, 1, "{r:?}");
                    }
                }
                times[path].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let [mut a, mut b, mut c, mut d] = times;
    let (raw_ms, cl, p, g) = (
        median(&mut a),
        median(&mut b),
        median(&mut c),
        median(&mut d),
    );
    json!({"calls_per_path": rounds * n, "raw_ms": raw_ms, "client_ms": cl, "pool_ms": p,
           "score_model_sample_ms": g, "client_overhead_ms": cl - raw_ms,
           "pool_overhead_ms": p - raw_ms, "score_model_overhead_ms": g - raw_ms})
}

/// Calls/s through the pool at each concurrency limit, against a server with a fixed delay,
/// beside a raw reqwest loop keeping the same number of calls in flight.
fn scaling(base: &str, calls: usize) -> Value {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let raw = reqwest::Client::new();
    let url = format!("{base}/chat/completions");
    let mut out = Vec::new();
    for c in [1usize, 2, 4, 8, 16, 32] {
        let n = calls.min(c * 12).max(c * 4);
        let t = Instant::now();
        rt.block_on(async {
            let sem = Arc::new(tokio::sync::Semaphore::new(c));
            let mut hs = Vec::new();
            for i in 0..n {
                let (raw, url, sem) = (raw.clone(), url.clone(), sem.clone());
                hs.push(tokio::spawn(async move {
                    let _p = sem.acquire().await.unwrap();
                    let b = json!({"model": "slow", "messages": [{"role": "user", "content": format!("{i}")}]});
                    let v: Value = raw.post(&url).json(&b).send().await.unwrap().json().await.unwrap();
                    assert!(v["choices"].is_array());
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
        let raw_rate = n as f64 / t.elapsed().as_secs_f64();
        let mut cfg = EndpointConfig::new(base, "slow");
        cfg.max_concurrency = c;
        let pool = Arc::new(Pool::new(BTreeMap::from([("default".to_string(), cfg)])).unwrap());
        let t = Instant::now();
        let futs: Vec<_> = (0..n)
            .map(|i| {
                pool.call(
                    "default",
                    JudgeCall {
                        messages: vec![("user".into(), format!("{i}"))],
                        ..JudgeCall::default()
                    },
                    None,
                )
            })
            .collect();
        for r in futures::executor::block_on(futures::future::join_all(futs)) {
            r.unwrap();
        }
        let rate = n as f64 / t.elapsed().as_secs_f64();
        out.push(json!({"max_concurrency": c, "calls": n, "calls_per_s": rate, "raw_calls_per_s": raw_rate}));
    }
    Value::Array(out)
}

/// A GRPO-shaped batch (64 prompts x 8 rollouts) where early-training duplication makes 45% of
/// the rollouts repeat another rollout of their prompt: calls made and wall time with the cache
/// off, on (in-batch dedup), and on the next step's identical batch (warm cache).
fn grpo(base: &str) -> Value {
    let mut samples = Vec::new();
    for p in 0..64 {
        for r in 0..8 {
            // Rollouts 0..4 distinct; 5..7 and every 4th repeat earlier ones.
            let k = if r >= 5 { r - 5 } else { r };
            let k = if p % 4 == 0 && r == 4 { 0 } else { k };
            let mut s = Sample::new(format!("Answer {k} to prompt {p}."), json!({"p": p}));
            s.group = Some(format!("p{p}"));
            samples.push(s);
        }
    }
    let distinct: std::collections::HashSet<&str> =
        samples.iter().map(|s| s.output_text.as_str()).collect();
    let dir = std::env::temp_dir().join(format!("referee-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = |cache: &str| {
        let spec = format!(
            r#"
judges: {{default: {{base_url: "{base}", model: slow, max_concurrency: 16}}}}
judge_cache: {cache}
grader:
  type: score_model
  steps: false
  input: [{{role: user, content: "Prompt {{{{item.p}}}}: {{{{sample.output_text}}}}"}}]
"#
        );
        let env = Env {
            connect: Some(Arc::new(referee_judge::Connector::default())),
            ..Env::default()
        };
        let p = Program::compile_str_with(&spec, env).unwrap();
        let t = Instant::now();
        let rs = referee_core::score::samples(&p, &samples, false).0;
        let secs = t.elapsed().as_secs_f64();
        let calls: u64 = rs.iter().map(|r| r.usage.unwrap().judge_calls).sum();
        let hits: u64 = rs.iter().map(|r| r.usage.unwrap().cache_hits).sum();
        json!({"seconds": secs, "judge_calls": calls, "cache_hits": hits})
    };
    let file = format!(
        "{{backend: file, path: \"{}\"}}",
        dir.join("c.redb").display()
    );
    let off = run("{backend: off}");
    let cold = run(&file);
    let warm = run(&file);
    let _ = std::fs::remove_dir_all(&dir);
    json!({"samples": samples.len(), "distinct_completions": distinct.len(),
           "cache_off": off, "cache_cold_in_batch_dedup": cold, "cache_warm_next_step": warm})
}

fn main() {
    let rounds: usize = std::env::var("REFEREE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let mut out = serde_json::Map::new();
    if let Ok(base) = std::env::var("REFEREE_BENCH_LLAMA") {
        out.insert("overhead".into(), overhead(&base, rounds, 40));
    }
    if let Ok(base) = std::env::var("REFEREE_BENCH_SLOW") {
        out.insert("scaling".into(), scaling(&base, 192));
        out.insert("grpo_batch".into(), grpo(&base));
    }
    if out.is_empty() {
        eprintln!("set REFEREE_BENCH_LLAMA and/or REFEREE_BENCH_SLOW (benches/judge/run.py does)");
        std::process::exit(2);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&Value::Object(out)).unwrap()
    );
}
