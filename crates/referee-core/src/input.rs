//! Input rows → samples. Real datasets are not in Referee's shape, so the common ones are
//! mapped here, once, for every shell (CLI, server, Python):
//!
//! - `referee` / `openai`: `{"id", "group", "item": {...}, "sample": {"output_text", "messages",
//!   "output_tools", "output_json", "choices", "state"}}`; OpenAI's run-endpoint form with a
//!   `model_sample` string instead of `sample` is accepted too.
//! - `trl`: TRL dataset rows plus the completion: `prompt` and `completion` as text or chat
//!   messages; every other column (`solution`, `answer`, ...) goes into `item` under its name.
//! - `verl`: verl parquet rows plus the response: `data_source`, `prompt`, `ability`,
//!   `reward_model.ground_truth` (exposed as `item.ground_truth`), `extra_info` (kept as
//!   `item.extra_info`, with verl's `num_turns` in it), group from `uid`; the response is read
//!   from `response` (or the first of `responses`, `solution_str`, `completion`, `output`
//!   present). An agent's trajectory rides in `extra_info` (verl merges its agent loop's extra
//!   fields there): `extra_info.messages` becomes `sample.messages`, and then the graded
//!   output is its last assistant turn (the decoded response also holds every tool result);
//!   `extra_info.state` becomes `sample.state`.
//! - `openrlhf`: OpenRLHF's reward rows `{"query", "prompt", "label"}`: the response is the query
//!   after its prompt, found also when the prompt was cut from the left ([`openrlhf`]); every
//!   field but `query` goes into `item` (`{{item.label}}`, `{{item.prompt}}`). An agent's episode
//!   adds `messages` and `state` (`sample.messages`, `sample.state`); with `messages` the query
//!   may be left out (then pass `--format openrlhf`: `auto` knows these rows by their query),
//!   and the graded output is the last assistant turn.
//!
//! The completion's tokens (`completion_ids` or `token_offsets`, for the token spans of step
//! rewards, [`crate::steps::tokens`]) are read from `sample` in referee rows and from the top
//! level in the others, and never reach `item`; so are the trainer's own logprobs of a
//! likelihood reward's target (`target_logprobs`, `baseline_logprobs`).
//!
//! A trajectory's `messages` and `state` leave `item` when they become the sample's: they are
//! what the policy did, and `item` is what model graders quote as trusted dataset text.
//!
//! Chat messages, in any format, are read by [`assistant_output`]: reasoning fields and tool
//! calls as the trainers write them.
//!
//! `auto` picks per row: `sample`/`model_sample` → openai, `reward_model`/`data_source` → verl,
//! `completion` → trl, `query` → openrlhf.

pub mod openrlhf;

use crate::digest::Digest;
use crate::sample::{assistant_output, Sample};
use crate::steps::tokens::Tokens;
use crate::template::value_text;
use serde::de::{DeserializeSeed, Error as _, MapAccess, Visitor};
use serde::Deserializer as _;
use serde_json::{Map, Value};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RowFormat {
    #[default]
    Auto,
    Referee,
    Trl,
    Verl,
    Openrlhf,
}

