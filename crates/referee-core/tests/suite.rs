//! Runs every `tests/suite/<type>.yaml`: `{spec, cases: [{name, spec?, output|row, item, expect}],
//! compile_errors: [{spec, errors: [substring, ...]}]}`. Also checks that every registered type
//! has a suite and that every documented example compiles.

mod common;

use common::{check, compile_case, env_for, sample_of, yaml_docs};
use referee_core::registry::COMPONENTS;
use referee_core::Program;
use serde_json::Value;
use std::path::PathBuf;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/suite")
}

#[test]
fn every_suite_passes() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for (file, doc) in yaml_docs(&suite_dir()) {
        let default_spec = doc.get("spec");
        for (i, case) in doc
            .get("cases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            cases += 1;
            let name = case
                .get("name")
                .and_then(Value::as_str)
                .map_or_else(|| format!("#{i}"), str::to_string);
            let spec = case
                .get("spec")
                .or(default_spec)
                .unwrap_or_else(|| panic!("{file} {name}: no spec"));
            let program = compile_case(spec, case.get("judge").or(doc.get("judge")));
            let sample = sample_of(case);
            let r = program.explain(&sample);
            let expect = case
                .get("expect")
                .unwrap_or_else(|| panic!("{file} {name}: no expect"));
            for b in check(&r, expect) {
                failures.push(format!(
                    "{file} {name}: {b}\n    trace: {}",
                    serde_json::to_string(&r.trace).unwrap()
                ));
            }
        }
        for (i, case) in doc
            .get("compile_errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            cases += 1;
            let spec = case.get("spec").expect("compile_errors case needs spec");
            match Program::compile_with(spec, env_for(case.get("judge").or(doc.get("judge")))) {
                Ok(_) => failures.push(format!(
                    "{file} compile_errors #{i}: compiled, expected errors"
                )),
                Err(e) => {
                    let text = e.to_string();
                    for want in case
                        .get("errors")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let want = want.as_str().unwrap();
                        if !text.contains(want) {
                            failures.push(format!(
                                "{file} compile_errors #{i}: missing `{want}` in\n{text}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(cases > 0, "no suite cases found");
    assert!(
        failures.is_empty(),
        "{} of {cases} suite cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_component_has_a_suite() {
    let code_suites = yaml_docs(&suite_dir().join("../../../../fixtures/code/suite"));
    for c in COMPONENTS {
        if referee_core::registry::SANDBOXED.contains(&c.type_name) {
            assert!(
                code_suites
                    .iter()
                    .any(|(_, d)| d["spec"]["type"] == c.type_name),
                "no suite in fixtures/code/suite for {}",
                c.type_name
            );
            continue;
        }
        let p = suite_dir().join(format!("{}.yaml", c.type_name));
        assert!(p.exists(), "missing suite file {}", p.display());
    }
}

#[test]
fn every_documented_example_compiles() {
    for c in COMPONENTS {
        let ex = c
            .example()
            .unwrap_or_else(|| panic!("{}: doc has no yaml example", c.type_name));
        let v: Value = serde_yaml_ng::from_str(&ex)
            .unwrap_or_else(|e| panic!("{}: example is not YAML: {e}", c.type_name));
        assert_eq!(
            v["type"], c.type_name,
            "{}: example has another type",
            c.type_name
        );
        if let Err(e) = Program::compile_with(&v, env_for(None)) {
            panic!("{}: documented example does not compile:\n{e}", c.type_name);
        }
        for section in [
            "*What it scores:*",
            "*Spec:*",
            "*Example:*",
            "*Score and failure modes:*",
        ] {
            assert!(
                c.doc().contains(section),
                "{}: doc lacks {section}",
                c.type_name
            );
        }
    }
}
