//! `referee compare`: how a spec (`a`) agrees with a reference (`b`): another spec, or a label
//! column. Typically a fast verifier against a strict reference verifier, or against human
//! labels.
//!
//! A sample passes a spec when its reward is at least the threshold; it passes a label when the
//! label is truthy (`true`, a non-zero number, or one of `true`/`yes`/`y`/`1`/`pass`/`correct`;
//! `false`, 0 and `false`/`no`/`n`/`0`/`fail`/`incorrect`/empty fail; any other value is an
//! `invalid_label` error). With `b` as the reference, the confusion matrix is `tp` (both pass),
//! `fp` (a passes, b fails), `fn` (a fails, b passes), `tn` (both fail); the rates are
//! `false_positive = fp / (fp + tn)`, `false_negative = fn / (fn + tp)` and `disagreement =
//! (fp + fn) / (tp + fp + fn + tn)`, `null` when their denominator is 0.
//!
//! A sample either side could not score is not in the matrix: it is counted under `errors`
//! (`a_only`, `b_only`, `both`, by reason), never read as a fail.

use super::{num, row_field, usable_reward, Reasons, Row, Unscored};
use crate::input::InputMapping;
use crate::{Program, Sample, ScoreResult};
use serde::Serialize;
use serde_json::Value;

/// What `a` is compared with.
pub enum Reference<'a> {
    Spec(&'a Program),
    /// A label field (dotted path, at the top level or under `item`).
    Label(String),
}

#[derive(Debug, Clone)]
pub struct CompareOptions {
    pub threshold: f64,
    pub mapping: InputMapping,
    /// How many characters of the output a listed disagreement shows.
    pub excerpt_chars: usize,
    /// Also tabulate per value of this field (VerifyBench's `answer_type`, a dataset's subset).
    pub subset: Option<String>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold: 0.5,
            mapping: InputMapping::default(),
            excerpt_chars: 200,
            subset: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
    pub tn: usize,
}

impl Matrix {
    fn add(&mut self, a: bool, b: bool) {
        match (a, b) {
            (true, true) => self.tp += 1,
            (true, false) => self.fp += 1,
            (false, true) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    /// The rates with `b` as the reference; `null` where a denominator is 0.
    pub fn rates(&self) -> Rates {
        let rate = |n: usize, d: usize| num((d > 0).then(|| n as f64 / d as f64));
        Rates {
            false_positive: rate(self.fp, self.fp + self.tn),
            false_negative: rate(self.fn_, self.fn_ + self.tp),
            disagreement: rate(self.fp + self.fn_, self.tp + self.fp + self.fn_ + self.tn),
        }
    }
}

/// One value of `--subset-field`: its rows, matrix, errors and rates.
#[derive(Debug, Clone, Serialize)]
pub struct SubsetComparison {
    pub subset: String,
    pub n: usize,
    pub errors: usize,
    pub matrix: Matrix,
    pub rates: Rates,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CompareErrors {
    pub a_only: usize,
    pub b_only: usize,
    pub both: usize,
    pub total: usize,
    pub by_reason: Reasons,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rates {
    pub false_positive: Value,
    pub false_negative: Value,
    pub disagreement: Value,
}

#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    pub id: Option<Value>,
    pub line: usize,
    pub a: f64,
    /// b's reward, or the label as it is in the data.
    pub b: Value,
    pub output: String,
}

/// The `referee compare` report.
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub kind: &'static str,
    pub a: String,
    pub b: String,
    pub threshold: f64,
    pub rows: usize,
    pub matrix: Matrix,
    pub errors: CompareErrors,
    pub rates: Rates,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subsets: Option<Vec<SubsetComparison>>,
    pub disagreements: Vec<Disagreement>,
}

/// A label's truth value, or why it has none.
pub fn label_truth(v: Option<&Value>) -> Result<bool, Unscored> {
    let bad = |reason: &str, message: String| Unscored {
        reason: reason.into(),
        message,
    };
    match v {
        None | Some(Value::Null) => Err(bad("missing_label", "the row has no label".into())),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() => Ok(x != 0.0),
            _ => Err(bad(
                "invalid_label",
                format!("label {n} is not a finite number"),
            )),
        },
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "pass" | "correct" => Ok(true),
            "false" | "no" | "n" | "0" | "fail" | "incorrect" | "" => Ok(false),
            _ => Err(bad(
                "invalid_label",
                format!("label `{s}` is neither true nor false"),
            )),
        },
        Some(other) => Err(bad(
            "invalid_label",
            format!("label {other} is neither true nor false"),
        )),
    }
}

