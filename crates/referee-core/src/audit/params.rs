//! The audits' options as every shell takes them: the CLI's flags, Python's keyword arguments and
//! the server's `options` object have the same names, defaults and checks, so they are defined
//! once here (DESIGN.md §4: shells contain no scoring logic). Each `*Params` deserialises from a
//! JSON object (unknown keys are an error) and turns into the audit's options, or into the
//! message a shell shows for a bad value.

use super::compare::CompareOptions;
use super::eval::{EvalFormat, EvalOptions};
use super::fuzz::{FuzzOptions, EXAMPLES};
use super::stats::Bootstrap;
use super::Row;
use crate::input::{InputMapping, RowError, RowFormat};
use crate::Sample;
use serde::Deserialize;
use serde_json::Value;

/// Where a row's id, group and output are: the CLI's `--format`, `--id-field`, `--group-field`,
/// `--response-field`.
fn mapping(
    format: &str,
    id_field: Option<&String>,
    group_field: Option<&String>,
    response_field: Option<&String>,
) -> Result<InputMapping, String> {
    Ok(InputMapping {
        format: format.parse::<RowFormat>()?,
        id_field: id_field.cloned(),
        group_field: group_field.cloned(),
        response_field: response_field.cloned(),
        // No item digests: only `referee score` asks for them (a speed-up, same results).
        ..InputMapping::default()
    })
}

/// Parses a shell's options object (`{}` or `null`: every default). The error names the option
/// and says what is wrong with it (`unknown field ...`, `invalid type ...`).
pub fn from_value<T: serde::de::DeserializeOwned + Default>(v: Value) -> Result<T, String> {
    if v.is_null() {
        return Ok(T::default());
    }
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("bad options: {}", e.inner())
        } else {
            format!("bad option `{path}`: {}", e.inner())
        }
    })
}

/// `referee fuzz`'s options.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FuzzParams {
    pub threshold: f64,
    /// `None` or empty: every family that applies.
    pub families: Option<Vec<String>>,
    pub per_row: usize,
    pub seed: u64,
    pub max_rate: f64,
    /// `false` is the CLI's `--no-perturb`.
    pub perturb: bool,
    pub max_moved: Option<f64>,
    pub examples: usize,
    /// Use only the first N rows that map.
    pub rows: Option<usize>,
    pub format: String,
    pub id_field: Option<String>,
    pub group_field: Option<String>,
    pub response_field: Option<String>,
}

impl Default for FuzzParams {
    fn default() -> Self {
        let o = FuzzOptions::default();
        FuzzParams {
            threshold: o.threshold,
            families: None,
            per_row: o.per_row,
            seed: o.seed,
            max_rate: o.max_rate,
            perturb: o.perturb,
            max_moved: o.max_moved,
            examples: EXAMPLES,
            rows: None,
            format: "auto".into(),
            id_field: None,
            group_field: None,
            response_field: None,
        }
    }
}

impl FuzzParams {
    pub fn options(&self) -> FuzzOptions {
        FuzzOptions {
            threshold: self.threshold,
            families: self.families.clone().filter(|f| !f.is_empty()),
            // 0 variants per row would fuzz nothing and pass: at least one.
            per_row: self.per_row.max(1),
            seed: self.seed,
            max_rate: self.max_rate,
            perturb: self.perturb,
            max_moved: self.max_moved,
            examples: self.examples,
        }
    }

    pub fn mapping(&self) -> Result<InputMapping, String> {
        mapping(
            &self.format,
            self.id_field.as_ref(),
            self.group_field.as_ref(),
            self.response_field.as_ref(),
        )
    }
}

/// A fuzz run's rows as samples: the first `limit` rows that map; every row that does not is
/// returned as a `line: message` note (the CLI prints them as skipped). No rows at all is an
/// error, with `what` (the data's name) in the message.
pub fn fuzz_samples(
    rows: &[Row],
    mapping: &InputMapping,
    limit: Option<usize>,
    what: &str,
) -> Result<(Vec<Sample>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for r in rows {
        if limit.is_some_and(|l| out.len() >= l) {
            break;
        }
        let mapped = match &r.value {
            Ok(v) => mapping.sample(v.clone()),
            Err(e) => Err(e.clone()),
        };
        match mapped {
            Ok(s) => out.push(s),
            Err(e) => skipped.push(format!("{what}:{}: skipped: {}", r.line, e.message)),
        }
    }
    if out.is_empty() {
        return Err(format!("{what} has no rows to fuzz"));
    }
    Ok((out, skipped))
}

/// Rows given as values (Python's list of dicts, the server's JSON array): line = position + 1.
pub fn rows_from_values(values: Vec<Result<Value, RowError>>) -> Vec<Row> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, value)| Row { line: i + 1, value })
        .collect()
}

/// `referee eval`'s options.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvalParams {
    /// `auto`, `rewardbench`, `rewardbench2`, `scores`, `best-of-n`.
    pub format: String,
    pub gold: Option<String>,
    pub correct: Option<String>,
    pub responses: String,
    pub subset_field: String,
    pub bootstrap: usize,
    pub seed: u64,
    pub confidence: f64,
    pub response_field: Option<String>,
    /// Scored data with 0/1 gold labels: a reward at or above this is a predicted 1.
    pub threshold: f64,
}

