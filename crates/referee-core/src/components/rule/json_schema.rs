//! # json_schema
//! *What it scores:* a JSON answer against a JSON Schema (drafts 4, 6, 7, 2019-09 and 2020-12,
//! with the `jsonschema` crate): all or nothing, or partial credit per required property.
//!
//! *Spec:*
//! - `input` (template, default `{{sample.output_text}}`).
//! - `schema`: the JSON Schema, inline (an object, compiled once), or a template that reads it
//!   from the item (default `{{item.schema}}`: an object, or a string holding one; OpenAI's
//!   `response_format` wrappers `{type: json_schema, json_schema: {schema}}` and
//!   `{name, schema, strict}` are unwrapped). Item schemas are compiled once each and cached.
//! - `draft`: `auto` (default: from `$schema`, else 2020-12), `draft4`, `draft6`, `draft7`,
//!   `draft2019_09`, `draft2020_12`.
//! - `require_all` (default true): every property a schema lists in `properties` must be
//!   present, at every level, as in OpenAI's strict structured outputs (a property may still be
//!   `null` where its type allows it). Without it, a schema whose properties are optional is
//!   satisfied by `{}`, the cheapest answer there is. `false` follows the schema's `required`.
//! - `formats` (default true): `format` (`email`, `date-time`, `uri`, ...) is checked, in every
//!   draft (2019-09 and later treat it as an annotation unless asked).
//! - `reward`: `all_or_nothing` (default) or `partial`: 1 when valid; otherwise the fraction of
//!   the root object's required properties that are present and valid, and 0 when anything
//!   else at the root is wrong (not an object, an unexpected property, a failed `oneOf`, ...).
//! - `reasoning`: `strip` (default: only what follows the thinking section is read; an output
//!   that is only reasoning has no JSON) or `keep`.
//! - `extract`: `auto` (default: `whole` when the whole answer is one JSON value; else, when it
//!   has code fences, the fenced blocks *and* any object in the prose around them, so a bare
//!   object beside the fenced one counts as a second answer; else `search`), `whole` (the
//!   answer, whitespace aside, is one JSON value), `fenced` (only the contents of
//!   ```` ```json ```` or unlabelled fences; prose is ignored), `search` (top-level objects in
//!   the prose; arrays only when there is no object, since prose is full of `[1]`).
//! - Parsing policies, each explicit: `multiple` (several values found: `reject`, default;
//!   `first`; `last`), `duplicate_keys` (`reject`, default: a key twice in one object, compared
//!   after unescaping; `last_wins`), `nan_infinity` (`reject`, default; `null`: bare
//!   `NaN`/`Infinity` read as null), `trailing_text` (text after the value in `whole` mode or
//!   inside a fence: `reject`, default; `allow`).
//!
//! *Example:*
//! ```yaml
//! type: json_schema
//! schema:
//!   type: object
//!   properties:
//!     name: {type: string, minLength: 1}
//!     age: {type: integer, minimum: 0}
//!   additionalProperties: false
//! reward: partial
//! ```
//!
//! *Score and failure modes:* in [0, 1]. An answer with no JSON, JSON that breaks a parsing
//! policy, or JSON that fails the schema scores 0 (or partial credit): the policy's fault,
//! status ok. The trace lists every violation with its instance path and keyword (up to 20).
//! An inline schema that is not a valid schema is a compile error; an item's schema that is
//! missing or invalid is an error with reason `missing_field` or `bad_schema`, never 0. Remote
//! `$ref`s are never fetched (a schema that needs one is `bad_schema`), and `pattern`s run on
//! the linear-time `regex` engine, so a hostile answer cannot make validation backtrack.

mod doc;
mod parse;

