//! The floor under the trajectory benchmark's per-row cost: how long it takes only to parse one
//! row of `trajectories_100k.jsonl`, with nothing checked, by the parser Referee uses (into the
//! `serde_json::Value` tree every component reads) and by the fastest Rust parsers there are.
//! Against `plain.py`'s whole per-row time, this bounds the "× python per core" any checker
//! reading such a tree can reach. Median of 5 passes over the first 50,000 rows, in memory.
//!
//! Usage: cargo run --release --manifest-path benches/trajectory/parse_floor/Cargo.toml -- DATA

use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn median_us(lines: &[&[u8]], mut f: impl FnMut(&[u8])) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for l in lines {
                f(l);
            }
            t.elapsed().as_secs_f64() / lines.len() as f64 * 1e6
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: parse_floor DATA");
    let data = std::fs::read(&path).expect("read DATA");
    let lines: Vec<&[u8]> = data
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .take(50_000)
        .collect();
    let mut buf = Vec::new();
    let rows = [
        (
            "serde_json into Value (Referee's input path)",
            median_us(&lines, |l| {
                black_box(serde_json::from_slice::<serde_json::Value>(l).unwrap());
            }),
        ),
        (
            "serde_json, validate only (IgnoredAny)",
            median_us(&lines, |l| {
                black_box(serde_json::from_slice::<serde::de::IgnoredAny>(l).unwrap());
            }),
        ),
        (
            "sonic-rs into its Value",
            median_us(&lines, |l| {
                black_box(sonic_rs::from_slice::<sonic_rs::Value>(l).unwrap());
            }),
        ),
        (
            "simd-json to its tape",
            median_us(&lines, |l| {
                buf.clear();
                buf.extend_from_slice(l);
                black_box(simd_json::to_tape(&mut buf).unwrap().as_value());
            }),
        ),
    ];
    println!("{} rows, median of 5 passes, µs per row", lines.len());
    for (name, us) in rows {
        println!("  {name:<46} {us:6.2}");
    }
}
