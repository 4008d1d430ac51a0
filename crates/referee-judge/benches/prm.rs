//! `prm`'s client overhead against a raw HTTP loop (not a test; run through
//! `benches/steps/prm.py`, which starts the loopback PRM servers and passes):
//! - `REFEREE_BENCH_PRM_SERVERS`: JSON `{"label": "http://127.0.0.1:PORT/v1", ...}`, one
//!   `scripts/fault_server.py --mode prm` per server delay;
//! - `REFEREE_BENCH_DATA`: rows of `benches/steps/gen.py` (8–30 steps each);
//! - `REFEREE_BENCH_SAMPLES` (default 1,000), `REFEREE_BENCH_ROUNDS` (default 5),
//!   `REFEREE_BENCH_APIS` (default `pooling,math_shepherd`).
//!
//! For each server and API, the same samples go through three paths, interleaved (the order
//! rotates every round, after one discarded warm-up round):
//! - `raw`: a plain reqwest client replaying **the request bodies Referee sent** (recorded at
//!   the server in a first run), as many in flight as the endpoint's `max_concurrency`, each
//!   reply read and parsed as JSON and its length checked. In-process Rust with the same HTTP
//!   stack and a runtime of the same size as the pool's, so the difference is Referee's own
//!   work, not a language or a client library.
//! - `pool`: the `StepCall`s the grader made, all given to `Pool::step_rewards` at once
//!   (batching, in-flight dedup, the request, locating each step's score in the reply).
//! - `score`: `referee_core::score::samples` on the compiled `prm` spec, what `referee score`
//!   runs per chunk (cutting steps, removing the policy's tags and control tokens, the text,
//!   the pool, the aggregate, the result with its step rewards).
//!
//! Prints one JSON object: per server and API, median wall ms per path and requests per path.

use futures::future::BoxFuture;
use referee_core::exec::Env;
use referee_core::judge::{
    EndpointConfig, Judge, JudgeCall, JudgeFailure, JudgeReply, StepCall, StepReply,
};
use referee_core::{Program, Sample};
use referee_judge::Pool;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The three paths timed, in the order of the arrays below.
const PATHS: [&str; 3] = ["raw", "pool", "score"];

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Keeps the step calls the grader makes while `on`, so the pool path replays exactly them.
struct Recorder {
    inner: Pool,
    on: AtomicBool,
    calls: Mutex<Vec<StepCall>>,
}

