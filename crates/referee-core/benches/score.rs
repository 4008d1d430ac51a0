//! Criterion benches for compile and for rule-only scoring (DESIGN.md §6, §8.11).
//!
//! - `compile/rule_only`: compiling `benches/specs/rule_only.yaml` (format + numeric, summed).
//! - `component/<type>/score`: one representative spec per rule component (plus
//!   `component/numeric_pattern/score`: `numeric` configured as in the rule_only spec), scored
//!   sequentially over 256 generated samples (throughput in samples). A type that is not in the
//!   registry yet (or whose spec here no longer compiles) is skipped with a message on stderr.
//! - `spec/rule_only/score_batch`: `referee_core::score::samples` (rayon, all cores) over 10k samples.
//! - `spec/rule_only/score_seq`: the same 10k samples scored one by one on one thread.
//! - `spec/rule_only/parse_score_seq`: TRL JSONL line → `Sample` → score, one thread: what
//!   `referee score -j 1` does per line, minus I/O and result serialization.
//!
//! The samples are generated here with a fixed seed (no files): GSM8K-like completions with the
//! same mix of kinds as `benches/gen_data.py` (correct, wrong, missing think tags or `####`,
//! thousands separators, several `####` lines, answer lists, `#### a or b`).
//!
//! Run: `cargo bench -p referee-core --bench score` (about a minute on two cores, after the build).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use referee_core::input::InputMapping;
use referee_core::registry;
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::hint::black_box;
use std::time::Duration;

const RULE_ONLY: &str = include_str!("../../../benches/specs/rule_only.yaml");
const BATCH: usize = 10_000;
const COMPONENT_SAMPLES: usize = 256;
const SEED: u64 = 0x5EED_2024_0611;

/// A representative spec per rule component type, scored over the GSM8K-like samples, as
/// (bench name, type, spec). `choice` mostly finds no label in them, so it measures its full
/// scan (its worst case). `numeric_pattern` is `numeric` as `benches/specs/rule_only.yaml`
/// configures it.
const COMPONENTS: &[(&str, &str, &str)] = &[
    (
        "string_check",
        "string_check",
        "{type: string_check, reference: '#### {{item.solution}}', operation: like}",
    ),
    (
        "regex",
        "regex",
        "{type: regex, mode: extract, pattern: '#### (?P<answer>-?[0-9.,]+)', \
         occurrence: last, reference: '{{item.solution}}'}",
    ),
    (
        "contains",
        "contains",
        "{type: contains, keywords: ['</think>', '####'], mode: all}",
    ),
    (
        "numeric",
        "numeric",
        "{type: numeric, reference: '{{item.solution}}', extract: marked}",
    ),
    (
        "numeric_pattern",
        "numeric",
        "{type: numeric, reference: '{{item.solution}}', pattern: '#### (?P<answer>[^\\n]*)'}",
    ),
    ("format", "format", "{type: format, style: think}"),
    (
        "length",
        "length",
        "{type: length, unit: tokens, penalty: soft_overlong, max: 4096, buffer: 512}",
    ),
    ("choice", "choice", "{type: choice, reference: B}"),
    (
        "math_equiv",
        "math_equiv",
        "{type: math_equiv, reference: '{{item.solution}}'}",
    ),
];

/// splitmix64: a tiny, well-known PRNG, so the bench needs no `rand` dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const FILLER: &[&str] = &[
    "Let me re-read the problem to make sure I have the quantities right.",
    "Hmm, wait. Let me double-check that multiplication.",
    "Another way to see this is to count the groups first and then the items in each group.",
    "I will write down each intermediate value so that I do not lose track.",
    "Let me verify by working backwards from the total.",
    "Actually, I need to consider whether the question includes the starting amount.",
];

/// Kinds and their weights (per mille), as in `benches/gen_data.py`.
const KINDS: &[(&str, u64)] = &[
    ("correct", 410),
    ("wrong", 200),
    ("no_think", 100),
    ("bad_think", 50),
    ("no_marker", 90),
    ("thousands", 80),
    ("short", 47),
    ("multi_marker", 16),
    ("number_list", 4),
    ("or_hack", 3),
];

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn reasoning(rng: &mut Rng, a: u64, b: u64, said: &str) -> String {
    let mut t = String::new();
    let fill = (rng.below(20) * rng.below(20) / 8).min(44);
    let _ = writeln!(t, "The boxes hold {b} * 7 = {} items.", b * 7);
    for _ in 0..fill {
        t.push_str(rng.pick(FILLER));
        t.push('\n');
    }
    let _ = write!(
        t,
        "Adding the {a} from before gives the total.\nSo the answer is {said}."
    );
    t
}

