//! Test cases for code graders: every dataset shape read into one form, and the comparisons the
//! parent makes (the sandboxed child only reports raw output; it never sees an expected value).

use crate::exec::Run;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;

/// How a test's run is judged.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Compare stdout with this text.
    Stdout(String),
    /// Compare the returned value with this JSON. `unwrap_single`: APPS stores a return value
    /// `v` as `[v]`, so `[v]` also accepts `v`.
    Value { want: Value, unwrap_single: bool },
    /// The harness reports whether the test code passed.
    Passes,
}

#[derive(Debug, Clone)]
pub struct TestCase {
    pub run: Run,
    pub expect: Expect,
    pub weight: Option<f64>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Decided by the shape of the tests.
    #[default]
    Auto,
    Stdio,
    Call,
    Assert,
}

/// Reads the tests value (after template resolution). `Err` is a dataset problem: `bad_tests`.
pub fn parse(
    v: &Value,
    format: Format,
    entry_point: Option<&str>,
    setup: Option<&str>,
) -> Result<Vec<TestCase>, String> {
    let tests = match v {
        Value::String(s) => return parse_string(s, format, entry_point, setup),
        Value::Array(items) => parse_list(items, format, entry_point, setup)?,
        Value::Object(m) => parse_object(m, format, entry_point, setup)?,
        other => {
            return Err(format!(
                "tests must be a list, an object or a string, found {}",
                crate::compile::kind_of(other)
            ))
        }
    };
    if tests.is_empty() {
        return Err("the item has no tests".into());
    }
    Ok(tests)
}

fn parse_string(
    s: &str,
    format: Format,
    entry_point: Option<&str>,
    setup: Option<&str>,
) -> Result<Vec<TestCase>, String> {
    let t = s.trim_start();
    // JSON stored as a string (APPS `input_output`, LiveCodeBench `public_test_cases`).
    if format != Format::Assert && (t.starts_with('[') || t.starts_with('{')) {
        if let Ok(v) = serde_json::from_str::<Value>(t) {
            return parse(&v, format, entry_point, setup);
        }
    }
    if matches!(format, Format::Stdio | Format::Call) {
        return Err(format!(
            "`format: {}` needs a list of tests; the item gives test code",
            if format == Format::Stdio {
                "stdio"
            } else {
                "call"
            }
        ));
    }
    if s.trim().is_empty() {
        return Err("the item's test code is empty".into());
    }
    // HumanEval: `def check(candidate)` called with the entry point.
    let check = s.contains("def check(").then(|| Arc::<str>::from("check"));
    if check.is_some() && entry_point.is_none() {
        return Err("HumanEval-style tests (`def check(candidate)`) need `entry_point`".into());
    }
    Ok(vec![TestCase {
        run: Run::Assert {
            test: s.into(),
            setup: setup.map(Into::into),
            check,
            entry_point: entry_point.map(Into::into),
        },
        expect: Expect::Passes,
        weight: None,
    }])
}

