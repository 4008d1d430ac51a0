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

/// A row's sample, or the error result of a row that does not map.
pub(super) type Mapped<'a> = Result<Held<'a>, Box<ScoreResult>>;

/// One row after mapping.
pub(super) struct Slot<'a> {
    pub(super) line: Option<usize>,
    sample: Mapped<'a>,
}

/// A sample the batch made, or one it was given. Not boxed: the slots of a batch live in one
/// vector, and a box would cost an allocation per row on the rule-only fast path.
#[allow(clippy::large_enum_variant)]
pub(super) enum Held<'a> {
    Owned(Sample),
    Borrowed(&'a Sample),
}

impl Held<'_> {
    pub(super) fn get(&self) -> &Sample {
        match self {
            Held::Owned(s) => s,
            Held::Borrowed(s) => s,
        }
    }

    /// The sample's id, moved out of a sample the batch made.
    pub(super) fn into_id(self) -> Option<Value> {
        match self {
            Held::Owned(s) => s.id,
            Held::Borrowed(s) => s.id.clone(),
        }
    }
}

impl Slot<'_> {
    pub(super) fn sample(&self) -> Option<&Sample> {
        self.sample.as_ref().ok().map(Held::get)
    }

    /// The error result of a row that never became a sample.
    pub(super) fn failed(&self) -> Option<ScoreResult> {
        self.sample.as_ref().err().map(|e| (**e).clone())
    }

    pub(super) fn id(self) -> Option<Value> {
        self.sample.ok().and_then(Held::into_id)
    }
}

impl<'a> Rows<'a> {
    /// Maps every row and hands it to `f` (its line number, its sample or error result) in
    /// the same task, in parallel, results in order.
    pub(super) fn par_each<T: Send>(
        self,
        mapping: &InputMapping,
        f: impl Fn(Option<usize>, Mapped<'a>) -> T + Sync + Send,
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
                    f(Some(n), parse_line(mapping, n, bytes).map(Held::Owned))
                })
                .collect(),
            Rows::Values(values) => values
                .into_par_iter()
                .with_min_len(64)
                .map(|v| f(None, mapping.sample(v).map(Held::Owned).map_err(failed)))
                .collect(),
            Rows::Samples(samples) => samples
                .par_iter()
                .with_min_len(64)
                .map(|s| f(None, Ok(Held::Borrowed(s))))
                .collect(),
        }
    }

    /// Maps every row (in parallel where parsing is the work), in order.
    pub(super) fn map(self, mapping: &InputMapping) -> Vec<Slot<'a>> {
        self.par_each(mapping, |line, sample| Slot { line, sample })
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
