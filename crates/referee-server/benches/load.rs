//! A closed-loop load generator for `/get_reward` (not a test; see `benches/server/README.md`).
//!
//! `REFEREE_LOAD_URL` (e.g. `http://127.0.0.1:8000/get_reward`), `REFEREE_LOAD_CONNECTIONS`
//! (default 16), `REFEREE_LOAD_BATCH` (samples per request, default 32), `REFEREE_LOAD_SECONDS`
//! (default 10), `REFEREE_LOAD_WARMUP` (seconds, default 2). Each connection sends the next
//! request when the previous answer arrives. Every answer is checked against the expected
//! rewards. Prints one JSON object: requests, samples, samples/s, latency p50/p90/p99/max (ms).

use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A deterministic batch: prompts "Qk: what is a + b? A: " and responses with "#### n"; every
/// 4th sample wrong, every 7th without a marked answer.
fn batch(seed: usize, n: usize) -> (Value, Vec<f64>) {
    let (mut q, mut p, mut l, mut want) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let k = seed * n + i;
        let (a, b) = (k % 97, (k * 7) % 89);
        let prompt = format!("Q{k}: what is {a} + {b}? A: ");
        let (resp, ok) = if k % 7 == 0 {
            (format!("I think it is about {}.", a + b), false)
        } else if k % 4 == 0 {
            (
                format!("{a} plus {b} is {}.\n#### {}", a + b + 1, a + b + 1),
                false,
            )
        } else {
            (format!("{a} plus {b} is {}.\n#### {}", a + b, a + b), true)
        };
        q.push(format!("{prompt}{resp}"));
        p.push(prompt);
        l.push((a + b).to_string());
        want.push(if ok { 1.0 } else { 0.0 });
    }
    (json!({"query": q, "prompts": p, "labels": l}), want)
}

fn env<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn main() {
    let Ok(url) = std::env::var("REFEREE_LOAD_URL") else {
        eprintln!("set REFEREE_LOAD_URL (benches/server/run.py does)");
        std::process::exit(2);
    };
    let conns: usize = env("REFEREE_LOAD_CONNECTIONS", 16);
    let n: usize = env("REFEREE_LOAD_BATCH", 32);
    let secs: f64 = env("REFEREE_LOAD_SECONDS", 10.0);
    let warm: f64 = env("REFEREE_LOAD_WARMUP", 2.0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let bodies: Vec<(String, Vec<f64>)> = (0..64)
        .map(|s| {
            let (b, w) = batch(s, n);
            (b.to_string(), w)
        })
        .collect();
    let bodies = std::sync::Arc::new(bodies);
    let (mut lat, wrong) = rt.block_on(async move {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .build()
            .unwrap();
        let start = Instant::now();
        let measure_from = start + Duration::from_secs_f64(warm);
        let end = measure_from + Duration::from_secs_f64(secs);
        let mut tasks = Vec::new();
        for c in 0..conns {
            let (client, url, bodies) = (client.clone(), url.clone(), bodies.clone());
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut wrong = 0usize;
                let mut i = c;
                while Instant::now() < end {
                    let (body, want) = &bodies[i % bodies.len()];
                    i += conns;
                    let t = Instant::now();
                    let r = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap();
                    assert!(r.status().is_success(), "{}", r.status());
                    let v: Value = r.json().await.unwrap();
                    let got: Vec<f64> = v["rewards"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect();
                    if &got != want {
                        wrong += 1;
                    }
                    if t >= measure_from && Instant::now() <= end {
                        lat.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                }
                (lat, wrong)
            }));
        }
        let mut all = Vec::new();
        let mut wrong = 0;
        for t in tasks {
            let (l, w) = t.await.unwrap();
            all.extend(l);
            wrong += w;
        }
        (all, wrong)
    });
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| lat[((lat.len() as f64 - 1.0) * p).round() as usize];
    let reqs = lat.len();
    println!(
        "{}",
        json!({"connections": conns, "batch": n, "seconds": secs, "requests": reqs,
               "samples": reqs * n, "samples_per_s": (reqs * n) as f64 / secs,
               "requests_per_s": reqs as f64 / secs, "p50_ms": q(0.5), "p90_ms": q(0.9),
               "p99_ms": q(0.99), "max_ms": q(1.0), "answers_with_wrong_rewards": wrong})
    );
}
