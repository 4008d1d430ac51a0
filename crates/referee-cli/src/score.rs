//! `referee score`: stream JSONL in, score chunks in parallel, write results in input order.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use referee_core::input::InputMapping;
use referee_core::summary::Summary;
use referee_core::{Program, ScoreResult};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::time::Instant;

/// Lines scored per parallel batch: big enough to keep every core busy, small enough to stream.
const CHUNK: usize = 8192;

pub struct Options {
    pub explain: bool,
    pub mapping: InputMapping,
    pub summary_json: bool,
    pub quiet: bool,
}

pub fn run(
    program: &Program,
    input: Option<&Path>,
    output: Option<&Path>,
    opts: &Options,
) -> Result<Summary> {
    let reader: Box<dyn BufRead> = match input {
        Some(p) if p != Path::new("-") => Box::new(BufReader::with_capacity(
            1 << 20,
            File::open(p).with_context(|| format!("cannot open input {}", p.display()))?,
        )),
        _ => Box::new(BufReader::new(std::io::stdin().lock())),
    };
    let writer: Box<dyn Write> = match output {
        Some(p) if p != Path::new("-") => Box::new(
            File::create(p).with_context(|| format!("cannot create output {}", p.display()))?,
        ),
        _ => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, writer);
    let progress = std::io::stderr().is_terminal().then(|| {
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {pos} samples scored ({per_sec}) {elapsed}")
                .expect("template"),
        );
        pb
    });
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut lines = reader.split(b'\n');
    let mut line_no = 0usize;
    loop {
        let mut chunk: Vec<(usize, Vec<u8>)> = Vec::with_capacity(CHUNK);
        for l in lines.by_ref().take(CHUNK) {
            line_no += 1;
            chunk.push((line_no, l.context("cannot read input")?));
        }
        if chunk.is_empty() {
            break;
        }
        let results: Vec<(String, ScoreResult)> = chunk
            .par_iter()
            .map(|(n, bytes)| score_line(program, &opts.mapping, *n, bytes, opts.explain))
            .collect();
        for (json, r) in &results {
            out.write_all(json.as_bytes())?;
            out.write_all(b"\n")?;
            summary.add(r);
        }
        if let Some(pb) = &progress {
            pb.inc(results.len() as u64);
        }
    }
    out.flush()?;
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    let secs = start.elapsed().as_secs_f64();
    if !opts.quiet {
        if opts.summary_json {
            let mut v = serde_json::to_value(&summary)?;
            v["seconds"] = serde_json::json!(secs);
            v["samples_per_second"] = serde_json::json!(summary.samples as f64 / secs.max(1e-9));
            eprintln!("{v}");
        } else {
            eprint!("{}", render_summary(&summary, secs));
        }
    }
    Ok(summary)
}

/// Scores one input line into its output JSON. Never fails: a bad line becomes an error result.
fn score_line(
    program: &Program,
    mapping: &InputMapping,
    n: usize,
    bytes: &[u8],
    explain: bool,
) -> (String, ScoreResult) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let parsed = match std::str::from_utf8(bytes) {
        Err(e) => Err(("invalid_utf8", format!("line is not valid UTF-8: {e}"))),
        Ok(t) if t.trim().is_empty() => Err(("empty_line", "line is empty".to_string())),
        Ok(t) => mapping.parse_line(t).map_err(|e| (e.reason, e.message)),
    };
    let (result, id) = match parsed {
        Ok(s) => {
            let r = if explain {
                program.explain(&s)
            } else {
                program.score(&s)
            };
            (r, s.id)
        }
        Err((reason, msg)) => (
            ScoreResult::input_error(reason, format!("line {n}: {msg}")),
            None,
        ),
    };
    let json =
        serde_json::to_string(&result.with_id(id.as_ref(), Some(n))).expect("results serialize");
    (json, result)
}

fn render_summary(s: &Summary, secs: f64) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let rate = s.samples as f64 / secs.max(1e-9);
    let _ = writeln!(
        o,
        "scored {} samples in {secs:.2}s ({rate:.0} samples/s)",
        s.samples
    );
    let _ = writeln!(
        o,
        "  status: ok {}, not_applicable {}, error {}",
        s.ok, s.not_applicable, s.errors
    );
    if !s.reasons.is_empty() {
        let r: Vec<String> = s.reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(o, "  errors by reason: {}", r.join(", "));
    }
    match s.mean_reward {
        Some(m) => {
            let _ = writeln!(o, "  mean reward: {m:.4}");
        }
        None => {
            let _ = writeln!(o, "  mean reward: n/a (no sample has a reward)");
        }
    }
    for (name, c) in &s.components {
        let mean = c
            .mean
            .map_or_else(|| "n/a".to_string(), |m| format!("{m:.4}"));
        let _ = writeln!(o, "  {name}: mean {mean} over {} samples", c.count);
    }
    o
}
