//! The committed JSON Schema must match the one generated from the spec types, and every spec
//! shipped in the repository (examples, suites, exploits) must validate against it.
//! Regenerate with `REFEREE_BLESS=1 cargo test -p referee-core --test schema`.

use referee_core::schema::spec_schema;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn committed_schema_is_fresh() {
    let path = root().join("schema/referee-spec.schema.json");
    let fresh = serde_json::to_string_pretty(&spec_schema()).unwrap() + "\n";
    if std::env::var_os("REFEREE_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "schema/referee-spec.schema.json is stale; regenerate with `REFEREE_BLESS=1 cargo test -p referee-core --test schema` (or `referee schema`)"
    );
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "json")
            && !p.to_string_lossy().ends_with(".schema.json")
        {
            out.push(p);
        }
    }
}

/// Collects the spec values of a suite/exploit file, or the file itself if it is a spec.
fn specs_in(doc: &Value) -> Vec<Value> {
    if doc.get("type").is_some() || doc.get("grader").is_some() {
        return vec![doc.clone()];
    }
    let mut out: Vec<Value> = doc.get("spec").into_iter().cloned().collect();
    for key in ["cases", "exploits"] {
        for c in doc.get(key).and_then(Value::as_array).into_iter().flatten() {
            out.extend(c.get("spec").cloned());
        }
    }
    out
}

#[test]
fn shipped_specs_validate_against_the_schema() {
    let schema = spec_schema();
    let validator = jsonschema::validator_for(&schema).expect("schema is a valid JSON Schema");
    let mut files = Vec::new();
    for d in [
        "examples",
        "fixtures/exploits",
        "crates/referee-core/tests/suite",
        "crates/referee-core/tests/group",
    ] {
        let p = root().join(d);
        if p.exists() {
            yaml_files(&p, &mut files);
        }
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let Ok(doc) = serde_yaml_ng::from_str::<Value>(&text) else {
            continue;
        };
        for spec in specs_in(&doc) {
            checked += 1;
            if let Err(e) = validator.validate(&spec) {
                bad.push(format!("{}: {e}", f.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} specs found");
    assert!(
        bad.is_empty(),
        "{} specs do not validate:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn schema_rejects_what_the_compiler_rejects() {
    let schema = spec_schema();
    let v = jsonschema::validator_for(&schema).unwrap();
    for bad in [
        serde_json::json!({"type": "nope"}),
        serde_json::json!({"type": "const"}),
        serde_json::json!({"type": "const", "value": 1, "extra": 2}),
        serde_json::json!({"type": "gate", "if": {"type": "const", "value": 1}, "then": {"type": "bogus"}}),
        serde_json::json!({"grader": {"type": "const", "value": 1}, "other": 1}),
    ] {
        assert!(!v.is_valid(&bad), "schema accepted {bad}");
    }
    assert!(
        v.is_valid(&serde_json::json!({"type": "const", "value": 1, "name": "x", "on_error": 0}))
    );
}
