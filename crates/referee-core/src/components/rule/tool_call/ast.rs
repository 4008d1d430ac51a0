//! The matcher: expected calls (BFCL possible answers or plain calls), tool definitions, the
//! BFCL-style checks of one call against one expected call, and the one-to-one matching of call
//! lists. The rules are listed in the `//!` doc of `tool_call.rs`.

use serde_json::{Map, Value};

/// A call the policy made (name and arguments, already parsed).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Map<String, Value>,
}

/// One expected call: the function name and, per parameter, its list of acceptable values
/// (BFCL's possible-answer form; `""` in a list means the parameter may be omitted).
#[derive(Debug, Clone)]
pub struct Expected {
    pub name: String,
    pub params: Map<String, Value>,
}

/// The item's tool definitions: name and `parameters` schema of each.
#[derive(Debug, Default)]
pub struct Tools(Vec<(String, Value)>);

/// How strings are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strings {
    /// BFCL's `standardize_string`: drop spaces and `,./-_*^`, lowercase, `'` → `"`.
    Bfcl,
    Exact,
}

// ---------------------------------------------------------------------------------------------
// Loading the item's data.

/// The expected calls from the item: BFCL `[{"func": {"param": [acceptable, ...]}}]`, plain
/// `[{"name", "arguments"}]` (exact values; `parameters` also accepted; arguments may be a JSON
/// string), or OpenAI `[{"function": {"name", "arguments"}}]`; detected per entry. A JSON string
/// holding any of these is parsed first; a single call need not be in a list.
pub fn load_expected(v: &Value) -> Result<Vec<Expected>, String> {
    let parsed;
    let v = match v {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s)
                .map_err(|e| format!("expected calls are a string that is not JSON: {e}"))?;
            &parsed
        }
        other => other,
    };
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| expected_one(x).map_err(|e| format!("expected call [{i}]: {e}")))
            .collect(),
        Value::Object(_) => Ok(vec![expected_one(v)?]),
        other => Err(format!(
            "expected calls must be a list of calls, found {}",
            crate::compile::kind_of(other)
        )),
    }
}

fn expected_one(v: &Value) -> Result<Expected, String> {
    let Value::Object(o) = v else {
        return Err(format!(
            "a call must be an object, found {}",
            crate::compile::kind_of(v)
        ));
    };
    if let Some(f) = o.get("function").filter(|f| f.is_object()) {
        return plain(f);
    }
    if o.get("name").is_some_and(Value::is_string) {
        return plain(v);
    }
    if o.len() == 1 {
        let (name, params) = o.iter().next().expect("one entry");
        let Value::Object(params) = params else {
            return Err(format!(
                "BFCL answer `{name}` must map parameters to lists of acceptable values"
            ));
        };
        for (k, alts) in params {
            if !alts.is_array() {
                return Err(format!(
                    "BFCL answer `{name}`: parameter `{k}` must be a list of acceptable values, found {}",
                    crate::compile::kind_of(alts)
                ));
            }
        }
        return Ok(Expected {
            name: name.clone(),
            params: params.clone(),
        });
    }
    Err("not a call: expected `{\"name\", \"arguments\"}`, `{\"function\": {...}}` or BFCL `{\"func\": {\"param\": [values]}}`".into())
}

/// A plain call with exact values: each value becomes its only acceptable value.
fn plain(v: &Value) -> Result<Expected, String> {
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("a call needs a non-empty string `name`")?;
    let args = v.get("arguments").or_else(|| v.get("parameters"));
    let args = arguments(args).map_err(|e| format!("`{name}`: {e}"))?;
    Ok(Expected {
        name: name.to_string(),
        params: args
            .into_iter()
            .map(|(k, x)| (k, Value::Array(vec![canon(x)])))
            .collect(),
    })
}

/// An exact value in possible-answer form: objects map each key to a one-element list.
fn canon(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, x)| (k, Value::Array(vec![canon(x)])))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(canon).collect()),
        x => x,
    }
}

/// Call arguments: an object, a JSON string holding an object (OpenAI's `arguments`), or
/// nothing (`null`, `""`, absent: no arguments).
pub fn arguments(v: Option<&Value>) -> Result<Map<String, Value>, String> {
    match v {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Map::new()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(other) => Err(format!(
                "arguments must be an object, found {}",
                crate::compile::kind_of(&other)
            )),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        },
        Some(other) => Err(format!(
            "arguments must be an object, found {}",
            crate::compile::kind_of(other)
        )),
    }
}

