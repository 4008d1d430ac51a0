//! The labelled suite: every `tests/cases/*.yaml` is a YAML list of
//! `{gold, answer, expect, opts?, why?}` (see the files; semantics in the crate docs).
//!
//! * `expect` is a status code: `correct`, `wrong`, `no_answer`, `unparseable_answer`,
//!   `unparseable_gold`, `too_complex`.
//! * `opts` uses the spec-style names and values of the `math_equiv` grader (`extract: boxed`,
//!   `percent: marker`, `approximate: {significant_digits: 6}`, `extra_units: [apples]`, ...). An unknown
//!   name or value panics with the file and case index.
//! * Inside `gold` and `answer`, `<<repeat N>>text<</repeat>>` expands to `text` repeated `N`
//!   times, for inputs too large to write out (5,000 nested braces, a megabyte of digits).
//!
//! Every case is run; all mismatches are reported together at the end.

use referee_math::{
    AngleUnits, Answer, Approximate, ExtractMode, Gold, GoldForm, IntervalInequality, Options,
    Percent, Unevaluated, UnreducedFractions, Verifier,
};
use serde::Deserialize;
use serde_yaml_ng::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

const MIN_CASES: usize = 500;

const STATUSES: [&str; 6] = [
    "correct",
    "wrong",
    "no_answer",
    "unparseable_answer",
    "unparseable_gold",
    "too_complex",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    gold: String,
    answer: String,
    expect: String,
    #[serde(default)]
    opts: BTreeMap<String, Value>,
    #[serde(default)]
    #[allow(dead_code)]
    why: Option<String>,
}

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// `(file name, cases)` for every `*.yaml` in `tests/cases`, sorted by file name.
fn load_all() -> Vec<(String, Vec<Case>)> {
    let dir = cases_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let cases: Vec<Case> = serde_yaml_ng::from_str(&text)
                .unwrap_or_else(|e| panic!("{name}: not a list of cases: {e}"));
            (name, cases)
        })
        .collect()
}

/// Expands `<<repeat N>>text<</repeat>>` (not nested).
fn expand(s: &str, at: &str) -> String {
    const OPEN: &str = "<<repeat ";
    const CLOSE: &str = "<</repeat>>";
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len()..];
        let gt = after
            .find(">>")
            .unwrap_or_else(|| panic!("{at}: unterminated <<repeat N>>"));
        let n: usize = after[..gt]
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("{at}: bad repeat count {:?}: {e}", &after[..gt]));
        let body = &after[gt + 2..];
        let end = body
            .find(CLOSE)
            .unwrap_or_else(|| panic!("{at}: <<repeat>> without <</repeat>>"));
        out.push_str(&body[..end].repeat(n));
        rest = &body[end + CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

/// Builds [`Options`] from the spec-style `opts` map; panics on an unknown name or value.
fn options(opts: &BTreeMap<String, Value>, at: &str) -> Options {
    let mut o = Options::default();
    for (name, value) in opts {
        let bad = || -> ! { panic!("{at}: unknown value {value:?} for option `{name}`") };
        let word = || value.as_str().unwrap_or_else(|| bad());
        match name.as_str() {
            "extract" => {
                o.extract = match word() {
                    "strict" => ExtractMode::STRICT,
                    "boxed" => ExtractMode::BOXED,
                    "lenient" => ExtractMode::LENIENT,
                    "none" => ExtractMode::Bare,
                    _ => bad(),
                }
            }
            "gold" => {
                o.gold = match word() {
                    "bare" => GoldForm::Bare,
                    "solution" => GoldForm::Solution,
                    _ => bad(),
                }
            }
            "percent" => {
                o.percent = match word() {
                    "either" => Percent::Either,
                    "marker" => Percent::Marker,
                    "fraction" => Percent::Fraction,
                    _ => bad(),
                }
            }
            "interval_inequality" => {
                o.interval_inequality = match word() {
                    "equivalent" => IntervalInequality::Equivalent,
                    "gold_inequality_only" => IntervalInequality::GoldInequalityOnly,
                    "never" => IntervalInequality::Never,
                    _ => bad(),
                }
            }
            "unreduced_fractions" => {
                o.unreduced_fractions = match word() {
                    "accept" => UnreducedFractions::Accept,
                    "reject" => UnreducedFractions::Reject,
                    _ => bad(),
                }
            }
            "angles" => {
                o.angles = match word() {
                    "convert" => AngleUnits::Convert,
                    "marker" => AngleUnits::Marker,
                    _ => bad(),
                }
            }
            "unevaluated" => {
                o.unevaluated = match word() {
                    "reject" => Unevaluated::Reject,
                    "accept" => Unevaluated::Accept,
                    _ => bad(),
                }
            }
            "approximate" => {
                let map = value.as_mapping().unwrap_or_else(|| bad());
                let [(k, v)] = map.iter().collect::<Vec<_>>()[..] else {
                    bad()
                };
                let n = || {
                    v.as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or_else(|| bad())
                };
                o.approximate = match k.as_str().unwrap_or_else(|| bad()) {
                    "significant_digits" => Approximate::SignificantDigits(n()),
                    "decimal_places" => Approximate::DecimalPlaces(n()),
                    "rel_tol" => Approximate::RelTol(v.as_f64().unwrap_or_else(|| bad())),
                    _ => bad(),
                };
            }
            "extra_units" => {
                o.extra_units = value
                    .as_sequence()
                    .unwrap_or_else(|| bad())
                    .iter()
                    .map(|u| u.as_str().unwrap_or_else(|| bad()).to_string())
                    .collect();
            }
            _ => panic!("{at}: unknown option `{name}`"),
        }
    }
    o
}

/// At most `max` chars of `s`, with the total length when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max).collect();
        format!("{head}... ({} bytes)", s.len())
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".to_string())
}

