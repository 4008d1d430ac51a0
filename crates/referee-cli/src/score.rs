//! `referee score`: stream JSONL or Parquet in, score chunks in parallel, write results in
//! input order, as JSONL or Parquet.
//!
//! Parquet input is turned into the same JSON lines as JSONL input (referee-core's
//! `io::parquet`), a record batch per chunk, so both formats share every later stage; Parquet
//! output is the JSONL result lines laid out as columns by the writer thread.
//!
//! Three stages overlap: a reader thread cuts the input into chunks of lines, the core's one
//! scoring call (`referee_core::score`) maps and scores a chunk, whose results are serialised in
//! parallel, and a writer thread writes finished chunks in order. So reading and writing never leave the
//! cores idle, and no stage holds more than a few chunks in memory.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use referee_core::input::InputMapping;
use referee_core::io::parquet::{is_parquet_path, IdKind, ResultColumns, ResultWriter, RowReader};
use referee_core::summary::Summary;
use referee_core::{Program, Rows, Scored};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

/// Lines per chunk: big enough to keep every core busy, small enough to stream.
const CHUNK: usize = 8192;
/// Results per parallel serialisation task.
const TASK: usize = 128;

pub struct Options {
    pub score: referee_core::Options,
    pub mapping: InputMapping,
    pub summary_json: bool,
    pub quiet: bool,
}

/// A run of input lines held in one buffer: line `i` is `buf[ends[i-1]..ends[i]]`.
struct Chunk {
    first_line: usize,
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Chunk {
    fn line(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.buf[start..self.ends[i]]
    }
}

fn read_chunk(r: &mut dyn BufRead, first_line: usize) -> std::io::Result<Option<Chunk>> {
    let mut buf = Vec::with_capacity(1 << 20);
    let mut ends = Vec::with_capacity(CHUNK);
    while ends.len() < CHUNK {
        let n = r.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        }
        ends.push(buf.len());
    }
    Ok((!ends.is_empty()).then_some(Chunk {
        first_line,
        buf,
        ends,
    }))
}

/// Where rows come from.
enum Source {
    Jsonl(Box<dyn BufRead + Send>),
    Parquet(RowReader),
}

impl Source {
    fn read_chunk(&mut self, first_line: usize) -> Result<Option<Chunk>> {
        match self {
            Source::Jsonl(r) => Ok(read_chunk(&mut **r, first_line)?),
            Source::Parquet(r) => {
                let mut buf = Vec::with_capacity(1 << 20);
                let mut ends = Vec::with_capacity(CHUNK);
                while ends.len() < CHUNK
                    && r.read_lines(&mut buf, &mut ends).context(
                        "Parquet input (Referee reads uncompressed, snappy and zstd files)",
                    )? > 0
                {}
                Ok((!ends.is_empty()).then_some(Chunk {
                    first_line,
                    buf,
                    ends,
                }))
            }
        }
    }
}

/// Where results go.
enum Sink {
    Jsonl(BufWriter<Box<dyn Write + Send>>),
    Parquet(Box<ResultWriter<BufWriter<Box<dyn Write + Send>>>>),
}

impl Sink {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            Sink::Jsonl(w) => w.write_all(bytes)?,
            Sink::Parquet(w) => w.write_jsonl(bytes)?,
        }
        Ok(())
    }

    fn finish(self) -> Result<()> {
        match self {
            Sink::Jsonl(mut w) => w.flush()?,
            Sink::Parquet(w) => w.finish()?.flush()?,
        }
        Ok(())
    }
}

/// Whether results are written as Parquet: `-o x.parquet`, or a Parquet input with no `-o`
/// (or `-o -`). Any other `-o` path gets JSONL.
pub fn parquet_output(input: Option<&Path>, output: Option<&Path>) -> bool {
    match output {
        Some(p) if p != Path::new("-") => is_parquet_path(p),
        _ => input.is_some_and(is_parquet_path),
    }
}

