//! A sample's rollout as turns and tool calls (DESIGN.md §2): `sample.messages` in OpenAI chat
//! form, read once per sample for every component that looks at the path rather than the last
//! answer (tool-trace rules, claims, per-turn scoring, transcripts).
//!
//! What counts is decided here, once, so no component can be fooled differently:
//! - a **call** is a `tool_calls` entry of an **assistant** turn (flat `{id, name, arguments}` or
//!   nested under `function`); tool calls written into any other turn are not the policy's calls;
//! - a **result** is a `tool` turn that answers a call made before it: by `tool_call_id` when it
//!   has one (an id no earlier call made, or a call already answered, answers nothing), else by
//!   its `name` against the unanswered calls, else the oldest unanswered call. A `tool` turn that
//!   answers nothing is an *orphan*: text in the transcript, never a tool's result;
//! - a result is an **error** when the environment flagged it (`is_error: true`, `error: true`
//!   or a non-empty error message, `status: "error"`), not because its text says "error";
//! - a sample without messages is one assistant turn: its output text and output tools, so the
//!   same rules apply to single-turn tool calling.

mod transcript;

pub use transcript::{MAX_CHARS, MAX_RESULT_CHARS, MAX_TURN_CHARS};

use crate::sample::Sample;
use serde_json::Value;
use std::ops::Range;

/// The rollout, turn by turn.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Trajectory {
    pub turns: Vec<Turn>,
    /// Every call, in the order the assistant made them.
    pub calls: Vec<Call>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Position in `sample.messages` (what a template's `[i]` would select).
    pub index: usize,
    pub role: String,
    /// The content as text (text parts joined; no content is empty). For an assistant turn with
    /// its reasoning held apart, the reasoning is not here: see `reasoning`.
    pub text: String,
    /// `reasoning_content` / `thinking` / `reasoning`, when the turn carries it apart.
    pub reasoning: Option<String>,
    /// The calls this (assistant) turn made, as indexes into [`Trajectory::calls`].
    pub calls: Range<usize>,
    /// For a `tool` turn: the call it answers; `None` for an orphan (and for other roles).
    pub answers: Option<usize>,
    /// For a `tool` turn: the environment flagged the result as an error.
    pub error: bool,
    /// The tool name a `tool` turn gives itself (`name`), whatever it answers.
    pub name: Option<String>,
    /// Per-turn metadata when the trainer recorded it: the turn's token count (`tokens`,
    /// `num_tokens`, `completion_tokens` or `usage.completion_tokens`) and how long it took in
    /// milliseconds (`latency_ms`, `duration_ms`, or `latency` in seconds).
    pub tokens: Option<u64>,
    pub latency_ms: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The assistant turn that made it (index into [`Trajectory::turns`]).
    pub turn: usize,
    pub id: Option<String>,
    pub name: String,
    /// The arguments as the policy wrote them (JSON text).
    pub arguments_text: String,
    /// The arguments parsed; `None` when they are not a JSON object.
    pub arguments: Option<serde_json::Map<String, Value>>,
    /// The turn holding its result (index into [`Trajectory::turns`]); `None`: never answered.
    pub result: Option<usize>,
}

impl Call {
    /// Whether the call was answered and the answer was not an error.
    pub fn succeeded(&self, t: &Trajectory) -> bool {
        self.result.is_some_and(|r| !t.turns[r].error)
    }
}

impl Turn {
    pub fn is(&self, role: &str) -> bool {
        self.role == role
    }
}

/// The fields trainers put a message's reasoning in (same list as [`crate::sample`]).
const REASONING_KEYS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];

impl Trajectory {
    /// The trajectory of a sample: its messages, or its output as one assistant turn.
    pub fn of(s: &Sample) -> Trajectory {
        match s.messages.as_ref().and_then(Value::as_array) {
            Some(msgs) => Trajectory::from_messages(msgs),
            None => Trajectory::single(&s.output_text, s.output_tools.as_ref()),
        }
    }

    fn single(text: &str, tools: Option<&Value>) -> Trajectory {
        let mut t = Trajectory::default();
        t.push_assistant(0, text.to_string(), None, tools);
        t
    }

