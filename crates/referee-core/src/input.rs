//! Input rows → samples. Real datasets are not in Referee's shape, so the common ones are
//! mapped here, once, for every shell (CLI, server, Python):
//!
//! - `referee` / `openai`: `{"id", "group", "item": {...}, "sample": {"output_text", "messages",
//!   "output_tools", "output_json", "choices"}}`; OpenAI's run-endpoint form with a
//!   `model_sample` string instead of `sample` is accepted too.
//! - `trl`: TRL dataset rows plus the completion: `prompt` and `completion` as text or chat
//!   messages; every other column (`solution`, `answer`, ...) goes into `item` under its name.
//! - `verl`: verl parquet rows plus the response: `data_source`, `prompt`, `ability`,
//!   `reward_model.ground_truth` (exposed as `item.ground_truth`), `extra_info` (kept as
//!   `item.extra_info`), group from `uid`; the response is read from `response` (or the first
//!   of `responses`, `solution_str`, `completion`, `output` present).
//!
//! `auto` picks per row: `sample`/`model_sample` → openai, `reward_model`/`data_source` → verl,
//! `completion` → trl.

use crate::sample::{last_assistant_text, Sample};
use crate::template::value_text;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowFormat {
    #[default]
    Auto,
    Referee,
    Trl,
    Verl,
}

impl std::str::FromStr for RowFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => RowFormat::Auto,
            "referee" | "openai" => RowFormat::Referee,
            "trl" => RowFormat::Trl,
            "verl" => RowFormat::Verl,
            other => {
                return Err(format!(
                    "unknown input format `{other}`; expected auto, referee, openai, trl or verl"
                ))
            }
        })
    }
}

/// How rows become samples. Field paths are dotted (`extra_info.index`).
#[derive(Debug, Clone, Default)]
pub struct InputMapping {
    pub format: RowFormat,
    /// Where the id is (default `id`; verl also tries `extra_info.index`).
    pub id_field: Option<String>,
    /// Where the group is (default `group`; verl `uid`; trl none).
    pub group_field: Option<String>,
    /// Where the model output is, overriding the format's default.
    pub response_field: Option<String>,
}

/// Why a row could not become a sample: a stable reason and a message.
#[derive(Debug, Clone, PartialEq)]
pub struct RowError {
    pub reason: &'static str,
    pub message: String,
}

fn err(reason: &'static str, message: impl Into<String>) -> RowError {
    RowError {
        reason,
        message: message.into(),
    }
}

/// Looks up a dotted path (`extra_info.index`, `choices.0.text`) in a JSON value.
pub fn get_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, key| match cur {
        Value::Array(a) => a.get(key.parse::<usize>().ok()?),
        _ => cur.get(key),
    })
}

/// `get_path` on a row that is already a map, without copying it into a `Value`.
fn get_in<'a>(obj: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let (first, rest) = match path.split_once('.') {
        Some((f, r)) => (f, Some(r)),
        None => (path, None),
    };
    let v = obj.get(first)?;
    match rest {
        Some(r) => get_path(v, r),
        None => Some(v),
    }
}