#[test]
fn every_labelled_case_passes() {
    let mut failures = Vec::new();
    let mut total = 0;
    for (file, cases) in load_all() {
        for (i, case) in cases.iter().enumerate() {
            total += 1;
            let at = format!("{file} #{i}");
            assert!(
                STATUSES.contains(&case.expect.as_str()),
                "{at}: unknown expect `{}`",
                case.expect
            );
            let verifier = Verifier::new(options(&case.opts, &at));
            let gold = expand(&case.gold, &at);
            let answer = expand(&case.answer, &at);
            let run = catch_unwind(AssertUnwindSafe(|| {
                verifier.verify(Gold(&gold), Answer(&answer))
            }));
            let (got, detail) = match run {
                Ok(v) => {
                    if v.status.as_str() == case.expect {
                        continue;
                    }
                    (
                        v.status.as_str().to_string(),
                        format!(
                            "{}; extracted {:?}; gold_form {:?}; answer_form {:?}",
                            v.detail,
                            v.extracted,
                            v.gold_form.as_deref().map(|s| shorten(s, 200)),
                            v.answer_form.as_deref().map(|s| shorten(s, 200)),
                        ),
                    )
                }
                Err(p) => ("PANIC".to_string(), panic_text(p.as_ref())),
            };
            let mut line = format!(
                "{at}: expected {}, got {got}\n    gold:   {}\n    answer: {}\n    detail: {}",
                case.expect,
                shorten(&gold, 300),
                shorten(&answer, 300),
                shorten(&detail, 600),
            );
            if !case.opts.is_empty() {
                let _ = write!(line, "\n    opts:   {:?}", case.opts);
            }
            failures.push(line);
        }
    }
    assert!(
        total >= MIN_CASES,
        "only {total} labelled cases, want at least {MIN_CASES}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} labelled cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_case_file_has_cases() {
    let files = load_all();
    assert!(!files.is_empty(), "no case files in tests/cases");
    let empty: Vec<&str> = files
        .iter()
        .filter(|(_, cases)| cases.is_empty())
        .map(|(file, _)| file.as_str())
        .collect();
    for (file, cases) in &files {
        println!("{file}: {}", cases.len());
    }
    assert!(empty.is_empty(), "case files without cases: {empty:?}");
}
