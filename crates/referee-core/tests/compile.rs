//! Compile-time safety: hostile or broken spec files give errors, never crashes or hangs.

use referee_core::Program;
use serde_json::{json, Value};

fn errors(spec: &Value) -> String {
    match Program::compile(spec) {
        Ok(_) => panic!("compiled: {spec}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn nesting_past_the_limit_is_an_error_not_a_stack_overflow() {
    let mut spec = json!({"type": "const", "value": 1});
    for _ in 0..100 {
        spec = json!({"type": "scale", "grader": spec});
    }
    let e = errors(&spec);
    assert!(e.contains("nests deeper than 64 levels"), "{e}");
    // 60 levels is fine.
    let mut ok = json!({"type": "const", "value": 1});
    for _ in 0..60 {
        ok = json!({"type": "clamp", "max": 1, "grader": ok});
    }
    assert!(Program::compile(&ok).is_ok());
}

#[test]
fn deeply_nested_text_is_a_parse_error() {
    let deep = "[".repeat(100_000);
    assert!(Program::compile_str(&deep).is_err());
    let deep_yaml = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(Program::compile_str(&deep_yaml).is_err());
}

#[test]
fn yaml_alias_bomb_is_refused() {
    let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\ni: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    let started = std::time::Instant::now();
    assert!(Program::compile_str(bomb).is_err());
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn not_a_grader() {
    for (spec, want) in [
        (json!(3), "expected a grader object"),
        (json!({}), "missing field `type`"),
        (json!({"type": 3}), "`type` must be a string"),
        (
            // `group` is the group stage's section now; a near miss is still caught.
            json!({"grader": {"type": "const", "value": 1}, "stage": {}}),
            "/stage: unknown top-level field `stage`",
        ),
        (
            json!({"grader": {"type": "const", "value": 1}, "description": 3}),
            "/description: expected a string",
        ),
    ] {
        let e = errors(&spec);
        assert!(e.contains(want), "{spec}: {e}");
    }
    let e = Program::compile_str("type: [unclosed")
        .unwrap_err()
        .to_string();
    assert!(e.contains("neither valid JSON nor valid YAML"), "{e}");
}

#[test]
fn every_error_is_reported_once_with_its_path() {
    let spec = json!({
        "type": "all_of",
        "inputs": [
            {"type": "regex", "pattern": "("},
            {"type": "contains", "keywords": []},
            {"type": "string_check", "reference": "{{x.y}}", "operation": "eq", "bogus": 1},
        ],
        "threshold": "high"
    });
    let e = Program::compile(&spec).unwrap_err();
    let paths: Vec<&str> = e.0.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/threshold",
            "/inputs/0/pattern",
            "/inputs/1/keywords",
            "/inputs/2/bogus",
            "/inputs/2/reference"
        ],
        "{e}"
    );
    assert!(e.0.iter().skip(1).all(|e| e.node_type.is_some()));
}

#[test]
fn program_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Program>();
}

#[test]
fn a_literal_math_gold_is_checked_at_compile_time() {
    let e = errors(&json!({"type": "math_equiv", "reference": "\\frac{"}));
    assert!(e.contains("/reference (math_equiv): cannot be read"), "{e}");
    // A template gold is only known per row.
    assert!(
        Program::compile(&json!({"type": "math_equiv", "reference": "{{item.answer}}"})).is_ok()
    );
    assert!(Program::compile(&json!({"type": "math_equiv", "reference": "\\frac{1}{2}"})).is_ok());
}
