//! `referee eval`: reads the data, calls `referee_core::audit::eval`, writes the JSON report and
//! prints a table. Every number is computed in the core.

use crate::{load_spec, JudgeArgs, JudgeUse, EXIT_OK, EXIT_ROW_ERRORS, EXIT_SPEC, EXIT_USAGE};
use anyhow::{Context, Result};
use referee_core::audit::eval::{evaluate, EvalFormat, EvalReport};
use referee_core::audit::params::EvalParams;
use referee_core::audit::Row;
use serde_json::{Map, Value};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Evaluate a spec on benchmark data: RewardBench v1/v2 accuracy, agreement with gold scores
/// (Pearson, Spearman, Kendall tau-b with bootstrap intervals), best-of-N selection accuracy.
#[derive(clap::Args)]
pub struct EvalArgs {
    /// The grader spec (YAML or JSON).
    spec: PathBuf,
    /// The data: JSON Lines, a JSON array of rows, or Parquet (`.parquet`); `-` for stdin.
    data: PathBuf,
    /// The data's format; `auto` looks at `--gold`, `--correct` and the first row.
    #[arg(long, default_value = "auto")]
    format: EvalFormat,
    /// The gold/human score's field (dotted path; also looked up under `item`): scored data.
    #[arg(long, value_name = "FIELD")]
    gold: Option<String>,
    /// Which responses are correct (booleans, an index or indices): best-of-N data.
    #[arg(long, value_name = "FIELD")]
    correct: Option<String>,
    /// Where a best-of-N row's responses are.
    #[arg(long, value_name = "FIELD", default_value = "responses")]
    responses: String,
    /// The subset's field; rows are also tabulated per subset.
    #[arg(long, value_name = "FIELD", default_value = "subset")]
    subset_field: String,
    /// Bootstrap resamples for the correlations' confidence intervals (0: none).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    bootstrap: usize,
    /// Seed of the bootstrap resampling (the same seed gives the same intervals).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Confidence level of the intervals.
    #[arg(long, default_value_t = 0.95)]
    confidence: f64,
    /// Scored data with 0/1 gold labels: a reward at or above this counts as a predicted 1
    /// (accuracy, precision, recall, F1 and the confusion counts use it; AUROC does not).
    #[arg(long, default_value_t = 0.5)]
    threshold: f64,
    /// Where scored data's model output is, overriding the row format's default.
    #[arg(long, value_name = "FIELD")]
    response_field: Option<String>,
    /// Write the JSON report here (the table then goes to stdout); default: JSON on stdout,
    /// the table on stderr.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print no table.
    #[arg(short, long)]
    quiet: bool,
    /// Exit with code 4 when any row is an error.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    judge: JudgeArgs,
}

/// Reads a data file's rows: Parquet when it ends in `.parquet` (RewardBench's files on the
/// Hugging Face Hub are Parquet), else JSON Lines or a JSON array (`-`: stdin).
pub fn read_data(path: &Path) -> Result<Vec<Row>> {
    use referee_core::io::parquet::{is_parquet_path, RowReader};
    if path != Path::new("-") && is_parquet_path(path) {
        let mut reader = RowReader::open(path, 8192)
            .with_context(|| format!("cannot read Parquet data {}", path.display()))?;
        let mut rows: Vec<Row> = Vec::new();
        while let Some(batch) = reader
            .read_rows()
            .with_context(|| format!("cannot read Parquet data {}", path.display()))?
        {
            for v in batch {
                // `line` is the row's number in the file.
                let line = rows.len() + 1;
                rows.push(Row { line, value: Ok(v) });
            }
        }
        return Ok(rows);
    }
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        s
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("cannot read data {}", path.display()))?
    };
    Ok(referee_core::audit::read_rows(&text))
}

/// Writes a report: to `output` with the table on stdout, or JSON on stdout and the table on
/// stderr.
pub fn emit(
    json: &impl serde::Serialize,
    table: &str,
    output: Option<&Path>,
    quiet: bool,
) -> Result<()> {
    let text = serde_json::to_string_pretty(json)?;
    if let Some(p) = output.filter(|p| *p != Path::new("-")) {
        std::fs::write(p, text + "\n").with_context(|| format!("cannot write {}", p.display()))?;
        if !quiet {
            std::io::stdout().write_all(table.as_bytes())?;
        }
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")?;
        if !quiet {
            eprint!("{table}");
        }
    }
    Ok(())
}