/// One GSM8K-like completion and its item, deterministic in `rng`.
fn sample(rng: &mut Rng) -> (String, Value) {
    let big = rng.below(5) == 0;
    let (a, b) = if big {
        (rng.range(100, 900), rng.range(150, 900))
    } else {
        (rng.range(2, 60), rng.range(2, 20))
    };
    let ans = a + b * 7;
    let wrong = ans + [1, 2, 10, ans][rng.below(4) as usize];
    let mut roll = rng.below(1000);
    let kind = KINDS
        .iter()
        .find(|(_, w)| {
            let hit = roll < *w;
            roll = roll.saturating_sub(*w);
            hit
        })
        .map_or("correct", |(k, _)| k);
    let think =
        |rng: &mut Rng, said: &str| format!("<think>\n{}\n</think>\n", reasoning(rng, a, b, said));
    let text = match kind {
        "wrong" => format!("{}#### {wrong}", think(rng, &wrong.to_string())),
        "no_think" => format!("{}\n#### {ans}", reasoning(rng, a, b, &ans.to_string())),
        "bad_think" => format!("Sure.\n{}#### {ans}", think(rng, &ans.to_string())),
        "no_marker" => format!("{}The answer is {ans}.", think(rng, &ans.to_string())),
        "thousands" => format!("{}#### {}", think(rng, &thousands(ans)), thousands(ans)),
        "short" => format!("<think>\nQuick mental arithmetic gives {ans}.\n</think>\n#### {ans}"),
        "multi_marker" => format!("{}#### {wrong}\n#### {ans}", think(rng, &ans.to_string())),
        "number_list" => format!("{}#### {ans}, {wrong}", think(rng, "one of these")),
        "or_hack" => format!("{}#### {wrong} or {ans}", think(rng, "either")),
        _ => format!("{}#### {ans}", think(rng, &ans.to_string())),
    };
    (text, json!({"solution": ans.to_string()}))
}

fn samples(n: usize) -> Vec<Sample> {
    let mut rng = Rng(SEED);
    (0..n)
        .map(|_| {
            let (text, item) = sample(&mut rng);
            Sample::new(text, item)
        })
        .collect()
}

/// The same samples as TRL JSONL lines, for the parse + score bench.
fn trl_lines(n: usize) -> Vec<String> {
    let mut rng = Rng(SEED);
    (0..n)
        .map(|i| {
            let (text, item) = sample(&mut rng);
            json!({
                "id": format!("gsm-{}-{}", i / 8, i % 8),
                "prompt": "Solve the following math problem. Think step by step inside <think> </think> tags, \
                           then give the final answer on its own line as `#### <number>`.\n\n\
                           Randy has 151 tickets. Randy buys 38 boxes with 70 tickets in each box. \
                           How many tickets does Randy have now?",
                "completion": text,
                "solution": item["solution"],
            })
            .to_string()
        })
        .collect()
}

fn compile(src: &str) -> Program {
    Program::compile_str(src).unwrap_or_else(|e| panic!("spec does not compile: {e}"))
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args()
}

fn bench_compile(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    g.bench_function("rule_only", |b| {
        b.iter(|| Program::compile_str(black_box(RULE_ONLY)).expect("rule_only compiles"));
    });
    g.finish();
}

fn bench_components(c: &mut Criterion) {
    let set = samples(COMPONENT_SAMPLES);
    let mut g = c.benchmark_group("component");
    g.throughput(Throughput::Elements(COMPONENT_SAMPLES as u64));
    for (bench_name, type_name, spec) in COMPONENTS {
        if registry::find(type_name).is_none() {
            eprintln!("skipping component/{bench_name}/score: no `{type_name}` component yet");
            continue;
        }
        let program = match Program::compile_str(spec) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skipping component/{bench_name}/score: its spec does not compile: {e}");
                continue;
            }
        };
        g.bench_function(format!("{bench_name}/score"), |b| {
            b.iter(|| {
                for s in &set {
                    black_box(program.score(black_box(s)));
                }
            });
        });
    }
    g.finish();
}

fn bench_spec(c: &mut Criterion) {
    let program = compile(RULE_ONLY);
    let set = samples(BATCH);
    let lines = trl_lines(BATCH);
    let mapping = InputMapping::default();
    let mut g = c.benchmark_group("spec");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("rule_only/score_batch", |b| {
        b.iter(|| black_box(referee_core::score::samples(&program, black_box(&set), false).0));
    });
    g.bench_function("rule_only/score_seq", |b| {
        b.iter(|| {
            for s in &set {
                black_box(program.score(black_box(s)));
            }
        });
    });
    g.bench_function("rule_only/parse_score_seq", |b| {
        b.iter(|| {
            for l in &lines {
                let s = mapping
                    .parse_line(black_box(l))
                    .expect("generated rows parse");
                black_box(program.score(&s));
            }
        });
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_compile, bench_components, bench_spec
}
criterion_main!(benches);