impl Tools {
    /// OpenAI tools (`{"type": "function", "function": {name, parameters}}`), OpenAI functions
    /// or BFCL docs (`{name, description, parameters}`), as a list, one object, or a JSON string.
    pub fn load(v: &Value) -> Result<Tools, String> {
        let parsed;
        let v = match v {
            Value::String(s) => {
                parsed = serde_json::from_str::<Value>(s)
                    .map_err(|e| format!("tools are a string that is not JSON: {e}"))?;
                &parsed
            }
            other => other,
        };
        let one = std::slice::from_ref(v);
        let items = match v {
            Value::Array(a) => a.as_slice(),
            Value::Object(_) => one,
            other => {
                return Err(format!(
                    "tools must be a list, found {}",
                    crate::compile::kind_of(other)
                ))
            }
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, t) in items.iter().enumerate() {
            let f = t.get("function").filter(|f| f.is_object()).unwrap_or(t);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("tool [{i}] has no string `name`"))?;
            let params = match f.get("parameters") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(p @ Value::Object(_)) => p.clone(),
                Some(other) => {
                    return Err(format!(
                        "tool `{name}`: `parameters` must be an object, found {}",
                        crate::compile::kind_of(other)
                    ))
                }
            };
            out.push((name.to_string(), params));
        }
        Ok(Tools(out))
    }

    /// The `parameters` schema of a tool called `name` (see [`names_match`]).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| self.0.iter().find(|(n, _)| names_match(n, name)))
            .map(|(_, p)| p)
    }
}

/// A call's name matches an expected (or declared) name when equal, or equal once the dots of
/// the expected name are underscores: BFCL's allowance for APIs that forbid `.` in names.
pub fn names_match(expected: &str, actual: &str) -> bool {
    expected == actual
        || (expected.contains('.')
            && expected.len() == actual.len()
            && expected
                .bytes()
                .zip(actual.bytes())
                .all(|(e, a)| e == a || (e == b'.' && a == b'_')))
}

// ---------------------------------------------------------------------------------------------
// Types.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    Array,
    Dict,
    Null,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::String(_) => Kind::Str,
        Value::Number(n) if is_int(n) => Kind::Int,
        Value::Number(_) => Kind::Float,
        Value::Bool(_) => Kind::Bool,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Dict,
        Value::Null => Kind::Null,
    }
}

/// An integer as JSON writes it: `5`, not `5.0` or `5e0` (as Python's `json.loads` reads them).
fn is_int(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64()
}

/// A declared type name: BFCL's (`dict integer float string array boolean tuple any`), JSON
/// Schema's (`object number null`) and Python's (`str int bool list`). `None` = any value.
fn declared(t: &str) -> Option<Kind> {
    Some(match t {
        "string" | "str" => Kind::Str,
        "integer" | "int" => Kind::Int,
        "float" | "number" | "double" => Kind::Float,
        "boolean" | "bool" => Kind::Bool,
        "array" | "tuple" | "list" => Kind::Array,
        "dict" | "object" => Kind::Dict,
        "null" => Kind::Null,
        _ => return None,
    })
}

/// Whether a value of kind `got` is a `want`: exact, except that an integer is a float.
fn fits(got: Kind, want: Kind) -> bool {
    got == want || (got == Kind::Int && want == Kind::Float)
}

/// The kinds a schema allows; empty = unconstrained (no `type`, `any`, or an unknown name).
fn schema_kinds(schema: &Value) -> Vec<Kind> {
    match schema.get("type") {
        Some(Value::String(t)) => declared(t).into_iter().collect(),
        Some(Value::Array(ts)) => {
            let ks: Vec<Kind> = ts
                .iter()
                .filter_map(Value::as_str)
                .map(declared)
                .collect::<Option<_>>()
                .unwrap_or_default();
            ks
        }
        _ => Vec::new(),
    }
}

/// `additionalProperties` is `true` or a schema.
fn open(schema: &Value) -> bool {
    schema
        .get("additionalProperties")
        .is_some_and(|x| x.as_bool() == Some(true) || x.is_object())
}