pub fn run(args: EvalArgs) -> Result<u8> {
    let using = JudgeUse::Call {
        output: args.output.as_deref(),
    };
    // The options as every shell builds them (defaults and checks in the core).
    let opts = match (EvalParams {
        format: args.format.as_str().into(),
        gold: args.gold,
        correct: args.correct,
        responses: args.responses,
        subset_field: args.subset_field,
        bootstrap: args.bootstrap,
        seed: args.seed,
        confidence: args.confidence,
        response_field: args.response_field,
        threshold: args.threshold,
    })
    .options()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let Some(program) = load_spec(&args.spec, &args.judge, &using)? else {
        return Ok(EXIT_SPEC);
    };
    let rows = read_data(&args.data)?;
    let mut report = match evaluate(&program, &rows, &opts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: {e}", args.data.display());
            return Ok(EXIT_USAGE);
        }
    };
    report.spec = Some(args.spec.display().to_string());
    emit(
        &report,
        &render(&report),
        args.output.as_deref(),
        args.quiet,
    )?;
    Ok(if args.strict && report.errors > 0 {
        EXIT_ROW_ERRORS
    } else {
        EXIT_OK
    })
}

/// A cell: counts as integers, metrics with 4 decimals, undefined as `n/a`, an estimate as
/// `value [lo, hi]`.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "n/a".into(),
        Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
        Value::Number(n) => format!("{:.4}", n.as_f64().unwrap_or(f64::NAN)),
        Value::Object(m) if m.contains_key("value") => {
            let v = cell(&m["value"]);
            match m.get("ci").and_then(Value::as_array) {
                Some(ci) if ci.len() == 2 => {
                    format!("{v} [{}, {}]", cell(&ci[0]), cell(&ci[1]))
                }
                _ => v,
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A left-aligned first column (and `output` text), right-aligned numbers.
pub fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    for r in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::from("  ");
        for (i, c) in r.iter().enumerate() {
            if i == 0 {
                let _ = write!(line, "{c:<width$}", width = w[0]);
            } else if header[i] == "output" {
                // Text reads left-aligned.
                let _ = write!(line, "  {c:<width$}", width = w[i]);
            } else {
                let _ = write!(line, "  {c:>width$}", width = w[i]);
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    o
}

fn render(r: &EvalReport) -> String {
    let mut o = String::new();
    let reasons = if r.errors_by_reason.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = r
            .errors_by_reason
            .0
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        format!(" ({})", v.join(", "))
    };
    let _ = writeln!(
        o,
        "eval {} ({}): {} rows, {} errors{reasons}",
        r.spec.as_deref().unwrap_or("spec"),
        r.format,
        r.rows,
        r.errors
    );
    let mut overall = r.overall.clone();
    if let Some(c) = &r.correlation {
        if let Ok(Value::Object(m)) = serde_json::to_value(c) {
            overall.extend(m);
        }
    }
    // Columns: the subsets' keys (they have the most), else the overall's.
    let keys: Vec<String> = r
        .subsets
        .first()
        .unwrap_or(&overall)
        .keys()
        .filter(|k| *k != "subset" && *k != "classification")
        .cloned()
        .collect();
    let mut header = vec!["subset".to_string()];
    header.extend(keys.iter().cloned());
    let row = |name: &str, m: &Map<String, Value>| {
        let mut v = vec![name.to_string()];
        v.extend(keys.iter().map(|k| m.get(k).map_or_else(String::new, cell)));
        v
    };
    let mut rows: Vec<Vec<String>> = r
        .subsets
        .iter()
        .map(|m| row(&cell(&m["subset"]), m))
        .collect();
    rows.push(row("overall", &overall));
    o.push_str(&table(&header, &rows));
    if let Some(sections) = &r.sections {
        let header: Vec<String> = ["section", "accuracy", "subsets"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = sections
            .iter()
            .map(|s| {
                vec![
                    cell(&s["section"]),
                    cell(&s["accuracy"]),
                    cell(&s["subsets"]),
                ]
            })
            .collect();
        o.push_str(&table(&header, &rows));
    }
    if let Some(s) = r.overall.get("score") {
        let _ = writeln!(o, "  score: {}", cell(s));
    }
    if let Some(Value::Object(c)) = r.overall.get("classification") {
        let keys = [
            "accuracy",
            "precision",
            "recall",
            "f1",
            "false_positive_rate",
            "auroc",
        ];
        let mut header = vec!["labels 0/1".to_string()];
        header.extend(keys.map(String::from));
        let with = |m: &Map<String, Value>, name: &str| {
            let mut v = vec![name.to_string()];
            v.extend(
                keys.iter()
                    .map(|k| m.get(*k).map_or_else(String::new, cell)),
            );
            v
        };
        let mut rows: Vec<Vec<String>> = r
            .subsets
            .iter()
            .filter_map(|m| match m.get("classification") {
                Some(Value::Object(sc)) => Some(with(sc, &cell(&m["subset"]))),
                _ => None,
            })
            .collect();
        rows.push(with(c, "overall"));
        let _ = writeln!(
            o,
            "  a reward ≥ {} is a predicted 1 (AUROC needs no threshold):",
            cell(&c["threshold"])
        );
        o.push_str(&table(&header, &rows));
    }
    o
}