pub fn run(
    program: &Program,
    input: Option<&Path>,
    output: Option<&Path>,
    opts: &Options,
) -> Result<Summary> {
    let mut id_kind = IdKind::Text;
    let mut source = match input {
        Some(p) if p != Path::new("-") && is_parquet_path(p) => {
            let r = RowReader::open(p, CHUNK)
                .with_context(|| format!("cannot read Parquet input {}", p.display()))?;
            id_kind = r.id_kind(&opts.mapping);
            Source::Parquet(r)
        }
        Some(p) if p != Path::new("-") => Source::Jsonl(Box::new(BufReader::with_capacity(
            1 << 20,
            File::open(p).with_context(|| format!("cannot open input {}", p.display()))?,
        ))),
        _ => Source::Jsonl(Box::new(BufReader::with_capacity(
            1 << 20,
            std::io::stdin(),
        ))),
    };
    let to_stdout = output.is_none_or(|p| p == Path::new("-"));
    let parquet_out = parquet_output(input, output);
    if parquet_out && to_stdout && std::io::stdout().is_terminal() {
        anyhow::bail!(
            "results of a Parquet input are Parquet; not writing them to a terminal (pass -o results.parquet, or -o results.jsonl for JSONL)"
        );
    }
    let writer: Box<dyn Write + Send> = match output {
        Some(p) if !to_stdout => Box::new(
            File::create(p).with_context(|| format!("cannot create output {}", p.display()))?,
        ),
        _ => Box::new(std::io::stdout()),
    };
    let writer = BufWriter::with_capacity(1 << 20, writer);
    let sink = if parquet_out {
        Sink::Parquet(Box::new(ResultWriter::new(
            writer,
            ResultColumns::for_program(program, opts.score.explain, id_kind),
        )?))
    } else {
        Sink::Jsonl(writer)
    };
    let progress = std::io::stderr().is_terminal().then(|| {
        let pb = ProgressBar::new_spinner();
        pb.set_style(
            ProgressStyle::with_template("{spinner} {pos} samples scored ({per_sec}) {elapsed}")
                .expect("template"),
        );
        pb
    });
    let start = Instant::now();
    let (chunk_tx, chunk_rx) = sync_channel::<Result<Chunk>>(2);
    let (out_tx, out_rx) = sync_channel::<(Vec<u8>, usize)>(2);

    let summary = std::thread::scope(|scope| -> Result<Summary> {
        scope.spawn(move || {
            let mut next = 1;
            loop {
                match source.read_chunk(next) {
                    Ok(Some(c)) => {
                        next += c.ends.len();
                        if chunk_tx.send(Ok(c)).is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        let _ = chunk_tx.send(Err(e));
                        return;
                    }
                }
            }
        });
        let progress = progress.as_ref();
        let write = scope.spawn(move || -> Result<()> {
            let mut sink = sink;
            for (bytes, n) in out_rx {
                sink.write(&bytes)?;
                if let Some(pb) = progress {
                    pb.inc(n as u64);
                }
            }
            sink.finish()
        });
        let mut summary = Summary::default();
        for chunk in chunk_rx {
            let chunk = chunk.context("cannot read input")?;
            let lines = (0..chunk.ends.len()).map(|i| chunk.line(i)).collect();
            let rows = Rows::Lines {
                first_line: chunk.first_line,
                lines,
            };
            let scored = referee_core::score(program, rows, &opts.mapping, &opts.score);
            summary.merge(scored.summary());
            let n = scored.rows.len();
            if out_tx.send((result_lines(&scored), n)).is_err() {
                break; // the writer failed; its error is returned below
            }
        }
        drop(out_tx);
        let written = write.join().expect("writer thread");
        written?;
        Ok(summary)
    })?;
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

/// The results as JSON lines, serialised in parallel.
fn result_lines(scored: &Scored) -> Vec<u8> {
    let parts: Vec<Vec<u8>> = scored
        .rows
        .par_chunks(TASK)
        .map(|rows| {
            let mut out = Vec::with_capacity(256 * rows.len());
            for r in rows {
                serde_json::to_writer(&mut out, &r.result.with_id(r.id.as_ref(), r.line))
                    .expect("results serialize");
                out.push(b'\n');
            }
            out
        })
        .collect();
    parts.concat()
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
    if let Some(j) = &s.judge {
        let _ = writeln!(
            o,
            "  judge: {} calls ({} failed), {} cache hits, {} prompt + {} completion tokens",
            j.judge_calls, j.judge_errors, j.cache_hits, j.prompt_tokens, j.completion_tokens
        );
    }
    for (name, c) in &s.components {
        let mean = c
            .mean
            .map_or_else(|| "n/a".to_string(), |m| format!("{m:.4}"));
        let _ = writeln!(o, "  {name}: mean {mean} over {} samples", c.count);
    }
    if let Some(g) = &s.group {
        render_group(&mut o, g);
    }
    o
}

fn render_group(o: &mut String, g: &referee_core::group::GroupReport) {
    use std::fmt::Write as _;
    let pct =
        |f: Option<f64>| f.map_or_else(|| "n/a".to_string(), |f| format!("{:.1}%", f * 100.0));
    let _ = writeln!(
        o,
        "  groups: {} (all-pass {}, all-fail {}, mixed {}); flat {} ({}), singleton {}, empty {}; excluded samples {}",
        g.groups,
        pct(g.frac_all_pass),
        pct(g.frac_all_fail),
        pct(g.frac_mixed),
        g.flat_groups,
        pct(g.frac_flat),
        g.singleton_groups,
        g.empty_groups,
        g.excluded_samples
    );
    let std = g
        .mean_within_group_std
        .map_or_else(|| "n/a".to_string(), |m| format!("{m:.4}"));
    let _ = writeln!(o, "  mean within-group reward std: {std}");
    if g.tie_break_calls > 0 || g.tie_unbroken_groups > 0 {
        let _ = writeln!(
            o,
            "  tie-break: {} flat groups spread, {} left flat; {} judge calls ({} failed)",
            g.tie_broken_groups, g.tie_unbroken_groups, g.tie_break_calls, g.tie_break_failures
        );
    }
    if g.listwise_groups > 0 || g.listwise_failed_groups > 0 {
        let f = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.2}"));
        let _ = writeln!(
            o,
            "  listwise: {} groups ranked, {} failed, {} chunked; {} judge calls; {} samples ranked last unseen; orders: Kendall tau {}, mean gap {}",
            g.listwise_groups,
            g.listwise_failed_groups,
            g.listwise_chunked_groups,
            g.listwise_calls,
            g.listwise_unseen_samples,
            f(g.listwise_order_tau),
            f(g.listwise_order_gap)
        );
    }
    for (name, c) in &g.components {
        let _ = writeln!(
            o,
            "  saturation of {name}: constant in {}/{} groups (always 1: {}, always 0: {})",
            c.constant, c.groups, c.always_one, c.always_zero
        );
    }
    for c in &g.correlations {
        let r = c
            .pearson
            .map_or_else(|| "n/a".to_string(), |r| format!("{r:+.3}"));
        let _ = writeln!(o, "  corr({}, {}): {r} over {} samples", c.a, c.b, c.n);
    }
}