/// Whether a value conforms to a parameter schema: its type, recursively through `items` and
/// `properties`. `strict` (schema adherence) also checks `enum` and refuses undeclared keys
/// (unless `additionalProperties` allows them); BFCL's verdict leaves both to the acceptable
/// values.
fn conforms(v: &Value, schema: &Value, strict: bool, at: &str, why: &mut Option<String>) -> bool {
    let kinds = schema_kinds(schema);
    if !kinds.is_empty() && !kinds.iter().any(|k| fits(kind(v), *k)) {
        set(why, || {
            format!(
                "`{at}`: expected {}, got {}",
                type_names(schema),
                kind_name(kind(v))
            )
        });
        return false;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum").filter(|_| strict) {
        if !allowed.iter().any(|a| same(v, a, Strings::Exact)) {
            set(why, || format!("`{at}`: {} is not in the enum", short(v)));
            return false;
        }
    }
    match v {
        Value::Array(items) => match schema.get("items") {
            Some(item_schema) if item_schema.is_object() => items
                .iter()
                .enumerate()
                .all(|(i, x)| conforms(x, item_schema, strict, &format!("{at}[{i}]"), why)),
            _ => true,
        },
        // An object schema that lists its properties allows no others unless it says so.
        Value::Object(m) => match schema.get("properties").and_then(Value::as_object) {
            Some(props) => m.iter().all(|(k, x)| match props.get(k) {
                Some(p) => conforms(x, p, strict, &format!("{at}.{k}"), why),
                None if !strict || open(schema) => true,
                None => {
                    set(why, || format!("`{at}.{k}` is not a declared property"));
                    false
                }
            }),
            None => true,
        },
        _ => true,
    }
}

fn type_names(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(other) => other.to_string(),
        None => "any".into(),
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Str => "string",
        Kind::Int => "integer",
        Kind::Float => "float",
        Kind::Bool => "boolean",
        Kind::Array => "array",
        Kind::Dict => "dict",
        Kind::Null => "null",
    }
}

fn set(why: &mut Option<String>, f: impl FnOnce() -> String) {
    if why.is_none() {
        *why = Some(f());
    }
}

fn short(v: &Value) -> String {
    crate::node::shorten(&v.to_string())
}

// ---------------------------------------------------------------------------------------------
// Values.

/// BFCL's `standardize_string`.
fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

fn num_eq(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    match (a.as_i64(), b.as_i64()) {
        (Some(x), Some(y)) => x == y,
        _ => match (a.as_u64(), b.as_u64()) {
            (Some(x), Some(y)) => x == y,
            _ => a.as_f64().zip(b.as_f64()).is_some_and(|(x, y)| x == y),
        },
    }
}

/// Whether a value equals one acceptable value. Strings compare after normalisation, numbers
/// by value (`5` = `5.0`; types are checked separately), lists element by element in order,
/// objects key by key against acceptable lists (`{"k": [values]}`).
fn same(v: &Value, alt: &Value, strings: Strings) -> bool {
    match (v, alt) {
        (Value::String(a), Value::String(b)) => match strings {
            Strings::Exact => a == b,
            Strings::Bfcl => standardize(a) == standardize(b),
        },
        (Value::Number(a), Value::Number(b)) => num_eq(a, b),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Null, Value::Null) => true,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y, strings))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.iter().all(|(k, x)| {
                b.get(k)
                    .is_some_and(|alts| alternatives(alts).iter().any(|y| same(x, y, strings)))
            }) && b
                .iter()
                .all(|(k, alts)| a.contains_key(k) || omittable(alternatives(alts)))
        }
        _ => false,
    }
}

/// A nested possible answer's acceptable values: its list (BFCL), or a bare value.
fn alternatives(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => std::slice::from_ref(other),
    }
}

fn omittable(alts: &[Value]) -> bool {
    alts.iter().any(|a| a.as_str() == Some(""))
}

/// The type the acceptable values imply (BFCL's `get_possible_answer_type`: the first one that
/// is not the `""` omission marker).
fn answer_kind(alts: &[Value]) -> Option<Kind> {
    alts.iter().find(|a| a.as_str() != Some("")).map(kind)
}

/// BFCL's "variable" rule: an acceptable value that does not have the declared type (a string
/// standing for a variable where an integer is declared, strings where the list's items are
/// declared integers) makes its own type acceptable, but only for that value and with no
/// integer-float promotion. A string then compares exactly, as BFCL compares variables without
/// normalising them.
fn variable(v: &Value, alts: &[Value], schema: &Value, strings: Strings) -> bool {
    alts.iter().any(|alt| {
        alt.as_str() != Some("")
            && kind(v) == kind(alt)
            && !answer_conforms(alt, schema)
            && same(
                v,
                alt,
                if alt.is_string() {
                    Strings::Exact
                } else {
                    strings
                },
            )
    })
}

