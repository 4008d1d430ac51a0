//! Parquet in and out, for `referee score` and the Python package (feature `parquet`).
//!
//! Reading turns each record batch into the JSON rows the JSONL path reads (one line per row,
//! through the Arrow project's own JSON encoder: nested structs, lists and maps become objects
//! and arrays; a null field is left out of its object, as pyarrow was given it; NaN is null), so
//! both formats go through one mapping ([`crate::input::InputMapping`]) and one scorer. A file
//! is streamed a batch at a time, never loaded whole. Compiled codecs: snappy (pyarrow's default,
//! so verl's files) and zstd; a file compressed otherwise (gzip, brotli, lz4) is refused with the
//! parquet crate's error.
//!
//! Writing takes the result rows the JSONL path writes (the JSON of
//! [`crate::ScoreResult::with_id`]) and lays them out as columns, one row per input row, in order:
//!
//! | column | type | when |
//! |---|---|---|
//! | `id` | the input's id type (integer or string), else string | always |
//! | `reward` | float64, null when none | always |
//! | `status` | string: `ok`, `not_applicable`, `error` | always |
//! | `reason`, `message` | string, null unless `status` is `error` | always |
//! | `line` | int64: the input row (1-based), set on error rows | always |
//! | one per top-level component | float64, null when it has no value | always |
//! | `advantage`, `group_flag`, `group_reward` | float64 / string / float64 | group stage on |
//! | `step_rewards` | list of struct `{start, end: int64, value: float64, component: string, turn, token_start, token_end: int64}` | specs with step components |
//! | `token_error` | string: why the row's tokens could not be placed, else null | specs with step components |
//! | `usage` | string: the JSON of the judge usage | specs with model graders |
//! | `trace` | string: the JSON of the explanation tree | `--explain` |
//!
//! A component whose name is one of the fixed columns is written as `component.<name>`.

use crate::input::{InputMapping, RowFormat};
use crate::Program;
use arrow_array::builder::{
    Float64Builder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Why a Parquet file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParquetIoError {
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("result row {row} is not a result object: {message}")]
    BadResult { row: usize, message: String },
}

/// Whether a path names a Parquet file (by its extension, as pandas and pyarrow users name them).
pub fn is_parquet_path(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("parquet") || e.eq_ignore_ascii_case("pq"))
}

/// Streams a Parquet file's rows as JSON, a record batch at a time.
pub struct RowReader {
    batches: ParquetRecordBatchReader,
    schema: SchemaRef,
}

impl RowReader {
    /// Opens `path`, reading `batch_rows` rows per batch.
    pub fn open(path: &Path, batch_rows: usize) -> Result<Self, ParquetIoError> {
        Self::from_file(File::open(path)?, batch_rows)
    }