impl Default for EvalParams {
    fn default() -> Self {
        let o = EvalOptions::default();
        EvalParams {
            format: EvalFormat::Auto.as_str().into(),
            gold: None,
            correct: None,
            responses: o.responses,
            subset_field: o.subset,
            bootstrap: o.bootstrap.resamples,
            seed: o.bootstrap.seed,
            confidence: o.bootstrap.level,
            response_field: None,
            threshold: o.threshold,
        }
    }
}

impl EvalParams {
    /// The options, or the CLI's message for a bad value.
    pub fn options(&self) -> Result<EvalOptions, String> {
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(format!(
                "--confidence must be between 0 and 1 (0.95 for a 95% interval), found {}",
                self.confidence
            ));
        }
        if !self.threshold.is_finite() {
            return Err(format!(
                "--threshold must be a finite number, found {}",
                self.threshold
            ));
        }
        Ok(EvalOptions {
            threshold: self.threshold,
            format: self.format.parse()?,
            gold: self.gold.clone(),
            correct: self.correct.clone(),
            responses: self.responses.clone(),
            subset: self.subset_field.clone(),
            mapping: InputMapping {
                response_field: self.response_field.clone(),
                ..InputMapping::default()
            },
            bootstrap: Bootstrap {
                resamples: self.bootstrap,
                seed: self.seed,
                level: self.confidence,
            },
        })
    }
}

/// `referee compare`'s options (the second spec is not an option: each shell passes it).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompareParams {
    /// Compare with this label field instead of a second spec.
    pub label: Option<String>,
    pub subset_field: Option<String>,
    pub threshold: f64,
    pub format: String,
    pub id_field: Option<String>,
    pub group_field: Option<String>,
    pub response_field: Option<String>,
}

impl Default for CompareParams {
    fn default() -> Self {
        CompareParams {
            label: None,
            subset_field: None,
            threshold: CompareOptions::default().threshold,
            format: "auto".into(),
            id_field: None,
            group_field: None,
            response_field: None,
        }
    }
}

impl CompareParams {
    /// The options, or a message: a non-finite threshold, or not exactly one reference (a
    /// second spec, `has_b`, or `label`).
    pub fn options(&self, has_b: bool) -> Result<CompareOptions, String> {
        match (has_b, &self.label) {
            (false, None) => {
                return Err(
                    "compare needs a second spec (b) or a label field (--label FIELD)".into(),
                )
            }
            (true, Some(_)) => {
                return Err("with --label, compare takes no second spec".into());
            }
            _ => {}
        }
        if !self.threshold.is_finite() {
            return Err("--threshold must be a finite number".into());
        }
        Ok(CompareOptions {
            threshold: self.threshold,
            mapping: mapping(
                &self.format,
                self.id_field.as_ref(),
                self.group_field.as_ref(),
                self.response_field.as_ref(),
            )?,
            subset: self.subset_field.clone(),
            ..CompareOptions::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_the_audits_defaults() {
        let f: FuzzParams = from_value(json!({})).unwrap();
        let o = f.options();
        assert_eq!((o.threshold, o.per_row, o.examples), (0.5, 8, EXAMPLES));
        assert!(o.perturb && o.families.is_none());
        let e: EvalParams = from_value(Value::Null).unwrap();
        let o = e.options().unwrap();
        assert_eq!((o.bootstrap.resamples, o.bootstrap.level), (1000, 0.95));
        assert_eq!(
            (o.responses.as_str(), o.subset.as_str()),
            ("responses", "subset")
        );
        let c: CompareParams = from_value(json!({"label": "ok"})).unwrap();
        assert_eq!(c.options(false).unwrap().threshold, 0.5);
    }

    #[test]
    fn bad_options_say_why() {
        let e = from_value::<FuzzParams>(json!({"per_rows": 2})).unwrap_err();
        assert!(e.contains("unknown field `per_rows`"), "{e}");
        let e = from_value::<CompareParams>(json!({"threshold": "high"})).unwrap_err();
        assert!(e.starts_with("bad option `threshold`: invalid type"), "{e}");
        let e: EvalParams = from_value(json!({"confidence": 1.5})).unwrap();
        assert!(e
            .options()
            .unwrap_err()
            .contains("--confidence must be between 0 and 1"));
        let e: EvalParams = from_value(json!({"format": "nope"})).unwrap();
        assert!(e
            .options()
            .unwrap_err()
            .contains("unknown eval format `nope`"));
        let c = CompareParams::default();
        assert!(c.options(false).unwrap_err().contains("label field"));
        let c: CompareParams = from_value(json!({"label": "x"})).unwrap();
        assert!(c.options(true).unwrap_err().contains("no second spec"));
        let f: FuzzParams = from_value(json!({"per_row": 0, "families": []})).unwrap();
        assert_eq!(f.options().per_row, 1);
        assert!(f.options().families.is_none());
    }

    #[test]
    fn fuzz_rows_skip_what_does_not_map_and_stop_at_the_limit() {
        let rows = super::super::read_rows(
            "{\"item\":{},\"sample\":{\"output_text\":\"a\"}}\n{bad\n7\n{\"item\":{},\"sample\":{\"output_text\":\"b\"}}\n{\"item\":{},\"sample\":{\"output_text\":\"c\"}}\n",
        );
        let (s, skipped) = fuzz_samples(&rows, &InputMapping::default(), Some(2), "d").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(skipped.len(), 2);
        assert!(skipped[0].starts_with("d:2: skipped"), "{skipped:?}");
        assert!(
            fuzz_samples(&rows[1..3], &InputMapping::default(), None, "d")
                .unwrap_err()
                .contains("no rows to fuzz")
        );
    }
}