/// The first `n` characters of `s`, with an ellipsis when cut.
fn excerpt(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Scores every row with `a` (and `b` when it is a spec), in one batch each, and tabulates.
/// `a_name` / `b_name` are what the report calls them (file paths, `label:FIELD`).
pub fn compare(
    a: &Program,
    b: &Reference<'_>,
    rows: &[Row],
    opts: &CompareOptions,
    a_name: &str,
    b_name: &str,
) -> CompareReport {
    let parsed: Vec<Result<Sample, Unscored>> = rows
        .iter()
        .map(|r| match &r.value {
            Err(e) => Err(Unscored {
                reason: e.reason.into(),
                message: e.message.clone(),
            }),
            Ok(v) => opts.mapping.sample(v.clone()).map_err(|e| Unscored {
                reason: e.reason.into(),
                message: format!("line {}: {}", r.line, e.message),
            }),
        })
        .collect();
    let ok_idx: Vec<usize> = (0..rows.len()).filter(|&i| parsed[i].is_ok()).collect();
    // Score the parsed samples only; `Sample` is not `Clone`, so score by moving them out.
    let mut parsed = parsed;
    let samples: Vec<Sample> = ok_idx
        .iter()
        .map(|&i| {
            std::mem::replace(
                &mut parsed[i],
                Err(Unscored {
                    reason: String::new(),
                    message: String::new(),
                }),
            )
            .expect("parsed")
        })
        .collect();
    let score = |p: &Program| -> Vec<Option<ScoreResult>> {
        let (rs, _) = crate::score::samples(p, &samples, false);
        let mut out: Vec<Option<ScoreResult>> = vec![None; rows.len()];
        for (r, &i) in rs.into_iter().zip(&ok_idx) {
            out[i] = Some(r);
        }
        out
    };
    let ra = score(a);
    let rb = match b {
        Reference::Spec(p) => Some(score(p)),
        Reference::Label(_) => None,
    };
    let mut sample_at: Vec<Option<&Sample>> = vec![None; rows.len()];
    for (s, &i) in samples.iter().zip(&ok_idx) {
        sample_at[i] = Some(s);
    }
    let mut m = Matrix::default();
    let mut errors = CompareErrors::default();
    let mut disagreements = Vec::new();
    let mut subsets: std::collections::BTreeMap<String, (usize, usize, Matrix)> =
        std::collections::BTreeMap::new();
    for (i, row) in rows.iter().enumerate() {
        let input_err = parsed[i].as_ref().err().filter(|u| !u.reason.is_empty());
        let sub = opts.subset.as_deref().map(|f| {
            let name = row
                .value
                .as_ref()
                .ok()
                .and_then(|v| super::row_subset(v, f))
                .unwrap_or_else(|| super::eval::NO_SUBSET.to_string());
            let e = subsets.entry(name).or_insert((0, 0, Matrix::default()));
            e.0 += 1;
            e
        });
        let side_a: Result<f64, Unscored> = match (input_err, &ra[i]) {
            (Some(e), _) => Err(e.clone()),
            (None, Some(r)) => usable_reward(r),
            (None, None) => unreachable!("every parsed sample is scored"),
        };
        let side_b: Result<(bool, Value), Unscored> = match (input_err, b, &rb) {
            (Some(e), _, _) => Err(e.clone()),
            (None, Reference::Spec(_), Some(rb)) => usable_reward(rb[i].as_ref().expect("scored"))
                .map(|v| (v >= opts.threshold, num(Some(v)))),
            (None, Reference::Label(field), _) => {
                let v = row.value.as_ref().ok().and_then(|v| row_field(v, field));
                label_truth(v).map(|t| (t, v.cloned().unwrap_or(Value::Null)))
            }
            (None, Reference::Spec(_), None) => unreachable!("b is scored when it is a spec"),
        };
        match (&side_a, &side_b) {
            (Ok(va), Ok((pb, vb))) => {
                let pa = *va >= opts.threshold;
                m.add(pa, *pb);
                if let Some(e) = sub {
                    e.2.add(pa, *pb);
                }
                if pa != *pb {
                    let s = sample_at[i];
                    disagreements.push(Disagreement {
                        id: s.and_then(|s| s.id.clone()),
                        line: row.line,
                        a: *va,
                        b: vb.clone(),
                        output: s.map_or_else(String::new, |s| {
                            excerpt(&s.output_text, opts.excerpt_chars)
                        }),
                    });
                }
            }
            (ea, eb) => {
                errors.total += 1;
                if let Some(e) = sub {
                    e.1 += 1;
                }
                match (ea, eb) {
                    (Err(x), Err(y)) => {
                        errors.both += 1;
                        errors.by_reason.add(&x.reason);
                        // An input error is one failure, not one per side.
                        if input_err.is_none() {
                            errors.by_reason.add(&y.reason);
                        }
                    }
                    (Err(x), Ok(_)) => {
                        errors.a_only += 1;
                        errors.by_reason.add(&x.reason);
                    }
                    (Ok(_), Err(y)) => {
                        errors.b_only += 1;
                        errors.by_reason.add(&y.reason);
                    }
                    (Ok(_), Ok(_)) => unreachable!(),
                }
            }
        }
    }
    CompareReport {
        kind: "compare",
        a: a_name.to_string(),
        b: b_name.to_string(),
        threshold: opts.threshold,
        rows: rows.len(),
        matrix: m,
        errors,
        rates: m.rates(),
        subsets: opts.subset.as_ref().map(|_| {
            subsets
                .into_iter()
                .map(|(subset, (n, errors, matrix))| SubsetComparison {
                    subset,
                    n,
                    errors,
                    matrix,
                    rates: matrix.rates(),
                })
                .collect()
        }),
        disagreements,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_truthiness() {
        assert_eq!(label_truth(Some(&json!(true))), Ok(true));
        assert_eq!(label_truth(Some(&json!(0))), Ok(false));
        assert_eq!(label_truth(Some(&json!(0.3))), Ok(true));
        assert_eq!(label_truth(Some(&json!("Yes"))), Ok(true));
        assert_eq!(label_truth(Some(&json!("incorrect"))), Ok(false));
        assert_eq!(
            label_truth(Some(&json!("maybe"))).unwrap_err().reason,
            "invalid_label"
        );
        assert_eq!(label_truth(None).unwrap_err().reason, "missing_label");
        assert_eq!(
            label_truth(Some(&json!([1]))).unwrap_err().reason,
            "invalid_label"
        );
    }

    #[test]
    fn excerpts_cut_on_characters() {
        assert_eq!(excerpt("héllo", 2), "hé…");
        assert_eq!(excerpt("hi", 5), "hi");
    }

    #[test]
    fn confusion_matrix_by_hand() {
        // a: "contains 4"; b: exact "4". Label: `ok`.
        let a = Program::compile_str("{type: string_check, name: a, operation: like, input: '{{sample.output_text}}', reference: '4'}").unwrap();
        let b = Program::compile_str("{type: string_check, name: b, operation: eq, input: '{{sample.output_text}}', reference: '4'}").unwrap();
        let data = super::super::read_rows(concat!(
            r#"{"id": 1, "prompt": "2+2", "completion": "4", "ok": true}"#,
            "\n",
            r#"{"id": 2, "prompt": "2+2", "completion": "14", "ok": false}"#,
            "\n",
            r#"{"id": 3, "prompt": "2+2", "completion": "5", "ok": false}"#,
            "\n",
            r#"{"id": 4, "prompt": "2+2", "completion": "4 or 5", "ok": "maybe"}"#,
            "\n",
            r#"{"id": 5, "prompt": "2+2"}"#,
            "\n",
        ));
        let r = compare(
            &a,
            &Reference::Spec(&b),
            &data,
            &CompareOptions::default(),
            "a",
            "b",
        );
        // 1: tp; 2: fp (a passes "14"); 3: tn; 4: fp; 5: input error on both sides.
        assert_eq!(
            r.matrix,
            Matrix {
                tp: 1,
                fp: 2,
                fn_: 0,
                tn: 1
            }
        );
        assert_eq!(r.errors.both, 1);
        assert_eq!(r.errors.total, 1);
        assert_eq!(r.errors.by_reason.0["unknown_row_format"], 1);
        assert_eq!(r.rates.false_positive, json!(2.0 / 3.0));
        assert_eq!(r.rates.false_negative, json!(0.0));
        assert_eq!(r.rates.disagreement, json!(0.5));
        assert_eq!(r.disagreements.len(), 2);
        assert_eq!(r.disagreements[0].id, Some(json!(2)));
        assert_eq!(r.disagreements[0].b, json!(0.0));
        assert_eq!(r.disagreements[0].output, "14");
        // Against the label: 1 tp, 2 fp, 3 tn, 4 b-error (invalid label), 5 both.
        let r = compare(
            &a,
            &Reference::Label("ok".into()),
            &data,
            &CompareOptions::default(),
            "a",
            "label:ok",
        );
        assert_eq!(
            r.matrix,
            Matrix {
                tp: 1,
                fp: 1,
                fn_: 0,
                tn: 1
            }
        );
        assert_eq!(r.errors.b_only, 1);
        assert_eq!(r.errors.both, 1);
        assert_eq!(r.errors.by_reason.0["invalid_label"], 1);
        assert_eq!(r.disagreements[0].b, json!(false));
        assert!(r.subsets.is_none());
        // Per subset, here by `id`: one row each; row 5 is its own (errored) subset.
        let opts = CompareOptions {
            subset: Some("id".into()),
            ..CompareOptions::default()
        };
        let r = compare(&a, &Reference::Spec(&b), &data, &opts, "a", "b");
        let subs = r.subsets.unwrap();
        assert_eq!(subs.len(), 5);
        assert_eq!(subs[1].subset, "2");
        assert_eq!(
            subs[1].matrix,
            Matrix {
                tp: 0,
                fp: 1,
                fn_: 0,
                tn: 0
            }
        );
        assert_eq!(subs[1].rates.false_positive, json!(1.0));
        assert_eq!(subs[1].rates.false_negative, Value::Null);
        assert_eq!((subs[4].n, subs[4].errors), (1, 1));
    }
}