    pub fn from_file(file: File, batch_rows: usize) -> Result<Self, ParquetIoError> {
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        let schema = builder.schema().clone();
        Ok(RowReader {
            batches: builder.with_batch_size(batch_rows.max(1)).build()?,
            schema,
        })
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The type the results' `id` column gets (see [`IdKind::from_schema`]).
    pub fn id_kind(&self, mapping: &InputMapping) -> IdKind {
        IdKind::from_schema(&self.schema, mapping)
    }

    /// Appends the next batch as JSON lines to `buf` (no trailing newline per line), pushing the
    /// end offset of each line to `ends`, as the JSONL reader does. Returns the rows added; 0 at
    /// the end of the file.
    pub fn read_lines(
        &mut self,
        buf: &mut Vec<u8>,
        ends: &mut Vec<usize>,
    ) -> Result<usize, ParquetIoError> {
        let Some(batch) = self.batches.next() else {
            return Ok(0);
        };
        let batch = batch?;
        let start = buf.len();
        // Null fields are left out: pyarrow's `from_pylist` (and so verl's and `datasets`'
        // files) turns a key missing from a row into a null, so leaving nulls out gives back the
        // JSON the file was made from; the mapping treats a null field as a missing one anyway.
        // Nulls inside lists stay.
        let mut w = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(false)
            .build::<_, arrow_json::writer::LineDelimited>(&mut *buf);
        w.write(&batch)?;
        w.finish()?;
        drop(w);
        // The encoder escapes newlines inside strings, so every '\n' ends a row.
        let before = ends.len();
        let mut line_start = start;
        let mut out = start;
        let newlines: Vec<usize> = memchr::memchr_iter(b'\n', &buf[start..])
            .map(|i| start + i)
            .collect();
        for i in newlines {
            // Shift rows left over the separators so lines are contiguous like the JSONL
            // chunk's (line `k` is `buf[ends[k-1]..ends[k]]`).
            buf.copy_within(line_start..i, out);
            out += i - line_start;
            ends.push(out);
            line_start = i + 1;
        }
        buf.truncate(out);
        Ok(ends.len() - before)
    }

    /// The next batch as JSON rows (for callers that want values rather than lines).
    pub fn read_rows(&mut self) -> Result<Option<Vec<Value>>, ParquetIoError> {
        let mut buf = Vec::new();
        let mut ends = Vec::new();
        if self.read_lines(&mut buf, &mut ends)? == 0 {
            return Ok(None);
        }
        let mut start = 0;
        let mut rows = Vec::with_capacity(ends.len());
        for &e in &ends {
            rows.push(serde_json::from_slice(&buf[start..e]).map_err(|e| {
                ParquetIoError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
            })?);
            start = e;
        }
        Ok(Some(rows))
    }
}

/// The type of the `id` column written: the input's when it is an integer or string column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IdKind {
    Int,
    /// Strings as they are; other ids (numbers from JSONL, objects) as their JSON text.
    #[default]
    Text,
}

impl IdKind {
    /// The id column's type from the input's schema: the column at `--id-field` (default `id`,
    /// for verl rows `extra_info.index` when there is no `id`). Integers stay integers.
    pub fn from_schema(schema: &Schema, mapping: &InputMapping) -> IdKind {
        let field = match &mapping.id_field {
            Some(p) => field_at(schema, p),
            None => field_at(schema, "id").or_else(|| {
                matches!(mapping.format, RowFormat::Verl | RowFormat::Auto)
                    .then(|| field_at(schema, "extra_info.index"))
                    .flatten()
            }),
        };
        match field.map(Field::data_type) {
            Some(t) if t.is_integer() => IdKind::Int,
            _ => IdKind::Text,
        }
    }
}

/// The field at a dotted path through struct columns.
fn field_at<'a>(schema: &'a Schema, path: &str) -> Option<&'a Field> {
    let mut parts = path.split('.');
    let mut f: &Field = schema.field_with_name(parts.next()?).ok()?;
    for p in parts {
        let DataType::Struct(fields) = f.data_type() else {
            return None;
        };
        f = fields.iter().find(|x| x.name() == p)?;
    }
    Some(f)
}

/// Which columns a results file has; fixed before the first row so every row group agrees.
// Each flag is one optional column group, independent of the others.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone, Default)]
pub struct ResultColumns {
    pub id: IdKind,
    /// Top-level component names, in spec order.
    pub components: Vec<String>,
    /// The group stage is on: `advantage`, `group_flag`, `group_reward`.
    pub group: bool,
    /// Results carry per-step credit (`step_rewards`).
    pub steps: bool,
    /// Results carry judge `usage`.
    pub usage: bool,
    /// Results carry the explanation `trace`.
    pub trace: bool,
}

const FIXED: [&str; 13] = [
    "id",
    "reward",
    "status",
    "reason",
    "message",
    "line",
    "advantage",
    "group_flag",
    "group_reward",
    "step_rewards",
    "token_error",
    "usage",
    "trace",
];

/// The struct of one `step_rewards` entry.
fn step_fields() -> Fields {
    Fields::from(vec![
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
        Field::new("value", DataType::Float64, true),
        Field::new("component", DataType::Utf8, false),
        Field::new("turn", DataType::Int64, true),
        Field::new("token_start", DataType::Int64, true),
        Field::new("token_end", DataType::Int64, true),
    ])
}