impl std::str::FromStr for RowFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => RowFormat::Auto,
            "referee" | "openai" => RowFormat::Referee,
            "trl" => RowFormat::Trl,
            "verl" => RowFormat::Verl,
            "openrlhf" => RowFormat::Openrlhf,
            other => {
                return Err(format!(
                    "unknown input format `{other}`; expected auto, referee, openai, trl, verl or openrlhf"
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
    /// Item fields to digest while parsing (see [`crate::digest`]): what the compiled spec asks
    /// for ([`InputMapping::for_program`]). Only `referee`/`openai` rows get digests.
    pub digest_fields: Vec<Arc<str>>,
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
    /// This mapping, digesting the item fields `program` asks for.
    #[must_use]
    pub fn for_program(mut self, program: &crate::Program) -> Self {
        self.digest_fields = program.item_digest_fields().to_vec();
        self
    }

    /// Parses one JSONL line into a sample, or says why not.
    pub fn parse_line(&self, line: &str) -> Result<Sample, RowError> {
        if !self.digest_fields.is_empty() {
            // Any row the digesting parse does not take (not an object, a duplicate key, an
            // `item` that is not an object, invalid JSON) is parsed the ordinary way below, so
            // results and messages are the same with or without digests.
            if let Ok((row, digests)) = self.parse_digested(line) {
                let (mut s, format) = self.sample_as(Value::Object(row))?;
                if format == RowFormat::Referee {
                    s.set_item_digests(digests);
                }
                return Ok(s);
            }
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| err("invalid_json", format!("line is not valid JSON: {e}")))?;
        self.sample(v)
    }

    /// The row as `serde_json` parses it, with the digests of `item`'s digested fields.
    fn parse_digested(
        &self,
        line: &str,
    ) -> Result<(Map<String, Value>, Digests), serde_json::Error> {
        let mut a = Anchors {
            line,
            fields: &self.digest_fields,
            open: None,
            digests: Vec::new(),
        };
        let mut d = serde_json::Deserializer::from_str(line);
        let row = d.deserialize_map(RowVisitor(&mut a))?;
        d.end()?;
        a.anchor(line.len());
        Ok((row, a.digests))
    }

    /// Maps one row to a sample.
    pub fn sample(&self, row: Value) -> Result<Sample, RowError> {
        self.sample_as(row).map(|(s, _)| s)
    }

    /// Maps one row to a sample, saying which format it was read as.
    fn sample_as(&self, row: Value) -> Result<(Sample, RowFormat), RowError> {
        let Value::Object(obj) = row else {
            return Err(err("invalid_row", "row is not a JSON object"));
        };
        let format = match self.format {
            RowFormat::Auto => detect(&obj)?,
            f => f,
        };
        let id = self.id(&obj, format);
        let group = self.group(&obj, format);
        let mut obj = obj;
        let (tokens, logprobs) = match format {
            RowFormat::Referee | RowFormat::Auto => (None, (None, None)),
            _ => (tokens_of(&mut obj, "")?, logprobs_of(&mut obj, "")?),
        };
        let mut s = match format {
            RowFormat::Referee | RowFormat::Auto => self.referee(obj)?,
            RowFormat::Trl => self.trl(obj)?,
            RowFormat::Verl => self.verl(obj)?,
            RowFormat::Openrlhf => self.openrlhf(obj)?,
        };
        s.id = id;
        s.group = group;
        if tokens.is_some() {
            s.tokens = tokens;
        }
        if logprobs.0.is_some() || logprobs.1.is_some() {
            (s.target_logprobs, s.baseline_logprobs) = logprobs;
        }
        Ok((s, format))
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
            (None, RowFormat::Trl | RowFormat::Openrlhf) => return None,
            (None, _) => "group",
        };
        get_in(obj, path).filter(|v| !v.is_null()).map(value_text)
    }

    fn override_text(&self, obj: &Map<String, Value>) -> Result<Option<Completion>, RowError> {
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
                s.state = sm.remove("state").filter(|v| !v.is_null());
                s.tokens = tokens_of(&mut sm, "sample.")?;
                (s.target_logprobs, s.baseline_logprobs) = logprobs_of(&mut sm, "sample.")?;
                let mut from_messages = s.messages.as_ref().and_then(assistant_output);
                if s.output_tools.is_none() {
                    s.output_tools = from_messages.as_mut().and_then(|o| o.tools.take());
                }
                match sm.remove("output_text") {
                    Some(Value::String(t)) => s.output_text = t,
                    Some(Value::Null) | None => {
                        match from_messages.map(|o| o.text) {
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
        if let Some(c) = overridden {
            s.output_text = c.text;
            if c.messages.is_some() {
                s.messages = c.messages;
                s.output_tools = c.tools;
            }
        }
        Ok(s)
    }

    fn trl(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let c = if let Some(x) = self.override_text(&obj)? {
            x
        } else {
            let c = obj
                .get("completion")
                .ok_or_else(|| err("missing_field", "TRL row has no `completion`"))?;
            completion_text(c, "completion")?
        };
        obj.remove("completion");
        Ok(c.into_sample(Value::Object(obj)))
    }

    fn verl(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let c = if let Some(x) = self.override_text(&obj)? {
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
        let t = match obj.get_mut("extra_info") {
            Some(Value::Object(extra)) => Trajectory::take(extra, "extra_info.")?,
            _ => Trajectory::default(),
        };
        let mut s = c.into_sample(Value::Object(obj));
        // Without a last assistant turn the messages are not the policy's answer (a dataset's
        // own prompt conversation, say): the decoded response stays the graded text.
        let explicit = self.response_field.is_some();
        t.apply(&mut s, !explicit);
        Ok(s)
    }

    fn openrlhf(&self, mut obj: Map<String, Value>) -> Result<Sample, RowError> {
        let t = Trajectory::take(&mut obj, "")?;
        let text = if let Some(c) = self.override_text(&obj)? {
            Some(c.text)
        } else if obj.get("query").is_none_or(Value::is_null) && t.messages.is_some() {
            // An agent's episode given by its turns alone: the last assistant turn is graded.
            None
        } else {
            {
                let query = match obj.remove("query") {
                    Some(Value::String(q)) => q,
                    Some(other) => {
                        return Err(err(
                            "invalid_row",
                            format!(
                                "`query` must be text, found {}",
                                crate::compile::kind_of(&other)
                            ),
                        ))
                    }
                    None => {
                        return Err(err(
                            "missing_field",
                            "OpenRLHF row has no `query` (nor `messages`)",
                        ))
                    }
                };
                let prompt = match obj.get("prompt") {
                    Some(Value::String(p)) => p.as_str(),
                    None | Some(Value::Null) => "",
                    Some(other) => {
                        return Err(err(
                            "invalid_row",
                            format!(
                                "`prompt` must be text, found {}",
                                crate::compile::kind_of(other)
                            ),
                        ))
                    }
                };
                Some(openrlhf::response(&query, prompt)?.to_string())
            }
        };
        obj.entry("label").or_insert(Value::Null);
        let mut s = Sample::new(text.clone().unwrap_or_default(), Value::Object(obj));
        if !t.apply(&mut s, text.is_none()) && text.is_none() {
            return Err(err(
                "missing_field",
                "OpenRLHF row has no `query`, and its `messages` have no assistant turn to grade",
            ));
        }
        Ok(s)
    }
}

/// An agent's rollout carried beside a trainer's row: its turns in chat form and the
/// environment's final state.
#[derive(Default)]
struct Trajectory {
    messages: Option<Value>,
    state: Option<Value>,
}

impl Trajectory {
    /// Takes `messages` and `state` out of `obj` (a row, or verl's `extra_info`; `at` prefixes
    /// the field names in messages). `null` is absent.
    fn take(obj: &mut Map<String, Value>, at: &str) -> Result<Trajectory, RowError> {
        let messages = obj.remove("messages").filter(|v| !v.is_null());
        if let Some(m) = &messages {
            if !m.is_array() {
                return Err(err(
                    "invalid_row",
                    format!(
                        "`{at}messages` must be a list of chat messages, found {}",
                        crate::compile::kind_of(m)
                    ),
                ));
            }
        }
        let state = obj.remove("state").filter(|v| !v.is_null());
        Ok(Trajectory { messages, state })
    }

    /// Puts the trajectory on the sample. The last assistant turn's tool calls become
    /// `output_tools`, and its text the graded output when `text_from_messages`. Whether
    /// there was such a turn.
    fn apply(self, s: &mut Sample, text_from_messages: bool) -> bool {
        s.state = self.state;
        let Some(m) = self.messages else {
            return false;
        };
        let has_assistant = m.as_array().is_some_and(|a| {
            a.iter()
                .any(|x| x.get("role").and_then(Value::as_str) == Some("assistant"))
        });
        let out = if has_assistant {
            assistant_output(&m)
        } else {
            None
        };
        let found = out.is_some();
        if let Some(o) = out {
            if text_from_messages {
                s.output_text = o.text;
            }
            s.output_tools = o.tools;
        }
        s.messages = Some(m);
        found
    }
}

type Digests = Vec<(Arc<str>, Digest)>;

/// What the digesting parse keeps track of: the line, the digested field whose text is still
/// open (its start offset; one at most, since the next key closes it), and the finished digests.
struct Anchors<'a, 'de> {
    line: &'de str,
    fields: &'a [Arc<str>],
    open: Option<(Arc<str>, usize)>,
    digests: Digests,
}

impl<'de> Anchors<'_, 'de> {
    /// A key seen at `at` (its text's offset in the line): it follows every value parsed so far,
    /// so it ends the text of the open digest.
    fn anchor(&mut self, at: usize) {
        if let Some((f, start)) = self.open.take() {
            let d = Digest::of_text(&self.line.as_bytes()[start..at]);
            self.digests.push((f, d));
        }
    }

    /// Where a key borrowed from the line starts, if it is (a key with escapes is a copy).
    fn offset(&self, key: &Key<'de>) -> Option<usize> {
        let Key::Borrowed(k) = key else { return None };
        let off = (k.as_ptr() as usize).checked_sub(self.line.as_ptr() as usize)?;
        (off + k.len() <= self.line.len()).then_some(off)
    }

    /// Reads the next key of a map, anchoring on it; `Some((key, end of its text))`.
    fn key<A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
    ) -> Result<Option<(String, Option<usize>)>, A::Error> {
        let Some(k) = map.next_key_seed(KeySeed)? else {
            return Ok(None);
        };
        let at = self.offset(&k);
        if let Some(at) = at {
            self.anchor(at);
        }
        let name = match k {
            Key::Borrowed(k) => k.to_string(),
            Key::Owned(k) => k,
        };
        // serde_json's private tokens (arbitrary-precision numbers) mean a value, not a map.
        if name.starts_with("$serde_json::private::") {
            return Err(A::Error::custom("parsed the ordinary way"));
        }
        let end = at.map(|a| a + name.len());
        Ok(Some((name, end)))
    }
}

enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, k: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(k))
    }

    fn visit_str<E>(self, k: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(k.to_string()))
    }
}