impl InputMapping {
    /// Parses one JSONL line into a sample, or says why not.
    pub fn parse_line(&self, line: &str) -> Result<Sample, RowError> {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| err("invalid_json", format!("line is not valid JSON: {e}")))?;
        self.sample(v)
    }

    /// Maps one row to a sample.
    pub fn sample(&self, row: Value) -> Result<Sample, RowError> {
        let Value::Object(obj) = row else {
            return Err(err("invalid_row", "row is not a JSON object"));
        };
        let format = match self.format {
            RowFormat::Auto => detect(&obj)?,
            f => f,
        };
        let id = self.id(&obj, format);
        let group = self.group(&obj, format);
        let mut s = match format {
            RowFormat::Referee | RowFormat::Auto => self.referee(obj)?,
            RowFormat::Trl => self.trl(obj)?,
            RowFormat::Verl => self.verl(obj)?,
        };
        s.id = id;
        s.group = group;
        Ok(s)
    }

    fn id(&self, obj: &Map<String, Value>, f: RowFormat) -> Option<Value> {
        let path = self.id_field.as_deref().unwrap_or("id");
        get_in(obj, path)
            .or_else(|| {
                (f == RowFormat::Verl && self.id_field.is_none())
                    .then(|| get_in(obj, "extra_info.index"))
                    .flatten()
            })
            .cloned()
    }

    fn group(&self, obj: &Map<String, Value>, f: RowFormat) -> Option<String> {
        let path = match (&self.group_field, f) {
            (Some(p), _) => p.as_str(),
            (None, RowFormat::Verl) => "uid",
            (None, RowFormat::Trl) => return None,
            (None, _) => "group",
        };
        get_in(obj, path).filter(|v| !v.is_null()).map(value_text)
    }

    fn override_text(
        &self,
        obj: &Map<String, Value>,
    ) -> Result<Option<(String, Option<Value>)>, RowError> {
        let Some(p) = &self.response_field else {
            return Ok(None);
        };
        let v = get_in(obj, p)
            .ok_or_else(|| err("missing_field", format!("row has no response field `{p}`")))?;
        Ok(Some(completion_text(v, p)?))
    }

    fn referee(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let overridden = self.override_text(&obj)?;
        let item = match obj.remove("item") {
            Some(Value::Object(m)) => Value::Object(m),
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(_) => return Err(err("invalid_row", "`item` must be a JSON object")),
        };
        let mut s = Sample::new(String::new(), item);
        match (obj.remove("sample"), obj.remove("model_sample")) {
            (Some(Value::Object(mut sm)), _) => {
                s.messages = sm.remove("messages").filter(|v| !v.is_null());
                s.output_tools = sm.remove("output_tools").filter(|v| !v.is_null());
                s.choices = sm.remove("choices").filter(|v| !v.is_null());
                match sm.remove("output_text") {
                    Some(Value::String(t)) => s.output_text = t,
                    Some(Value::Null) | None => {
                        match s.messages.as_ref().and_then(last_assistant_text) {
                            Some(t) => s.output_text = t,
                            None if overridden.is_some() || s.output_tools.is_some() => {}
                            None => return Err(err(
                                "missing_field",
                                "`sample` has no `output_text` (nor `messages` to take it from)",
                            )),
                        }
                    }
                    Some(other) => {
                        return Err(err(
                            "invalid_row",
                            format!(
                                "`sample.output_text` must be a string, found {}",
                                crate::compile::kind_of(&other)
                            ),
                        ))
                    }
                }
                if let Some(j) = sm.remove("output_json").filter(|v| !v.is_null()) {
                    s = s.with_output_json(j);
                }
            }
            (Some(_), _) => return Err(err("invalid_row", "`sample` must be a JSON object")),
            (None, Some(Value::String(t))) => s.output_text = t,
            (None, Some(_)) => return Err(err("invalid_row", "`model_sample` must be a string")),
            (None, None) if overridden.is_some() => {}
            (None, None) => {
                return Err(err(
                    "missing_field",
                    "row has no `sample` (or `model_sample`)",
                ))
            }
        }
        if let Some((t, m)) = overridden {
            s.output_text = t;
            if m.is_some() {
                s.messages = m;
            }
        }
        Ok(s)
    }

    fn trl(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let (text, messages) = if let Some(x) = self.override_text(&obj)? {
            x
        } else {
            let c = obj
                .get("completion")
                .ok_or_else(|| err("missing_field", "TRL row has no `completion`"))?;
            completion_text(c, "completion")?
        };
        obj.remove("completion");
        let mut s = Sample::new(text, Value::Object(obj));
        s.messages = messages;
        Ok(s)
    }

    fn verl(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let (text, messages) = if let Some(x) = self.override_text(&obj)? {
            x
        } else {
            let key = ["response", "responses", "solution_str", "completion", "output"]
                .into_iter()
                .find(|k| obj.contains_key(*k))
                .ok_or_else(|| err("missing_field", "verl row has no response column (`response`, `responses`, `solution_str`, `completion` or `output`); name it with --response-field"))?;
            let v = obj.remove(key).expect("present");
            completion_text(&v, key)?
        };
        if let Some(rm) = obj.get("reward_model") {
            if let Some(gt) = rm.get("ground_truth") {
                obj.insert("ground_truth".into(), gt.clone());
            }
        }
        let mut s = Sample::new(text, Value::Object(obj));
        s.messages = messages;
        Ok(s)
    }
}

