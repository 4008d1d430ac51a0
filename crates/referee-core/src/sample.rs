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
    /// The environment's final state after the rollout (a database, files changed, test results,
    /// a diff), as the environment recorded it: `sample.state` in rows.
    pub state: Option<Value>,
    /// The completion's tokens (`completion_ids` or `token_offsets`), for the token spans of
    /// step rewards; never read by a grader.
    pub tokens: Option<crate::steps::tokens::Tokens>,
    /// Logprobs the trainer already has of a likelihood reward's target (and of its baseline
    /// context's target): `sample.target_logprobs`, `sample.baseline_logprobs`. A `likelihood`
    /// grader uses them instead of calling an endpoint.
    pub target_logprobs: Option<Vec<f64>>,
    pub baseline_logprobs: Option<Vec<f64>>,
    /// `output_json` given explicitly in the input; otherwise parsed lazily from `output_text`.
    explicit_json: Option<Value>,
    parsed_json: OnceLock<Option<Value>>,
    /// `messages` read as turns and calls, the first time a component asks.
    trajectory: OnceLock<crate::trajectory::Trajectory>,
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

    /// Replaces the output text, dropping everything read from the old one (its parsed JSON,
    /// its trajectory), so one sample can be reused for many outputs of the same row (the steps
    /// of a solution) without cloning the item each time.
    pub fn set_output(&mut self, text: &str) {
        self.output_text.clear();
        self.output_text.push_str(text);
        self.explicit_json = None;
        self.parsed_json = OnceLock::new();
        self.trajectory = OnceLock::new();
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

    /// The rollout as turns and tool calls ([`crate::trajectory`]), read once per sample.
    pub fn trajectory(&self) -> &crate::trajectory::Trajectory {
        self.trajectory
            .get_or_init(|| crate::trajectory::Trajectory::of(self))
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
/// `{type: text, text}` parts), which is what a trainer means by "the completion". A message with
/// a reasoning field gets it back as a `<think>` section ([`assistant_output`]).
pub fn last_assistant_text(messages: &Value) -> Option<String> {
    assistant_output(messages).map(|o| o.text)
}

/// What the graded message of a trajectory says: its text and its tool calls.
#[derive(Debug, Clone, PartialEq)]
pub struct AssistantOutput {
    /// The content, after the reasoning rendered as `<think>\n…\n</think>\n` when the message
    /// carries it in a field of its own.
    pub text: String,
    /// The message's `tool_calls` in OpenAI's shape; `None` when it has none.
    pub tools: Option<Value>,
}

/// The fields trainers put a message's reasoning in: `reasoning_content` (vLLM, verifiers),
/// `thinking` (transformers' response parsing, so TRL), `reasoning` (OpenRouter, Ollama).
const REASONING_KEYS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

/// The last assistant message (else the last message) of a chat-messages array, read the way
/// the trainers write it: no `content` (a message with only tool calls) is empty text; the
/// reasoning, held apart from the content, is put back in front of it as the `<think>` section
/// a chat template renders, so `format` and `reasoning: strip` see it where they look; and
/// `tool_calls`, flat (`{id, name, arguments}`) or nested (`{function: {name, arguments}}`),
/// become OpenAI tool calls with `arguments` as JSON text. `None` when `messages` is not a
/// list of messages or the content is neither text nor text parts.
pub fn assistant_output(messages: &Value) -> Option<AssistantOutput> {
    let arr = messages.as_array()?;
    let msg = arr
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .or_else(|| arr.last())?;
    message_output(msg)
}

/// What one message says, read as [`assistant_output`] reads the graded one.
pub fn message_output(msg: &Value) -> Option<AssistantOutput> {
    if !msg.is_object() {
        return None;
    }
    let content = content_text(msg.get("content").unwrap_or(&Value::Null))?;
    let reasoning = REASONING_KEYS
        .iter()
        .find_map(|k| msg.get(*k).and_then(Value::as_str))
        .filter(|r| !r.trim().is_empty());
    let text = match reasoning {
        // A content that already holds its reasoning section keeps the one it has.
        Some(_) if content.contains("</think>") => content,
        Some(r) => format!("<think>\n{}\n</think>\n{content}", r.trim_matches('\n')),
        None => content,
    };
    let tools = msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| Value::Array(a.iter().map(openai_tool_call).collect()));
    Some(AssistantOutput { text, tools })
}

/// One tool call in OpenAI's chat shape. Flat calls (verifiers' `ToolCall`, and
/// `{name, arguments}` as many parsers emit) are nested under `function`; arguments given as an
/// object are written as JSON text, as OpenAI sends them. Anything else is kept as it is, for
/// the graders to judge.
fn openai_tool_call(c: &Value) -> Value {
    let Some(obj) = c.as_object() else {
        return c.clone();
    };
    let (name, args) = match obj.get("function").and_then(Value::as_object) {
        Some(f) => (f.get("name"), f.get("arguments")),
        None if obj.contains_key("name") => (obj.get("name"), obj.get("arguments")),
        None => return c.clone(),
    };
    let args = match args {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Null) | None => Value::String("{}".into()),
        Some(v) => Value::String(v.to_string()),
    };
    let mut out = serde_json::Map::new();
    if let Some(id) = obj.get("id") {
        out.insert("id".into(), id.clone());
    }
    out.insert("type".into(), Value::String("function".into()));
    out.insert(
        "function".into(),
        serde_json::json!({"name": name.cloned().unwrap_or(Value::Null), "arguments": args}),
    );
    Value::Object(out)
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
