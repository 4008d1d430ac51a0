//! `referee report`: one self-contained HTML page (inline CSS, JS and SVG; no network) from a
//! scored run (`referee score` JSONL, with or without `--explain`, or its Parquet results) or
//! from the JSON an audit command writes (`{"kind": "eval" | "fuzz" | "compare", ...}`).
//!
//! Presentation only: the statistics that are more than a count or a mean (histograms, group
//! spread, trace timings) come from `referee_core::stats`.

mod audit;
pub mod html;
mod results;
pub mod svg;

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// What a report is made from.
pub enum Input {
    /// Result rows of `referee score`, with how many lines could not be read as results.
    Results { rows: Vec<Value>, unreadable: usize },
    /// An audit command's JSON output.
    Audit(Value),
}

/// Reads a results file (JSONL or Parquet) or an audit JSON file.
pub fn load(path: &Path) -> Result<Input> {
    if referee_core::io::parquet::is_parquet_path(path) {
        return results::load_parquet(path);
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read results {}", path.display()))?;
    Ok(parse(&text))
}

/// Tells an audit document (one JSON object with a `kind`) from result lines.
pub fn parse(text: &str) -> Input {
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
        if v.get("kind").is_some_and(Value::is_string) {
            return Input::Audit(v);
        }
        // One result, pretty-printed (`referee explain`).
        if v.get("status").is_some() {
            return Input::Results {
                rows: vec![v],
                unreadable: 0,
            };
        }
    }
    let mut rows = Vec::new();
    let mut unreadable = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => rows.push(v),
            _ => unreadable += 1,
        }
    }
    Input::Results { rows, unreadable }
}

/// Renders the page. `groups`, when given, is each result row's group (from the scored
/// input), for results that do not carry one.
pub fn render(input: &Input, source: &str, groups: Option<&[Option<String>]>) -> String {
    match input {
        Input::Results { rows, unreadable } => results::render(rows, *unreadable, source, groups),
        Input::Audit(v) => audit::render(v, source),
    }
}

/// Each input row's group, read from the scored input with the same mapping as `referee score`
/// (row `i` of the input is result `i`). A row that does not map has no group.
pub fn groups_from_input(
    path: &Path,
    mapping: &referee_core::input::InputMapping,
) -> Result<Vec<Option<String>>> {
    use referee_core::io::parquet::{is_parquet_path, RowReader};
    let mut out = Vec::new();
    if is_parquet_path(path) {
        let mut r = RowReader::open(path, 8192)
            .with_context(|| format!("cannot read Parquet input {}", path.display()))?;
        while let Some(rows) = r.read_rows()? {
            out.extend(
                rows.into_iter()
                    .map(|row| mapping.sample(row).ok().and_then(|s| s.group)),
            );
        }
    } else {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read input {}", path.display()))?;
        out.extend(text.lines().map(|l| {
            mapping
                .parse_line(l.trim_end_matches('\r'))
                .ok()
                .and_then(|s| s.group)
        }));
    }
    Ok(out)
}
