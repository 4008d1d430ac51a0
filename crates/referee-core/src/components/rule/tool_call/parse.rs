//! Where the policy's calls come from: the chat-completions `tool_calls` list, assistant
//! messages, or text in one of the common formats (Hermes/Qwen `<tool_call>` blocks, Llama 3.1
//! JSON, OpenAI `tool_calls`/`function_call` JSON). The rules are listed in the `//!` doc of
//! `tool_call.rs`.

use super::ast::{arguments, Call};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A text format the parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// `<tool_call>{"name": .., "arguments": {..}}</tool_call>`, one block per call (Hermes,
    /// Qwen2.5/3).
    Hermes,
    /// `{"name": .., "parameters": {..}}`, optionally after `<|python_tag|>`; several separated
    /// by `;` or in a list (Llama 3.1/3.3).
    Llama3,
    /// `{"tool_calls": [{"type": "function", "function": {"name", "arguments": "<json>"}}]}`,
    /// `{"function_call": {..}}`, or a list of tool calls (OpenAI).
    Openai,
}

pub const ALL: &[Format] = &[Format::Hermes, Format::Llama3, Format::Openai];

/// The calls found: each either parsed, or malformed (with why).
#[derive(Debug, Default)]
pub struct Found {
    pub calls: Vec<Result<Call, String>>,
    /// Which format they were read in (for notes).
    pub via: Option<&'static str>,
    /// A thinking section was removed from the text first (for notes).
    pub stripped: bool,
}

impl Found {
    fn push_all(&mut self, other: Found) {
        self.calls.extend(other.calls);
        if self.via.is_none() {
            self.via = other.via;
        }
    }
}

/// One entry of a `tool_calls` list (`{"function": {"name", "arguments"}}`), or a bare
/// `{"name", "arguments"}`.
fn tool_call_entry(v: &Value) -> Result<Call, String> {
    let f = v.get("function").filter(|f| f.is_object()).unwrap_or(v);
    call_object(f, &["arguments"])
}

/// `{"name": .., <args key>: ..}` with a non-empty string name and object (or JSON-string)
/// arguments.
fn call_object(v: &Value, arg_keys: &[&str]) -> Result<Call, String> {
    let Some(o) = v.as_object() else {
        return Err(format!(
            "a call must be an object, found {}",
            crate::compile::kind_of(v)
        ));
    };
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .ok_or("a call needs a non-empty string `name`")?;
    let args = arg_keys.iter().find_map(|k| o.get(*k));
    let args = arguments(args).map_err(|e| format!("`{name}`: {e}"))?;
    Ok(Call {
        name: name.to_string(),
        args,
    })
}

/// `sample.output_tools`: a list of tool calls (or one).
pub fn from_tools(v: &Value) -> Found {
    let calls = match v {
        Value::Array(a) => a.iter().map(tool_call_entry).collect(),
        Value::Null => Vec::new(),
        other => vec![tool_call_entry(other)],
    };
    Found {
        calls,
        via: Some("output_tools"),
        stripped: false,
    }
}

/// The calls of every assistant message, in order: its `tool_calls` (or legacy
/// `function_call`), else calls written in its text.
pub fn from_messages(
    v: &Value,
    formats: &[Format],
    reasoning: crate::text::reasoning::Reasoning,
) -> Found {
    let mut out = Found::default();
    for m in v.as_array().into_iter().flatten() {
        if m.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        if let Some(t) = m.get("tool_calls").filter(|t| !t.is_null()) {
            out.push_all(from_tools(t));
        } else if let Some(f) = m.get("function_call").filter(|f| f.is_object()) {
            out.push_all(from_tools(&Value::Array(vec![f.clone()])));
        } else if let Some(text) =
            crate::sample::last_assistant_text(&Value::Array(vec![m.clone()]))
        {
            out.push_all(from_text(reasoning.apply(&text).text, formats));
        }
    }
    out
}

/// Calls written in text (the answer part, reasoning already removed).
pub fn from_text(text: &str, formats: &[Format]) -> Found {
    if formats.contains(&Format::Hermes) && text.contains("<tool_call>") {
        let f = hermes(text);
        if !f.calls.is_empty() {
            return f;
        }
    }
    json_answer(text, formats)
}