/// A row's top level, built as `Value` builds it, with `item` read by [`ItemVisitor`].
struct RowVisitor<'a, 'b, 'de>(&'b mut Anchors<'a, 'de>);

impl<'de> Visitor<'de> for RowVisitor<'_, '_, 'de> {
    type Value = Map<String, Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut row = Map::new();
        while let Some((k, _)) = self.0.key(&mut map)? {
            let v = if k == "item" {
                map.next_value_seed(ItemVisitor(&mut *self.0))?
            } else {
                map.next_value::<Value>()?
            };
            // `Value` keeps the last of a duplicate key: such rows take the ordinary path.
            if row.insert(k, v).is_some() {
                return Err(A::Error::custom("parsed the ordinary way"));
            }
        }
        Ok(row)
    }
}

/// An `item` object, built as `Value` builds it, where each digested field opens a digest.
struct ItemVisitor<'a, 'b, 'de>(&'b mut Anchors<'a, 'de>);

impl<'de> DeserializeSeed<'de> for ItemVisitor<'_, '_, 'de> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemVisitor<'_, '_, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut item = Map::new();
        while let Some((k, end)) = self.0.key(&mut map)? {
            let v = map.next_value::<Value>()?;
            if let (Some(f), Some(end)) = (self.0.fields.iter().find(|f| ***f == *k), end) {
                // The text starts right after the key's closing quote (`: <value>...`).
                self.0.open = Some((f.clone(), end + 1));
            }
            if item.insert(k, v).is_some() {
                return Err(A::Error::custom("parsed the ordinary way"));
            }
        }
        Ok(Value::Object(item))
    }
}

