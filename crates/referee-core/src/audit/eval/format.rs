//! Which format a data file is in: named by the options (`--format`, `--gold`, `--correct`) or
//! told from the first row that is an object.

use super::{EvalError, EvalOptions, Row};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvalFormat {
    #[default]
    Auto,
    RewardBench,
    RewardBench2,
    Scores,
    BestOfN,
    Steps,
}

impl EvalFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            EvalFormat::Auto => "auto",
            EvalFormat::RewardBench => "rewardbench",
            EvalFormat::RewardBench2 => "rewardbench2",
            EvalFormat::Scores => "scores",
            EvalFormat::BestOfN => "best-of-n",
            EvalFormat::Steps => "steps",
        }
    }
}

impl std::str::FromStr for EvalFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => EvalFormat::Auto,
            "rewardbench" | "rewardbench1" | "rewardbench-v1" => EvalFormat::RewardBench,
            "rewardbench2" | "rewardbench-v2" => EvalFormat::RewardBench2,
            "scores" => EvalFormat::Scores,
            "best-of-n" | "bon" => EvalFormat::BestOfN,
            "steps" | "processbench" => EvalFormat::Steps,
            other => {
                return Err(format!(
                    "unknown eval format `{other}`; expected auto, rewardbench, rewardbench2, scores, best-of-n or steps"
                ))
            }
        })
    }
}

/// Picks the format from the options and the first row that is an object.
pub(super) fn detect(rows: &[Row], opts: &EvalOptions) -> Result<EvalFormat, EvalError> {
    if opts.format != EvalFormat::Auto {
        return Ok(opts.format);
    }
    if opts.gold.is_some() {
        return Ok(EvalFormat::Scores);
    }
    if opts.correct.is_some() {
        return Ok(EvalFormat::BestOfN);
    }
    let first = rows
        .iter()
        .find_map(|r| r.value.as_ref().ok().filter(|v| v.is_object()));
    let Some(row) = first else {
        return Err(EvalError::Format(
            "no row is a JSON object, so the format cannot be told; pass --format".into(),
        ));
    };
    if matches!(row.get("steps"), Some(Value::Array(_)))
        && row.get("label").is_some_and(Value::is_i64)
    {
        return Ok(EvalFormat::Steps);
    }
    match (row.get("chosen"), row.get("rejected")) {
        (Some(Value::Array(c)), Some(Value::Array(_)))
            if c.first().is_some_and(|x| x.is_string() || x.is_array()) =>
        {
            Ok(EvalFormat::RewardBench2)
        }
        (Some(_), Some(_)) => Ok(EvalFormat::RewardBench),
        _ => Err(EvalError::Format(
            "cannot tell the data format: no `chosen`/`rejected` (RewardBench); pass --gold FIELD for scored data, --correct FIELD for best-of-N, or --format".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{program, rows};
    use super::super::{evaluate, EvalOptions};
    use super::EvalFormat;

    #[test]
    fn formats_parse() {
        assert_eq!("rewardbench".parse(), Ok(EvalFormat::RewardBench));
        assert_eq!("rewardbench2".parse(), Ok(EvalFormat::RewardBench2));
        assert_eq!("best-of-n".parse(), Ok(EvalFormat::BestOfN));
        assert!("nope".parse::<EvalFormat>().is_err());
    }

    #[test]
    fn an_unknown_format_is_an_error_not_an_empty_report() {
        let p = program("{type: const, value: 1}");
        let err = evaluate(&p, &rows("{\"x\": 1}\n"), &EvalOptions::default()).unwrap_err();
        assert!(err.to_string().contains("--format"), "{err}");
        let err = evaluate(&p, &rows("{bad\n"), &EvalOptions::default()).unwrap_err();
        assert!(err.to_string().contains("no row is a JSON object"), "{err}");
    }
}