impl Judge for Recorder {
    fn call(
        &self,
        endpoint: &str,
        call: JudgeCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<JudgeReply, JudgeFailure>> {
        self.inner.call(endpoint, call, deadline)
    }
    fn endpoints(&self) -> Vec<String> {
        self.inner.endpoints()
    }
    fn step_rewards(
        &self,
        endpoint: &str,
        call: StepCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<StepReply, JudgeFailure>> {
        if self.on.load(Ordering::Relaxed) {
            self.calls.lock().unwrap().push(call.clone());
        }
        self.inner.step_rewards(endpoint, call, deadline)
    }
}

/// The loopback server's control endpoints (`/reset`, `/stats`, `/recorded`), at its root.
struct Server {
    root: String,
    http: reqwest::Client,
}

impl Server {
    async fn reset(&self, record: bool) {
        let q = if record { "?record=1" } else { "" };
        let r = self
            .http
            .post(format!("{}/reset{q}", self.root))
            .send()
            .await;
        assert!(r.unwrap().status().is_success());
    }
    async fn get(&self, path: &str) -> Value {
        let r = self.http.get(format!("{}{path}", self.root)).send().await;
        r.unwrap().json().await.unwrap()
    }
    async fn requests(&self) -> u64 {
        self.get("/stats").await["requests"].as_u64().unwrap()
    }
}

/// The raw loop: every body POSTed with at most `conc` in flight; each reply parsed as JSON
/// and holding one output per text sent.
async fn raw(http: &reqwest::Client, bodies: &Arc<Vec<(String, String, usize)>>, conc: usize) {
    let sem = Arc::new(tokio::sync::Semaphore::new(conc));
    let mut hs = Vec::with_capacity(bodies.len());
    for i in 0..bodies.len() {
        let (http, bodies, sem) = (http.clone(), bodies.clone(), sem.clone());
        hs.push(tokio::spawn(async move {
            let _slot = sem.acquire().await.unwrap();
            let (url, body, n) = &bodies[i];
            let resp = http
                .post(url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let bytes = resp.bytes().await.unwrap();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            let outs = v.get("data").or_else(|| v.get("choices"));
            assert_eq!(outs.and_then(Value::as_array).map(Vec::len), Some(*n));
        }));
    }
    for h in hs {
        h.await.unwrap();
    }
}

fn spec(api: &str) -> String {
    format!(
        r#"
type: prm
name: process
api: {api}
steps: {{split: paragraphs, min_chars: 8}}
aggregate: min
context: "Question {{{{item.answer}}}}: what is the total?\n"
"#
    )
}

fn bench(base: &str, api: &str, samples: &[Sample], rounds: usize) -> Value {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let root = base.trim_end_matches('/').trim_end_matches("/v1");
    let srv = Server {
        root: root.to_string(),
        http: reqwest::Client::new(),
    };
    let mut cfg = EndpointConfig::new(base, "prm");
    cfg.max_retries = 0;
    let conc = cfg.max_concurrency;
    let endpoints = BTreeMap::from([("default".to_string(), cfg)]);
    let recorder = Arc::new(Recorder {
        inner: Pool::new(endpoints.clone()).unwrap(),
        on: AtomicBool::new(true),
        calls: Mutex::default(),
    });
    let env = Env {
        judge: Some(recorder.clone()),
        ..Env::default()
    };
    let program = Program::compile_str_with(&spec(api), env).unwrap();
    let pool = Pool::new(endpoints).unwrap();
    // The recording run: the bodies at the server, the calls at the recorder.
    rt.block_on(srv.reset(true));
    let rs = referee_core::score::samples(&program, samples, false).0;
    let bad: Vec<_> = rs.iter().filter(|r| r.reward.is_none()).take(3).collect();
    assert!(bad.is_empty(), "{api}: unscored samples: {bad:?}");
    recorder.on.store(false, Ordering::Relaxed);
    let calls = std::mem::take(&mut *recorder.calls.lock().unwrap());
    let at_server = rt.block_on(srv.get("/recorded"));
    let bodies: Vec<(String, String, usize)> = at_server
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let body = r["body"].as_str().unwrap().to_string();
            let v: Value = serde_json::from_str(&body).unwrap();
            let n = v
                .get("input")
                .or_else(|| v.get("prompt"))
                .and_then(Value::as_array)
                .unwrap()
                .len();
            (format!("{root}{}", r["path"].as_str().unwrap()), body, n)
        })
        .collect();
    let texts: usize = bodies.iter().map(|b| b.2).sum();
    let bodies = Arc::new(bodies);
    rt.block_on(srv.reset(false));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(conc)
        .build()
        .unwrap();

    let mut ms: [Vec<f64>; 3] = Default::default();
    let mut reqs: [Vec<f64>; 3] = Default::default();
    for round in 0..=rounds {
        for k in 0..3 {
            let path = (round + k) % 3;
            let before = rt.block_on(srv.requests());
            let t = Instant::now();
            match path {
                0 => rt.block_on(raw(&http, &bodies, conc)),
                1 => {
                    let futs: Vec<_> = calls
                        .iter()
                        .map(|c| pool.step_rewards("default", c.clone(), None))
                        .collect();
                    for r in futures::executor::block_on(futures::future::join_all(futs)) {
                        r.unwrap();
                    }
                }
                _ => {
                    let rs = referee_core::score::samples(&program, samples, false).0;
                    assert!(rs.iter().all(|r| r.reward.is_some()));
                }
            }
            let secs = t.elapsed().as_secs_f64();
            let sent = rt.block_on(srv.requests()) - before;
            // Round 0 warms connections and allocators up and is not kept.
            if round > 0 {
                ms[path].push(secs * 1e3);
                reqs[path].push(sent as f64);
            }
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("samples".into(), json!(samples.len()));
    out.insert("texts".into(), json!(texts));
    out.insert("recorded_requests".into(), json!(bodies.len()));
    out.insert("max_concurrency".into(), json!(conc));
    for (i, p) in PATHS.iter().enumerate() {
        out.insert(
            (*p).into(),
            json!({"ms": median(&ms[i]), "requests": median(&reqs[i]), "runs_ms": ms[i]}),
        );
    }
    Value::Object(out)
}

fn main() {
    let var = |k: &str| std::env::var(k).ok();
    let (Some(servers), Some(data)) = (var("REFEREE_BENCH_PRM_SERVERS"), var("REFEREE_BENCH_DATA"))
    else {
        eprintln!(
            "set REFEREE_BENCH_PRM_SERVERS and REFEREE_BENCH_DATA (benches/steps/prm.py does)"
        );
        std::process::exit(2);
    };
    let n: usize = var("REFEREE_BENCH_SAMPLES").map_or(1000, |v| v.parse().unwrap());
    let rounds: usize = var("REFEREE_BENCH_ROUNDS").map_or(5, |v| v.parse().unwrap());
    let apis = var("REFEREE_BENCH_APIS").unwrap_or_else(|| "pooling,math_shepherd".into());
    let servers: BTreeMap<String, String> = serde_json::from_str(&servers).unwrap();
    let samples: Vec<Sample> = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .take(n)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let text = v["sample"]["output_text"].as_str().unwrap().to_string();
            Sample::new(text, v["item"].clone())
        })
        .collect();
    let mut out = serde_json::Map::new();
    for (label, base) in &servers {
        for api in apis.split(',') {
            eprintln!("prm bench: server {label}, {api}");
            out.insert(format!("{label}/{api}"), bench(base, api, &samples, rounds));
        }
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&Value::Object(out)).unwrap()
    );
}