fn detect(obj: &Map<String, Value>) -> Result<RowFormat, RowError> {
    if obj.contains_key("sample") || obj.contains_key("model_sample") {
        Ok(RowFormat::Referee)
    } else if obj.contains_key("reward_model") || obj.contains_key("data_source") {
        Ok(RowFormat::Verl)
    } else if obj.contains_key("completion") {
        Ok(RowFormat::Trl)
    } else if obj.contains_key("query") {
        Ok(RowFormat::Openrlhf)
    } else {
        Err(err(
            "unknown_row_format",
            "cannot tell the row format: no `sample` (referee/openai), `reward_model`/`data_source` (verl), `completion` (trl) or `query` (openrlhf); pass --format",
        ))
    }
}

/// A completion as a row gives it: its text, and when it was chat messages, the messages and the
/// graded message's tool calls.
struct Completion {
    text: String,
    messages: Option<Value>,
    tools: Option<Value>,
}

impl Completion {
    fn into_sample(self, item: Value) -> Sample {
        let mut s = Sample::new(self.text, item);
        s.messages = self.messages;
        s.output_tools = self.tools;
        s
    }
}

/// The completion's tokens, for token spans of step rewards: `completion_ids` or
/// `token_offsets` (taken out of the row, so they never reach `item`).
fn tokens_of(m: &mut Map<String, Value>, at: &str) -> Result<Option<Tokens>, RowError> {
    let ids = m.remove("completion_ids").filter(|v| !v.is_null());
    let offsets = m.remove("token_offsets").filter(|v| !v.is_null());
    let bad = |e: String| err("invalid_row", format!("{at}{e}"));
    match (ids, offsets) {
        (Some(_), Some(_)) => Err(bad(
            "`completion_ids` and `token_offsets` are both given: give one".into(),
        )),
        (Some(v), None) => Tokens::ids(&v).map(Some).map_err(bad),
        (None, Some(v)) => Tokens::offsets(&v).map(Some).map_err(bad),
        (None, None) => Ok(None),
    }
}