impl ResultColumns {
    /// The columns of `program`'s results.
    pub fn for_program(program: &Program, explain: bool, id: IdKind) -> Self {
        ResultColumns {
            id,
            components: program
                .component_names()
                .iter()
                .map(ToString::to_string)
                .collect(),
            group: program.group_stage().is_some(),
            steps: program.dense(),
            usage: program.judged(),
            trace: explain,
        }
    }

    /// The Arrow schema written.
    pub fn schema(&self) -> Schema {
        let s = |n: &str, null| Field::new(n, DataType::Utf8, null);
        let f = |n: &str| Field::new(n, DataType::Float64, true);
        let mut fields = vec![
            Field::new(
                "id",
                match self.id {
                    IdKind::Int => DataType::Int64,
                    IdKind::Text => DataType::Utf8,
                },
                true,
            ),
            f("reward"),
            s("status", false),
            s("reason", true),
            s("message", true),
            Field::new("line", DataType::Int64, true),
        ];
        for c in &self.components {
            fields.push(f(&component_column(c)));
        }
        if self.group {
            fields.extend([f("advantage"), s("group_flag", true), f("group_reward")]);
        }
        if self.steps {
            let item = Field::new("item", DataType::Struct(step_fields()), true);
            fields.push(Field::new(
                "step_rewards",
                DataType::List(Arc::new(item)),
                true,
            ));
            fields.push(s("token_error", true));
        }
        if self.usage {
            fields.push(s("usage", true));
        }
        if self.trace {
            fields.push(s("trace", true));
        }
        Schema::new(fields)
    }
}
/// One row of a results file read back (by [`RowReader::read_rows`]) into the JSON shape
/// `referee score` writes as JSONL: the component columns into `components` (the inverse of
/// [`component_column`]), the JSON-text `trace` and `usage` parsed, null columns left out.
pub fn result_row(row: Value) -> Option<Value> {
    let Value::Object(m) = row else { return None };
    let mut out = Map::new();
    let mut comps = Map::new();
    for (k, v) in m {
        if k == "trace" || k == "usage" {
            if let Some(t) = v.as_str().and_then(|s| serde_json::from_str(s).ok()) {
                out.insert(k, t);
            }
        } else if FIXED.contains(&k.as_str()) {
            if !v.is_null() {
                out.insert(k, v);
            }
        } else {
            let name = match k.strip_prefix("component.") {
                Some(n) if FIXED.contains(&n) => n.to_string(),
                _ => k,
            };
            comps.insert(name, v);
        }
    }
    out.insert("components".into(), Value::Object(comps));
    Some(Value::Object(out))
}

/// A component's column name: its name, unless a fixed column has it.
pub fn component_column(name: &str) -> String {
    if FIXED.contains(&name) {
        format!("component.{name}")
    } else {
        name.to_string()
    }
}

/// Writes result rows as Parquet (snappy, as pyarrow writes by default).
pub struct ResultWriter<W: Write + Send> {
    cols: ResultColumns,
    schema: SchemaRef,
    writer: ArrowWriter<W>,
    rows: usize,
}

/// Rows per row group: bounded so a run with traces does not buffer a whole file.
const ROW_GROUP: usize = 65_536;

