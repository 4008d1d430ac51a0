//! Templates in OpenAI's grader syntax: `{{item.answer}}`, `{{sample.output_text}}`,
//! `{{sample.output_json.a}}`, `{{sample.output_tools[0].function.name}}`.
//!
//! Beyond OpenAI's syntax, for trajectories: an index counts from the end when negative
//! (`{{sample.messages[-1].content}}`); `[key=value]` keeps the elements of a list whose `key`
//! is `value` (`{{sample.messages[role=tool][-1].content}}`: the last tool result); and
//! `[tool=NAME]` keeps the `tool` turns that answer a call to the tool `NAME`, paired as the
//! trajectory pairs them (`crate::trajectory`: by `tool_call_id`, else by `name` among calls
//! without ids; one answer per call). `sample.state` is the
//! environment's final state; `sample.transcript` the whole rollout as text for a judge (turns,
//! calls and results under headers the policy cannot forge, truncated as
//! `crate::trajectory::transcript` states). `sample.reasoning` is the output's thinking section
//! without the answer after it (a likelihood reward's context).
//!
//! Parsed at compile time into literal and variable parts, so an unknown namespace or sample
//! field is a compile error and rendering never re-parses. Item fields are free-form, so a
//! missing one can only be found per sample: it is a `missing_field` failure, never "".

use crate::node::ScoreCtx;
use crate::outcome::Outcome;
use crate::sample::Sample;
use serde_json::Value;
use std::borrow::Cow;

/// The fields of the `sample` namespace. Anything else under `sample.` is a compile error.
pub const SAMPLE_FIELDS: &[&str] = &[
    "output_text",
    "output_json",
    "output_tools",
    "messages",
    "choices",
    "state",
    "transcript",
    "reasoning",
];

/// Why a template could not be rendered for a sample.
///
/// Who is at fault decides what it becomes. When the *policy's* output lacks what the template
/// reads (not JSON, a missing key, a list where a value belongs, no tool call), the policy
/// failed the check: the node scores 0 with `ok` status and a note. Reporting it as an error
/// would be a reward hack of its own, since trainers drop errored rows and malformed output
/// would then escape its penalty. When the *dataset* lacks it (a missing item field), nobody
/// can score the row: that is an error with reason `missing_field`.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub policy: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Miss {
    /// The node's outcome for this miss (see the type's doc).
    pub fn outcome(self, cx: &mut ScoreCtx) -> Outcome {
        if self.policy {
            let m = self.message;
            cx.note(|| format!("scored 0: {m}"));
            Outcome::ok(0.0)
        } else {
            Outcome::error(self.reason, self.message)
        }
    }
}

#[derive(Debug, Clone)]
pub struct Template {
    src: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    Var(VarPath),
}

#[derive(Debug, Clone)]
struct VarPath {
    src: String,
    root: Root,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Root {
    Item,
    OutputText,
    OutputJson,
    OutputTools,
    Messages,
    Choices,
    State,
    /// The trajectory as text for a judge ([`crate::trajectory`]'s transcript).
    Transcript,
    /// The output's reasoning section, without its answer
    /// ([`crate::text::reasoning::reasoning_section`]).
    Reasoning,
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    /// From the end when negative.
    Index(i64),
    /// The elements of a list whose field `.0` is `.1` (as text).
    Where(String, String),
    /// The `tool` turns answering a call to this tool.
    Tool(String),
}

impl Template {
    /// Parses a template, collecting every problem in it.
    pub fn parse(src: &str) -> Result<Template, Vec<String>> {
        let mut parts = Vec::new();
        let mut errors = Vec::new();
        let mut rest = src;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(Part::Lit(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                errors.push(format!("unclosed `{{{{` in template `{src}`"));
                rest = "";
                break;
            };
            let expr = after[..end].trim();
            match parse_var(expr) {
                Ok(v) => parts.push(Part::Var(v)),
                Err(e) => errors.push(e),
            }
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Lit(rest.to_string()));
        }
        if errors.is_empty() {
            Ok(Template {
                src: src.to_string(),
                parts,
            })
        } else {
            Err(errors)
        }
    }