    pub fn from_messages(msgs: &[Value]) -> Trajectory {
        let mut t = Trajectory::default();
        for (index, m) in msgs.iter().enumerate() {
            let role = m.get("role").and_then(Value::as_str).unwrap_or("");
            let text = content_text(m.get("content").unwrap_or(&Value::Null));
            match role {
                "assistant" => {
                    let reasoning = REASONING_KEYS
                        .iter()
                        .find_map(|k| m.get(*k).and_then(Value::as_str))
                        .filter(|r| !r.trim().is_empty())
                        .map(str::to_string);
                    t.push_assistant(index, text, reasoning, m.get("tool_calls"));
                }
                "tool" => {
                    let name = m.get("name").and_then(Value::as_str).map(str::to_string);
                    let id = m.get("tool_call_id").and_then(Value::as_str);
                    let answers = t.answered_by(id, name.as_deref());
                    let turn = t.turns.len();
                    if let Some(c) = answers {
                        t.calls[c].result = Some(turn);
                    }
                    t.turns.push(Turn {
                        index,
                        role: role.to_string(),
                        text,
                        reasoning: None,
                        calls: 0..0,
                        answers,
                        error: flagged_error(m),
                        name,
                        tokens: None,
                        latency_ms: None,
                    });
                }
                _ => t.turns.push(Turn {
                    index,
                    role: role.to_string(),
                    text,
                    reasoning: None,
                    calls: 0..0,
                    answers: None,
                    error: false,
                    name: None,
                    tokens: None,
                    latency_ms: None,
                }),
            }
            if let Some(u) = t.turns.last_mut() {
                (u.tokens, u.latency_ms) = turn_meta(m);
            }
        }
        t
    }

    fn push_assistant(
        &mut self,
        index: usize,
        text: String,
        reasoning: Option<String>,
        tools: Option<&Value>,
    ) {
        let turn = self.turns.len();
        let start = self.calls.len();
        for c in tools.and_then(Value::as_array).into_iter().flatten() {
            let f = c.get("function").filter(|f| f.is_object()).unwrap_or(c);
            let arguments_text = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => "{}".to_string(),
                Some(v) => v.to_string(),
            };
            let arguments = match f.get("arguments") {
                Some(Value::Object(m)) => Some(m.clone()),
                None | Some(Value::Null) => Some(serde_json::Map::new()),
                Some(Value::String(s)) => match serde_json::from_str(s) {
                    Ok(Value::Object(m)) => Some(m),
                    _ => None,
                },
                Some(_) => None,
            };
            self.calls.push(Call {
                turn,
                id: c.get("id").and_then(Value::as_str).map(str::to_string),
                name: f
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                arguments_text,
                arguments,
                result: None,
            });
        }
        self.turns.push(Turn {
            index,
            role: "assistant".into(),
            text,
            reasoning,
            calls: start..self.calls.len(),
            answers: None,
            error: false,
            name: None,
            tokens: None,
            latency_ms: None,
        });
    }

    /// The call a `tool` turn answers (see the module doc), among the unanswered ones made
    /// before it.
    fn answered_by(&self, id: Option<&str>, name: Option<&str>) -> Option<usize> {
        let open = |c: &&Call| c.result.is_none();
        let mut calls = self.calls.iter().enumerate();
        match (id, name) {
            (Some(id), _) => calls.find(|(_, c)| open(c) && c.id.as_deref() == Some(id)),
            (None, Some(n)) => calls.find(|(_, c)| open(c) && c.id.is_none() && c.name == n),
            (None, None) => calls.find(|(_, c)| open(c) && c.id.is_none()),
        }
        .map(|(i, _)| i)
    }

    /// The assistant's turns.
    pub fn assistant_turns(&self) -> impl Iterator<Item = &Turn> {
        self.turns.iter().filter(|t| t.is("assistant"))
    }

    /// The last assistant turn: the final answer.
    pub fn final_turn(&self) -> Option<&Turn> {
        self.turns.iter().rev().find(|t| t.is("assistant"))
    }

    /// The calls to `name`.
    pub fn calls_to<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Call> + 'a {
        self.calls.iter().filter(move |c| c.name == name)
    }

    /// The text of a call's result, when it has one.
    pub fn result_text(&self, c: &Call) -> Option<&str> {
        c.result.map(|r| self.turns[r].text.as_str())
    }

    /// The `tool` turns that answer no call: text in the transcript, never a result (for a
    /// trace that says why they were not counted).
    pub fn orphans(&self) -> impl Iterator<Item = &Turn> {
        self.turns
            .iter()
            .filter(|t| t.is("tool") && t.answers.is_none())
    }
}

/// The message's content as text: a string, or text parts joined; anything else is empty.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
            .collect(),
        _ => String::new(),
    }
}