/// Whether an acceptable value has the declared type (through `items`; objects, held in
/// possible-answer form, count as conforming).
fn answer_conforms(alt: &Value, schema: &Value) -> bool {
    let kinds = schema_kinds(schema);
    if !kinds.is_empty() && !kinds.iter().any(|k| fits(kind(alt), *k)) {
        return false;
    }
    match (alt, schema.get("items")) {
        (Value::Array(xs), Some(items)) if items.is_object() => {
            xs.iter().all(|x| answer_conforms(x, items))
        }
        _ => true,
    }
}

// ---------------------------------------------------------------------------------------------
// One call against one expected call.

/// How well a call matches an expected call of the same name: the fraction of its parameters
/// that are right, over the parameters given plus those that had to be given. 1 exactly when
/// BFCL's `simple_function_checker` accepts the call.
pub fn pair_score(
    e: &Expected,
    a: &Call,
    decl: Option<&Value>,
    strings: Strings,
    mut problems: Option<&mut Vec<String>>,
) -> f64 {
    let props = decl
        .and_then(|d| d.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = decl
        .and_then(|d| d.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut total = 0usize;
    let mut right = 0usize;
    let mut report = |msg: &dyn Fn() -> String| {
        if let Some(p) = problems.as_deref_mut() {
            p.push(msg());
        }
    };
    for (k, v) in &a.args {
        total += 1;
        let Some(Value::Array(alts)) = e.params.get(k) else {
            report(&|| format!("unexpected parameter `{k}`"));
            continue;
        };
        let schema = props.and_then(|p| p.get(k));
        if props.is_some() && schema.is_none() {
            report(&|| format!("parameter `{k}` is not in the tool's definition"));
            continue;
        }
        let mut why = None;
        let typed = match schema {
            Some(s) => {
                if conforms(v, s, false, k, &mut why) {
                    true
                } else if variable(v, alts, s, strings) {
                    right += 1;
                    continue;
                } else {
                    false
                }
            }
            None => match answer_kind(alts) {
                Some(ak) => {
                    let ok = fits(kind(v), ak);
                    if !ok {
                        set(&mut why, || {
                            format!(
                                "`{k}`: expected {}, got {}",
                                kind_name(ak),
                                kind_name(kind(v))
                            )
                        });
                    }
                    ok
                }
                None => true,
            },
        };
        if !typed {
            report(&|| why.clone().unwrap_or_else(|| format!("`{k}`: wrong type")));
            continue;
        }
        if alts.iter().any(|alt| same(v, alt, strings)) {
            right += 1;
        } else {
            report(&|| {
                format!(
                    "`{k}` = {} is not acceptable (expected one of {})",
                    short(v),
                    crate::node::shorten(&Value::Array(alts.clone()).to_string())
                )
            });
        }
    }
    for (k, alts) in &e.params {
        if a.args.contains_key(k) {
            continue;
        }
        if required.contains(&k.as_str()) {
            total += 1;
            report(&|| format!("missing required parameter `{k}`"));
        } else if !omittable(alternatives(alts)) {
            total += 1;
            report(&|| format!("missing parameter `{k}`"));
        }
    }
    for k in &required {
        if !a.args.contains_key(*k) && !e.params.contains_key(*k) {
            total += 1;
            report(&|| format!("missing required parameter `{k}`"));
        }
    }
    if total == 0 {
        1.0
    } else {
        right as f64 / total as f64
    }
}

/// Whether a call adheres to the tool definitions: a defined tool, its required parameters
/// present, no parameter it does not define (unless `additionalProperties` allows), and every
/// value of the declared type and within its `enum`.
pub fn adheres(a: &Call, tools: &Tools) -> Result<(), String> {
    let Some(decl) = tools.get(&a.name) else {
        return Err(format!("`{}` is not a defined tool", a.name));
    };
    if let Some(Value::Array(req)) = decl.get("required") {
        for r in req.iter().filter_map(Value::as_str) {
            if !a.args.contains_key(r) {
                return Err(format!("`{}`: missing required parameter `{r}`", a.name));
            }
        }
    }
    let props = decl.get("properties").and_then(Value::as_object);
    let open = open(decl);
    for (k, v) in &a.args {
        match props.and_then(|p| p.get(k)) {
            Some(schema) => {
                let mut why = None;
                if !conforms(v, schema, true, k, &mut why) {
                    return Err(format!("`{}`: {}", a.name, why.unwrap_or_default()));
                }
            }
            None if open => {}
            None => return Err(format!("`{}`: unknown parameter `{k}`", a.name)),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Matching call lists.

/// Pair scores are integers for the assignment solver; 1e9 keeps 9 digits of a score in [0, 1].
const SCALE: f64 = 1e9;

/// A one-to-one matching of expected calls to actual calls (`pairs[i] = (expected, actual,
/// score)`), only between calls of the same name.
#[derive(Debug, Default)]
pub struct Matching {
    pub pairs: Vec<(usize, usize, f64)>,
}

/// The matching that pairs as many calls as possible and, among those, has the highest total
/// score. Calls pair only within a name, so each name is solved on its own (Kuhn-Munkres on an
/// expected × actual matrix of that name): cheap even for a flood of repeated calls.
pub fn match_any(
    expected: &[Expected],
    actual: &[Option<&Call>],
    score: &dyn Fn(usize, usize) -> f64,
) -> Matching {
    let mut m = Matching::default();
    let mut done = vec![false; expected.len()];
    for i in 0..expected.len() {
        if done[i] {
            continue;
        }
        let name = &expected[i].name;
        let rows: Vec<usize> = (i..expected.len())
            .filter(|&k| !done[k] && expected[k].name == *name)
            .collect();
        for &r in &rows {
            done[r] = true;
        }
        let cols: Vec<usize> = actual
            .iter()
            .enumerate()
            .filter_map(|(j, c)| {
                c.as_ref()
                    .filter(|c| owner(expected, &c.name) == Some(name.as_str()))
                    .map(|_| j)
            })
            .collect();
        if cols.is_empty() {
            continue;
        }
        let s: Vec<Vec<f64>> = rows
            .iter()
            .map(|&r| cols.iter().map(|&c| score(r, c)).collect())
            .collect();
        let transpose = rows.len() > cols.len();
        let (nr, nc) = if transpose {
            (cols.len(), rows.len())
        } else {
            (rows.len(), cols.len())
        };
        let w = pathfinding::matrix::Matrix::from_fn(nr, nc, |(x, y)| {
            let v = if transpose { s[y][x] } else { s[x][y] };
            (v * SCALE).round() as i64
        });
        let (_, assign) = pathfinding::kuhn_munkres::kuhn_munkres(&w);
        for (x, y) in assign.into_iter().enumerate() {
            let (ri, ci) = if transpose { (y, x) } else { (x, y) };
            m.pairs.push((rows[ri], cols[ci], s[ri][ci]));
        }
    }
    m.pairs.sort_by_key(|p| p.0);
    m
}

/// The expected name an actual call's name belongs to: an exact match first, then BFCL's
/// dot-to-underscore allowance.
fn owner<'a>(expected: &'a [Expected], name: &str) -> Option<&'a str> {
    expected
        .iter()
        .find(|e| e.name == name)
        .or_else(|| expected.iter().find(|e| names_match(&e.name, name)))
        .map(|e| e.name.as_str())
}

/// The order-preserving matching with the most pairs and, among those, the highest total score
/// (a weighted longest common subsequence over names).
pub fn match_strict(
    expected: &[Expected],
    actual: &[Option<&Call>],
    score: &dyn Fn(usize, usize) -> f64,
) -> Matching {
    let (n, k) = (expected.len(), actual.len());
    // best[i][j]: (pairs, total score) aligning expected[i..] with actual[j..].
    let mut best = vec![vec![(0usize, 0.0f64); k + 1]; n + 1];
    let mut cache = vec![vec![f64::NAN; k]; n];
    let better = |a: (usize, f64), b: (usize, f64)| a.0 > b.0 || (a.0 == b.0 && a.1 > b.1 + 1e-12);
    for i in (0..n).rev() {
        for j in (0..k).rev() {
            let mut b = best[i + 1][j];
            if better(best[i][j + 1], b) {
                b = best[i][j + 1];
            }
            if let Some(c) = actual[j] {
                if owner(expected, &c.name) == Some(expected[i].name.as_str()) {
                    let s = score(i, j);
                    cache[i][j] = s;
                    let take = (best[i + 1][j + 1].0 + 1, best[i + 1][j + 1].1 + s);
                    if better(take, b) {
                        b = take;
                    }
                }
            }
            best[i][j] = b;
        }
    }
    let mut m = Matching::default();
    let (mut i, mut j) = (0, 0);
    while i < n && j < k {
        let s = cache[i][j];
        if !s.is_nan() && best[i][j] == (best[i + 1][j + 1].0 + 1, best[i + 1][j + 1].1 + s) {
            m.pairs.push((i, j, s));
            i += 1;
            j += 1;
        } else if best[i][j] == best[i + 1][j] {
            i += 1;
        } else {
            j += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(v: &Value) -> Call {
        Call {
            name: v["name"].as_str().unwrap().into(),
            args: v["arguments"].as_object().unwrap().clone(),
        }
    }

    #[test]
    fn standardize_is_bfcl() {
        assert_eq!(standardize("April 1, 2024"), standardize("april 1,2024"));
        assert_eq!(standardize("San-Francisco_CA"), "sanfranciscoca");
        assert_eq!(standardize("it's"), "it\"s");
    }

    #[test]
    fn expected_formats() {
        let b = load_expected(&json!([{"f": {"a": [1, 2], "b": ["", "x"]}}])).unwrap();
        assert_eq!(b[0].name, "f");
        assert_eq!(b[0].params["a"], json!([1, 2]));
        let p = load_expected(&json!([{"name": "f", "arguments": "{\"a\": {\"b\": 1}}"}])).unwrap();
        assert_eq!(p[0].params["a"], json!([{"b": [1]}]));
        let s = load_expected(&json!(
            "[{\"function\": {\"name\": \"g\", \"arguments\": \"{}\"}}]"
        ))
        .unwrap();
        assert_eq!(s[0].name, "g");
        assert!(load_expected(&json!([{"f": {"a": 1}}])).is_err());
        assert!(load_expected(&json!(3)).is_err());
        assert!(load_expected(&json!("not json")).is_err());
    }

    #[test]
    fn int_is_float_but_not_back() {
        let e = load_expected(&json!([{"f": {"x": [2.0]}}])).unwrap();
        let tools = Tools::load(&json!([{"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "float"}}, "required": ["x"]}}])).unwrap();
        let d = tools.get("f");
        let int = call(&json!({"name": "f", "arguments": {"x": 2}}));
        assert_eq!(pair_score(&e[0], &int, d, Strings::Bfcl, None), 1.0);
        let e = load_expected(&json!([{"f": {"x": [2]}}])).unwrap();
        let tools = Tools::load(&json!([{"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}}}])).unwrap();
        let float = call(&json!({"name": "f", "arguments": {"x": 2.0}}));
        assert_eq!(
            pair_score(&e[0], &float, tools.get("f"), Strings::Bfcl, None),
            0.0
        );
        let bool_ = call(&json!({"name": "f", "arguments": {"x": true}}));
        assert_eq!(
            pair_score(&e[0], &bool_, tools.get("f"), Strings::Bfcl, None),
            0.0
        );
    }

    #[test]
    fn matching_is_one_to_one() {
        let e = load_expected(&json!([{"f": {"x": [1]}}, {"f": {"x": [2]}}])).unwrap();
        let calls = [2, 1, 1].map(|x| call(&json!({"name": "f", "arguments": {"x": x}})));
        let a: Vec<Option<&Call>> = calls.iter().map(Some).collect();
        let score =
            |i: usize, j: usize| pair_score(&e[i], a[j].unwrap(), None, Strings::Bfcl, None);
        let m = match_any(&e, &a, &score);
        assert_eq!(m.pairs.len(), 2);
        assert!(m.pairs.iter().all(|p| p.2 == 1.0));
        let s = match_strict(&e, &a, &score);
        assert_eq!(s.pairs.len(), 2);
        // In order, x=1 then x=2 cannot both be right: actual is 2, 1, 1.
        assert!(s.pairs.iter().map(|p| p.2).sum::<f64>() < 2.0);
    }

    #[test]
    fn dotted_names() {
        assert!(names_match("math.factorial", "math_factorial"));
        assert!(!names_match("math_factorial", "math.factorial"));
        assert!(!names_match("a.b", "a_c"));
    }
}