    /// The template `{{sample.output_text}}`, the default `input` of every grader.
    pub fn output_text() -> Template {
        Template::parse("{{sample.output_text}}").expect("valid")
    }

    pub fn source(&self) -> &str {
        &self.src
    }

    /// `Some(key)` when the template is exactly `{{item.key}}`.
    pub fn item_field(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Var(VarPath {
                root: Root::Item,
                steps,
                ..
            })] => match steps.as_slice() {
                [Step::Key(k)] => Some(k),
                _ => None,
            },
            _ => None,
        }
    }

    /// True when the template has no variables at all.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// Renders to text. A template that is exactly one string variable borrows it; values that
    /// are not strings render as compact JSON (numbers as written, e.g. `72`).
    pub fn render<'a>(&'a self, s: &'a Sample) -> Result<Cow<'a, str>, Miss> {
        match self.parts.as_slice() {
            [] => Ok(Cow::Borrowed("")),
            [Part::Lit(l)] => Ok(Cow::Borrowed(l)),
            [Part::Var(v)] => v.render(s),
            parts => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        Part::Lit(l) => out.push_str(l),
                        Part::Var(v) => out.push_str(&v.render(s)?),
                    }
                }
                Ok(Cow::Owned(out))
            }
        }
    }

    /// Renders to text, passing each variable's text through `wrap` with whether it comes from
    /// the policy's output (`sample.*`) rather than the dataset (`item.*`). Model graders use it
    /// to delimit (and strip the reasoning of) what the policy wrote inside their prompts.
    pub fn render_with(
        &self,
        s: &Sample,
        wrap: &dyn Fn(bool, &str) -> String,
    ) -> Result<String, Miss> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(l) => out.push_str(l),
                Part::Var(v) => out.push_str(&wrap(v.root != Root::Item, &v.render(s)?)),
            }
        }
        Ok(out)
    }

    /// The template's own text, variables left out (a grader's instructions, for the echo check).
    pub fn literal_text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Lit(l) => Some(l.as_str()),
                Part::Var(_) => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether some variable reads the policy's output (`sample.*`).
    pub fn reads_sample(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Var(v) if v.root != Root::Item))
    }

    /// Renders to a JSON value: a template that is exactly one variable yields that value
    /// (so `{{item.keywords}}` can be a list); anything else yields the rendered string.
    pub fn render_value<'a>(&'a self, s: &'a Sample) -> Result<Cow<'a, Value>, Miss> {
        if let [Part::Var(v)] = self.parts.as_slice() {
            return v.resolve(s);
        }
        Ok(Cow::Owned(Value::String(self.render(s)?.into_owned())))
    }
}

