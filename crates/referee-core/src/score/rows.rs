//! Rows as the shells receive them, mapped to samples: a row that does not map becomes the
//! error result it gets, in its place (never an exception, never a dropped row).

use crate::input::InputMapping;
use crate::result::ScoreResult;
use crate::sample::Sample;
use rayon::prelude::*;
use serde_json::Value;

/// A batch of rows in the form a shell received it.
pub enum Rows<'a> {
    /// JSON Lines (the CLI; Parquet batches arrive as such lines), without their newline,
    /// numbered from `first_line` (1-based) in error messages and results.
    Lines {
        first_line: usize,
        lines: Vec<&'a [u8]>,
    },
    /// Rows as JSON values (Python, the server).
    Values(Vec<Value>),
    /// Samples already built (audits, tests, benches).
    Samples(&'a [Sample]),
}

/// One row after mapping.
pub(super) struct Slot<'a> {
    pub(super) line: Option<usize>,
    sample: Result<Held<'a>, Box<ScoreResult>>,
}

/// A sample the batch made, or one it was given. Not boxed: the slots of a batch live in one
/// vector, and a box would cost an allocation per row on the rule-only fast path.
#[allow(clippy::large_enum_variant)]
enum Held<'a> {
    Owned(Sample),
    Borrowed(&'a Sample),
}

impl Slot<'_> {
    pub(super) fn sample(&self) -> Option<&Sample> {
        match &self.sample {
            Ok(Held::Owned(s)) => Some(s),
            Ok(Held::Borrowed(s)) => Some(s),
            Err(_) => None,
        }
    }

    /// The error result of a row that never became a sample.
    pub(super) fn failed(&self) -> Option<ScoreResult> {
        self.sample.as_ref().err().map(|e| (**e).clone())
    }

    pub(super) fn id(self) -> Option<Value> {
        match self.sample {
            Ok(Held::Owned(s)) => s.id,
            Ok(Held::Borrowed(s)) => s.id.clone(),
            Err(_) => None,
        }
    }
}

impl<'a> Rows<'a> {
    /// Maps every row and hands it to `f` in the same task, in parallel, results in order.
    pub(super) fn par_each<T: Send>(
        self,
        mapping: &InputMapping,
        f: impl Fn(Slot<'a>) -> T + Sync + Send,
    ) -> Vec<T> {
        let failed =
            |e: crate::input::RowError| Box::new(ScoreResult::input_error(e.reason, e.message));
        match self {
            Rows::Lines { first_line, lines } => lines
                .into_par_iter()
                .with_min_len(64)
                .enumerate()
                .map(|(i, bytes)| {
                    let n = first_line + i;
                    f(Slot {
                        line: Some(n),
                        sample: parse_line(mapping, n, bytes).map(Held::Owned),
                    })
                })
                .collect(),
            Rows::Values(values) => values
                .into_par_iter()
                .with_min_len(64)
                .map(|v| {
                    f(Slot {
                        line: None,
                        sample: mapping.sample(v).map(Held::Owned).map_err(failed),
                    })
                })
                .collect(),
            Rows::Samples(samples) => samples
                .par_iter()
                .with_min_len(64)
                .map(|s| {
                    f(Slot {
                        line: None,
                        sample: Ok(Held::Borrowed(s)),
                    })
                })
                .collect(),
        }
    }

    /// Maps every row (in parallel where parsing is the work), in order.
    pub(super) fn map(self, mapping: &InputMapping) -> Vec<Slot<'a>> {
        self.par_each(mapping, |slot| slot)
    }
}

/// Parses one input line into a sample, or the error result the line gets.
fn parse_line(mapping: &InputMapping, n: usize, bytes: &[u8]) -> Result<Sample, Box<ScoreResult>> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let parsed = match std::str::from_utf8(bytes) {
        Err(e) => Err(("invalid_utf8", format!("line is not valid UTF-8: {e}"))),
        Ok(t) if t.trim().is_empty() => Err(("empty_line", "line is empty".to_string())),
        Ok(t) => mapping.parse_line(t).map_err(|e| (e.reason, e.message)),
    };
    parsed.map_err(|(reason, msg)| {
        Box::new(ScoreResult::input_error(reason, format!("line {n}: {msg}")))
    })
}