/// The trainer's own logprobs of a likelihood reward's targets: `target_logprobs` and
/// `baseline_logprobs`, lists of finite logprobs (≤ 0), taken out of the row.
type TrainerLogprobs = (Option<Vec<f64>>, Option<Vec<f64>>);

fn logprobs_of(m: &mut Map<String, Value>, at: &str) -> Result<TrainerLogprobs, RowError> {
    let mut one = |k: &str| -> Result<Option<Vec<f64>>, RowError> {
        let Some(v) = m.remove(k).filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let bad = || {
            err(
                "invalid_row",
                format!("{at}{k} must be a list of logprobs (finite numbers ≤ 0)"),
            )
        };
        let list = v.as_array().ok_or_else(bad)?;
        list.iter()
            .map(|x| {
                x.as_f64()
                    .filter(|x| x.is_finite() && *x <= 1e-9)
                    .ok_or_else(bad)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    Ok((one("target_logprobs")?, one("baseline_logprobs")?))
}

/// A completion given as text or as chat messages (read by [`assistant_output`]).
fn completion_text(v: &Value, field: &str) -> Result<Completion, RowError> {
    match v {
        Value::String(t) => Ok(Completion {
            text: t.clone(),
            messages: None,
            tools: None,
        }),
        Value::Array(_) => {
            let o = assistant_output(v).ok_or_else(|| {
                err(
                    "invalid_row",
                    format!("`{field}` is a list but not chat messages with text content"),
                )
            })?;
            Ok(Completion {
                text: o.text,
                messages: Some(v.clone()),
                tools: o.tools,
            })
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
    fn trainer_logprobs_are_read_and_checked() {
        let s = map(json!({"item": {}, "sample": {"output_text": "x", "target_logprobs": [-0.5, 0], "baseline_logprobs": null}})).unwrap();
        assert_eq!(
            (s.target_logprobs, s.baseline_logprobs),
            (Some(vec![-0.5, 0.0]), None)
        );
        assert!(s.item.get("target_logprobs").is_none());
        let s =
            map(json!({"prompt": "p", "completion": "c", "baseline_logprobs": [-1.0]})).unwrap();
        assert_eq!(s.baseline_logprobs, Some(vec![-1.0]));
        assert!(s.item.get("baseline_logprobs").is_none());
        for bad in [json!([0.5]), json!(["a"]), json!(-1.0)] {
            let e =
                map(json!({"item": {}, "sample": {"output_text": "x", "target_logprobs": bad}}))
                    .unwrap_err();
            assert_eq!(e.reason, "invalid_row");
            assert!(
                e.message.contains("sample.target_logprobs"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn referee_rows() {
        let s = map(json!({"id": "a", "group": "g", "item": {"answer": "4"}, "sample": {"output_text": "4"}})).unwrap();
        assert_eq!(s.output_text, "4");
        assert_eq!(s.id, Some(json!("a")));
        assert_eq!(s.group.as_deref(), Some("g"));
        let s = map(json!({"item": {}, "sample": {"output_text": "done", "state": {"rows": 3}}}))
            .unwrap();
        assert_eq!(s.state, Some(json!({"rows": 3})));
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
    fn messages_as_trainers_write_them() {
        // TRL with a response-parsing tokenizer: reasoning in `thinking`, a call-only message
        // with no `content` at all.
        let s = map(
            json!({"prompt": [{"role": "user", "content": "q"}], "completion": [
            {"role": "assistant", "thinking": "6*12 is 72", "content": "<answer>72</answer>"}]}),
        )
        .unwrap();
        assert_eq!(
            s.output_text,
            "<think>\n6*12 is 72\n</think>\n<answer>72</answer>"
        );
        assert!(s.output_tools.is_none());
        let s = map(
            json!({"prompt": "q", "completion": [{"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]}]}),
        )
        .unwrap();
        assert_eq!(s.output_text, "");
        assert_eq!(
            s.output_tools,
            Some(
                json!([{"type": "function", "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}])
            )
        );
        // verifiers: flat tool calls, `reasoning_content`, a null content.
        let s = map(json!({"item": {}, "sample": {"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "reasoning_content": "look it up", "content": null,
             "tool_calls": [{"id": "c1", "type": "function", "name": "find", "arguments": "{\"q\":\"x\"}"}]}]}}))
        .unwrap();
        assert_eq!(s.output_text, "<think>\nlook it up\n</think>\n");
        assert_eq!(
            s.output_tools,
            Some(
                json!([{"id": "c1", "type": "function", "function": {"name": "find", "arguments": "{\"q\":\"x\"}"}}])
            )
        );
        // Given output_tools win; a content that has its own reasoning section keeps it.
        let s = map(
            json!({"item": {}, "sample": {"output_tools": [], "messages": [
            {"role": "assistant", "reasoning_content": "r", "content": "<think>a</think>b",
             "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]}}),
        )
        .unwrap();
        assert_eq!(s.output_text, "<think>a</think>b");
        assert_eq!(s.output_tools, Some(json!([])));
    }

    #[test]
    fn openrlhf_rows() {
        let prompt = "<|im_start|>user\nWhat is 6 times 12?<|im_end|>\n<|im_start|>assistant\n";
        let s = map(
            json!({"query": format!("{prompt}\\boxed{{72}}"), "prompt": prompt, "label": "72"}),
        )
        .unwrap();
        assert_eq!(s.output_text, "\\boxed{72}");
        assert_eq!(s.item, json!({"prompt": prompt, "label": "72"}));
        let s = map(json!({"query": format!("{}\\boxed{{72}}", &prompt[20..]), "prompt": prompt}))
            .unwrap();
        assert_eq!(s.output_text, "\\boxed{72}");
        assert_eq!(s.item["label"], Value::Null);
        let e = map(json!({"query": "\\boxed{72}", "prompt": prompt})).unwrap_err();
        assert_eq!(e.reason, "prompt_not_found");
        assert_eq!(map(json!({"query": 3})).unwrap_err().reason, "invalid_row");
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

    /// An agent trajectory as verl's tool agent loop leaves it: the prompt, a hermes tool call
    /// (no ids), the tool's result, the final answer.
    fn verl_turns() -> Value {
        json!([
            {"role": "user", "content": "Book LH123, seat 12A."},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
                "function": {"name": "book", "arguments": "{\"flight\": \"LH123\"}"}}]},
            {"role": "tool", "content": "booked LH123"},
            {"role": "assistant", "content": "<answer>booked</answer>"}
        ])
    }

    #[test]
    fn verl_agent_rows_carry_the_trajectory() {
        let decoded =
            "<tool_call>{...}</tool_call>tool\nbooked LH123\nassistant\n<answer>booked</answer>";
        let row = json!({"data_source": "agent", "reward_model": {"ground_truth": {"seat": "12A"}},
            "extra_info": {"index": 1, "num_turns": 4, "messages": verl_turns(),
                           "state": {"bookings": [{"flight": "LH123"}]}, "tool_rewards": [0.0]},
            "response": decoded});
        let s = map(row.clone()).unwrap();
        // The graded output is the final answer, not the decoded text with the tool's words.
        assert_eq!(s.output_text, "<answer>booked</answer>");
        assert_eq!(s.output_tools, None);
        assert_eq!(s.messages, Some(verl_turns()));
        assert_eq!(s.state, Some(json!({"bookings": [{"flight": "LH123"}]})));
        // The rollout left the item; verl's own fields stayed.
        assert_eq!(
            s.item["extra_info"],
            json!({"index": 1, "num_turns": 4, "tool_rewards": [0.0]})
        );
        let t = |src: &str| {
            crate::template::Template::parse(src)
                .unwrap()
                .render(&s)
                .map(std::borrow::Cow::into_owned)
        };
        assert_eq!(t("{{item.extra_info.num_turns}}").unwrap(), "4");
        assert_eq!(
            t("{{sample.messages[role=tool][-1].content}}").unwrap(),
            "booked LH123"
        );
        assert_eq!(t("{{item.ground_truth.seat}}").unwrap(), "12A");
        // A response field named explicitly stays the graded text.
        let m = InputMapping {
            response_field: Some("response".into()),
            ..Default::default()
        };
        let s = m.sample(row).unwrap();
        assert_eq!(s.output_text, decoded);
        assert!(s.messages.is_some() && s.state.is_some());
    }

    #[test]
    fn verl_rows_without_a_trajectory_keep_the_decoded_response() {
        // verl's plain tool agent loop records no messages: the decoded response is graded.
        let s = map(
            json!({"data_source": "a", "extra_info": {"num_turns": 3, "state": null},
                           "response": "all turns"}),
        )
        .unwrap();
        assert_eq!(s.output_text, "all turns");
        assert_eq!((s.messages, s.state), (None, None));
        // Messages with no assistant turn are not the policy's answer.
        let s = map(json!({"data_source": "a", "response": "mine",
                           "extra_info": {"messages": [{"role": "user", "content": "the prompt"}]}}))
        .unwrap();
        assert_eq!(s.output_text, "mine");
        assert!(s.messages.is_some());
        // The last assistant turn's tool calls are the output's.
        let mut turns = verl_turns();
        turns.as_array_mut().unwrap().truncate(2);
        let s =
            map(json!({"data_source": "a", "response": "x", "extra_info": {"messages": turns}}))
                .unwrap();
        assert_eq!(s.output_text, "");
        assert_eq!(
            s.output_tools.unwrap()[0]["function"]["name"],
            json!("book")
        );
        let e = map(json!({"data_source": "a", "response": "x", "extra_info": {"messages": "hi"}}))
            .unwrap_err();
        assert_eq!(e.reason, "invalid_row");
        assert!(e.message.contains("extra_info.messages"), "{}", e.message);
    }

    #[test]
    fn openrlhf_episode_rows() {
        let prompt = "<|im_start|>user\nBook LH123.<|im_end|>\n<|im_start|>assistant\n";
        let turns = verl_turns();
        let s = map(
            json!({"query": format!("{prompt}<answer>booked</answer>"), "prompt": prompt,
                           "label": "x", "messages": turns, "state": {"seat": "12A"}}),
        )
        .unwrap();
        assert_eq!(s.output_text, "<answer>booked</answer>");
        assert_eq!(s.state, Some(json!({"seat": "12A"})));
        assert_eq!(s.messages, Some(verl_turns()));
        assert_eq!(s.item, json!({"prompt": prompt, "label": "x"}));
        // The query's text is graded when both are given.
        let s = map(
            json!({"query": format!("{prompt}the query"), "prompt": prompt,
                           "messages": verl_turns()}),
        )
        .unwrap();
        assert_eq!(s.output_text, "the query");
        // Turns alone: the last assistant turn. With none, nothing to grade.
        let s = map(json!({"query": null, "prompt": prompt, "messages": verl_turns()})).unwrap();
        assert_eq!(s.output_text, "<answer>booked</answer>");
        let m = InputMapping {
            format: RowFormat::Openrlhf,
            ..Default::default()
        };
        let s = m
            .sample(json!({"prompt": prompt, "messages": verl_turns()}))
            .unwrap();
        assert_eq!(s.output_text, "<answer>booked</answer>");
        let e = m
            .sample(json!({"prompt": prompt, "messages": [{"role": "user", "content": "q"}]}))
            .unwrap_err();
        assert_eq!(e.reason, "missing_field");
        let e = m.sample(json!({"prompt": prompt})).unwrap_err();
        assert_eq!(e.reason, "missing_field");
        let e = m
            .sample(json!({"query": "q", "messages": {"role": "assistant"}}))
            .unwrap_err();
        assert_eq!(e.reason, "invalid_row");
    }

    #[test]
    fn digesting_parse_gives_the_same_samples_and_errors() {
        let plain = InputMapping::default();
        let digesting = InputMapping {
            digest_fields: vec![Arc::from("schema")],
            ..Default::default()
        };
        let lines = [
            r#"{"id": 1, "group": "g", "item": {"schema": {"type": "object", "x": [1, 2.5, -0, null]}, "k": 1}, "sample": {"output_text": "o"}}"#,
            r#"{"item": {"schema": "text", "schema2": {}}, "model_sample": "m"}"#,
            r#"{"item": {}, "sample": {"output_text": "o"}}"#,
            r#"{"item": null, "sample": {"output_text": "o"}}"#,
            r#"{"item": 5, "sample": {"output_text": "o"}}"#,
            r#"{"item": {"schema": {"a": 1, "a": 2}}, "sample": {"output_text": "o"}}"#,
            r#"{"item": {"schema": 1, "schema": 2}, "sample": {"output_text": "o"}}"#,
            r#"{"item": {"schema": 1}, "item": {"schema": 2}, "sample": {"output_text": "o"}}"#,
            r#"{"schema": {"a": 1}, "completion": "c"}"#,
            r#"{"item": {"schema": {"a": 1}}, "sample": {"output_text": "o"}} x"#,
            r#"{"item": {"schema": {"a": 1}, "sample": {"output_text": "o"}"#,
            "[1]",
            r#"{"item": {"schema": {"a": 1}}}"#,
        ];
        for l in lines {
            match (plain.parse_line(l), digesting.parse_line(l)) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(
                        (&a.id, &a.group, &a.item, &a.output_text),
                        (&b.id, &b.group, &b.item, &b.output_text),
                        "{l}"
                    );
                    assert!(a.item_digest("schema").is_none());
                    match (b.item.get("schema"), b.item_digest("schema")) {
                        // The digest's text starts with the value it stands for.
                        (Some(v), Some(d)) => {
                            let text = std::str::from_utf8(d.bytes()).unwrap();
                            let text = text.trim_start().strip_prefix(':').unwrap();
                            let mut de = serde_json::Deserializer::from_str(text);
                            let parsed = <Value as serde::Deserialize>::deserialize(&mut de);
                            assert_eq!(parsed.unwrap(), *v, "{l}");
                        }
                        (_, None) => {}
                        (None, Some(_)) => panic!("a digest without its field: {l}"),
                    }
                }
                (Err(a), Err(b)) => assert_eq!(a, b, "{l}"),
                (a, b) => panic!("{l}: {a:?} vs {b:?}"),
            }
        }
        let d = |l: &str| {
            digesting
                .parse_line(l)
                .unwrap()
                .item_digest("schema")
                .cloned()
        };
        // A key twice inside the value is fine: the same text always parses to the same value.
        assert!(d(lines[0]).is_some() && d(lines[1]).is_some() && d(lines[5]).is_some());
        // Rows the digesting parse hands back, and non-referee rows, carry none.
        for l in [lines[3], lines[6], lines[7], lines[8]] {
            assert_eq!(d(l), None, "{l}");
        }
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