fn parse_var(expr: &str) -> Result<VarPath, String> {
    let bad = |why: &str| format!("template variable `{{{{{expr}}}}}`: {why}");
    let mut segs = Vec::new();
    // Split into dotted keys and [n] indexes.
    let mut cur = String::new();
    let mut chars = expr.chars().peekable();
    let mut raw_steps: Vec<Step> = Vec::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if cur.is_empty() && !matches!(raw_steps.last(), Some(Step::Index(_))) {
                    return Err(bad("empty path segment"));
                }
                if !cur.is_empty() {
                    raw_steps.push(Step::Key(std::mem::take(&mut cur)));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    raw_steps.push(Step::Key(std::mem::take(&mut cur)));
                }
                let mut num = String::new();
                loop {
                    match chars.next() {
                        Some(']') => break,
                        Some(d) => num.push(d),
                        None => return Err(bad("unclosed `[`")),
                    }
                }
                let num = num.trim();
                if let Some((k, v)) = num.split_once('=') {
                    let (k, v) = (k.trim(), v.trim());
                    if k.is_empty() || v.is_empty() {
                        return Err(bad(&format!("filter `[{num}]` needs `[key=value]`")));
                    }
                    raw_steps.push(if k == "tool" {
                        Step::Tool(v.to_string())
                    } else {
                        Step::Where(k.to_string(), v.to_string())
                    });
                } else {
                    let n = num.parse::<i64>().map_err(|_| {
                        bad(&format!(
                            "`[{num}]` is neither an index (`[0]`, `[-1]`) nor a filter (`[role=tool]`, `[tool=NAME]`)"
                        ))
                    })?;
                    raw_steps.push(Step::Index(n));
                }
            }
            c if c.is_alphanumeric() || c == '_' || c == '-' => cur.push(c),
            c => return Err(bad(&format!("unexpected character `{c}`"))),
        }
    }
    if !cur.is_empty() {
        raw_steps.push(Step::Key(cur));
    }
    if expr.is_empty() {
        return Err(bad("empty variable"));
    }
    let mut it = raw_steps.into_iter();
    let Some(Step::Key(ns)) = it.next() else {
        return Err(bad("must start with `item` or `sample`"));
    };
    let root = match ns.as_str() {
        "item" => Root::Item,
        "sample" => {
            let Some(Step::Key(field)) = it.next() else {
                return Err(bad(&format!(
                    "`sample` needs a field: one of {}",
                    SAMPLE_FIELDS.join(", ")
                )));
            };
            match field.as_str() {
                "output_text" => Root::OutputText,
                "output_json" => Root::OutputJson,
                "output_tools" => Root::OutputTools,
                "messages" => Root::Messages,
                "choices" => Root::Choices,
                "state" => Root::State,
                "transcript" => Root::Transcript,
                "reasoning" => Root::Reasoning,
                other => {
                    return Err(bad(&format!(
                        "unknown sample field `{other}`; expected one of {}{}",
                        SAMPLE_FIELDS.join(", "),
                        crate::compile::did_you_mean(other, SAMPLE_FIELDS)
                    )))
                }
            }
        }
        other => {
            return Err(bad(&format!(
                "unknown namespace `{other}`; expected `item` or `sample`{}",
                crate::compile::did_you_mean(other, &["item", "sample"])
            )))
        }
    };
    segs.extend(it);
    for w in segs.windows(2) {
        if let (Step::Where(..) | Step::Tool(_), Step::Key(k)) = (&w[0], &w[1]) {
            return Err(bad(&format!(
                "`.{k}` after a filter: a filter keeps a list, pick one element first (`[0]`, `[-1]`)"
            )));
        }
    }
    if matches!(root, Root::OutputText | Root::Transcript | Root::Reasoning) && !segs.is_empty() {
        return Err(bad(
            "`sample.output_text`, `sample.reasoning` and `sample.transcript` are strings and have no fields",
        ));
    }
    Ok(VarPath {
        src: format!("{{{{{expr}}}}}"),
        root,
        steps: segs,
    })
}