/// Byte ranges of fenced code blocks (``` … ```); an unclosed fence runs to the end.
fn fences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            match start.take() {
                None => start = Some(pos),
                Some(s) => out.push((s, pos + line.len())),
            }
        }
        pos += line.len();
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// `<tool_call>` blocks outside code fences: a block shown in a fence is an example, not a
/// call. A block left open at the end of the text runs to the end (a generation stopped on
/// `</tool_call>`).
fn hermes(text: &str) -> Found {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let fenced = fences(text);
    let mut out = Found {
        via: Some("hermes"),
        ..Found::default()
    };
    let mut rest = 0;
    while let Some(i) = text[rest..].find(OPEN) {
        let start = rest + i + OPEN.len();
        let (body, next) = match text[start..].find(CLOSE) {
            Some(j) => (&text[start..start + j], start + j + CLOSE.len()),
            None => (&text[start..], text.len()),
        };
        rest = next;
        if fenced
            .iter()
            .any(|(a, b)| (*a..*b).contains(&(start - OPEN.len())))
        {
            continue;
        }
        match serde_json::from_str::<Value>(body.trim()) {
            Ok(Value::Array(items)) if !items.is_empty() => out.calls.extend(
                items
                    .iter()
                    .map(|x| call_object(x, &["arguments", "parameters"])),
            ),
            Ok(v) => out
                .calls
                .push(call_object(&v, &["arguments", "parameters"])),
            Err(e) => out
                .calls
                .push(Err(format!("<tool_call> block is not valid JSON: {e}"))),
        }
    }
    out
}

/// A whole answer that is a JSON call (Llama 3.1, OpenAI), possibly after `<|python_tag|>` or
/// inside one code fence that is the entire answer. Prose around the JSON makes it no call.
fn json_answer(text: &str, formats: &[Format]) -> Found {
    let want_llama = formats.contains(&Format::Llama3);
    let want_openai = formats.contains(&Format::Openai);
    if !want_llama && !want_openai {
        return Found::default();
    }
    let mut t = text.trim();
    let tagged = t.starts_with("<|python_tag|>");
    t = t.trim_start_matches("<|python_tag|>").trim();
    for end in ["<|eom_id|>", "<|eot_id|>"] {
        t = t.trim_end_matches(end).trim_end();
    }
    if let Some(inner) = whole_fence(t) {
        t = inner;
    }
    if !(t.starts_with('{') || t.starts_with('[')) {
        return if tagged && want_llama {
            Found {
                calls: vec![Err("<|python_tag|> is not followed by a JSON call".into())],
                via: Some("llama3"),
                stripped: false,
            }
        } else {
            Found::default()
        };
    }
    // One JSON value, or several separated by `;` (Llama 3.1's parallel form).
    let mut values = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(t).into_iter::<Value>();
    loop {
        match stream.next() {
            Some(Ok(v)) => values.push(v),
            Some(Err(e)) => {
                return Found {
                    calls: vec![Err(format!("the answer is not valid JSON: {e}"))],
                    via: Some("json"),
                    stripped: false,
                }
            }
            None => break,
        }
        let off = stream.byte_offset();
        let after = t[off..].trim_start();
        if let Some(r) = after.strip_prefix(';') {
            let skip = t.len() - r.len();
            if r.trim().is_empty() {
                break;
            }
            stream = serde_json::Deserializer::from_str(&t[skip..]).into_iter::<Value>();
            t = &t[skip..];
        } else if !after.is_empty() {
            // Two JSON values without `;`, or JSON followed by prose: not a call.
            return Found {
                calls: vec![Err("text after the JSON call".into())],
                via: Some("json"),
                stripped: false,
            };
        }
    }
    let mut out = Found::default();
    for v in &values {
        let f = json_value(v, want_llama, want_openai);
        if f.calls.is_empty() {
            // JSON that is not a call (`{"answer": 4}`): no call at all.
            return Found::default();
        }
        out.push_all(f);
    }
    out
}

