//! Python values → JSON values, for anything a trainer passes (DESIGN.md §8.8: converted at the
//! boundary, never rejected).
//!
//! Trainers hand over more than JSON types: verl's `extra_info` holds numpy scalars and arrays
//! (`num_turns` is `np.int32` in its agent loop), verifiers' messages are pydantic models, OmegaConf
//! configs are mappings that are not dicts, tensors turn up in dataset columns. A row that cannot
//! be converted would become an error result for a correct answer, so every value converts:
//! - JSON types as they are; tuples, lists, sets and other sequences → arrays; mappings →
//!   objects, with non-string keys as their `str()`;
//! - numpy scalars and arrays, torch tensors (anything with `tolist()`) → their Python values;
//! - pydantic models (`model_dump()`, v1 `dict()`), dataclasses and named tuples → objects;
//! - NaN and ±inf (no JSON number) → null; bytes → text (invalid UTF-8 replaced);
//! - anything else (and a value nested deeper than [`MAX_DEPTH`], e.g. a cycle) → its `str()`.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple,
};
use serde_json::{Map, Number, Value};

/// Deeper than any real row; a self-containing value stops here instead of recursing forever.
const MAX_DEPTH: usize = 64;

/// `obj` as a JSON value. Never fails: what has no JSON form becomes its `str()`.
pub fn to_value(obj: &Bound<'_, PyAny>) -> Value {
    convert(obj, 0)
}

fn convert(obj: &Bound<'_, PyAny>, depth: usize) -> Value {
    if obj.is_none() {
        return Value::Null;
    }
    if depth > MAX_DEPTH {
        return text_of(obj);
    }
    // Exact JSON types first: the common case, and bool before int (a bool is an int).
    if let Ok(s) = obj.cast::<PyString>() {
        return Value::String(s.to_string_lossy().into_owned());
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Value::Bool(b.is_true());
    }
    if obj.is_instance_of::<PyInt>() {
        return int(obj);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return float(f.value());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            m.insert(key(&k), convert(&v, depth + 1));
        }
        return Value::Object(m);
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return Value::Array(l.iter().map(|v| convert(&v, depth + 1)).collect());
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        // A named tuple keeps its field names.
        if let Ok(fields) = obj.getattr("_fields") {
            if let Ok(names) = fields.extract::<Vec<String>>() {
                if names.len() == t.len() {
                    let m = names
                        .into_iter()
                        .zip(t.iter())
                        .map(|(n, v)| (n, convert(&v, depth + 1)))
                        .collect();
                    return Value::Object(m);
                }
            }
        }
        return Value::Array(t.iter().map(|v| convert(&v, depth + 1)).collect());
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Value::String(String::from_utf8_lossy(b.as_bytes()).into_owned());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Value::String(String::from_utf8_lossy(&b.to_vec()).into_owned());
    }
    if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
        return match obj.try_iter() {
            Ok(it) => Value::Array(it.flatten().map(|v| convert(&v, depth + 1)).collect()),
            Err(_) => text_of(obj),
        };
    }
    // Objects that say how they become plain Python values.
    for (method, kwargs) in [("model_dump", true), ("tolist", false)] {
        if let Some(v) = call_plain(obj, method, kwargs) {
            return convert(&v, depth + 1);
        }
    }
    let py = obj.py();
    if obj.hasattr("__dataclass_fields__").unwrap_or(false)
        && !obj.is_instance_of::<pyo3::types::PyType>()
    {
        if let Ok(d) = py
            .import("dataclasses")
            .and_then(|m| m.getattr("asdict"))
            .and_then(|f| f.call1((obj,)))
        {
            return convert(&d, depth + 1);
        }
    }
    // pydantic v1 (`.dict()` and `__fields__`), after `model_dump` so v2's deprecation is not hit.
    if obj.hasattr("__fields__").unwrap_or(false) {
        if let Some(v) = call_plain(obj, "dict", false) {
            return convert(&v, depth + 1);
        }
    }
    if let Ok(abc) = py.import("collections.abc") {
        if is(obj, &abc, "Mapping") {
            if let Ok(items) = obj
                .call_method0("items")
                .and_then(|i| i.try_iter().map(|i| i.flatten().collect::<Vec<_>>()))
            {
                let mut m = Map::with_capacity(items.len());
                for kv in items {
                    if let Ok((k, v)) = kv.extract::<(Bound<'_, PyAny>, Bound<'_, PyAny>)>() {
                        m.insert(key(&k), convert(&v, depth + 1));
                    }
                }
                return Value::Object(m);
            }
        }
        if is(obj, &abc, "Sequence") {
            if let Ok(it) = obj.try_iter() {
                return Value::Array(it.flatten().map(|v| convert(&v, depth + 1)).collect());
            }
        }
    }
    text_of(obj)
}

fn is(obj: &Bound<'_, PyAny>, abc: &Bound<'_, PyModule>, name: &str) -> bool {
    abc.getattr(name)
        .and_then(|t| obj.is_instance(&t))
        .unwrap_or(false)
}

/// `obj.method()` when it exists and succeeds (`model_dump(mode="json")` for pydantic v2, which
/// turns dates, enums and the like into JSON forms itself).
fn call_plain<'py>(
    obj: &Bound<'py, PyAny>,
    method: &str,
    json_mode: bool,
) -> Option<Bound<'py, PyAny>> {
    let m = obj.getattr(method).ok().filter(PyAnyMethods::is_callable)?;
    if json_mode {
        let kw = PyDict::new(obj.py());
        kw.set_item("mode", "json").ok()?;
        if let Ok(v) = m.call((), Some(&kw)) {
            return Some(v);
        }
    }
    m.call0().ok()
}

fn int(obj: &Bound<'_, PyAny>) -> Value {
    if let Ok(i) = obj.extract::<i64>() {
        return Value::Number(i.into());
    }
    if let Ok(u) = obj.extract::<u64>() {
        return Value::Number(u.into());
    }
    // Beyond 64 bits: the decimal digits, as arbitrary precision keeps them.
    match obj.str() {
        Ok(s) => serde_json::from_str::<Number>(&s.to_string_lossy())
            .map_or_else(|_| text_of(obj), Value::Number),
        Err(_) => Value::Null,
    }
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn key(k: &Bound<'_, PyAny>) -> String {
    match k.cast::<PyString>() {
        Ok(s) => s.to_string_lossy().into_owned(),
        // numpy integer keys and the like: their plain value's text (`3`, not `np.int64(3)`).
        Err(_) => match call_plain(k, "tolist", false) {
            Some(v) => v
                .str()
                .map_or_else(|_| String::new(), |s| s.to_string_lossy().into_owned()),
            None => k
                .str()
                .map_or_else(|_| String::new(), |s| s.to_string_lossy().into_owned()),
        },
    }
}

fn text_of(obj: &Bound<'_, PyAny>) -> Value {
    obj.str().map_or(Value::Null, |s| {
        Value::String(s.to_string_lossy().into_owned())
    })
}