impl<W: Write + Send> ResultWriter<W> {
    pub fn new(out: W, cols: ResultColumns) -> Result<Self, ParquetIoError> {
        let schema = Arc::new(cols.schema());
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(ROW_GROUP))
            .build();
        Ok(ResultWriter {
            writer: ArrowWriter::try_new(out, schema.clone(), Some(props))?,
            cols,
            schema,
            rows: 0,
        })
    }

    /// Writes JSONL result lines (what `referee score` writes as JSONL) as rows.
    pub fn write_jsonl(&mut self, bytes: &[u8]) -> Result<(), ParquetIoError> {
        let rows = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_slice(l).map_err(|e| ParquetIoError::BadResult {
                    row: self.rows + i + 1,
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<Value>, _>>()?;
        self.write_results(&rows)
    }

    /// Writes result rows (the JSON of [`crate::ScoreResult::with_id`]) as one batch.
    pub fn write_results(&mut self, rows: &[Value]) -> Result<(), ParquetIoError> {
        let n = rows.len();
        for (i, r) in rows.iter().enumerate() {
            if !r.is_object() {
                return Err(ParquetIoError::BadResult {
                    row: self.rows + i + 1,
                    message: "not a JSON object".into(),
                });
            }
        }
        let text = |key: &str| -> ArrayRef {
            let mut b = StringBuilder::with_capacity(n, 8 * n);
            for r in rows {
                b.append_option(r.get(key).and_then(Value::as_str));
            }
            Arc::new(b.finish())
        };
        let json_text = |key: &str| -> ArrayRef {
            let mut b = StringBuilder::with_capacity(n, 64 * n);
            for r in rows {
                b.append_option(r.get(key).filter(|v| !v.is_null()).map(Value::to_string));
            }
            Arc::new(b.finish())
        };
        let float = |v: Option<&Value>| v.and_then(Value::as_f64);
        let floats = |get: &dyn Fn(&Value) -> Option<&Value>| -> ArrayRef {
            let mut b = Float64Builder::with_capacity(n);
            for r in rows {
                b.append_option(float(get(r)));
            }
            Arc::new(b.finish())
        };
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        columns.push(match self.cols.id {
            IdKind::Int => {
                let mut b = Int64Builder::with_capacity(n);
                for r in rows {
                    b.append_option(r.get("id").and_then(Value::as_i64));
                }
                Arc::new(b.finish())
            }
            IdKind::Text => {
                let mut b = StringBuilder::with_capacity(n, 16 * n);
                for r in rows {
                    match r.get("id") {
                        None | Some(Value::Null) => b.append_null(),
                        Some(Value::String(s)) => b.append_value(s),
                        Some(v) => b.append_value(v.to_string()),
                    }
                }
                Arc::new(b.finish())
            }
        });
        columns.push(floats(&|r| r.get("reward")));
        columns.push(text("status"));
        columns.push(text("reason"));
        columns.push(text("message"));
        let mut line = Int64Builder::with_capacity(n);
        for r in rows {
            line.append_option(r.get("line").and_then(Value::as_i64));
        }
        columns.push(Arc::new(line.finish()));
        for c in &self.cols.components {
            columns.push(floats(&|r| r.get("components").and_then(|m| m.get(c))));
        }
        if self.cols.group {
            columns.push(floats(&|r| r.get("advantage")));
            columns.push(text("group_flag"));
            columns.push(floats(&|r| r.get("group_reward")));
        }
        if self.cols.steps {
            columns.push(step_column(rows));
            columns.push(text("token_error"));
        }
        if self.cols.usage {
            columns.push(json_text("usage"));
        }
        if self.cols.trace {
            columns.push(json_text("trace"));
        }
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.writer.write(&batch)?;
        self.rows += n;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Writes the footer and returns the sink.
    pub fn finish(self) -> Result<W, ParquetIoError> {
        Ok(self.writer.into_inner()?)
    }
}

/// The `step_rewards` list column: null for a result without the key (an input error).
fn step_column(rows: &[Value]) -> ArrayRef {
    let fields = step_fields();
    let item = Field::new("item", DataType::Struct(fields.clone()), true);
    let mut b =
        ListBuilder::new(StructBuilder::from_fields(fields, rows.len())).with_field(Arc::new(item));
    for r in rows {
        let Some(steps) = r.get("step_rewards").and_then(Value::as_array) else {
            b.append_null();
            continue;
        };
        let sb = b.values();
        for st in steps {
            let int = |k: &str| st.get(k).and_then(Value::as_i64);
            let ints = [int("start").unwrap_or(0), int("end").unwrap_or(0)];
            for (i, v) in ints.into_iter().enumerate() {
                sb.field_builder::<Int64Builder>(i)
                    .expect("int64")
                    .append_value(v);
            }
            sb.field_builder::<Float64Builder>(2)
                .expect("float64")
                .append_option(st.get("value").and_then(Value::as_f64));
            sb.field_builder::<StringBuilder>(3)
                .expect("utf8")
                .append_value(st.get("component").and_then(Value::as_str).unwrap_or(""));
            for (i, k) in ["turn", "token_start", "token_end"].into_iter().enumerate() {
                sb.field_builder::<Int64Builder>(4 + i)
                    .expect("int64")
                    .append_option(int(k));
            }
            sb.append(true);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Writes JSON rows (objects) as a Parquet file, the column types inferred from the rows as
/// arrow-json infers them (for converting JSONL data, and for tests that need a file).
pub fn write_rows<W: Write + Send>(out: W, rows: &[Value]) -> Result<W, ParquetIoError> {
    // Through JSON text: arrow-json's serde path does not read the workspace's
    // arbitrary-precision numbers.
    let mut text = Vec::new();
    for r in rows {
        serde_json::to_writer(&mut text, r).map_err(std::io::Error::from)?;
        text.push(b'\n');
    }
    let (schema, _) = arrow_json::reader::infer_json_schema(&text[..], None)?;
    let schema = Arc::new(schema);
    let mut w = ArrowWriter::try_new(
        out,
        schema.clone(),
        Some(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build(),
        ),
    )?;
    let reader = arrow_json::ReaderBuilder::new(schema).build(&text[..])?;
    for batch in reader {
        w.write(&batch?)?;
    }
    Ok(w.into_inner()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_row_reads_back_into_the_jsonl_shape() {
        let row = serde_json::json!({"id": 3, "reward": 1.0, "status": "ok", "reason": null,
            "component.reward": 0.5, "component.other": 1.0, "fmt": 0.0,
            "usage": "{\"judge_calls\": 1}", "trace": null});
        assert_eq!(
            result_row(row).unwrap(),
            serde_json::json!({"id": 3, "reward": 1.0, "status": "ok",
                "usage": {"judge_calls": 1},
                "components": {"reward": 0.5, "component.other": 1.0, "fmt": 0.0}})
        );
    }
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use serde_json::json;

    /// A file written with nested columns, read back as the JSON rows it was made from.
    #[test]
    fn nested_rows_read_back_as_json() {
        let rows = [
            json!({"data_source": "gsm8k", "prompt": [{"role": "user", "content": "2+2?"}],
                   "reward_model": {"style": "rule", "ground_truth": "4"},
                   "extra_info": {"index": 0}, "response": "#### 4", "tags": [null, "a"]}),
            json!({"data_source": "gsm8k", "prompt": [{"role": "user", "content": "3+3?"}],
                   "reward_model": {"style": "rule", "ground_truth": "6"},
                   "extra_info": {"index": 1}, "response": "#### 5"}),
        ];
        let dir = std::env::temp_dir().join(format!("referee-pq-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.parquet");
        write_rows(File::create(&path).unwrap(), &rows).unwrap();
        let mut r = RowReader::open(&path, 1).unwrap();
        assert_eq!(
            r.id_kind(&InputMapping::default()),
            IdKind::Int,
            "verl's extra_info.index is an integer column"
        );
        let mut got = Vec::new();
        while let Some(batch) = r.read_rows().unwrap() {
            assert_eq!(batch.len(), 1, "one row per batch as asked");
            got.extend(batch);
        }
        assert_eq!(got, rows);
        let s = InputMapping::default().sample(got[1].clone()).unwrap();
        assert_eq!(s.item["ground_truth"], "6");
        assert_eq!(s.output_text, "#### 5");
        assert_eq!(s.id, Some(json!(1)));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn lines_are_contiguous_with_their_ends() {
        let dir = std::env::temp_dir().join(format!("referee-pq-l-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lines.parquet");
        let rows: Vec<Value> = (0..5)
            .map(|i| json!({"id": format!("r{i}"), "completion": format!("line\n{i}")}))
            .collect();
        write_rows(File::create(&path).unwrap(), &rows).unwrap();
        let mut r = RowReader::open(&path, 2).unwrap();
        let (mut buf, mut ends) = (b"prefix".to_vec(), vec![6]);
        let mut total = 0;
        loop {
            let n = r.read_lines(&mut buf, &mut ends).unwrap();
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total, 5);
        assert_eq!(ends.len(), 6);
        for (i, w) in ends.windows(2).enumerate() {
            let v: Value = serde_json::from_slice(&buf[w[0]..w[1]]).unwrap();
            assert_eq!(v, rows[i]);
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn results_become_columns() {
        let cols = ResultColumns {
            id: IdKind::Text,
            components: vec!["correct".into(), "reward".into()],
            group: true,
            steps: false,
            usage: false,
            trace: true,
        };
        let mut w = ResultWriter::new(Vec::new(), cols).unwrap();
        w.write_jsonl(
            br#"{"id":"a","reward":1.0,"status":"ok","components":{"correct":1.0,"reward":0.5},"advantage":0.7,"trace":{"value":1.0}}
{"id":3,"reward":null,"status":"error","reason":"invalid_json","message":"line 2: bad","line":2,"components":{"correct":null,"reward":null}}
"#,
        )
        .unwrap();
        assert_eq!(w.rows(), 2);
        let bytes = w.finish().unwrap();
        let dir = std::env::temp_dir().join(format!("referee-pq-r-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.parquet");
        std::fs::write(&path, bytes).unwrap();
        let batch = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        std::fs::remove_dir_all(&dir).ok();
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(
            names,
            [
                "id",
                "reward",
                "status",
                "reason",
                "message",
                "line",
                "correct",
                "component.reward",
                "advantage",
                "group_flag",
                "group_reward",
                "trace"
            ]
        );
        let col = |n: &str| batch.column_by_name(n).unwrap();
        assert_eq!(col("id").as_string::<i32>().value(1), "3");
        assert_eq!(col("reward").as_primitive::<Float64Type>().value(0), 1.0);
        assert!(col("reward").is_null(1));
        assert_eq!(col("reason").as_string::<i32>().value(1), "invalid_json");
        assert!(col("reason").is_null(0));
        assert_eq!(col("line").as_primitive::<Int64Type>().value(1), 2);
        assert_eq!(
            col("component.reward")
                .as_primitive::<Float64Type>()
                .value(0),
            0.5
        );
        assert_eq!(col("trace").as_string::<i32>().value(0), r#"{"value":1.0}"#);
        assert!(col("trace").is_null(1));
    }

    #[test]
    fn step_rewards_are_a_list_column_that_reads_back() {
        let cols = ResultColumns {
            id: IdKind::Int,
            components: vec!["process".into()],
            steps: true,
            ..ResultColumns::default()
        };
        let lines = [
            r#"{"id":1,"reward":0.5,"status":"ok","components":{"process":0.5},"step_rewards":[{"start":0,"end":4,"value":1.0,"component":"process","token_start":0,"token_end":2},{"start":5,"end":9,"value":0.0,"component":"process","turn":3}]}"#,
            r#"{"id":2,"reward":0.0,"status":"ok","components":{"process":0.0},"step_rewards":[],"token_error":"no tokenizer"}"#,
            r#"{"id":3,"reward":null,"status":"error","reason":"invalid_json","message":"bad","line":3,"components":{"process":null}}"#,
        ];
        let mut w = ResultWriter::new(Vec::new(), cols).unwrap();
        w.write_jsonl(lines.join("\n").as_bytes()).unwrap();
        let bytes = w.finish().unwrap();
        let dir = std::env::temp_dir().join(format!("referee-pq-s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("results.parquet");
        std::fs::write(&path, bytes).unwrap();
        let mut r = RowReader::open(&path, 16).unwrap();
        let rows: Vec<Value> = r
            .read_rows()
            .unwrap()
            .unwrap()
            .into_iter()
            .filter_map(result_row)
            .collect();
        std::fs::remove_dir_all(&dir).ok();
        for (line, got) in lines.iter().zip(&rows) {
            let want: Value = serde_json::from_str(line).unwrap();
            assert_eq!(got.get("step_rewards"), want.get("step_rewards"), "{line}");
            assert_eq!(got.get("token_error"), want.get("token_error"), "{line}");
        }
    }
}