use crate::compile::{sync, At, Compiler};
use crate::digest::Digest;
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::reasoning::Reasoning;
use doc::{same_bytes, Doc, Tape};
use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, Validator};
use parse::{DuplicateKeys, Extract, Multiple, NanInfinity, NoJson, Policies, TrailingText};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, RwLock};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonSchemaSpec {
    /// What is graded (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The schema: an inline object, or a template reading it from the item (default `{{item.schema}}`).
    #[serde(default)]
    pub schema: Option<Value>,
    #[serde(default)]
    pub draft: DraftSpec,
    /// Every listed property must be present, at every level (default true).
    #[serde(default = "yes")]
    pub require_all: bool,
    /// Check `format` keywords (default true).
    #[serde(default = "yes")]
    pub formats: bool,
    #[serde(default)]
    pub reward: RewardMode,
    #[serde(default)]
    pub reasoning: Reasoning,
    #[serde(default)]
    pub extract: Extract,
    #[serde(default)]
    pub multiple: Multiple,
    #[serde(default)]
    pub duplicate_keys: DuplicateKeys,
    #[serde(default)]
    pub nan_infinity: NanInfinity,
    #[serde(default)]
    pub trailing_text: TrailingText,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DraftSpec {
    #[default]
    Auto,
    Draft4,
    Draft6,
    Draft7,
    #[serde(rename = "draft2019_09")]
    Draft201909,
    #[serde(rename = "draft2020_12")]
    Draft202012,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardMode {
    #[default]
    AllOrNothing,
    Partial,
}

/// A compiled schema with what partial credit needs: the root's required property names.
struct Compiled {
    /// Reads the answer's tape in place (no `serde_json::Value` is built for it).
    validator: Validator<Tape>,
    required: Vec<String>,
}

enum Source {
    Inline(Compiled),
    Item {
        template: Template,
        /// The item field the template reads when it is exactly `{{item.<field>}}`: rows parsed
        /// from text then carry its digest ([`crate::digest`]).
        field: Option<String>,
        /// Datasets reuse a few schemas across many rows, and building a validator costs far
        /// more than running it.
        cache: RwLock<Cache>,
    },
}

/// Compiled item schemas, found by the row's digest of the schema field when it has one (a
/// byte comparison), else by a fingerprint of the schema's `Value` and an in-order walk.
#[derive(Default)]
struct Cache {
    by_value: HashMap<u64, SchemaBucket, foldhash::fast::FixedState>,
    by_digest: HashMap<u64, DigestBucket, foldhash::fast::FixedState>,
}

/// Schemas sharing a fingerprint, each with its validator.
type SchemaBucket = Vec<(Flat, Arc<Compiled>)>;
/// Schema fields sharing a digest hash, each with its validator.
type DigestBucket = Vec<(Digest, Arc<Compiled>)>;

const CACHE_MAX: usize = 1024;
/// Schemas kept per fingerprint.
const BUCKET_MAX: usize = 8;
const MAX_VIOLATIONS: usize = 20;

pub struct JsonSchemaGrader {
    input: Template,
    source: Source,
    draft: DraftSpec,
    require_all: bool,
    formats: bool,
    reward: RewardMode,
    reasoning: Reasoning,
    policies: Policies,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: JsonSchemaSpec = cx.spec(v, at)?;
    let input = cx.input(spec.input.as_deref(), at);
    let opts = (spec.draft, spec.require_all, spec.formats);
    let source = match spec.schema {
        Some(Value::Object(o)) => match build(Value::Object(o), opts) {
            Ok(c) => Some(Source::Inline(c)),
            Err(e) => {
                cx.err(at, Some("schema"), format!("not a valid JSON Schema: {e}"));
                None
            }
        },
        Some(Value::String(t)) => cx.template(&t, at, "schema").map(|t| item_source(t, cx)),
        None => cx
            .template("{{item.schema}}", at, "schema")
            .map(|t| item_source(t, cx)),
        Some(other) => {
            cx.err(
                at,
                Some("schema"),
                format!(
                    "expected a schema object or a template string, found {}",
                    crate::compile::kind_of(&other)
                ),
            );
            None
        }
    };
    Some(sync(JsonSchemaGrader {
        input: input?,
        source: source?,
        draft: spec.draft,
        require_all: spec.require_all,
        formats: spec.formats,
        reward: spec.reward,
        reasoning: spec.reasoning,
        policies: Policies {
            extract: spec.extract,
            multiple: spec.multiple,
            duplicate_keys: spec.duplicate_keys,
            nan_infinity: spec.nan_infinity,
            trailing_text: spec.trailing_text,
        },
    }))
}

fn item_source(template: Template, cx: &mut Compiler) -> Source {
    let field = template.item_field().map(str::to_string);
    if let Some(f) = &field {
        cx.want_item_digest(f);
    }
    Source::Item {
        template,
        field,
        cache: RwLock::new(Cache::default()),
    }
}

/// Builds a validator: unwraps OpenAI's wrappers, applies `require_all`, never fetches.
fn build(
    schema: Value,
    (draft, require_all, formats): (DraftSpec, bool, bool),
) -> Result<Compiled, String> {
    let mut schema = unwrap_response_format(schema);
    if !schema.is_object() && !schema.is_boolean() {
        return Err(format!(
            "a schema is an object or a boolean, found {}",
            crate::compile::kind_of(&schema)
        ));
    }
    if require_all {
        require_all_properties(&mut schema);
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut o = jsonschema::options_for::<Tape>()
        .should_validate_formats(formats)
        .with_pattern_options(jsonschema::PatternOptions::regex());
    let d = match draft {
        DraftSpec::Auto => None,
        DraftSpec::Draft4 => Some(Draft::Draft4),
        DraftSpec::Draft6 => Some(Draft::Draft6),
        DraftSpec::Draft7 => Some(Draft::Draft7),
        DraftSpec::Draft201909 => Some(Draft::Draft201909),
        DraftSpec::Draft202012 => Some(Draft::Draft202012),
    };
    if let Some(d) = d {
        o = o.with_draft(d);
    }
    let validator = o.build(&schema).map_err(|e| e.to_string())?;
    Ok(Compiled {
        validator,
        required,
    })
}

/// `{type: json_schema, json_schema: {name, schema, strict}}` and `{name, schema, strict}` →
/// the schema itself: datasets often carry the `response_format` they prompted with.
fn unwrap_response_format(v: Value) -> Value {
    let is_wrapper = |o: &Map<String, Value>| {
        o.get("schema").is_some_and(Value::is_object)
            && !o.contains_key("$schema")
            && !o.contains_key("properties")
            && o.get("type").is_none_or(|t| t == "json_schema")
    };
    match v {
        Value::Object(mut o)
            if o.get("json_schema").is_some_and(Value::is_object)
                && !o.contains_key("properties") =>
        {
            let inner = o.remove("json_schema").unwrap_or_default();
            unwrap_response_format(inner)
        }
        Value::Object(mut o) if is_wrapper(&o) => o.remove("schema").unwrap_or_default(),
        v => v,
    }
}

/// Makes every property listed in `properties` required, in every subschema (walking only
/// keywords that hold schemas, so a property *named* `properties` is not mistaken for one).
fn require_all_properties(s: &mut Value) {
    let Value::Object(o) = s else { return };
    if let Some(Value::Object(props)) = o.get("properties") {
        let names: Vec<Value> = props.keys().map(|k| Value::String(k.clone())).collect();
        let req = o.entry("required").or_insert_with(|| json!([]));
        if let Value::Array(r) = req {
            for n in names {
                if !r.contains(&n) {
                    r.push(n);
                }
            }
        }
    }
    for (k, v) in o.iter_mut() {
        match k.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(m) = v {
                    m.values_mut().for_each(require_all_properties);
                }
            }
            "dependencies" => {
                if let Value::Object(m) = v {
                    m.values_mut()
                        .filter(|d| d.is_object())
                        .for_each(require_all_properties);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                if let Value::Array(a) = v {
                    a.iter_mut().for_each(require_all_properties);
                }
            }
            "items" => match v {
                Value::Array(a) => a.iter_mut().for_each(require_all_properties),
                v => require_all_properties(v),
            },
            "additionalItems"
            | "additionalProperties"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema" => require_all_properties(v),
            _ => {}
        }
    }
}

impl JsonSchemaGrader {
    fn schema(&self, s: &Sample) -> Result<Arc<Compiled>, Outcome> {
        let Source::Item {
            template,
            field,
            cache,
        } = &self.source
        else {
            unreachable!("inline schemas are not looked up")
        };
        let digest = field.as_deref().and_then(|f| s.item_digest(f));
        if let (Some(d), Ok(c)) = (digest, cache.read()) {
            // Equal digests are equal values: the bytes are compared, never only the hash.
            if let Some((_, c)) = c
                .by_digest
                .get(&d.hash())
                .and_then(|b| b.iter().find(|(x, _)| x.bytes() == d.bytes()))
            {
                return Ok(c.clone());
            }
        }
        let v = template.render_value(s).map_err(|m| {
            // The schema comes from the dataset: a miss is never the policy's fault.
            Outcome::error(m.reason, m.message)
        })?;
        let parsed;
        let v: &Value = match v.as_ref() {
            Value::String(t) => {
                parsed = serde_json::from_str::<Value>(t).map_err(|e| {
                    Outcome::error("bad_schema", format!("the item's schema is not JSON: {e}"))
                })?;
                &parsed
            }
            other => other,
        };
        let key = {
            let mut h = foldhash::fast::FixedState::default().build_hasher();
            fingerprint(v, &mut h);
            h.finish()
        };
        if digest.is_none() {
            if let Ok(c) = cache.read() {
                // The schema is compared too: a hash collision must not swap schemas.
                if let Some((_, c)) = c
                    .by_value
                    .get(&key)
                    .and_then(|e| e.iter().find(|(f, _)| f.matches(v)))
                {
                    return Ok(c.clone());
                }
            }
        }
        let c = Arc::new(
            build(v.clone(), (self.draft, self.require_all, self.formats)).map_err(|e| {
                Outcome::error("bad_schema", format!("the item's schema is not valid: {e}"))
            })?,
        );
        if let Ok(mut cache) = cache.write() {
            if let Some(d) = digest {
                remember(&mut cache.by_digest, d.hash(), d.clone(), c.clone());
            } else {
                remember(&mut cache.by_value, key, Flat::of(v), c.clone());
            }
        }
        Ok(c)
    }
}

/// Adds a schema to its bucket, bounding the map and the bucket (which bounds the comparisons
/// a lookup can take).
fn remember<K>(
    map: &mut HashMap<u64, Vec<(K, Arc<Compiled>)>, foldhash::fast::FixedState>,
    hash: u64,
    k: K,
    c: Arc<Compiled>,
) {
    if map.len() >= CACHE_MAX {
        map.clear();
    }
    let bucket = map.entry(hash).or_default();
    if bucket.len() >= BUCKET_MAX {
        bucket.remove(0);
    }
    bucket.push((k, c));
}

/// The cache key of an item schema without a digest: a cheap fingerprint, not a hash of the whole schema (a
/// full walk on every row cost as much as the comparison that must follow anyway). It reads the
/// root's members (names, scalar values such as `title` or `$id`, container sizes) and the names
/// one level down (the property names), so schemas that differ there land in different buckets;
/// schemas that share a fingerprint share a bucket and are told apart by [`Flat::matches`].
fn fingerprint(v: &Value, h: &mut impl Hasher) {
    fn scalar(v: &Value, h: &mut impl Hasher) {
        match v {
            Value::Null => h.write_u8(0),
            Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
            Value::Number(n) => n.as_str().hash(h),
            Value::String(s) => s.hash(h),
            Value::Array(a) => h.write_usize(a.len()),
            Value::Object(o) => h.write_usize(o.len()),
        }
    }
    const BUDGET: usize = 64;
    let Value::Object(o) = v else {
        return scalar(v, h);
    };
    h.write_usize(o.len());
    let mut budget = BUDGET;
    for (k, x) in o {
        k.hash(h);
        scalar(x, h);
        if let Value::Object(inner) = x {
            for k in inner.keys().take(budget) {
                k.hash(h);
            }
            budget = budget.saturating_sub(inner.len());
        }
    }
}

/// A cached schema, flattened for comparison: its nodes in order in one buffer (a tag, then a
/// length and bytes for text, a length for containers), so checking a row's schema against it
/// reads one side sequentially. Keys in the same order and numbers written alike: enough to share
/// a validator, and far cheaper than `Value`'s `==`, which looks every key up in the other map.
/// Differently ordered equal schemas merely miss the cache (their fingerprints may differ anyway).
struct Flat(Vec<u8>);

impl Flat {
    fn of(v: &Value) -> Flat {
        fn len(out: &mut Vec<u8>, n: usize) {
            out.extend_from_slice(&(n as u64).to_le_bytes());
        }
        fn text(out: &mut Vec<u8>, s: &str) {
            len(out, s.len());
            out.extend_from_slice(s.as_bytes());
        }
        fn add(out: &mut Vec<u8>, v: &Value) {
            match v {
                Value::Null => out.push(0),
                Value::Bool(b) => out.push(1 + u8::from(*b)),
                Value::Number(n) => {
                    out.push(3);
                    text(out, n.as_str());
                }
                Value::String(s) => {
                    out.push(4);
                    text(out, s);
                }
                Value::Array(a) => {
                    out.push(5);
                    len(out, a.len());
                    for x in a {
                        add(out, x);
                    }
                }
                Value::Object(o) => {
                    out.push(6);
                    len(out, o.len());
                    for (k, x) in o {
                        text(out, k);
                        add(out, x);
                    }
                }
            }
        }
        let mut out = Vec::new();
        add(&mut out, v);
        Flat(out)
    }

    /// Whether `v` is the schema this was made of (the encoding is prefix-free: lengths first).
    fn matches(&self, v: &Value) -> bool {
        let mut at = 0;
        matches_at(&self.0, &mut at, v) && at == self.0.len()
    }
}

fn matches_at(f: &[u8], at: &mut usize, v: &Value) -> bool {
    fn tag(f: &[u8], at: &mut usize, t: u8) -> bool {
        let ok = f.get(*at) == Some(&t);
        *at += 1;
        ok
    }
    fn len(f: &[u8], at: &mut usize, n: usize) -> bool {
        let ok = f
            .get(*at..*at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .is_some_and(|b| u64::from_le_bytes(b) == n as u64);
        *at += 8;
        ok
    }
    fn text(f: &[u8], at: &mut usize, s: &str) -> bool {
        if !len(f, at, s.len()) {
            return false;
        }
        let ok = f
            .get(*at..*at + s.len())
            .is_some_and(|b| same_bytes(b, s.as_bytes()));
        *at += s.len();
        ok
    }
    match v {
        Value::Null => tag(f, at, 0),
        Value::Bool(b) => tag(f, at, 1 + u8::from(*b)),
        Value::Number(n) => tag(f, at, 3) && text(f, at, n.as_str()),
        Value::String(s) => tag(f, at, 4) && text(f, at, s),
        Value::Array(a) => {
            tag(f, at, 5) && len(f, at, a.len()) && a.iter().all(|x| matches_at(f, at, x))
        }
        Value::Object(o) => {
            tag(f, at, 6)
                && len(f, at, o.len())
                && o.iter()
                    .all(|(k, x)| text(f, at, k) && matches_at(f, at, x))
        }
    }
}

impl SyncComponent for JsonSchemaGrader {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let text = match self.input.render(s) {
            Ok(t) => t,
            Err(m) => return m.outcome(cx),
        };
        let held;
        let compiled: &Compiled = match &self.source {
            Source::Inline(c) => c,
            Source::Item { .. } => match self.schema(s) {
                Ok(c) => {
                    held = c;
                    &held
                }
                Err(o) => return o,
            },
        };
        let answer = self.reasoning.apply(&text);
        if answer.unclosed && answer.text.trim().is_empty() {
            cx.note(|| "scored 0: the output is only reasoning (no closing tag)".into());
            return Outcome::ok(0.0);
        }
        let (doc, mode) = match parse::extract(answer.text, self.policies) {
            Ok(v) => v,
            Err(NoJson(m)) => {
                cx.note(|| format!("scored 0: {m}"));
                return Outcome::ok(0.0);
            }
        };
        let value = doc.root();
        if compiled.validator.is_valid(value) {
            cx.note(|| format!("valid JSON ({mode})"));
            return Outcome::ok(1.0);
        }
        if self.reward == RewardMode::AllOrNothing && !cx.explaining() {
            return Outcome::ok(0.0); // the violations are only for the trace
        }
        let errors: Vec<_> = compiled.validator.iter_errors(value).collect();
        let reward = match self.reward {
            RewardMode::AllOrNothing => 0.0,
            RewardMode::Partial => partial(&doc, &compiled.required, &errors),
        };
        cx.note(|| {
            format!(
                "{} violation{} ({mode}); first: {} at {}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                errors[0],
                match errors[0].instance_path().to_string() {
                    p if p.is_empty() => "the root".to_string(),
                    p => format!("`{p}`"),
                }
            )
        });
        cx.detail(|| {
            json!({
                "extracted": mode,
                "violations": errors.iter().take(MAX_VIOLATIONS).map(|e| json!({
                    "path": e.instance_path().to_string(),
                    "keyword": e.kind().keyword(),
                    "message": e.to_string(),
                })).collect::<Vec<_>>(),
                "violation_count": errors.len(),
            })
        });
        Outcome::ok(reward)
    }
}

/// The fraction of the root's required properties present with no violation inside them; 0
/// when something is wrong with the root itself.
fn partial(doc: &Doc, required: &[String], errors: &[jsonschema::ValidationError]) -> f64 {
    let obj = doc.root();
    if !obj.is_object() {
        return 0.0;
    }
    if required.is_empty() {
        return 0.0;
    }
    let mut bad = std::collections::HashSet::<&str>::default();
    for e in errors {
        let path = e.instance_path().to_string();
        match (path.as_str(), e.kind()) {
            ("", ValidationErrorKind::Required { .. }) => {}
            ("", _) => return 0.0,
            (p, _) => {
                let first = p[1..].split('/').next().unwrap_or("");
                if let Some(name) = required.iter().find(|r| escape(r) == first) {
                    bad.insert(name);
                }
            }
        }
    }
    let good = required
        .iter()
        .filter(|r| obj.member(r).is_some() && !bad.contains(r.as_str()))
        .count();
    good as f64 / required.len() as f64
}

/// A property name as one JSON-pointer segment.
fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['~', '/']) {
        s.replace('~', "~0").replace('/', "~1").into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;

    fn score(spec: &Value, out: &str, item: Value) -> (Option<f64>, String) {
        let p = Program::compile(spec).unwrap();
        let r = p.score(&Sample::new(out, item));
        (r.reward, r.status.as_str().to_string())
    }

    #[test]
    fn require_all_walks_schema_keywords_only() {
        let mut s = json!({
            "type": "object",
            "properties": {"properties": {"type": "object", "properties": {"x": {}}}, "b": {}},
            "$defs": {"d": {"properties": {"y": {}}}},
            "enum": [{"properties": {}}],
        });
        require_all_properties(&mut s);
        assert_eq!(s["required"], json!(["properties", "b"]));
        assert_eq!(s["properties"]["properties"]["required"], json!(["x"]));
        assert!(s["properties"].get("required").is_none());
        assert_eq!(s["$defs"]["d"]["required"], json!(["y"]));
        assert!(s["enum"][0].get("required").is_none());
    }

    #[test]
    fn wrappers_unwrap() {
        let inner = json!({"type": "object"});
        assert_eq!(
            unwrap_response_format(
                json!({"type": "json_schema", "json_schema": {"name": "x", "schema": inner, "strict": true}})
            ),
            inner
        );
        assert_eq!(
            unwrap_response_format(json!({"name": "x", "schema": inner})),
            inner
        );
        // A schema that merely has a property called `schema` stays as it is.
        let s = json!({"type": "object", "properties": {"schema": {"type": "object"}}});
        assert_eq!(unwrap_response_format(s.clone()), s);
    }

    #[test]
    fn schemas_sharing_a_fingerprint_keep_their_own_validators() {
        let spec = json!({"type": "json_schema", "require_all": false});
        let p = Program::compile(&spec).unwrap();
        let schema = |max: u64| json!({"type": "object", "properties": {"a": {"type": "integer", "maximum": max}}});
        let key = |v: &Value| {
            let mut h = foldhash::fast::FixedState::default().build_hasher();
            fingerprint(v, &mut h);
            h.finish()
        };
        assert_eq!(key(&schema(1)), key(&schema(5)));
        assert!(!Flat::of(&schema(1)).matches(&schema(5)));
        assert!(Flat::of(&schema(1)).matches(&schema(1)));
        assert!(!Flat::of(&json!([1])).matches(&json!([1, 1])));
        assert!(!Flat::of(&json!({"a": "bc"})).matches(&json!({"ab": "c"})));
        for _ in 0..2 {
            for max in 0..(BUCKET_MAX as u64 + 3) {
                for a in [max, max + 1] {
                    let r = p.score(&Sample::new(
                        format!("{{\"a\": {a}}}"),
                        json!({"schema": schema(max)}),
                    ));
                    assert_eq!(
                        r.reward,
                        Some(if a <= max { 1.0 } else { 0.0 }),
                        "{max} {a}"
                    );
                }
            }
        }
        // Key order and number spelling are part of the identity: never a wrong hit.
        let ab = json!({"properties": {"a": {}, "b": {}}});
        let ba = json!({"properties": {"b": {}, "a": {}}});
        assert!(!Flat::of(&ab).matches(&ba));
        assert!(!Flat::of(&json!({"maximum": 1})).matches(&json!({"maximum": 1.0})));
    }

    /// Rows as the CLI reads them: parsed from text with the digests the program asks for.
    fn rows(p: &Program, lines: &[String]) -> Vec<Sample> {
        let m = crate::input::InputMapping::default().for_program(p);
        lines.iter().map(|l| m.parse_line(l).unwrap()).collect()
    }

    fn line(schema: &str, output: &str) -> String {
        format!(
            r#"{{"item": {{"schema": {schema}}}, "sample": {{"output_text": {}}}}}"#,
            Value::String(output.into())
        )
    }

    #[test]
    fn digested_schemas_that_differ_deep_inside_keep_their_own_validators() {
        let p = Program::compile(&json!({"type": "json_schema", "require_all": false})).unwrap();
        assert_eq!(p.item_digest_fields(), [std::sync::Arc::from("schema")]);
        let deep = |max: u32| {
            format!(
                r#"{{"type": "object", "properties": {{"a": {{"type": "object", "properties": {{"b": {{"type": "array", "items": {{"type": "integer", "maximum": {max}}}}}}}}}}}}}"#
            )
        };
        let out = r#"{"a": {"b": [1, 5]}}"#;
        for _ in 0..3 {
            let lines = [
                line(&deep(5), out),
                line(&deep(4), out),
                line(&deep(50), out),
            ];
            let samples = rows(&p, &lines);
            assert!(samples.iter().all(|s| s.item_digest("schema").is_some()));
            let got: Vec<_> = samples.iter().map(|s| p.score(s).reward).collect();
            assert_eq!(got, [Some(1.0), Some(0.0), Some(1.0)]);
        }
        // Number spelling is part of a digest: `5.0` is another schema (same verdict here).
        let s = &rows(&p, &[line(&deep(4).replace(": 4}", ": 4.0}"), out)])[0];
        assert_eq!(p.score(s).reward, Some(0.0));
    }

    #[test]
    fn equal_schemas_written_differently_validate_alike() {
        let p = Program::compile(&json!({"type": "json_schema"})).unwrap();
        let writings = [
            r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}}"#,
            r#"{ "type" : "object" , "properties" : { "n" : { "type" : "integer" , "minimum" : 2 } } }"#,
            r#"{"properties": {"n": {"minimum": 2, "type": "integer"}}, "type": "object"}"#,
            r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 2.0}}}"#,
            r#"{"type": "object", "properties": {"n": {"type": "integer", "minimum": 2e0}}}"#,
            r#""{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 2}}}""#,
            r#"{"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2}}}}}"#,
        ];
        for _ in 0..2 {
            for w in writings {
                let lines: Vec<String> = [r#"{"n": 3}"#, r#"{"n": 1}"#, "{}", r#"{"n": "3"}"#]
                    .iter()
                    .map(|o| line(w, o))
                    .collect();
                let got: Vec<_> = rows(&p, &lines).iter().map(|s| p.score(s).reward).collect();
                assert_eq!(got, [Some(1.0), Some(0.0), Some(0.0), Some(0.0)], "{w}");
            }
        }
        // A row parsed without digests (Python, the server) meets the same cached schemas.
        let s = Sample::new(
            r#"{"n": 1}"#,
            json!({"schema": serde_json::from_str::<Value>(writings[0]).unwrap()}),
        );
        assert!(s.item_digest("schema").is_none());
        assert_eq!(p.score(&s).reward, Some(0.0));
    }

    /// Every case of the suite and the exploit corpus, scored from a row parsed with digests,
    /// gives the very result (and explanation) it gives from a sample built by hand.
    #[test]
    fn suite_and_exploits_score_alike_through_digests() {
        let root = env!("CARGO_MANIFEST_DIR");
        let mut seen = 0;
        for (file, list) in [
            ("tests/suite/json_schema.yaml", "cases"),
            ("../../fixtures/exploits/json_schema.yaml", "exploits"),
        ] {
            let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
            let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
            for case in doc[list].as_array().unwrap() {
                let Some(output) = case["output"].as_str() else {
                    continue;
                };
                let spec = case.get("spec").unwrap_or(&doc["spec"]);
                let p = Program::compile(spec).unwrap();
                let item = case.get("item").cloned().unwrap_or_else(|| json!({}));
                let plain = Sample::new(output, item.clone());
                let row = json!({"item": item, "sample": {"output_text": output}}).to_string();
                let m = crate::input::InputMapping::default().for_program(&p);
                let digested = m.parse_line(&row).unwrap();
                assert_eq!(p.score(&plain), p.score(&digested), "{case}");
                assert_eq!(p.explain(&plain), p.explain(&digested), "{case}");
                seen += usize::from(digested.item_digest("schema").is_some());
            }
        }
        assert!(
            seen >= 3,
            "only {seen} cases read their schema from the item"
        );
    }

    #[test]
    fn a_bad_digested_schema_is_an_error_every_time() {
        let p = Program::compile(&json!({"type": "json_schema"})).unwrap();
        let lines = [line(r#"{"type": 12}"#, "{}"), line(r#"{"type": 12}"#, "{}")];
        for s in rows(&p, &lines) {
            let r = p.score(&s);
            assert_eq!((r.reward, r.status.as_str()), (None, "error"));
        }
        // Only `{{item.<field>}}` templates ask for a digest.
        let p =
            Program::compile(&json!({"type": "json_schema", "schema": "{{item.a.b}}"})).unwrap();
        assert!(p.item_digest_fields().is_empty());
    }

    #[test]
    fn item_schema_is_cached_and_errors_are_errors() {
        let spec = json!({"type": "json_schema"});
        let item = json!({"schema": {"type": "object", "properties": {"a": {"type": "integer"}}}});
        assert_eq!(score(&spec, r#"{"a": 1}"#, item.clone()).0, Some(1.0));
        assert_eq!(score(&spec, r#"{"a": "1"}"#, item).0, Some(0.0));
        let (r, st) = score(&spec, "{}", json!({}));
        assert_eq!((r, st.as_str()), (None, "error"));
        let (r, st) = score(&spec, "{}", json!({"schema": {"type": 12}}));
        assert_eq!((r, st.as_str()), (None, "error"));
        let (r, _) = score(&spec, "{}", json!({"schema": "{\"type\": \"object\"}"}));
        assert_eq!(r, Some(1.0));
    }
}

/// In-process timing of `Program::score` on the bench rows (`benches/json_schema/compare.py`
/// writes them): steadier than the CLI's wall-time differences on a shared machine.
/// `cargo test --release -p referee-core --lib json_schema::timing -- --ignored --nocapture`
#[cfg(test)]
mod timing {
    use crate::input::InputMapping;
    use crate::sample::Sample;
    use crate::Program;
    use std::time::Instant;

    #[test]
    #[ignore = "a measurement, not a test"]
    fn score_rows() {
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../benches/data/");
        let read = |f: &str| std::fs::read_to_string(format!("{data}{f}"));
        for (scenario, spec) in [
            ("inline", read("json_schema_inline.yaml")),
            ("item", read("../json_schema/spec.yaml")),
        ] {
            let (Ok(spec), Ok(rows)) = (spec, read(&format!("json_schema_{scenario}_rows.jsonl")))
            else {
                eprintln!("no bench rows: run benches/json_schema/compare.py first");
                return;
            };
            let p = Program::compile_str(&spec).unwrap();
            let m = InputMapping::default().for_program(&p);
            let lines: Vec<_> = rows.lines().collect();
            let mut best = f64::MAX;
            for _ in 0..15 {
                // Each row freshly parsed, untimed, as the CLI parses it just before scoring:
                // walking 20,000 rows left cold in memory would time cache misses instead.
                let mut spent = std::time::Duration::ZERO;
                for l in &lines {
                    let s: Sample = m.parse_line(l).unwrap();
                    let t = Instant::now();
                    std::hint::black_box(p.score(&s));
                    spent += t.elapsed();
                }
                best = best.min(spent.as_secs_f64() / lines.len() as f64);
            }
            eprintln!("{scenario}: {:.3} us/row (best of 15)", best * 1e6);
        }
    }
}
