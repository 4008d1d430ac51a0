//! The reason list (`src/reason.rs`) against the codes the workspace uses, so it cannot drift.
//!
//! The test reads every Rust file under `crates/` and collects the string literals at the call
//! sites that create a failure:
//! - `Outcome::error("code", ..)`, and any function whose first parameter is named `reason`
//!   (`ScoreResult::input_error`, input's `err`, ifeval's `fail`, eval's `row_err`), and any
//!   closure in the same file whose first parameter is `reason` (the judge client's `err`);
//! - a `reason: "code"` field (`JudgeFailure`, `JobFailure`'s kin, template misses), also as
//!   `reason: if .. { "a" } else { "b" }`;
//! - an `Err(("code", message))` pair, the shape of a reason carried to an `Outcome::error`;
//! - the two `referee_math::Status` names math_equiv reports as reasons (`Status::as_str`).
//!
//! Codes used in library code must be listed, and every listed code must be used there. Tests,
//! benches and the YAML suites (`reason:` expectations, scripted judges' `fail:`) may use only
//! listed codes.

use referee_core::reason::REASONS;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "target") {
                files(&p, ext, out);
            }
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// Where a code was seen: `(file, whether in library code)`.
type Uses = BTreeMap<String, BTreeSet<(String, bool)>>;

fn scan_rust() -> Uses {
    let root = root();
    let mut paths = Vec::new();
    files(&root.join("crates"), "rs", &mut paths);
    paths.sort();
    let sources: Vec<(String, String)> = paths
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().to_string_lossy().to_string();
            // Comment lines are prose (they name codes in backticks, as this file does).
            let text = std::fs::read_to_string(p).unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| {
                    if l.trim_start().starts_with("//") {
                        ""
                    } else {
                        l
                    }
                })
                .collect();
            (rel, code.join("\n"))
        })
        .collect();
    let helper_fn = Regex::new(r"\bfn\s+(\w+)\s*(?:<[^>]*>)?\(\s*reason\s*:").unwrap();
    let helper_closure = Regex::new(r"\blet\s+(\w+)\s*=\s*\|\s*reason\b").unwrap();
    let use_line = Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s[^;]*;").unwrap();
    let helpers: BTreeSet<String> = sources
        .iter()
        .flat_map(|(_, s)| helper_fn.captures_iter(s).map(|c| c[1].to_string()))
        .collect();
    let alt = |names: &BTreeSet<String>| {
        names
            .iter()
            .map(|n| regex::escape(n))
            .collect::<Vec<_>>()
            .join("|")
    };
    // `Outcome::error(..)`, `ScoreResult::input_error(..)` anywhere.
    let qualified = Regex::new(&format!(r#"::(?:{})\(\s*"([^"]*)""#, alt(&helpers))).unwrap();
    let field = Regex::new(r#"\breason:\s*"([^"]*)""#).unwrap();
    let field_if =
        Regex::new(r#"\breason:\s*if\b[^{]*\{\s*"([^"]*)"\s*\}\s*else\s*\{\s*"([^"]*)"\s*\}"#)
            .unwrap();
    let pair = Regex::new(r#"\bErr\(\(\s*"([^"]*)"\s*,"#).unwrap();
    let mut uses = Uses::new();
    for (file, src) in &sources {
        let test_file =
            file.contains("/tests/") || file.contains("/benches/") || file.ends_with("/tests.rs");
        // Inline tests sit at the end of a file, after `#[cfg(test)]`.
        let cut = src.find("#[cfg(test)]").unwrap_or(src.len());
        // Helpers called bare: defined in this file, or imported into it (`use super::err`).
        let mut local: BTreeSet<String> = helper_fn
            .captures_iter(src)
            .chain(helper_closure.captures_iter(src))
            .map(|c| c[1].to_string())
            .collect();
        for u in use_line.find_iter(src) {
            for h in &helpers {
                if Regex::new(&format!(r"\b{}\b", regex::escape(h)))
                    .unwrap()
                    .is_match(u.as_str())
                {
                    local.insert(h.clone());
                }
            }
        }
        let mut res = vec![&qualified, &field, &field_if, &pair];
        let bare;
        if !local.is_empty() {
            bare = Regex::new(&format!(
                r#"(?:^|[^\w:.])(?:{})\(\s*"([^"]*)""#,
                alt(&local)
            ))
            .unwrap();
            res.push(&bare);
        }
        for re in res {
            for c in re.captures_iter(src) {
                let at = c.get(0).unwrap().start();
                for g in c.iter().skip(1).flatten() {
                    uses.entry(g.as_str().to_string())
                        .or_default()
                        .insert((file.clone(), !test_file && at < cut));
                }
            }
        }
    }
    // math_equiv reports a gold it cannot use with the math crate's own status name.
    let math = std::fs::read_to_string(root.join("crates/referee-math/src/lib.rs")).unwrap();
    let equiv = "crates/referee-core/src/components/rule/math_equiv.rs";
    assert!(
        std::fs::read_to_string(root.join(equiv))
            .unwrap()
            .contains("Outcome::error(v.status.as_str()"),
        "{equiv} no longer reports the math status as the reason: update this test"
    );
    for variant in ["UnparseableGold", "TooComplex"] {
        let re = Regex::new(&format!(r#"Status::{variant}\s*=>\s*"([^"]*)""#)).unwrap();
        let code = re
            .captures(&math)
            .unwrap_or_else(|| panic!("referee-math's Status::as_str has no {variant}"))[1]
            .to_string();
        uses.entry(code)
            .or_default()
            .insert(("crates/referee-math/src/lib.rs".into(), true));
    }
    uses
}

#[test]
fn the_reason_list_matches_the_codes_the_workspace_uses() {
    let listed: BTreeSet<&str> = REASONS.iter().map(|r| r.code).collect();
    let uses = scan_rust();
    assert!(
        uses.len() >= 20,
        "found only {} codes: the scan is broken",
        uses.len()
    );
    let mut problems = Vec::new();
    for (code, at) in &uses {
        if !listed.contains(code.as_str()) {
            let files: Vec<&str> = at.iter().map(|(f, _)| f.as_str()).collect();
            problems.push(format!(
                "`{code}` is used but not in src/reason.rs: {}",
                files.join(", ")
            ));
        }
    }
    for code in &listed {
        let reported = uses
            .get(*code)
            .is_some_and(|at| at.iter().any(|(_, lib)| *lib));
        if !reported {
            problems.push(format!(
                "`{code}` is in src/reason.rs but no library code reports it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_suites_expect_only_listed_reasons() {
    let listed: BTreeSet<&str> = REASONS.iter().map(|r| r.code).collect();
    let root = root();
    let mut paths = Vec::new();
    for dir in [
        "crates/referee-core/tests/suite",
        "fixtures/code/suite",
        "fixtures/exploits",
    ] {
        files(&root.join(dir), "yaml", &mut paths);
    }
    assert!(!paths.is_empty());
    let key = Regex::new(r#"\b(?:reason|fail):\s*"?([a-z][a-z0-9_]*)"#).unwrap();
    let mut problems = Vec::new();
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        for c in key.captures_iter(&text) {
            if !listed.contains(&c[1]) {
                problems.push(format!(
                    "{}: `{}` is not a listed reason",
                    p.display(),
                    &c[1]
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