impl VarPath {
    fn resolve<'a>(&self, s: &'a Sample) -> Result<Cow<'a, Value>, Miss> {
        let base: &Value = match self.root {
            Root::Item => &s.item,
            Root::OutputText => return Ok(Cow::Owned(Value::String(s.output_text.clone()))),
            Root::Transcript => return Ok(Cow::Owned(Value::String(s.trajectory().transcript()))),
            Root::Reasoning => {
                let r = crate::text::reasoning::reasoning_section(&s.output_text);
                return Ok(Cow::Owned(Value::String(r.to_string())));
            }
            Root::OutputJson => s.output_json().ok_or_else(|| Miss {
                policy: true,
                reason: "output_not_json",
                message: format!("{}: the output is not valid JSON", self.src),
            })?,
            Root::OutputTools => s
                .output_tools
                .as_ref()
                .ok_or_else(|| self.missing("sample has no output_tools"))?,
            Root::Messages => s
                .messages
                .as_ref()
                .ok_or_else(|| self.missing("sample has no messages"))?,
            Root::Choices => s
                .choices
                .as_ref()
                .ok_or_else(|| self.missing("sample has no choices"))?,
            Root::State => s
                .state
                .as_ref()
                .ok_or_else(|| self.missing("sample has no state"))?,
        };
        // A filter turns the value into a selection of a list's elements; an index picks one.
        let mut sel: Option<Vec<&Value>> = None;
        let mut v = base;
        for step in &self.steps {
            let what = |w: String| self.step_missing(&w);
            match step {
                Step::Key(k) => {
                    if sel.is_some() {
                        return Err(what(format!(
                            "`.{k}` on a filtered list; pick one with [n]"
                        )));
                    }
                    v = v
                        .get(k.as_str())
                        .ok_or_else(|| what(format!("no field `{k}`")))?;
                }
                Step::Index(i) => {
                    let items: Vec<&Value> = match sel.take() {
                        Some(items) => items,
                        None => v
                            .as_array()
                            .ok_or_else(|| what(format!("[{i}] on a value that is not a list")))?
                            .iter()
                            .collect(),
                    };
                    let at = if *i < 0 {
                        items.len().checked_sub(i.unsigned_abs() as usize)
                    } else {
                        Some(*i as usize)
                    };
                    v = at
                        .and_then(|k| items.get(k).copied())
                        .ok_or_else(|| what(format!("no element [{i}] of {}", items.len())))?;
                }
                Step::Where(k, want) => {
                    let items = self.list(v, sel.take(), step)?;
                    sel = Some(
                        items
                            .into_iter()
                            .filter(|e| e.get(k.as_str()).is_some_and(|x| value_text(x) == *want))
                            .collect(),
                    );
                }
                Step::Tool(name) => {
                    let items = self.list(v, sel.take(), step)?;
                    sel = Some(tool_results(s, v, items, name));
                }
            }
        }
        match sel {
            Some(items) => Ok(Cow::Owned(Value::Array(
                items.into_iter().cloned().collect(),
            ))),
            None => Ok(Cow::Borrowed(v)),
        }
    }

    /// The list a filter applies to: the current selection, or the value itself.
    fn list<'a>(
        &self,
        v: &'a Value,
        sel: Option<Vec<&'a Value>>,
        step: &Step,
    ) -> Result<Vec<&'a Value>, Miss> {
        match sel {
            Some(items) => Ok(items),
            None => Ok(v
                .as_array()
                .ok_or_else(|| {
                    let f = match step {
                        Step::Tool(n) => format!("[tool={n}]"),
                        Step::Where(k, v) => format!("[{k}={v}]"),
                        _ => "a filter".to_string(),
                    };
                    self.missing(&format!("{f} on a value that is not a list"))
                })?
                .iter()
                .collect()),
        }
    }

    fn render<'a>(&self, s: &'a Sample) -> Result<Cow<'a, str>, Miss> {
        if self.root == Root::OutputText {
            return Ok(Cow::Borrowed(&s.output_text));
        }
        if self.root == Root::Reasoning {
            return Ok(Cow::Borrowed(crate::text::reasoning::reasoning_section(
                &s.output_text,
            )));
        }
        match self.resolve(s)? {
            Cow::Borrowed(Value::String(t)) => Ok(Cow::Borrowed(t)),
            Cow::Borrowed(Value::Null) | Cow::Owned(Value::Null) => {
                Err(self.missing("value is null"))
            }
            // A list or object where the policy should have written a value is a wrong answer,
            // not text to compare (`{"name": ["Ann"]}` must not fuzzy-match "Ann").
            Cow::Borrowed(Value::Array(_) | Value::Object(_)) if self.root != Root::Item => {
                Err(Miss {
                    policy: true,
                    reason: "wrong_type",
                    message: format!("{} is a list or object, not a value", self.src),
                })
            }
            v => Ok(Cow::Owned(value_text(&v))),
        }
    }

    /// A step that finds nothing. Inside a trajectory or the final state, that is what the
    /// policy did not do (no call to the tool, no booking made): a miss that scores 0, never an
    /// error a trainer would drop. Elsewhere, as [`VarPath::missing`].
    fn step_missing(&self, why: &str) -> Miss {
        if matches!(self.root, Root::Messages | Root::State) {
            return Miss {
                policy: true,
                reason: "missing_output_field",
                message: format!("{}: {why}", self.src),
            };
        }
        self.missing(why)
    }

    fn missing(&self, why: &str) -> Miss {
        // `messages`, `choices` and `state` come from the rollout's record, not from text the
        // policy wrote.
        let dataset = matches!(
            self.root,
            Root::Item | Root::Messages | Root::Choices | Root::State
        );
        Miss {
            policy: !dataset,
            reason: if dataset {
                "missing_field"
            } else {
                "missing_output_field"
            },
            message: format!("{}: {why}", self.src),
        }
    }
}