fn parse_list(
    items: &[Value],
    format: Format,
    entry_point: Option<&str>,
    setup: Option<&str>,
) -> Result<Vec<TestCase>, String> {
    let mut out = Vec::with_capacity(items.len());
    for (i, t) in items.iter().enumerate() {
        let bad = |why: &str| format!("test {i}: {why}");
        match t {
            // MBPP `test_list`: one assert statement per test.
            Value::String(code) if format != Format::Stdio && format != Format::Call => {
                out.push(TestCase {
                    run: Run::Assert {
                        test: code.as_str().into(),
                        setup: setup.map(Into::into),
                        check: None,
                        entry_point: entry_point.map(Into::into),
                    },
                    expect: Expect::Passes,
                    weight: None,
                });
            }
            Value::Object(m) => {
                let weight = match m.get("weight") {
                    None | Some(Value::Null) => None,
                    Some(w) => Some(
                        w.as_f64()
                            .filter(|w| w.is_finite() && *w >= 0.0)
                            .ok_or_else(|| bad("`weight` must be a number ≥ 0"))?,
                    ),
                };
                let functional = m.get("testtype").and_then(Value::as_str) == Some("functional");
                if m.contains_key("args") || m.contains_key("expected") {
                    let ep = entry_point.ok_or_else(|| bad("call tests need `entry_point`"))?;
                    let args = m.get("args").cloned().unwrap_or(Value::Array(vec![]));
                    if !args.is_array() {
                        return Err(bad("`args` must be the list of arguments"));
                    }
                    let want = m
                        .get("expected")
                        .cloned()
                        .ok_or_else(|| bad("a call test needs `expected`"))?;
                    out.push(call(ep, &args, want, false, weight));
                } else if format == Format::Call || (functional && format != Format::Stdio) {
                    // LiveCodeBench functional: newline-separated JSON arguments, JSON output.
                    let ep =
                        entry_point.ok_or_else(|| bad("functional tests need `entry_point`"))?;
                    let input = text_of(m.get("input")).ok_or_else(|| bad("missing `input`"))?;
                    let args: Result<Vec<Value>, _> = input
                        .lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(serde_json::from_str)
                        .collect();
                    let args = args.map_err(|e| bad(&format!("input is not JSON lines: {e}")))?;
                    let output = text_of(m.get("output")).ok_or_else(|| bad("missing `output`"))?;
                    let want = serde_json::from_str(output.trim())
                        .map_err(|e| bad(&format!("output is not JSON: {e}")))?;
                    out.push(call(ep, &Value::Array(args), want, false, weight));
                } else {
                    let input = text_of(m.get("input").or_else(|| m.get("stdin")))
                        .ok_or_else(|| bad("a stdin test needs `input` (a string)"))?;
                    let output = text_of(m.get("output").or_else(|| m.get("stdout")))
                        .ok_or_else(|| bad("a stdin test needs `output` (a string)"))?;
                    out.push(stdio(&input, output, weight));
                }
            }
            other => {
                return Err(bad(&format!(
                    "expected an object, found {}",
                    crate::compile::kind_of(other)
                )))
            }
        }
    }
    Ok(out)
}

fn parse_object(
    m: &serde_json::Map<String, Value>,
    format: Format,
    entry_point: Option<&str>,
    setup: Option<&str>,
) -> Result<Vec<TestCase>, String> {
    // APPS / TACO / verl prime: {inputs, outputs, fn_name?}; CodeContests: {input, output}.
    let (Some(Value::Array(ins)), Some(Value::Array(outs))) = (
        m.get("inputs").or_else(|| m.get("input")),
        m.get("outputs").or_else(|| m.get("output")),
    ) else {
        {
            if let Some(code) = m
                .get("test")
                .or_else(|| m.get("check"))
                .and_then(Value::as_str)
            {
                let ep = m.get("entry_point").and_then(Value::as_str).or(entry_point);
                return parse_string(code, Format::Assert, ep, setup);
            }
            if let Some(Value::Array(cases)) = m.get("cases") {
                let ep = m.get("fn_name").and_then(Value::as_str).or(entry_point);
                return parse_list(cases, format, ep, setup);
            }
            return Err(
                "tests object must hold `inputs` and `outputs` lists (APPS), `test` code \
                 (HumanEval) or `cases`"
                    .into(),
            );
        }
    };
    if ins.len() != outs.len() {
        return Err(format!("{} inputs but {} outputs", ins.len(), outs.len()));
    }
    let fn_name = m
        .get("fn_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or(if format == Format::Call {
            entry_point
        } else {
            None
        });
    let mut out = Vec::with_capacity(ins.len());
    for (i, (input, output)) in ins.iter().zip(outs).enumerate() {
        if let Some(f) = fn_name {
            if format == Format::Stdio {
                return Err("`format: stdio` but the tests name a function (`fn_name`)".into());
            }
            let args = match input {
                Value::Array(_) => input.clone(),
                other => Value::Array(vec![other.clone()]),
            };
            out.push(call(f, &args, output.clone(), true, None));
        } else {
            let input = text_of(Some(input))
                .ok_or_else(|| format!("test {i}: input must be text (or a list of lines)"))?;
            let output = text_of(Some(output))
                .ok_or_else(|| format!("test {i}: output must be text (or a list of lines)"))?;
            out.push(stdio(&input, output, None));
        }
    }
    Ok(out)
}

