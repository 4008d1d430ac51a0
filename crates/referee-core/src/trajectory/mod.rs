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
use std::collections::{BTreeSet, HashMap, VecDeque};
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

    /// Whether the call was answered with an error.
    pub fn failed(&self, t: &Trajectory) -> bool {
        self.result.is_some_and(|r| t.turns[r].error)
    }

    /// The arguments in one canonical form, so that two calls are the same call exactly when
    /// these and the names are equal: parsed arguments as [`canonical_json`] (key order,
    /// whitespace and `1` against `1.0` make no difference); arguments that are not a JSON
    /// object as written, trimmed (tagged apart, so no text can pass for an object).
    pub fn canonical_arguments(&self) -> String {
        match &self.arguments {
            Some(m) => {
                let mut out = String::with_capacity(self.arguments_text.len());
                canonical_object(m, &mut out);
                out
            }
            None => format!("raw:{}", self.arguments_text.trim()),
        }
    }
}

/// A JSON value written one way only: object keys sorted, no whitespace, numbers by value
/// (integers as integers, `1.0` as `1`), strings as JSON strings. Equal texts mean values
/// equal as JSON, which is how calls and expected arguments are compared.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => canonical_object(m, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        Value::Number(n) => out.push_str(&canonical_number(n)),
        other => out.push_str(&other.to_string()),
    }
}

fn canonical_object(m: &serde_json::Map<String, Value>, out: &mut String) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    out.push('{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        write_canonical(&m[k.as_str()], out);
    }
    out.push('}');
}

/// Integers exactly; other numbers by their `f64` value, whole ones as integers (`7.0` is `7`).
fn canonical_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    match n.as_f64() {
        // Below 2^53 a whole f64 is an exact integer.
        Some(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => (f as i64).to_string(),
        Some(f) if f.is_finite() => f.to_string(),
        _ => n.to_string(),
    }
}

