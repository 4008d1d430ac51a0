//! The sample: one model output with the dataset row it answers (DESIGN.md §2).

use crate::digest::Digest;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// One model output to score. Built once per input line; read-only while scoring.
#[derive(Debug, Default)]
pub struct Sample {
    pub id: Option<Value>,
    pub group: Option<String>,
    /// The dataset row: ground truth, tests, rubric, anything. Always a JSON object.
    pub item: Value,
    pub output_text: String,
    pub messages: Option<Value>,
    pub output_tools: Option<Value>,
    pub choices: Option<Value>,
    /// `output_json` given explicitly in the input; otherwise parsed lazily from `output_text`.
    explicit_json: Option<Value>,
    parsed_json: OnceLock<Option<Value>>,
    /// Digests of item fields, written by the input layer while it parsed `item` (never by
    /// hand: a digest must be of the value it sits beside).
    item_digests: Vec<(Arc<str>, Digest)>,
}

impl Sample {
    /// A sample with just an output text and an item, the common case in tests and benches.
    pub fn new(output_text: impl Into<String>, item: Value) -> Self {
        Sample {
            item,
            output_text: output_text.into(),
            ..Sample::default()
        }
    }

    #[must_use]
    pub fn with_output_json(mut self, v: Value) -> Self {
        self.explicit_json = Some(v);
        self
    }

    /// The digest of `item[field]` when the input layer made one (the compiled spec asked for it
    /// and the row was parsed from text); `None` otherwise.
    pub fn item_digest(&self, field: &str) -> Option<&Digest> {
        self.item_digests
            .iter()
            .find(|(f, _)| **f == *field)
            .map(|(_, d)| d)
    }

    pub(crate) fn set_item_digests(&mut self, d: Vec<(Arc<str>, Digest)>) {
        self.item_digests = d;
    }

    /// `output_text` parsed as JSON, or `None` when it is not valid JSON. Parsed at most once,
    /// and only when a template asks for it, so rule-only specs never pay for it.
    pub fn output_json(&self) -> Option<&Value> {
        if let Some(v) = &self.explicit_json {
            return Some(v);
        }
        self.parsed_json
            .get_or_init(|| serde_json::from_str(self.output_text.trim()).ok())
            .as_ref()
    }
}

/// The text of the last assistant message in a chat-messages array (string content or a list of
/// `{type: text, text}` parts), which is what a trainer means by "the completion".
pub fn last_assistant_text(messages: &Value) -> Option<String> {
    let arr = messages.as_array()?;
    let msg = arr
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .or_else(|| arr.last())?;
    content_text(msg.get("content")?)
}

fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let mut out = String::new();
            for p in parts {
                if let Some(t) = p.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                } else if let Some(t) = p.as_str() {
                    out.push_str(t);
                }
            }
            Some(out)
        }
        Value::Null => Some(String::new()),
        _ => None,
    }
}