/// Text, or a list of lines (TACO writes some inputs that way).
fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Array(lines) if lines.iter().all(Value::is_string) => Some(
            lines
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn stdio(input: &str, output: String, weight: Option<f64>) -> TestCase {
    TestCase {
        run: Run::Stdio {
            stdin: Arc::from(input.as_bytes()),
        },
        expect: Expect::Stdout(output),
        weight,
    }
}

fn call(ep: &str, args: &Value, want: Value, unwrap_single: bool, weight: Option<f64>) -> TestCase {
    TestCase {
        run: Run::Call {
            entry_point: ep.into(),
            args: args.to_string().into(),
        },
        expect: Expect::Value {
            want,
            unwrap_single,
        },
        weight,
    }
}

// -------------------------------------------------------------------------------------------
// Comparisons.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompareMode {
    /// Line by line; trailing whitespace on a line and trailing blank lines do not count.
    #[default]
    Lines,
    /// Whitespace-separated tokens: line breaks and spacing do not count.
    Tokens,
    /// Byte for byte.
    Exact,
}

#[derive(Debug, Clone, Copy)]
pub struct Comparator {
    pub mode: CompareMode,
    /// Tokens that both read as numbers may differ by this much (absolute or relative).
    pub float_tolerance: Option<f64>,
    pub case_sensitive: bool,
}

impl Comparator {
    /// `None` when equal, else where they first differ. Never stops at the shorter output.
    pub fn stdout(&self, want: &str, got: &str) -> Option<String> {
        match self.mode {
            CompareMode::Exact => {
                if want == got {
                    return None;
                }
                let at = want
                    .bytes()
                    .zip(got.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(want.len().min(got.len()));
                Some(format!(
                    "differs at byte {at} (expected {} bytes, got {})",
                    want.len(),
                    got.len()
                ))
            }
            CompareMode::Lines => {
                let w = lines(want);
                let g = lines(got);
                for (i, (a, b)) in w.iter().zip(&g).enumerate() {
                    if !self.line_eq(a, b) {
                        return Some(format!(
                            "line {}: expected `{}`, got `{}`",
                            i + 1,
                            clip(a),
                            clip(b)
                        ));
                    }
                }
                (w.len() != g.len()).then(|| format!("expected {} lines, got {}", w.len(), g.len()))
            }
            CompareMode::Tokens => {
                let w: Vec<&str> = want.split_whitespace().collect();
                let g: Vec<&str> = got.split_whitespace().collect();
                for (i, (a, b)) in w.iter().zip(&g).enumerate() {
                    if !self.token_eq(a, b) {
                        return Some(format!(
                            "token {}: expected `{}`, got `{}`",
                            i + 1,
                            clip(a),
                            clip(b)
                        ));
                    }
                }
                (w.len() != g.len())
                    .then(|| format!("expected {} tokens, got {}", w.len(), g.len()))
            }
        }
    }

    fn line_eq(&self, a: &str, b: &str) -> bool {
        if self.float_tolerance.is_none() {
            return if self.case_sensitive {
                a == b
            } else {
                a.to_lowercase() == b.to_lowercase()
            };
        }
        let x: Vec<&str> = a.split_whitespace().collect();
        let y: Vec<&str> = b.split_whitespace().collect();
        x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| self.token_eq(p, q))
    }

    fn token_eq(&self, a: &str, b: &str) -> bool {
        let same = if self.case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
        };
        if same {
            return true;
        }
        // The tolerance is for floats: an expected integer must be matched exactly.
        let float_literal = a.bytes().any(|c| matches!(c, b'.' | b'e' | b'E'));
        match (self.float_tolerance, number(a), number(b)) {
            (Some(tol), Some(x), Some(y)) if float_literal => close(x, y, tol),
            _ => false,
        }
    }

    /// Structural equality of a returned value (tagged JSON from the harness) and the expected
    /// JSON. Tuples equal lists; a set equals a list with the same elements in any order;
    /// integers are exact; floats within the tolerance (default 1e-9 relative).
    pub fn value(&self, got: &Value, want: &Value) -> bool {
        let tol = self.float_tolerance.unwrap_or(1e-9);
        value_eq(got, want, tol, 0)
    }
}