/// Renders a grader's `input` and `reference`. The reference goes first: when the dataset row
/// is broken nobody can score it, whatever the policy wrote, so that error wins over a miss.
pub fn render_pair<'a>(
    input: &'a Template,
    reference: &'a Template,
    s: &'a Sample,
) -> Result<(Cow<'a, str>, Cow<'a, str>), Miss> {
    let r = reference.render(s)?;
    Ok((input.render(s)?, r))
}

/// The `tool` turns among `items` that answer a call to `name`, as the trajectory pairs them
/// ([`crate::trajectory`]): by `tool_call_id` to an earlier, unanswered call (one call, one
/// answer), or, for a turn without an id, by its `name` among id-less calls. A tool turn that
/// answers no call is no tool's result, whatever `name` it gives itself.
fn tool_results<'a>(
    s: &Sample,
    all: &'a Value,
    items: Vec<&'a Value>,
    name: &str,
) -> Vec<&'a Value> {
    let Some(msgs) = all.as_array() else {
        return Vec::new();
    };
    let own;
    let t = match &s.messages {
        Some(m) if std::ptr::eq(m, all) => s.trajectory(),
        _ => {
            own = crate::trajectory::Trajectory::from_messages(msgs);
            &own
        }
    };
    let answering: Vec<*const Value> = t
        .turns
        .iter()
        .filter(|u| u.is("tool") && u.answers.is_some_and(|c| t.calls[c].name == name))
        .filter_map(|u| msgs.get(u.index).map(std::ptr::from_ref))
        .collect();
    items
        .into_iter()
        .filter(|m| answering.contains(&std::ptr::from_ref(*m)))
        .collect()
}