fn detect(obj: &Map<String, Value>) -> Result<RowFormat, RowError> {
    if obj.contains_key("sample") || obj.contains_key("model_sample") {
        Ok(RowFormat::Referee)
    } else if obj.contains_key("reward_model") || obj.contains_key("data_source") {
        Ok(RowFormat::Verl)
    } else if obj.contains_key("completion") {
        Ok(RowFormat::Trl)
    } else {
        Err(err(
            "unknown_row_format",
            "cannot tell the row format: no `sample` (referee/openai), `reward_model`/`data_source` (verl) or `completion` (trl); pass --format",
        ))
    }
}

/// A completion given as text or as chat messages → (text, messages).
fn completion_text(v: &Value, field: &str) -> Result<(String, Option<Value>), RowError> {
    match v {
        Value::String(t) => Ok((t.clone(), None)),
        Value::Array(_) => {
            let t = last_assistant_text(v).ok_or_else(|| {
                err(
                    "invalid_row",
                    format!("`{field}` is a list but not chat messages with text content"),
                )
            })?;
            Ok((t, Some(v.clone())))
        }
        other => Err(err(
            "invalid_row",
            format!(
                "`{field}` must be text or chat messages, found {}",
                crate::compile::kind_of(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(line: Value) -> Result<Sample, RowError> {
        InputMapping::default().sample(line)
    }

    #[test]
    fn referee_rows() {
        let s = map(json!({"id": "a", "group": "g", "item": {"answer": "4"}, "sample": {"output_text": "4"}})).unwrap();
        assert_eq!(s.output_text, "4");
        assert_eq!(s.id, Some(json!("a")));
        assert_eq!(s.group.as_deref(), Some("g"));
        let s = map(json!({"item": {}, "model_sample": "hi"})).unwrap();
        assert_eq!(s.output_text, "hi");
        let s = map(json!({"item": {}, "sample": {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "ans"}]}})).unwrap();
        assert_eq!(s.output_text, "ans");
    }

    #[test]
    fn trl_rows() {
        let s = map(json!({"prompt": "2+2?", "completion": "4", "solution": "4"})).unwrap();
        assert_eq!(s.output_text, "4");
        assert_eq!(s.item["solution"], "4");
        assert_eq!(s.item["prompt"], "2+2?");
        let s = map(json!({"prompt": [{"role": "user", "content": "q"}], "completion": [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]})).unwrap();
        assert_eq!(s.output_text, "x");
        assert!(s.messages.is_some());
    }

    #[test]
    fn verl_rows() {
        let s = map(json!({"data_source": "openai/gsm8k", "prompt": [], "reward_model": {"style": "rule", "ground_truth": "72"}, "extra_info": {"index": 3}, "response": "#### 72", "uid": "u1"})).unwrap();
        assert_eq!(s.item["ground_truth"], "72");
        assert_eq!(s.id, Some(json!(3)));
        assert_eq!(s.group.as_deref(), Some("u1"));
        let m = InputMapping {
            response_field: Some("gen.text".into()),
            ..Default::default()
        };
        let s = m
            .sample(json!({"data_source": "x", "gen": {"text": "hello"}}))
            .unwrap();
        assert_eq!(s.output_text, "hello");
    }

    #[test]
    fn bad_rows_say_why() {
        assert_eq!(
            InputMapping::default()
                .parse_line("{nope")
                .unwrap_err()
                .reason,
            "invalid_json"
        );
        assert_eq!(map(json!([1])).unwrap_err().reason, "invalid_row");
        assert_eq!(
            map(json!({"x": 1})).unwrap_err().reason,
            "unknown_row_format"
        );
        assert_eq!(
            map(json!({"item": {}, "sample": {}})).unwrap_err().reason,
            "missing_field"
        );
        assert_eq!(
            map(json!({"completion": 5})).unwrap_err().reason,
            "invalid_row"
        );
        assert_eq!(
            map(json!({"item": 3, "sample": {"output_text": ""}}))
                .unwrap_err()
                .reason,
            "invalid_row"
        );
    }
}
