//! The group stage on a GRPO-sized batch: 1,048,576 scored samples in groups of 16 (65,536
//! prompts), two named components, about 3% failed samples and a third of the groups flat.
//!
//! - `group/grpo/1M_x16`: `GroupStage::apply` (advantages + diagnostics) with the
//!   default `grpo`, `sum_then_normalize`.
//! - `group/gdpo/1M_x16`: the same with `combine: normalize_then_sum`.
//!
//! Only the stage is timed: the results are built once (scoring is benched in `score`).
//! Run: `cargo bench -p referee-core --bench group` (rayon uses every core of the machine).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use referee_core::outcome::Failure;
use referee_core::{Program, ScoreResult, Status};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

const N: usize = 1 << 20;
const G: usize = 16;

/// A fixed-seed xorshift: the batch is the same on every run.
fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn batch() -> (Vec<ScoreResult>, Vec<Vec<usize>>) {
    let (a, b): (Arc<str>, Arc<str>) = ("correct".into(), "format".into());
    let mut seed = 0x5EED_0007_u64;
    let mut out = Vec::with_capacity(N);
    for g in 0..N / G {
        // A third of the prompts all-fail or all-pass (flat); the rest mixed.
        let kind = g % 3;
        for _ in 0..G {
            let x = rng(&mut seed);
            let correct = match kind {
                0 => 0.0,
                1 => 1.0,
                _ => f64::from(u8::from(x % 2 == 0)),
            };
            let format = f64::from(u8::from((x >> 8) % 4 != 0));
            let failed = (x >> 16) % 32 == 0;
            out.push(ScoreResult {
                reward: (!failed).then_some(0.8 * correct + 0.2 * format),
                status: if failed {
                    Status::Error(Failure {
                        reason: "sandbox_error".into(),
                        message: String::new(),
                    })
                } else {
                    Status::Ok
                },
                components: vec![
                    (a.clone(), (!failed).then_some(correct)),
                    (b.clone(), (!failed).then_some(format)),
                ],
                trace: None,
                usage: None,
                step_rewards: None,
                token_error: None,
                group: None,
            });
        }
    }
    let groups = (0..N / G).map(|g| (g * G..(g + 1) * G).collect()).collect();
    (out, groups)
}

fn bench(c: &mut Criterion) {
    let (mut results, groups) = batch();
    let mut g = c.benchmark_group("group");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(N as u64));
    for (name, section) in [
        ("grpo", "{}"),
        (
            "gdpo",
            "{combine: normalize_then_sum, weights: {correct: 1, format: 0.25}}",
        ),
    ] {
        let spec = format!(
            "{{grader: {{type: weighted_sum, normalize: none, weights: [0.8, 0.2], inputs: [{{type: contains, name: correct, keywords: [x]}}, {{type: contains, name: format, keywords: [y]}}]}}, group: {section}}}"
        );
        let p = Program::compile_str(&spec).unwrap();
        g.bench_function(format!("{name}/1M_x16"), |bch| {
            bch.iter(|| {
                black_box(p.group_stage().expect("stage").apply(
                    &mut results,
                    &groups,
                    p.component_names(),
                    &[],
                ))
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