/// A JSON value as text: strings verbatim, everything else as compact JSON.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Sample {
        let mut s = Sample::new(
            r#"{"email": "a@b.c"}"#,
            json!({"answer": 72, "name": "Ann", "list": ["x", "y"]}),
        );
        s.output_tools = Some(json!([{"function": {"name": "get_weather", "arguments": "{}"}}]));
        s
    }

    #[test]
    fn renders_all_shapes() {
        let s = sample();
        let r = |t: &str| Template::parse(t).unwrap().render(&s).unwrap().into_owned();
        assert_eq!(r("{{item.answer}}"), "72");
        assert_eq!(r("Hi {{ item.name }}!"), "Hi Ann!");
        assert_eq!(r("{{item.list[1]}}"), "y");
        assert_eq!(r("{{sample.output_json.email}}"), "a@b.c");
        assert_eq!(r("{{sample.output_tools[0].function.name}}"), "get_weather");
        assert_eq!(r("{{sample.output_text}}"), r#"{"email": "a@b.c"}"#);
        assert_eq!(r("plain"), "plain");
    }

    #[test]
    fn value_of_single_var() {
        let s = sample();
        let t = Template::parse("{{item.list}}").unwrap();
        assert_eq!(*t.render_value(&s).unwrap(), json!(["x", "y"]));
    }

    #[test]
    fn missing_item_field_is_failure_not_empty() {
        let s = sample();
        let t = Template::parse("{{item.solution}}").unwrap();
        let e = t.render(&s).unwrap_err();
        assert_eq!(e.reason, "missing_field");
        assert!(!e.policy);
        let t = Template::parse("{{sample.output_json.nope}}").unwrap();
        assert!(
            t.render(&s).unwrap_err().policy,
            "a key the policy left out is the policy's miss"
        );
        let t = Template::parse("{{item.list[5]}}").unwrap();
        assert!(t.render(&s).is_err());
    }

    fn trajectory() -> Sample {
        let mut s = Sample::new("Booked.", json!({}));
        s.messages = Some(json!([
            {"role": "user", "content": "Book a table"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "book", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "3 tables"},
            {"role": "tool", "tool_call_id": "c2", "content": "booked #7"},
            {"role": "assistant", "content": "Booked."}
        ]));
        s.state = Some(json!({"bookings": [{"table": 7}]}));
        s
    }

    #[test]
    fn trajectory_turns_are_selected_by_position_role_and_tool() {
        let s = trajectory();
        let r = |t: &str| Template::parse(t).unwrap().render(&s).map(Cow::into_owned);
        assert_eq!(r("{{sample.messages[-1].content}}").unwrap(), "Booked.");
        assert_eq!(
            r("{{sample.messages[role=tool][-1].content}}").unwrap(),
            "booked #7"
        );
        assert_eq!(
            r("{{sample.messages[role=tool][0].content}}").unwrap(),
            "3 tables"
        );
        assert_eq!(
            r("{{sample.messages[tool=search][-1].content}}").unwrap(),
            "3 tables"
        );
        assert_eq!(r("{{sample.state.bookings[0].table}}").unwrap(), "7");
        // A selection renders as the list of its turns.
        let all = Template::parse("{{sample.messages[role=assistant]}}").unwrap();
        assert_eq!(all.render_value(&s).unwrap().as_array().unwrap().len(), 2);
        // No such turn: the policy did not make the call, a miss that scores 0.
        let e = r("{{sample.messages[tool=cancel][-1].content}}").unwrap_err();
        assert!(e.policy, "{e:?}");
        let e = r("{{sample.messages[-9].content}}").unwrap_err();
        assert!(e.message.contains("no element [-9] of 5"), "{}", e.message);
        // No state recorded at all: nobody can score from it.
        let e = Template::parse("{{sample.state}}")
            .unwrap()
            .render(&Sample::new("x", json!({})))
            .unwrap_err();
        assert_eq!(e.reason, "missing_field");
        assert!(!e.policy);
    }

    #[test]
    fn a_tool_filter_pairs_results_as_the_trajectory_does() {
        let mut s = Sample::new("Booked.", json!({}));
        s.messages = Some(json!([
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "taken"},
            {"role": "tool", "tool_call_id": "c1", "content": "booked #7"},
            {"role": "tool", "name": "book", "content": "booked #8"}
        ]));
        let r = |t: &str| Template::parse(t).unwrap().render(&s).map(Cow::into_owned);
        // One call, one answer: a second turn with its id, or a turn that only names the
        // tool, answers nothing.
        assert_eq!(
            r("{{sample.messages[tool=book][-1].content}}").unwrap(),
            "taken"
        );
        let all = Template::parse("{{sample.messages[tool=book]}}").unwrap();
        assert_eq!(all.render_value(&s).unwrap().as_array().unwrap().len(), 1);
    }

    #[test]
    fn compile_errors() {
        for bad in [
            "{{foo.bar}}",
            "{{sample.output}}",
            "{{sample}}",
            "{{item.a[x]}}",
            "{{item.a[=x]}}",
            "{{item.a[role=]}}",
            "{{sample.messages[role=tool].content}}",
            "{{item.a",
            "{{}}",
            "{{sample.output_text.x}}",
            "{{item..a}}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        let errs = Template::parse("{{foo.a}} {{sample.outptu_text}}").unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(
            errs[1].contains("did you mean `output_text`"),
            "{}",
            errs[1]
        );
    }
}