impl Turn {
    pub fn is(&self, role: &str) -> bool {
        self.role == role
    }
}

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
        let mut open = Open::default();
        for (index, m) in msgs.iter().enumerate() {
            let f = Fields::of(m);
            let role = f.role.unwrap_or("");
            let text = content_text(f.content.unwrap_or(&Value::Null));
            let (tokens, latency_ms) = f.meta();
            match role {
                "assistant" => {
                    let reasoning = f
                        .reasoning
                        .iter()
                        .flatten()
                        .next()
                        .filter(|r| !r.trim().is_empty())
                        .map(|r| (*r).to_string());
                    let start = t.calls.len();
                    t.push_assistant(index, text, reasoning, f.tool_calls);
                    for c in start..t.calls.len() {
                        open.add(c, &t.calls[c]);
                    }
                }
                "tool" => {
                    let name = f.name.map(str::to_string);
                    let answers = open.answer(&t.calls, f.tool_call_id, name.as_deref());
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
                        error: f.error(),
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
                (u.tokens, u.latency_ms) = (tokens, latency_ms);
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
            // One pass over the call (and its `function`), not a hashed lookup per field.
            let (mut id, mut function, mut name, mut args) = (None, None, None, None);
            for (k, v) in c.as_object().into_iter().flatten() {
                match k.as_str() {
                    "id" => id = v.as_str(),
                    "function" if v.is_object() => function = Some(v),
                    "name" => name = Some(v),
                    "arguments" => args = Some(v),
                    _ => {}
                }
            }
            if let Some(f) = function {
                (name, args) = (None, None);
                for (k, v) in f.as_object().into_iter().flatten() {
                    match k.as_str() {
                        "name" => name = Some(v),
                        "arguments" => args = Some(v),
                        _ => {}
                    }
                }
            }
            let arguments_text = match args {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => "{}".to_string(),
                Some(v) => v.to_string(),
            };
            let arguments = match args {
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
                id: id.map(str::to_string),
                name: name.and_then(Value::as_str).unwrap_or("").to_string(),
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

/// The calls not answered yet while the messages are read, kept so that finding the call a
/// `tool` turn answers (see the module doc) costs no scan of every earlier call: a rollout of
/// thousands of calls is read in linear time.
#[derive(Default)]
struct Open {
    /// Unanswered calls with an id, per id, oldest first.
    by_id: HashMap<String, VecDeque<usize>>,
    /// Unanswered calls without an id, per name, oldest first.
    idless_by_name: HashMap<String, VecDeque<usize>>,
    /// Unanswered calls without an id.
    idless: BTreeSet<usize>,
}

impl Open {
    fn add(&mut self, i: usize, c: &Call) {
        if let Some(id) = &c.id {
            self.by_id.entry(id.clone()).or_default().push_back(i);
        } else {
            self.idless_by_name
                .entry(c.name.clone())
                .or_default()
                .push_back(i);
            self.idless.insert(i);
        }
    }

    /// The call a `tool` turn answers, taken off the open calls: by id when the turn has one,
    /// else the oldest open id-less call of its name, else the oldest open id-less call.
    fn answer(&mut self, calls: &[Call], id: Option<&str>, name: Option<&str>) -> Option<usize> {
        match (id, name) {
            (Some(id), _) => self.by_id.get_mut(id)?.pop_front(),
            (None, Some(n)) => {
                let c = self.idless_by_name.get_mut(n)?.pop_front()?;
                self.idless.remove(&c);
                Some(c)
            }
            (None, None) => {
                let c = self.idless.pop_first()?;
                // The oldest open id-less call is the oldest of its name too.
                if let Some(q) = self.idless_by_name.get_mut(&calls[c].name) {
                    q.pop_front();
                }
                Some(c)
            }
        }
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

/// The fields of one message the trajectory reads, found in one pass over the message's keys
/// (a message has a handful; looking each name up would hash it against every one).
#[derive(Default)]
struct Fields<'a> {
    role: Option<&'a str>,
    content: Option<&'a Value>,
    /// `reasoning_content`, `thinking`, `reasoning`, in that order of preference.
    reasoning: [Option<&'a str>; 3],
    tool_calls: Option<&'a Value>,
    name: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    is_error: Option<&'a Value>,
    error: Option<&'a Value>,
    status: Option<&'a str>,
    /// `tokens`, `num_tokens`, `completion_tokens`, then `usage.completion_tokens`.
    tokens: [Option<u64>; 4],
    /// `latency_ms`, `duration_ms` (milliseconds), `latency` (seconds).
    latency: [Option<f64>; 3],
}

impl<'a> Fields<'a> {
    fn of(m: &'a Value) -> Fields<'a> {
        let mut f = Fields::default();
        for (k, v) in m.as_object().into_iter().flatten() {
            match k.as_str() {
                "role" => f.role = v.as_str(),
                "content" => f.content = Some(v),
                "reasoning_content" => f.reasoning[0] = v.as_str(),
                "thinking" => f.reasoning[1] = v.as_str(),
                "reasoning" => f.reasoning[2] = v.as_str(),
                "tool_calls" => f.tool_calls = Some(v),
                "name" => f.name = v.as_str(),
                "tool_call_id" => f.tool_call_id = v.as_str(),
                "is_error" => f.is_error = Some(v),
                "error" => f.error = Some(v),
                "status" => f.status = v.as_str(),
                "tokens" => f.tokens[0] = v.as_u64(),
                "num_tokens" => f.tokens[1] = v.as_u64(),
                "completion_tokens" => f.tokens[2] = v.as_u64(),
                "usage" => f.tokens[3] = v.get("completion_tokens").and_then(Value::as_u64),
                "latency_ms" => f.latency[0] = v.as_f64(),
                "duration_ms" => f.latency[1] = v.as_f64(),
                "latency" => f.latency[2] = v.as_f64().map(|s| s * 1000.0),
                _ => {}
            }
        }
        f
    }

    /// The turn's recorded token count and latency in milliseconds (see [`Turn::tokens`]).
    fn meta(&self) -> (Option<u64>, Option<f64>) {
        let tokens = self.tokens.iter().flatten().next().copied();
        let latency = self
            .latency
            .iter()
            .flatten()
            .next()
            .copied()
            .filter(|x| x.is_finite() && *x >= 0.0);
        (tokens, latency)
    }

    /// The environment's own error flag on a tool turn.
    fn error(&self) -> bool {
        let flag = |v: Option<&Value>| match v {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => !s.trim().is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            _ => false,
        };
        flag(self.is_error) || flag(self.error) || self.status == Some("error")
    }
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
    fn identical_calls_have_one_canonical_form() {
        let t = traj(&json!([
            {"role": "assistant", "tool_calls": [
                {"name": "f", "arguments": "{\"a\": 1, \"b\": {\"y\": [1.0, \"x\"], \"x\": null}}"},
                {"name": "f", "arguments": {"b": {"x": null, "y": [1, "x"]}, "a": 1.0}},
                {"name": "f", "arguments": "{\"a\": \"1\", \"b\": {\"x\": null, \"y\": [1, \"x\"]}}"},
                {"name": "f", "arguments": " not json "},
                {"name": "f", "arguments": "{\"a\": 1"}]}
        ]));
        let c: Vec<String> = t.calls.iter().map(Call::canonical_arguments).collect();
        assert_eq!(c[0], r#"{"a":1,"b":{"x":null,"y":[1,"x"]}}"#);
        assert_eq!(
            c[0], c[1],
            "key order, whitespace and 1.0 against 1 do not count"
        );
        assert_ne!(c[0], c[2], "a string is not the number it spells");
        assert_eq!(c[3], "raw:not json");
        assert_eq!(
            c[4], r#"raw:{"a": 1"#,
            "broken JSON is text, never an object"
        );
        assert_eq!(
            canonical_json(&json!(12_345_678_901_234_567_890_u64)),
            "12345678901234567890"
        );
        assert_eq!(canonical_json(&json!(0.5)), "0.5");
    }

    #[test]
    fn pairing_mixes_ids_names_and_order_and_stays_linear() {
        let t = traj(&json!([
            {"role": "assistant", "tool_calls": [
                {"name": "a", "arguments": "{}"}, {"id": "x", "name": "b", "arguments": "{}"},
                {"name": "b", "arguments": "{}"}, {"name": "a", "arguments": "{}"},
                {"id": "x", "name": "c", "arguments": "{}"}]},
            {"role": "tool", "name": "a", "content": "1"},
            {"role": "tool", "content": "2"},
            {"role": "tool", "tool_call_id": "x", "content": "3"},
            {"role": "tool", "tool_call_id": "x", "content": "4"},
            {"role": "tool", "tool_call_id": "x", "content": "5"},
            {"role": "tool", "name": "b", "content": "6"},
            {"role": "tool", "content": "7"}
        ]));
        let results: Vec<Option<&str>> = t.calls.iter().map(|c| t.result_text(c)).collect();
        // By name: the first `a`; in order: the oldest id-less left (`b`, the third call); by id:
        // the two calls with id `x`, oldest first, then nothing; by name `b`: none is left.
        assert_eq!(
            results,
            [Some("1"), Some("3"), Some("2"), Some("7"), Some("4")]
        );
        assert_eq!(t.turns[5].answers, None);
        assert_eq!(t.turns[6].answers, None);

        let mut msgs = Vec::new();
        for i in 0..20_000 {
            msgs.push(json!({"role": "assistant", "tool_calls": [
                {"id": format!("c{i}"), "name": "f", "arguments": "{}"}, {"name": "g", "arguments": "{}"}]}));
            msgs.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "ok"}));
        }
        let started = std::time::Instant::now();
        let t = Trajectory::from_messages(&msgs);
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        assert_eq!(t.calls[39_998].result, Some(39_999));
        assert_eq!(t.calls[39_999].result, None);
    }

    /// The pairing rule of the module doc, written as the plain scan it describes.
    fn pairing_by_scan(msgs: &[Value]) -> Vec<Option<usize>> {
        // (id, name, answered) per call; the answer per tool turn.
        let mut calls: Vec<(Option<String>, String, bool)> = Vec::new();
        let mut answers = Vec::new();
        for m in msgs {
            let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
            match m["role"].as_str() {
                Some("assistant") => {
                    for c in m["tool_calls"].as_array().into_iter().flatten() {
                        calls.push((s_of(c, "id"), s_of(c, "name").unwrap_or_default(), false));
                    }
                }
                Some("tool") => {
                    let (id, name) = (s("tool_call_id"), s("name"));
                    let hit = calls.iter().position(|(cid, cname, done)| {
                        !done
                            && match (&id, &name) {
                                (Some(i), _) => cid.as_ref() == Some(i),
                                (None, Some(n)) => cid.is_none() && cname == n,
                                (None, None) => cid.is_none(),
                            }
                    });
                    if let Some(h) = hit {
                        calls[h].2 = true;
                    }
                    answers.push(hit);
                }
                _ => {}
            }
        }
        answers
    }

    fn s_of(v: &Value, k: &str) -> Option<String> {
        v.get(k).and_then(Value::as_str).map(str::to_string)
    }

    #[test]
    fn pairing_agrees_with_the_plain_scan_on_random_rollouts() {
        let mut x: u64 = 7;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % n
        };
        let ids = [None, Some("a"), Some("b"), Some("c")];
        let names = [None, Some("f"), Some("g")];
        for _ in 0..300 {
            let mut msgs = Vec::new();
            for _ in 0..next(12) {
                let (id, name) = (ids[next(4) as usize], names[next(3) as usize]);
                let mut m = serde_json::Map::new();
                if next(2) == 0 {
                    let calls: Vec<Value> = (0..next(3))
                        .map(|_| {
                            let mut c =
                                json!({"name": names[1 + next(2) as usize], "arguments": "{}"});
                            if let Some(i) = ids[next(4) as usize] {
                                c["id"] = json!(i);
                            }
                            c
                        })
                        .collect();
                    m.insert("role".into(), json!("assistant"));
                    m.insert("tool_calls".into(), Value::Array(calls));
                } else {
                    m.insert("role".into(), json!("tool"));
                    if let Some(i) = id {
                        m.insert("tool_call_id".into(), json!(i));
                    }
                    if let Some(n) = name {
                        m.insert("name".into(), json!(n));
                    }
                }
                msgs.push(Value::Object(m));
            }
            let t = Trajectory::from_messages(&msgs);
            let got: Vec<Option<usize>> = t
                .turns
                .iter()
                .filter(|u| u.is("tool"))
                .map(|u| u.answers)
                .collect();
            assert_eq!(
                got,
                pairing_by_scan(&msgs),
                "{}",
                Value::Array(msgs.clone())
            );
        }
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