fn value_eq(got: &Value, want: &Value, tol: f64, depth: usize) -> bool {
    if depth > 256 {
        return false;
    }
    match got {
        Value::Object(m) if m.len() == 1 => {
            let (tag, inner) = m.iter().next().expect("one entry");
            match (tag.as_str(), inner) {
                ("$t", Value::Array(items)) => lists_eq(items, want, tol, depth),
                ("$d", Value::Array(pairs)) => match want {
                    Value::Object(w) => {
                        let mut keys = std::collections::HashSet::new();
                        pairs.len() == w.len()
                            && pairs.iter().all(|p| {
                                let Some([k, v]) = p.as_array().map(Vec::as_slice) else {
                                    return false;
                                };
                                let key = match k {
                                    Value::String(s) => s.clone(),
                                    Value::Number(n) => n.to_string(),
                                    Value::Bool(b) => if *b { "true" } else { "false" }.into(),
                                    Value::Null => "null".into(),
                                    _ => return false,
                                };
                                // `{1: x, "1": x}` must not pass for `{"1": x, "2": y}`.
                                keys.insert(key.clone())
                                    && w.get(&key).is_some_and(|b| value_eq(v, b, tol, depth + 1))
                            })
                    }
                    _ => false,
                },
                ("$b", Value::String(_)) | ("$c", _) => got == want,
                // `$s`: a set equals no JSON value, as in Python a set never equals a list (the
                // dataset cannot write one, and an unordered answer to an ordered question must
                // not pass by luck of iteration order). `$f`: NaN and the infinities, which JSON
                // cannot hold (a string "nan" is a string).
                _ => false,
            }
        }
        Value::Object(_) => false,
        Value::Array(items) => lists_eq(items, want, tol, depth),
        Value::Number(a) => match want {
            Value::Number(b) => numbers_eq(a, b, tol),
            _ => false,
        },
        Value::String(a) => want.as_str() == Some(a.as_str()),
        Value::Bool(a) => want.as_bool() == Some(*a),
        Value::Null => want.is_null(),
    }
}

/// Integers compare exactly, digit for digit however large (serde_json keeps the text of a
/// number); floats within the tolerance; an expected integer takes a float only when equal, as
/// `3 == 3.0` in Python.
fn numbers_eq(a: &serde_json::Number, b: &serde_json::Number, tol: f64) -> bool {
    let int = |n: &serde_json::Number| {
        let t = n.to_string();
        (!t.contains(['.', 'e', 'E'])).then(|| {
            let (neg, digits) = t
                .strip_prefix('-')
                .map_or((false, t.as_str()), |d| (true, d));
            let digits = digits.trim_start_matches('0');
            (neg && !digits.is_empty(), digits.to_string())
        })
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x == y,
        (_, Some(_)) => a.as_f64() == b.as_f64(),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => close(x, y, tol),
            _ => false,
        },
    }
}

/// A list (or tuple) against an expected list: same length, equal element by element.
fn lists_eq(items: &[Value], want: &Value, tol: f64, depth: usize) -> bool {
    match want {
        Value::Array(w) => {
            items.len() == w.len()
                && items
                    .iter()
                    .zip(w)
                    .all(|(a, b)| value_eq(a, b, tol, depth + 1))
        }
        _ => false,
    }
}

fn close(x: f64, y: f64, tol: f64) -> bool {
    x == y || (x - y).abs() <= tol || (x - y).abs() <= tol * y.abs().max(x.abs())
}