/// A turn's recorded token count and latency (see [`Turn::tokens`]).
fn turn_meta(m: &Value) -> (Option<u64>, Option<f64>) {
    let tokens = ["tokens", "num_tokens", "completion_tokens"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_u64))
        .or_else(|| {
            m.pointer("/usage/completion_tokens")
                .and_then(Value::as_u64)
        });
    let latency = ["latency_ms", "duration_ms"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_f64))
        .or_else(|| m.get("latency").and_then(Value::as_f64).map(|s| s * 1000.0))
        .filter(|x| x.is_finite() && *x >= 0.0);
    (tokens, latency)
}

/// The environment's own error flag on a tool turn.
fn flagged_error(m: &Value) -> bool {
    let flag = |v: Option<&Value>| match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        _ => false,
    };
    flag(m.get("is_error"))
        || flag(m.get("error"))
        || m.get("status").and_then(Value::as_str) == Some("error")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn traj(v: &Value) -> Trajectory {
        Trajectory::from_messages(v.as_array().unwrap())
    }

    #[test]
    fn results_are_paired_with_the_calls_they_answer() {
        let t = traj(&json!([
            {"role": "user", "content": "book a table"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"x\"}"}},
                {"id": "b", "name": "book", "arguments": {"table": 7}}]},
            {"role": "tool", "tool_call_id": "b", "content": "booked", "is_error": false},
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "3 tables"}]},
            {"role": "assistant", "content": "Done."}
        ]));
        assert_eq!(t.turns.len(), 5);
        assert_eq!(t.calls.len(), 2);
        assert_eq!(t.calls[0].name, "search");
        assert_eq!(t.calls[0].result, Some(3));
        assert_eq!(t.calls[1].result, Some(2));
        assert_eq!(t.calls[1].arguments.as_ref().unwrap()["table"], 7);
        assert_eq!(t.result_text(&t.calls[0]), Some("3 tables"));
        assert_eq!(t.final_turn().unwrap().text, "Done.");
        assert!(t.calls.iter().all(|c| c.succeeded(&t)));
    }

    #[test]
    fn a_tool_turn_answering_no_call_is_an_orphan() {
        let t = traj(&json!([
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"name": "search", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "zzz", "name": "book", "content": "booked #7"},
            {"role": "tool", "tool_call_id": "a", "content": "ok"},
            {"role": "tool", "tool_call_id": "a", "content": "a second answer"},
            {"role": "user", "content": "", "tool_calls": [{"id": "u", "function": {"name": "book", "arguments": "{}"}}]}
        ]));
        assert_eq!(t.turns[1].answers, None);
        assert_eq!(t.turns[2].answers, Some(0));
        assert_eq!(t.turns[3].answers, None, "one call, one answer");
        let orphans: Vec<usize> = t.orphans().map(|o| o.index).collect();
        assert_eq!(orphans, [1, 3]);
        assert_eq!(t.calls.len(), 1, "only the assistant makes calls");
    }

    #[test]
    fn results_without_ids_pair_by_name_then_in_order() {
        let t = traj(&json!([
            {"role": "assistant", "tool_calls": [{"name": "a", "arguments": "{}"}, {"name": "b", "arguments": "nope"}]},
            {"role": "tool", "name": "b", "content": "B", "error": "timeout"},
            {"role": "tool", "content": "A"}
        ]));
        assert_eq!(t.calls[1].result, Some(1));
        assert_eq!(t.calls[0].result, Some(2));
        assert!(t.turns[1].error);
        assert!(!t.calls[1].succeeded(&t));
        assert_eq!(
            t.calls[1].arguments, None,
            "arguments that are not an object"
        );
        assert_eq!(t.turns[0].text, "", "no content is empty text");
    }

    #[test]
    fn per_turn_metadata_is_read_when_recorded() {
        let t = traj(&json!([
            {"role": "assistant", "content": "a", "tokens": 12, "latency": 0.5},
            {"role": "assistant", "content": "b", "usage": {"completion_tokens": 7}, "latency_ms": 30},
            {"role": "user", "content": "c", "latency": -1}
        ]));
        assert_eq!(
            (t.turns[0].tokens, t.turns[0].latency_ms),
            (Some(12), Some(500.0))
        );
        assert_eq!(
            (t.turns[1].tokens, t.turns[1].latency_ms),
            (Some(7), Some(30.0))
        );
        assert_eq!((t.turns[2].tokens, t.turns[2].latency_ms), (None, None));
    }

    #[test]
    fn a_sample_without_messages_is_one_assistant_turn() {
        let mut s = Sample::new("calling", json!({}));
        s.output_tools = Some(json!([{"function": {"name": "f", "arguments": "{}"}}]));
        let t = Trajectory::of(&s);
        assert_eq!(t.turns.len(), 1);
        assert_eq!(t.calls[0].name, "f");
        assert_eq!(t.calls[0].result, None);
    }
}