/// The inside of a code fence that is the entire text.
fn whole_fence(t: &str) -> Option<&str> {
    let body = t.strip_prefix("```")?.strip_suffix("```")?;
    let nl = body.find('\n')?;
    let lang = body[..nl].trim();
    if !lang.is_empty() && !lang.chars().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let inner = &body[nl + 1..];
    (!inner.contains("```")).then_some(inner.trim())
}

fn json_value(v: &Value, llama: bool, openai: bool) -> Found {
    match v {
        Value::Array(items) => {
            let mut out = Found::default();
            for x in items {
                let f = json_value(x, llama, openai);
                if f.calls.is_empty() {
                    return Found::default();
                }
                out.push_all(f);
            }
            out
        }
        Value::Object(o) if openai && o.get("tool_calls").is_some_and(Value::is_array) => Found {
            calls: o["tool_calls"]
                .as_array()
                .expect("checked")
                .iter()
                .map(tool_call_entry)
                .collect(),
            via: Some("openai"),
            stripped: false,
        },
        Value::Object(o) if openai && o.get("function_call").is_some_and(Value::is_object) => {
            Found {
                calls: vec![tool_call_entry(&o["function_call"])],
                via: Some("openai"),
                stripped: false,
            }
        }
        Value::Object(o) if openai && o.get("function").is_some_and(Value::is_object) => Found {
            calls: vec![tool_call_entry(v)],
            via: Some("openai"),
            stripped: false,
        },
        Value::Object(o)
            if llama
                && o.contains_key("name")
                && (o.contains_key("parameters") || o.contains_key("arguments")) =>
        {
            Found {
                calls: vec![call_object(v, &["parameters", "arguments"])],
                via: Some("llama3"),
                stripped: false,
            }
        }
        _ => Found::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(f: &Found) -> Vec<String> {
        f.calls
            .iter()
            .map(|c| {
                c.as_ref()
                    .map_or_else(|e| format!("ERR {e}"), |c| c.name.clone())
            })
            .collect()
    }

    #[test]
    fn hermes_blocks() {
        let t = "Sure.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(names(&from_text(t, ALL)), ["a", "b"]);
        let open = "<tool_call>{\"name\": \"a\", \"arguments\": {}}";
        assert_eq!(names(&from_text(open, ALL)), ["a"]);
        let bad = "<tool_call>{\"name\": \"a\", \"arguments\": {</tool_call>";
        assert!(from_text(bad, ALL).calls[0].is_err());
        let fenced =
            "Example:\n```\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n```\n";
        assert!(from_text(fenced, ALL).calls.is_empty());
    }

    #[test]
    fn llama_and_openai() {
        let l = "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}<|eom_id|>";
        assert_eq!(names(&from_text(l, ALL)), ["a", "b"]);
        let o = r#"{"tool_calls": [{"id": "1", "type": "function", "function": {"name": "a", "arguments": "{\"x\": 1}"}}]}"#;
        let f = from_text(o, ALL);
        assert_eq!(names(&f), ["a"]);
        assert_eq!(f.calls[0].as_ref().unwrap().args["x"], json!(1));
        assert!(from_text(o, &[Format::Llama3]).calls.is_empty());
        assert!(
            from_text("Here: {\"name\": \"a\", \"parameters\": {}}", ALL)
                .calls
                .is_empty()
        );
        assert!(from_text("{\"answer\": 4}", ALL).calls.is_empty());
        assert!(from_text("{\"name\": \"a\", \"parameters\": {}} and more", ALL).calls[0].is_err());
        let fence = "```json\n{\"name\": \"a\", \"parameters\": {}}\n```";
        assert_eq!(names(&from_text(fence, ALL)), ["a"]);
    }

    #[test]
    fn tools_shape() {
        let v = json!([{"type": "function", "function": {"name": "a", "arguments": "{\"x\": [1]}"}},
                       {"function": {"name": "b", "arguments": "{oops"}}]);
        let f = from_tools(&v);
        assert!(f.calls[0].is_ok());
        assert!(f.calls[1].is_err());
    }
}