fn number(t: &str) -> Option<f64> {
    let ok = t
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    if !ok || !t.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Lines without `\r`, trailing whitespace, or trailing blank lines.
fn lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.split('\n').map(str::trim_end).collect();
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

fn clip(s: &str) -> String {
    crate::node::shorten(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cmp(mode: CompareMode, tol: Option<f64>) -> Comparator {
        Comparator {
            mode,
            float_tolerance: tol,
            case_sensitive: true,
        }
    }

    #[test]
    fn lines_never_stop_at_the_shorter_output() {
        let c = cmp(CompareMode::Lines, None);
        assert_eq!(c.stdout("1\n2\n3\n", "1\n2\n3"), None);
        assert_eq!(c.stdout("1\n2\n3\n", "1  \r\n2\n3\n\n\n"), None);
        assert!(c
            .stdout("1\n2\n3\n", "1\n")
            .unwrap()
            .contains("expected 3 lines, got 1"));
        assert!(c.stdout("1\n", "1\n2\n").is_some());
        assert!(c.stdout("", "x").is_some());
        assert_eq!(c.stdout("", "\n\n"), None);
    }

    #[test]
    fn floats_only_with_a_tolerance() {
        assert!(cmp(CompareMode::Lines, None)
            .stdout("0.5\n", "0.50000001\n")
            .is_some());
        assert_eq!(
            cmp(CompareMode::Lines, Some(1e-6)).stdout("0.5\n", "0.5000000001\n"),
            None
        );
        assert!(cmp(CompareMode::Tokens, Some(1e-6))
            .stdout("0.5", "0.6")
            .is_some());
        assert_eq!(
            cmp(CompareMode::Tokens, None).stdout("1 2\n3", "1\n2 3"),
            None
        );
    }

    #[test]
    fn values_are_structural() {
        let c = cmp(CompareMode::Lines, None);
        assert!(c.value(&json!({"$t": [1, 2]}), &json!([1, 2])));
        assert!(
            !c.value(&json!({"$s": [1, 2]}), &json!([1, 2])),
            "a set is not a list"
        );
        assert!(!c.value(&json!({"$f": "nan"}), &json!("nan")));
        assert!(!c.value(&json!({"$d": [[1, 2], ["1", 2]]}), &json!({"1": 2, "2": 1})));
        let big: Value = serde_json::from_str("265252859812191058636308480000000").unwrap();
        let near: Value = serde_json::from_str("265252859812191058636308480012345").unwrap();
        assert!(
            c.value(&big, &big.clone()) && !c.value(&near, &big),
            "big integers are exact"
        );
        assert!(c.value(&json!(3.0), &json!(3)) && !c.value(&json!(3.000_000_000_1), &json!(3)));
        assert!(c.value(
            &json!({"$d": [["a", 1], [2, [3]]]}),
            &json!({"a": 1, "2": [3]})
        ));
        assert!(!c.value(&json!(true), &json!(1)));
        assert!(!c.value(&json!(1), &json!(1.5)));
        assert!(c.value(&json!(0.1), &json!(0.100_000_000_000_1)));
        assert!(
            !c.value(&json!({"x": 1}), &json!({"x": 1})),
            "untagged objects never come from the harness"
        );
    }

    #[test]
    fn shapes() {
        let apps = json!({"inputs": ["1 2\n"], "outputs": ["3\n"]});
        assert!(matches!(
            parse(&apps, Format::Auto, None, None).unwrap()[0].expect,
            Expect::Stdout(_)
        ));
        let call = json!({"inputs": [[1, 2]], "outputs": [[3]], "fn_name": "add"});
        assert!(matches!(
            parse(&call, Format::Auto, None, None).unwrap()[0].expect,
            Expect::Value {
                unwrap_single: true,
                ..
            }
        ));
        let he = json!("def check(candidate):\n    assert candidate(1) == 2\n");
        assert!(
            parse(&he, Format::Auto, None, None).is_err(),
            "needs an entry point"
        );
        assert_eq!(parse(&he, Format::Auto, Some("f"), None).unwrap().len(), 1);
        let mbpp = json!(["assert f(1) == 2", "assert f(2) == 3"]);
        assert_eq!(parse(&mbpp, Format::Auto, None, None).unwrap().len(), 2);
        let lcb = json!([{"input": "[1, 2]\n3", "output": "[3]", "testtype": "functional"}]);
        let t = parse(&lcb, Format::Auto, Some("f"), None).unwrap();
        assert!(matches!(&t[0].run, Run::Call { args, .. } if &**args == "[[1,2],3]"));
        assert!(parse(&json!([]), Format::Auto, None, None).is_err());
        assert!(parse(
            &json!({"inputs": ["1"], "outputs": []}),
            Format::Auto,
            None,
            None
        )
        .is_err());
    }
}
