//! The compiler: spec JSON → node tree, collecting every error with its JSON-pointer path.
//!
//! Each node is checked on its own: common fields (`type`, `name`, `on_error`), then every unknown
//! field (all of them, with suggestions), then the typed fields through serde, then the
//! component's own semantic checks (regexes, templates, formulas). Children are compiled
//! whatever happened to their parent, so one run reports every problem in the file.

use crate::node::{Imp, Meta, Node, SyncComponent};
use crate::registry;
use crate::template::Template;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Specs nest at most this deep; deeper is a compile error rather than a stack overflow.
pub const MAX_DEPTH: usize = 64;

/// One problem in a spec, at a JSON pointer into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompileError {
    pub path: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub node_type: Option<String>,
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        // Multi-line messages (regex carets) stay readable under the path line.
        let msg = self.message.replace('\n', "\n      ");
        match &self.node_type {
            Some(t) => write!(f, "{path} ({t}): {msg}"),
            None => write!(f, "{path}: {msg}"),
        }
    }
}

/// Every problem found in a spec. Never empty.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct CompileErrors(pub Vec<CompileError>);

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(f, "spec has {n} error{}:", if n == 1 { "" } else { "s" })?;
        for e in &self.0 {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

/// Where a node is and what type it has: the context of every error it reports.
#[derive(Debug, Clone)]
pub struct At {
    pub path: String,
    pub kind: &'static str,
}

impl At {
    pub fn field(&self, f: &str) -> String {
        format!("{}/{}", self.path, escape(f))
    }
}

/// Escapes a key for a JSON pointer (RFC 6901).
pub fn escape(key: &str) -> Cow<'_, str> {
    if key.contains(['~', '/']) {
        Cow::Owned(key.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(key)
    }
}

#[derive(Default)]
pub struct Compiler {
    env: crate::exec::Env,
    /// Some node needs its group's other samples (scored in two passes per group, `score::drive::group`).
    grouped: bool,
    errors: Vec<CompileError>,
    /// Component names seen so far, with the path that defined them: names key `components`.
    names: HashMap<String, String>,
    depth: usize,
    /// The judge for this program's model graders, once the `judges:` section is connected.
    judge: Option<Arc<dyn crate::judge::Judge>>,
    /// Endpoint names and their models, for resolving a node's `judge:` / `model:`.
    endpoints: Vec<(String, Option<String>)>,
    /// Why there is no judge (reported once per node that needs one).
    judge_missing: Option<String>,
    /// Some node resolved a judge.
    judged: bool,
    /// Some node gives per-step credit: results carry `step_rewards`.
    dense: bool,
    /// Item fields some node wants digested while rows are parsed (see [`crate::digest`]).
    item_digests: Vec<std::sync::Arc<str>>,
}

/// A model grader's handle on its endpoint, resolved at compile time.
#[derive(Clone)]
pub struct JudgeRef {
    pub judge: Arc<dyn crate::judge::Judge>,
    pub endpoint: Arc<str>,
}

impl Compiler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A compiler whose I/O graders get these executors (DESIGN.md §4).
    pub fn with_env(env: crate::exec::Env) -> Self {
        Compiler {
            env,
            ..Self::default()
        }
    }

    pub fn env(&self) -> &crate::exec::Env {
        &self.env
    }

    /// Marks the program as group-aware: it will be scored a group at a time.
    pub fn needs_group(&mut self) {
        self.grouped = true;
    }

    pub fn grouped(&self) -> bool {
        self.grouped
    }

    /// Marks the program as giving per-step credit: every result carries `step_rewards`.
    pub fn gives_steps(&mut self) {
        self.dense = true;
    }

    pub fn dense(&self) -> bool {
        self.dense
    }

    /// Asks the input layer to digest `item[field]` while it parses each row
    /// ([`crate::Sample::item_digest`]); a node must still work without one.
    pub fn want_item_digest(&mut self, field: &str) {
        if !self.item_digests.iter().any(|f| **f == *field) {
            self.item_digests.push(field.into());
        }
    }

    pub fn item_digests(&self) -> &[std::sync::Arc<str>] {
        &self.item_digests
    }

    /// Connects the spec's `judges:` section (plus the shell's endpoints) before any node is
    /// compiled. `section` is the section's JSON (`None`: no section); `cache` is `judge_cache:`.
    pub fn setup_judges(&mut self, section: Option<&Value>, cache: Option<&Value>) {
        use crate::judge::{CacheConfig, EndpointConfig};
        let mut endpoints = std::collections::BTreeMap::new();
        if let Some(v) = section {
            match v {
                Value::Object(m) => {
                    for (name, cfg) in m {
                        let path = format!("/judges/{}", escape(name));
                        match serde_path_to_error::deserialize::<_, EndpointConfig>(cfg) {
                            Ok(c) => {
                                if !(c.base_url.starts_with("http://")
                                    || c.base_url.starts_with("https://"))
                                {
                                    self.error(
                                        format!("{path}/base_url"),
                                        None,
                                        "expected an http:// or https:// URL",
                                    );
                                }
                                if c.max_concurrency == 0 {
                                    self.error(
                                        format!("{path}/max_concurrency"),
                                        None,
                                        "must be at least 1",
                                    );
                                }
                                endpoints.insert(name.clone(), c);
                            }
                            Err(e) => {
                                let inner = e.path().to_string();
                                let p = if inner == "." {
                                    path
                                } else {
                                    format!("{path}/{}", inner.replace('.', "/"))
                                };
                                self.error(p, None, e.into_inner().to_string());
                            }
                        }
                    }
                }
                other => self.error(
                    "/judges",
                    None,
                    format!(
                        "expected a map from endpoint name to endpoint, found {}",
                        kind_of(other)
                    ),
                ),
            }
        }
        // The shell's endpoints (command-line flags) win over the file's: a flag is how a user
        // points a spec at another server.
        endpoints.extend(self.env.endpoints.clone());
        let mut cache_cfg = CacheConfig::default();
        if let Some(v) = cache {
            match serde_path_to_error::deserialize::<_, CacheConfig>(v) {
                Ok(c) => cache_cfg = c,
                Err(e) => {
                    let inner = e.path().to_string();
                    let p = if inner == "." {
                        "/judge_cache".to_string()
                    } else {
                        format!("/judge_cache/{}", inner.replace('.', "/"))
                    };
                    self.error(p, None, e.into_inner().to_string());
                }
            }
        }
        if let Some(c) = &self.env.judge_cache {
            cache_cfg = c.clone();
        }
        if let Some(j) = self.env.judge.clone() {
            // A judge given directly serves its own endpoints.
            self.endpoints = j.endpoints().into_iter().map(|n| (n, None)).collect();
            self.judge = Some(j);
            return;
        }
        if endpoints.is_empty() {
            self.judge_missing = Some(
                "no judge endpoint: add a `judges:` section to the spec file \
                 (`judges: {default: {base_url: \"http://127.0.0.1:8000/v1\", model: \"...\"}}`) \
                 or give one to the shell (`referee score --judge URL`)"
                    .into(),
            );
            return;
        }
        self.endpoints = endpoints
            .iter()
            .map(|(n, c)| (n.clone(), Some(c.model.clone())))
            .collect();
        match self.env.connect.clone() {
            Some(c) if !self.has_errors() => match c.connect(&endpoints, &cache_cfg) {
                Ok(j) => self.judge = Some(j),
                Err(e) => {
                    self.error("/judges", None, format!("cannot set up the judges: {e}"));
                }
            },
            Some(_) => {}
            None => {
                self.judge_missing = Some(
                    "this shell cannot call judge endpoints (no judge client was given)".into(),
                );
            }
        }
    }

    /// The endpoint a model grader calls: the one its `judge:` names; else one named after, or
    /// serving, its `model:` (OpenAI's field); else `default`; else the only one.
    pub fn judge(
        &mut self,
        at: &At,
        endpoint: Option<&str>,
        model: Option<&str>,
    ) -> Option<JudgeRef> {
        let Some(judge) = self.judge.clone() else {
            if let Some(why) = self.judge_missing.clone() {
                self.err(at, None, why);
            }
            return None;
        };
        let names: Vec<&str> = self.endpoints.iter().map(|(n, _)| n.as_str()).collect();
        let chosen = if let Some(e) = endpoint {
            if !names.contains(&e) {
                self.err(
                    at,
                    Some("judge"),
                    format!(
                        "no judge endpoint `{e}`{}; the spec defines {}",
                        did_you_mean(e, &names),
                        names
                            .iter()
                            .map(|n| format!("`{n}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                return None;
            }
            e.to_string()
        } else if let Some(m) = model.and_then(|m| {
            self.endpoints
                .iter()
                .find(|(n, em)| n == m || em.as_deref() == Some(m))
        }) {
            m.0.clone()
        } else if names.contains(&"default") {
            "default".to_string()
        } else if names.len() == 1 {
            names[0].to_string()
        } else {
            self.err(
                at,
                Some("judge"),
                format!(
                    "several judge endpoints ({}) and none named `default`: say which with `judge:`",
                    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                ),
            );
            return None;
        };
        self.judged = true;
        Some(JudgeRef {
            judge,
            endpoint: chosen.into(),
        })
    }

    /// Whether some node calls a judge.
    pub fn judged(&self) -> bool {
        self.judged
    }

    pub fn into_errors(self) -> Vec<CompileError> {
        self.errors
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    pub fn error(
        &mut self,
        path: impl Into<String>,
        kind: Option<&str>,
        message: impl Into<String>,
    ) {
        self.errors.push(CompileError {
            path: path.into(),
            node_type: kind.map(str::to_string),
            message: message.into(),
        });
    }

    /// Reports an error on a node's field.
    pub fn err(&mut self, at: &At, field: Option<&str>, message: impl Into<String>) {
        let path = match field {
            Some(f) => at.field(f),
            None => at.path.clone(),
        };
        self.error(path, Some(at.kind), message);
    }

    /// Reports an error below a node's field: `sub` is a JSON pointer relative to the node
    /// (`input/0/role`), not escaped.
    pub fn err_in(&mut self, at: &At, sub: &str, message: impl Into<String>) {
        self.error(format!("{}/{sub}", at.path), Some(at.kind), message);
    }

    /// Compiles any node. Returns `None` when it has errors (already recorded).
    pub fn node(&mut self, v: &Value, path: &str) -> Option<Node> {
        self.node_named(v, path, None)
    }

    /// Compiles a node whose component name is given by its parent (the keys of `multi.graders`).
    pub fn node_named(&mut self, v: &Value, path: &str, forced_name: Option<&str>) -> Option<Node> {
        let Some(obj) = v.as_object() else {
            self.error(
                path,
                None,
                format!(
                    "expected a grader object with a `type`, found {}",
                    kind_of(v)
                ),
            );
            return None;
        };
        let Some(ty) = obj.get("type") else {
            self.error(path, None, "missing field `type`");
            return None;
        };
        let Some(ty) = ty.as_str() else {
            self.error(
                format!("{path}/type"),
                None,
                format!("`type` must be a string, found {}", kind_of(ty)),
            );
            return None;
        };
        let Some(info) = registry::find(ty) else {
            let names: Vec<&str> = registry::COMPONENTS.iter().map(|c| c.type_name).collect();
            self.error(
                format!("{path}/type"),
                None,
                format!(
                    "unknown grader type `{ty}`{}; see `referee list`",
                    did_you_mean(ty, &names)
                ),
            );
            return None;
        };
        let at = At {
            path: path.to_string(),
            kind: info.type_name,
        };
        if self.depth >= MAX_DEPTH {
            self.err(
                &at,
                None,
                format!("spec nests deeper than {MAX_DEPTH} levels"),
            );
            return None;
        }
        let mut ok = true;
        let name = match obj.get("name") {
            None | Some(Value::Null) => forced_name.map(Arc::<str>::from),
            Some(Value::String(n)) => Some(Arc::<str>::from(forced_name.unwrap_or(n).trim())),
            Some(other) => {
                self.err(
                    &at,
                    Some("name"),
                    format!("`name` must be a string, found {}", kind_of(other)),
                );
                ok = false;
                None
            }
        };
        if let Some(n) = &name {
            if n.is_empty() {
                self.err(&at, Some("name"), "`name` must not be empty");
                ok = false;
            } else if let Some(prev) = self.names.get(&**n) {
                let prev = prev.clone();
                self.err(&at, Some("name"), format!("duplicate component name `{n}` (also at {prev}); names key the `components` output and must be unique"));
                ok = false;
            } else {
                self.names.insert(n.to_string(), path.to_string());
            }
        }
        let on_error = match obj.get("on_error") {
            None | Some(Value::Null) => None,
            Some(v) => {
                let x = v.as_f64().filter(|x| x.is_finite());
                if x.is_none() {
                    self.err(
                        &at,
                        Some("on_error"),
                        format!("`on_error` must be a finite number, found {}", kind_of(v)),
                    );
                    ok = false;
                }
                x
            }
        };
        self.depth += 1;
        let imp = (info.compile)(v, self, &at);
        self.depth -= 1;
        let imp = imp?;
        let cost = match &imp {
            crate::node::Imp::Async(c) if c.cost().is_some() => c.cost().expect("checked"),
            crate::node::Imp::Async(_) if crate::registry::JUDGED.contains(&info.type_name) => {
                crate::node::Cost::Judge
            }
            crate::node::Imp::Async(_) => crate::node::Cost::Sandbox,
            crate::node::Imp::Sync(c) => c
                .children()
                .iter()
                .map(|n| n.meta.cost)
                .max()
                .unwrap_or(crate::node::Cost::Rule),
        };
        let spreads = match &imp {
            crate::node::Imp::Async(c) => c.spread(),
            crate::node::Imp::Sync(c) => c.spread(),
        };
        let spread = match (&name, spreads) {
            (Some(n), true) => {
                let s = format!("{n}.std");
                if let Some(prev) = self.names.get(&s) {
                    let prev = prev.clone();
                    self.err(&at, Some("name"), format!("the component `{s}` (the spread of `{n}`) is also defined at {prev}; names key the `components` output and must be unique"));
                    ok = false;
                } else {
                    self.names.insert(s.clone(), path.to_string());
                }
                Some(Arc::<str>::from(s))
            }
            _ => None,
        };
        ok.then(|| Node {
            meta: Meta {
                kind: info.type_name,
                path: Arc::from(path),
                name,
                on_error,
                cost,
                spread,
            },
            imp,
        })
    }

    /// Deserializes a node's own fields into its spec type, reporting every unknown field and
    /// the first type error (serde stops there) with its exact path.
    pub fn spec<T: DeserializeOwned + JsonSchema>(&mut self, v: &Value, at: &At) -> Option<T> {
        let obj = v.as_object()?;
        let clean = self.known_fields(obj, &field_names::<T>(), at);
        self.typed::<T>(clean, obj, at)
    }

    /// [`Compiler::spec`] for a node whose fields are split over two types: its own (`T`) and a
    /// set it shares with other types (`U`, e.g. the judge fields of every model grader), since
    /// `#[serde(flatten)]` does not work with `deny_unknown_fields`.
    pub fn spec_pair<T, U>(&mut self, v: &Value, at: &At) -> Option<(T, U)>
    where
        T: DeserializeOwned + JsonSchema,
        U: DeserializeOwned + JsonSchema,
    {
        let obj = v.as_object()?;
        let (own, shared) = (field_names::<T>(), field_names::<U>());
        let all: Vec<String> = own.iter().chain(&shared).cloned().collect();
        let mut clean = self.known_fields(obj, &all, at);
        let shared_map: Map<String, Value> = shared
            .iter()
            .filter_map(|k| clean.remove(k).map(|v| (k.clone(), v)))
            .collect();
        let t = self.typed::<T>(clean, obj, at);
        let u = self.typed::<U>(shared_map, obj, at);
        Some((t?, u?))
    }

    /// The node's fields among `allowed` (the common fields left out); every other field is
    /// reported, with suggestions.
    fn known_fields(
        &mut self,
        obj: &Map<String, Value>,
        allowed: &[String],
        at: &At,
    ) -> Map<String, Value> {
        let mut clean = Map::new();
        for (k, val) in obj {
            if COMMON_FIELDS.contains(&k.as_str()) {
                continue;
            }
            if allowed.iter().any(|a| a == k) {
                clean.insert(k.clone(), val.clone());
            } else {
                let mut expected: Vec<&str> = allowed.iter().map(String::as_str).collect();
                expected.extend(COMMON_FIELDS);
                self.err(
                    at,
                    Some(k),
                    format!(
                        "unknown field `{k}`{}; expected one of {}",
                        did_you_mean(k, &expected),
                        expected
                            .iter()
                            .map(|e| format!("`{e}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
        clean
    }

    /// Deserializes fields into `T`, reporting the first type error (serde stops there) with
    /// its exact path.
    fn typed<T: DeserializeOwned + JsonSchema>(
        &mut self,
        clean: Map<String, Value>,
        obj: &Map<String, Value>,
        at: &At,
    ) -> Option<T> {
        match serde_path_to_error::deserialize::<_, T>(Value::Object(clean)) {
            // Unknown fields are already reported; compiling on finds the node's other errors.
            Ok(t) => Some(t),
            Err(e) => {
                let inner = e.path().to_string();
                let path = if inner == "." || inner.is_empty() {
                    at.path.clone()
                } else {
                    format!(
                        "{}/{}",
                        at.path,
                        inner.replace(['.', '['], "/").replace(']', "")
                    )
                };
                self.error(path, Some(at.kind), e.into_inner().to_string());
                // The component will not compile its children, so compile them here, only for
                // their errors: one run reports every problem in the file.
                self.children_for_errors::<T>(obj, at);
                None
            }
        }
    }

    fn children_for_errors<T: JsonSchema>(&mut self, obj: &Map<String, Value>, at: &At) {
        for field in child_fields::<T>() {
            let Some(v) = obj.get(&field) else { continue };
            let base = at.field(&field);
            match v {
                Value::Array(items) => {
                    for (i, c) in items.iter().enumerate() {
                        self.node(c, &format!("{base}/{i}"));
                    }
                }
                Value::Object(m) if !m.contains_key("type") => {
                    for (k, c) in m {
                        self.node_named(c, &format!("{base}/{}", escape(k)), Some(k));
                    }
                }
                other => {
                    self.node(other, &base);
                }
            }
        }
    }

    /// Compiles a template field, reporting each problem in it.
    pub fn template(&mut self, src: &str, at: &At, field: &str) -> Option<Template> {
        match Template::parse(src) {
            Ok(t) => Some(t),
            Err(errs) => {
                for e in errs {
                    self.err(at, Some(field), e);
                }
                None
            }
        }
    }

    /// [`Compiler::template`] for a template below a field (`sub` as in [`Compiler::err_in`]).
    pub fn template_in(&mut self, src: &str, at: &At, sub: &str) -> Option<Template> {
        match Template::parse(src) {
            Ok(t) => Some(t),
            Err(errs) => {
                for e in errs {
                    self.err_in(at, sub, e);
                }
                None
            }
        }
    }

    /// Compiles an optional template field, defaulting to `{{sample.output_text}}`.
    pub fn input(&mut self, src: Option<&str>, at: &At) -> Option<Template> {
        match src {
            None => Some(Template::output_text()),
            Some(s) => self.template(s, at, "input"),
        }
    }

    pub fn regex(
        &mut self,
        pattern: &str,
        at: &At,
        field: &str,
        case_insensitive: bool,
    ) -> Option<regex::Regex> {
        match regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .size_limit(1 << 22)
            .build()
        {
            Ok(r) => Some(r),
            Err(e) => {
                self.err(at, Some(field), format!("invalid regex: {e}"));
                None
            }
        }
    }

    /// Compiles a list of child nodes at `field`, keeping going past failed ones.
    pub fn children(&mut self, items: &[Child], at: &At, field: &str) -> Option<Vec<Node>> {
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, c) in items.iter().enumerate() {
            match self.node(&c.0, &format!("{}/{i}", at.field(field))) {
                Some(n) => out.push(n),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    pub fn child(&mut self, c: &Child, at: &At, field: &str) -> Option<Node> {
        self.node(&c.0, &at.field(field))
    }
}

/// Fields every node may carry, handled by the compiler rather than each component.
pub const COMMON_FIELDS: &[&str] = &["type", "name", "on_error"];

fn field_names<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The fields of a spec type that hold child graders (their schema refers to `Node`).
fn child_fields<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::SchemaGenerator::default().into_root_schema_for::<T>();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(_, p)| p.to_string().contains("\"#/$defs/Node\""))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `"; did you mean `x`?"` when a candidate is within a small edit distance, else `""`.
pub fn did_you_mean(word: &str, candidates: &[&str]) -> String {
    let best = candidates
        .iter()
        .map(|c| (levenshtein(word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) && *d < c.len())
        .min_by_key(|(d, _)| *d);
    match best {
        Some((_, c)) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A child grader inside a spec type. Kept as raw JSON so each child is compiled (and its errors
/// reported) on its own path; the JSON Schema refers to the `Node` definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Child(pub Value);

impl JsonSchema for Child {
    fn schema_name() -> Cow<'static, str> {
        "Node".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"$ref": "#/$defs/Node"})
    }
}

/// A number that may also be written as a numeric string (`"0.5"`, `"1e-3"`); anything else is
/// a compile error rather than a silent 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Number(pub f64);

impl JsonSchema for Number {
    fn schema_name() -> Cow<'static, str> {
        "Number".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": ["number", "string"], "description": "a number, or a string that parses as one"})
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let x = match &v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if x.is_finite() => Ok(Number(x)),
            _ => Err(serde::de::Error::custom(format!(
                "expected a finite number, found {} `{}`",
                kind_of(&v),
                v
            ))),
        }
    }
}

/// Helper for components: wraps a sync component into the form the registry returns.
pub fn sync<C: SyncComponent + 'static>(c: C) -> Imp {
    Imp::Sync(Box::new(c))
}

/// Helper for components that wait (sandbox, judges).
pub fn waits<C: crate::node::AsyncComponent + 'static>(c: C) -> Imp {
    Imp::Async(Box::new(c))
}

/// Helper for model graders: the grader, taking `samples:` verdicts when it asks for several.
pub fn judged<C: crate::node::AsyncComponent + 'static>(
    samples: Option<crate::components::judge::samples::Samples>,
    c: C,
) -> Imp {
    crate::components::judge::samples::Samples::imp(samples, Box::new(c))
}
