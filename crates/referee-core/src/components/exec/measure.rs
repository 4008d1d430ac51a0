//! # measure
//! *What it scores:* an artefact the policy produced, measured by a verifier program the spec
//! author wrote: a CAD script's shape against the target (Chamfer distance, IoU), a plan
//! checked by a validator, a molecule's properties, an optimisation's quality ratio. Both run
//! in the sandbox (no network, no host files, hard limits). The policy's program (when there
//! is one) runs first, in its own process; when it has ended, everything it started is killed,
//! and only then are the verifier and the item read and the verifier run, in the same working
//! directory (it reads what the program wrote). The verifier's report travels on a channel the
//! program never held (a descriptor made after it died), so printing a report, writing to the
//! result descriptor, leaving a process behind or planting a module cannot forge it.
//!
//! *Spec:*
//! - `verifier` (Python source, required): reads a JSON object on stdin, `{output, sample,
//!   item, program}` (`output`: the rendered `input`; `sample`: as the `python` grader's;
//!   `program`: how the program ended, `{exit_code, signal, timed_out, output_limit, cpu_ms,
//!   wall_ms, stdout}`, or `null` without one), and **prints its report as its last line**: a
//!   number, or a JSON object of named numbers. `null` (or a named `null`) means there was
//!   nothing to measure: the policy's miss, scored 0.
//! - `input` (template, default `{{sample.output_text}}`): the `output` the verifier gets.
//! - `program` (optional): the policy's code, run first. `input` (template, default
//!   `{{sample.output_text}}`), `extract` (as `code_exec`'s: `auto`, `last_block`,
//!   `first_block`, `none`), `language` (`python`), `stdin` (template), `must_succeed`
//!   (default true: a program that crashes, times out or floods its output scores 0 and the
//!   verifier does not run; false: the verifier runs anyway and sees how it ended).
//! - `metric`: the report's number to score (required when the report names several; the
//!   others are in the trace).
//! - `reward`: how the number becomes the reward: `raw` (default); `{clamp: [lo, hi]}`;
//!   `{ratio: {reference, better: higher|lower, max}}` (value / reference or reference /
//!   value, capped at `max`, default 1, `max: null` for none; `reference` a template giving a
//!   positive number); `{thresholds: {better, steps: [[bound, reward], ...], otherwise}}` (the
//!   first step whose bound the value meets, `otherwise` (0) when none does).
//! - `limits`: as `code_exec`'s (`time` CPU seconds per process, default 10; `wall` seconds
//!   per phase, default 2·time + 1; `memory_mb` 1024; `output_kb` 1024; `processes` 32); the
//!   program and the verifier each get `wall`.
//!
//! *Example:*
//! ```yaml
//! type: measure
//! name: area
//! program: {language: python}
//! verifier: |
//!   import json, sys
//!   data = json.load(sys.stdin)
//!   try:
//!       w, h = (float(x) for x in open("box.txt").read().split())
//!   except (OSError, ValueError):
//!       print("null")
//!   else:
//!       print(json.dumps({"error": abs(w * h - data["item"]["area"])}))
//! metric: error
//! reward: {thresholds: {better: lower, steps: [[0.01, 1.0], [0.5, 0.5]]}}
//! ```
//!
//! *Score and failure modes:* the mapped number. The policy's misses score 0 with status ok
//! and a note: no code block, code that does not compile, a program that fails (with
//! `must_succeed`), a report of `null`, a negative measurement for a ratio. The verifier is
//! the spec author's code, so its failures are errors, never a 0 (`verifier_failed`): it
//! raised or exited non-zero, ran out of time or memory, printed no report, or a report that
//! is not a number or object of numbers, is NaN or infinite, or lacks `metric`. Write the
//! verifier to treat the artefact as hostile and print `null` for what it cannot measure. A
//! ratio's reference that is not a positive number is `unparseable_reference`. No sandbox:
//! `sandbox_unavailable`.

use super::code_exec::{extract_code, Extract, LimitDefaults, LimitsSpec};
use crate::compile::{waits, At, Compiler};
use crate::components::openai::python::sample_json;
use crate::exec::{BoxFuture, Job, Limits, Run, RunEnd, RunOutput, Sandbox};
use crate::node::{shorten, AsyncComponent, ScoreCtx};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Code or a verifier longer than this is not run (as `code_exec`).
const MAX_CODE_BYTES: usize = 256 << 10;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    /// The verifier's Python source: reads `{output, sample, item, program}` as JSON on stdin,
    /// prints its report (a number or an object of named numbers) as its last line.
    pub verifier: String,
    /// What the verifier gets as `output` (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    /// The policy's program, run before the verifier.
    #[serde(default)]
    pub program: Option<ProgramSpec>,
    /// The report's number to score (required when it names several).
    #[serde(default)]
    pub metric: Option<String>,
    #[serde(default)]
    pub reward: RewardSpec,
    #[serde(default)]
    pub limits: LimitsSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramSpec {
    /// The completion holding the code (default `{{sample.output_text}}`).
    #[serde(default)]
    pub input: Option<String>,
    #[serde(default)]
    pub extract: Extract,
    /// `python` (the only language a measured program runs in today).
    #[serde(default)]
    pub language: Option<String>,
    /// The program's stdin (template).
    #[serde(default)]
    pub stdin: Option<String>,
    /// A failed program scores 0 without running the verifier (default true).
    #[serde(default)]
    pub must_succeed: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardSpec {
    /// The number as reported.
    #[default]
    Raw,
    /// The number, clamped to `[lo, hi]`.
    Clamp([f64; 2]),
    /// The number relative to the item's reference value.
    Ratio(RatioSpec),
    /// A step function of the number.
    Thresholds(ThresholdsSpec),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RatioSpec {
    /// The item's reference value (template giving a positive number).
    pub reference: String,
    pub better: Better,
    /// The cap (default 1; `null` for none).
    #[serde(default = "one", deserialize_with = "nullable")]
    pub max: Option<f64>,
}

#[allow(clippy::unnecessary_wraps)] // serde's `default` for an `Option` field
fn one() -> Option<f64> {
    Some(1.0)
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsSpec {
    pub better: Better,
    /// `[bound, reward]` pairs, tried in order.
    pub steps: Vec<[f64; 2]>,
    /// The reward when no step is met (default 0).
    #[serde(default)]
    pub otherwise: f64,
}

enum Mapping {
    Raw,
    Clamp(f64, f64),
    Ratio {
        reference: Template,
        better: Better,
        max: Option<f64>,
    },
    Thresholds(ThresholdsSpec),
}

struct Program {
    input: Template,
    extract: Extract,
    stdin: Option<Template>,
    must_succeed: bool,
}

pub struct Measure {
    verifier: Arc<str>,
    input: Template,
    program: Option<Program>,
    metric: Option<String>,
    mapping: Mapping,
    limits: Limits,
    sandbox: Option<Arc<dyn Sandbox>>,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: MeasureSpec = cx.spec(v, at)?;
    let mut ok = true;
    if spec.verifier.trim().is_empty() {
        cx.err(at, Some("verifier"), "the verifier is empty");
        ok = false;
    }
    if spec.verifier.len() > MAX_CODE_BYTES {
        cx.err(at, Some("verifier"), "the verifier is over 256 KiB");
        ok = false;
    }
    let input = cx.input(spec.input.as_deref(), at);
    let program = match &spec.program {
        None => Some(None),
        Some(p) => {
            if let Some(l) = p.language.as_deref() {
                if !matches!(l, "python" | "python3" | "py") {
                    cx.err(
                        at,
                        Some("program"),
                        format!("a measured program runs in python only, not `{l}`"),
                    );
                    ok = false;
                }
            }
            let pin = cx.template_in(
                p.input.as_deref().unwrap_or("{{sample.output_text}}"),
                at,
                "program/input",
            );
            let stdin = match &p.stdin {
                None => Some(None),
                Some(t) => cx.template_in(t, at, "program/stdin").map(Some),
            };
            match (pin, stdin) {
                (Some(input), Some(stdin)) => Some(Some(Program {
                    input,
                    extract: p.extract,
                    stdin,
                    must_succeed: p.must_succeed.unwrap_or(true),
                })),
                _ => None,
            }
        }
    };
    let mapping = match &spec.reward {
        RewardSpec::Raw => Some(Mapping::Raw),
        RewardSpec::Clamp([lo, hi]) => {
            if lo.is_finite() && hi.is_finite() && lo <= hi {
                Some(Mapping::Clamp(*lo, *hi))
            } else {
                cx.err(
                    at,
                    Some("reward"),
                    "`clamp` needs two finite bounds, low first",
                );
                None
            }
        }
        RewardSpec::Ratio(r) => {
            if r.max.is_some_and(|m| !m.is_finite() || m <= 0.0) {
                cx.err(at, Some("reward"), "`ratio.max` must be a positive number");
                None
            } else {
                cx.template_in(&r.reference, at, "reward/ratio/reference")
                    .map(|reference| Mapping::Ratio {
                        reference,
                        better: r.better,
                        max: r.max,
                    })
            }
        }
        RewardSpec::Thresholds(t) => {
            if t.steps.is_empty() {
                cx.err(at, Some("reward"), "`thresholds.steps` is empty");
                None
            } else if !t.otherwise.is_finite() || t.steps.iter().flatten().any(|x| !x.is_finite()) {
                cx.err(at, Some("reward"), "`thresholds` holds a non-finite number");
                None
            } else {
                Some(Mapping::Thresholds(t.clone()))
            }
        }
    };
    if spec.metric.as_deref().is_some_and(str::is_empty) {
        cx.err(at, Some("metric"), "`metric` is empty");
        ok = false;
    }
    let limits = spec.limits.compile(
        cx,
        at,
        LimitDefaults {
            time: 10.0,
            memory_mb: 1024,
            output_kb: 1024,
        },
    );
    if !ok {
        return None;
    }
    Some(waits(Measure {
        verifier: spec.verifier.into(),
        input: input?,
        program: program?,
        metric: spec.metric,
        mapping: mapping?,
        limits: limits?,
        sandbox: cx.env().sandbox.clone(),
    }))
}

/// A verifier's report: one number, or named numbers (`None`: nothing to measure).
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    One(Option<f64>),
    Named(Vec<(String, Option<f64>)>),
}

/// The report in the verifier's last non-blank line; `Err` says why it is not one.
pub fn parse_report(text: &str) -> Result<Report, String> {
    let Some(line) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) else {
        return Err("the verifier printed no report".into());
    };
    let non_finite = |l: &str| {
        let l = l.to_ascii_lowercase();
        ["nan", "inf"].iter().any(|w| l.contains(w))
    };
    let v: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(_) if non_finite(line) => {
            return Err(format!(
                "the verifier reported a number that is not finite: {}",
                shorten(line)
            ))
        }
        Err(_) => {
            return Err(format!(
                "the verifier's last line is not a number or a JSON object of numbers: {}",
                shorten(line)
            ))
        }
    };
    let num = |v: &Value| -> Result<Option<f64>, String> {
        match v {
            Value::Null => Ok(None),
            Value::Number(n) => n
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| "the verifier reported a number that is not finite".into()),
            other => Err(format!(
                "the verifier reported {}, not a number",
                shorten(&other.to_string())
            )),
        }
    };
    match &v {
        Value::Object(m) if m.is_empty() => Err("the verifier's report names no number".into()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| num(v).map(|x| (k.clone(), x)))
            .collect::<Result<_, _>>()
            .map(Report::Named),
        other => num(other).map(Report::One),
    }
}

/// `value` mapped to the reward; `Err` is a note: the policy's miss, scored 0.
fn map_ratio(value: f64, reference: f64, better: Better, max: Option<f64>) -> Result<f64, String> {
    if value < 0.0 {
        return Err(format!(
            "scored 0: the measurement {value} is negative, and a ratio needs it ≥ 0"
        ));
    }
    let r = match better {
        Better::Higher => value / reference,
        Better::Lower if value == 0.0 => f64::INFINITY,
        Better::Lower => reference / value,
    };
    Ok(match max {
        Some(m) => r.min(m),
        None if r.is_finite() => r,
        None => {
            return Err(
                "scored 0: a measurement of 0 against `better: lower` has no ratio without `max`"
                    .into(),
            )
        }
    })
}

fn map_thresholds(value: f64, t: &ThresholdsSpec) -> f64 {
    t.steps
        .iter()
        .find(|[bound, _]| match t.better {
            Better::Lower => value <= *bound,
            Better::Higher => value >= *bound,
        })
        .map_or(t.otherwise, |[_, r]| *r)
}

/// Why the verifier failed, as the node's error.
fn verifier_failed(why: impl Into<String>) -> Outcome {
    Outcome::error("verifier_failed", why)
}

/// The program's outcome, as the trace shows it (its stdout shortened).
fn program_detail(p: &Value) -> Value {
    let mut p = p.clone();
    if let Some(out) = p.get("stdout").and_then(Value::as_str) {
        p["stdout"] = json!(shorten(out));
    }
    p
}

/// Why a program failed, when it did.
fn program_failure(p: &Value) -> Option<String> {
    if p["timed_out"] == json!(true) {
        return Some("the program ran out of time".into());
    }
    if p["output_limit"] == json!(true) {
        return Some("the program's output hit the limit".into());
    }
    if let Some(sig) = p["signal"].as_i64() {
        return Some(format!("the program was killed by signal {sig}"));
    }
    match p["exit_code"].as_i64() {
        Some(0) => None,
        Some(c) => Some(format!("the program exited with {c}")),
        None => Some("the program did not finish".into()),
    }
}

impl Measure {
    async fn run(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let output = match self.input.render(s) {
            Ok(t) => t.into_owned(),
            Err(m) => return m.outcome(cx),
        };
        let reference = match &self.mapping {
            Mapping::Ratio { reference, .. } => match reference_value(reference, s, cx) {
                Ok(r) => Some(r),
                Err(o) => return o,
            },
            _ => None,
        };
        let Some(sandbox) = &self.sandbox else {
            return Outcome::error(
                "sandbox_unavailable",
                "measure runs in a sandbox and none was given (the CLI, server and Python \
                 package start one on Linux)",
            );
        };
        let (source, stdin, program, must_succeed) = match &self.program {
            None => (String::new(), Vec::new(), false, false),
            Some(p) => {
                let text = match p.input.render(s) {
                    Ok(t) => t,
                    Err(m) => return m.outcome(cx),
                };
                let Some(chosen) = extract_code(p.extract, &text, "python", None) else {
                    cx.note(|| "scored 0: no python code block in the completion".into());
                    cx.detail(|| json!({"program": "no_code"}));
                    return Outcome::ok(0.0);
                };
                if chosen.code.len() > MAX_CODE_BYTES {
                    cx.note(|| "scored 0: the code is over the 256 KiB cap".into());
                    return Outcome::ok(0.0);
                }
                let stdin = match &p.stdin {
                    Some(t) => match t.render(s) {
                        Ok(v) => v.into_owned().into_bytes(),
                        Err(m) => return m.outcome(cx),
                    },
                    None => Vec::new(),
                };
                (chosen.code.to_string(), stdin, true, p.must_succeed)
            }
        };
        let input = json!({"output": output, "sample": sample_json(s), "item": s.item});
        // Each phase gets the wall clock; the run as a whole gets both.
        let mut limits = self.limits.clone();
        let phase_ms = limits.wall_ms;
        if program {
            limits.wall_ms = limits.wall_ms.saturating_mul(2);
        }
        let job = Job {
            language: "python".into(),
            source: source.into(),
            runs: vec![Run::Measure {
                stdin: stdin.into(),
                verifier: self.verifier.clone(),
                input: input.to_string().into(),
                program,
                program_wall_ms: phase_ms,
                must_succeed,
            }],
            limits,
        };
        let out = match sandbox.execute(job).await {
            Ok(mut v) if v.len() == 1 => v.remove(0),
            Ok(_) => return Outcome::error("sandbox_error", "the sandbox returned no run"),
            Err(e) => return e.outcome(),
        };
        self.judge(&out, reference, cx)
    }

    /// The outcome of a run: what the harness wrote on the result channel, read with how the
    /// run ended.
    fn judge(&self, out: &RunOutput, reference: Option<f64>, cx: &mut ScoreCtx) -> Outcome {
        if let RunEnd::SetupFailed(e) = &out.end {
            return Outcome::error("sandbox_error", e.clone());
        }
        let result: Map<String, Value> = match out
            .result
            .as_ref()
            .and_then(|r| serde_json::from_slice(r).ok())
        {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Some(e) = result.get("compile_error") {
            let e = shorten(e.as_str().unwrap_or_default());
            cx.note(|| format!("scored 0: the program does not compile: {e}"));
            cx.detail(|| json!({"program": "compile_error"}));
            return Outcome::ok(0.0);
        }
        let program = result.get("program").cloned().unwrap_or(Value::Null);
        let in_verifier = result.contains_key("phase") || result.contains_key("report");
        let failed = |why: &str| -> Outcome {
            let tail = out.stderr_tail.trim().lines().last().unwrap_or("");
            if tail.is_empty() {
                verifier_failed(why)
            } else {
                verifier_failed(format!("{why}: {}", shorten(tail)))
            }
        };
        let program_flooded = program["output_limit"] == json!(true);
        match &out.end {
            // Once the verifier is running, the program is dead: how the run ended is the
            // verifier's doing.
            RunEnd::Timeout if in_verifier => return failed("the verifier ran out of time"),
            RunEnd::MemoryLimit if in_verifier => return failed("the verifier ran out of memory"),
            RunEnd::Signaled(sig) if in_verifier => {
                return failed(&format!("the verifier was killed by signal {sig}"))
            }
            RunEnd::OutputLimit if in_verifier && !program_flooded => {
                return failed("the verifier's output hit the limit")
            }
            // Before it, only the program ran.
            RunEnd::Timeout | RunEnd::MemoryLimit | RunEnd::OutputLimit | RunEnd::Signaled(_)
                if !in_verifier && self.program.is_some() =>
            {
                let why = match &out.end {
                    RunEnd::Timeout => "ran out of time".to_string(),
                    RunEnd::MemoryLimit => "ran out of memory".to_string(),
                    RunEnd::OutputLimit => "hit the output limit".to_string(),
                    other => format!("ended the run ({other:?})"),
                };
                cx.note(|| format!("scored 0: the program {why}"));
                return Outcome::ok(0.0);
            }
            _ => {}
        }
        let must_succeed = self.program.as_ref().is_some_and(|p| p.must_succeed);
        if must_succeed && !in_verifier {
            let why = program_failure(&program).unwrap_or_else(|| "the program failed".into());
            cx.note(|| format!("scored 0: {why}; the verifier did not run"));
            cx.detail(|| json!({"program": program_detail(&program)}));
            return Outcome::ok(0.0);
        }
        if let Some(e) = result.get("verifier_error") {
            return verifier_failed(shorten(e.as_str().unwrap_or_default()));
        }
        let Some(report_text) = result.get("report").and_then(Value::as_str) else {
            return failed("the verifier ended without a report");
        };
        let report = match parse_report(report_text) {
            Ok(r) => r,
            Err(e) => return verifier_failed(e),
        };
        let (metric, value) = match (&report, &self.metric) {
            // A bare `null` is nothing to measure, whichever number was to be scored.
            (Report::One(v), None) => (None, *v),
            (Report::One(None), Some(m)) => (Some(m.clone()), None),
            (Report::One(Some(_)), Some(m)) => {
                return verifier_failed(format!(
                    "the report is one number, and `metric` asks for `{m}`"
                ))
            }
            (Report::Named(n), None) if n.len() == 1 => (Some(n[0].0.clone()), n[0].1),
            (Report::Named(n), None) => {
                return verifier_failed(format!(
                    "the report names {} numbers and no `metric` says which to score",
                    n.len()
                ))
            }
            (Report::Named(n), Some(m)) => match n.iter().find(|(k, _)| k == m) {
                Some((_, v)) => (Some(m.clone()), *v),
                None => {
                    return verifier_failed(format!(
                        "the report has no `{m}`: {}",
                        shorten(report_text.trim())
                    ))
                }
            },
        };
        let named: Map<String, Value> = match &report {
            Report::One(v) => [("value".to_string(), json!(v))].into_iter().collect(),
            Report::Named(n) => n.iter().map(|(k, v)| (k.clone(), json!(v))).collect(),
        };
        let label = metric.clone().unwrap_or_else(|| "the measurement".into());
        cx.detail(|| {
            let mut d = json!({"report": named});
            if !program.is_null() {
                d["program"] = program_detail(&program);
            }
            d
        });
        let Some(value) = value else {
            cx.note(|| {
                format!("scored 0: the verifier found nothing to measure ({label} is null)")
            });
            return Outcome::ok(0.0);
        };
        let reward = match &self.mapping {
            Mapping::Raw => value,
            Mapping::Clamp(lo, hi) => value.clamp(*lo, *hi),
            Mapping::Ratio { better, max, .. } => {
                match map_ratio(value, reference.unwrap_or(1.0), *better, *max) {
                    Ok(r) => r,
                    Err(why) => {
                        cx.note(|| why);
                        return Outcome::ok(0.0);
                    }
                }
            }
            Mapping::Thresholds(t) => map_thresholds(value, t),
        };
        cx.note(|| {
            if reward == value {
                format!("{label} = {value}")
            } else {
                format!("{label} = {value} → {reward}")
            }
        });
        Outcome::ok(reward)
    }
}

/// The ratio's reference for this item: a positive number.
fn reference_value(t: &Template, s: &Sample, cx: &mut ScoreCtx) -> Result<f64, Outcome> {
    let v = t.render_value(s).map_err(|m| m.outcome(cx))?;
    let x = match &*v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    x.filter(|x| x.is_finite() && *x > 0.0).ok_or_else(|| {
        Outcome::error(
            "unparseable_reference",
            format!(
                "the ratio's reference is not a positive number: {}",
                shorten(&v.to_string())
            ),
        )
    })
}

impl AsyncComponent for Measure {
    fn score<'a>(&'a self, s: &'a Sample, cx: &'a mut ScoreCtx) -> BoxFuture<'a, Outcome> {
        Box::pin(self.run(s, cx))
    }

    fn bounds(&self) -> Option<(f64, f64)> {
        match &self.mapping {
            Mapping::Clamp(lo, hi) => Some((*lo, *hi)),
            Mapping::Ratio { max: Some(m), .. } => Some((0.0, *m)),
            Mapping::Thresholds(t) => {
                let rs = t.steps.iter().map(|s| s[1]).chain([t.otherwise]);
                let lo = rs.clone().fold(f64::INFINITY, f64::min);
                let hi = rs.fold(f64::NEG_INFINITY, f64::max);
                Some((lo.min(0.0), hi.max(0.0)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_read_from_the_last_line() {
        assert_eq!(parse_report("debug\n0.25\n\n"), Ok(Report::One(Some(0.25))));
        assert_eq!(parse_report("null"), Ok(Report::One(None)));
        assert_eq!(
            parse_report(r#"{"chamfer": 0.5, "iou": null}"#),
            Ok(Report::Named(vec![
                ("chamfer".into(), Some(0.5)),
                ("iou".into(), None)
            ]))
        );
        for bad in [
            "",
            "  \n",
            "ok",
            "[1]",
            "\"1\"",
            "{}",
            r#"{"a": "1"}"#,
            "true",
        ] {
            assert!(parse_report(bad).is_err(), "{bad:?}");
        }
        for nf in ["NaN", "Infinity", "-inf", r#"{"a": NaN}"#] {
            let e = parse_report(nf).unwrap_err();
            assert!(e.contains("not finite"), "{nf}: {e}");
        }
    }

    #[test]
    fn ratios_and_steps() {
        assert_eq!(map_ratio(5.0, 10.0, Better::Higher, Some(1.0)), Ok(0.5));
        assert_eq!(map_ratio(20.0, 10.0, Better::Higher, Some(1.0)), Ok(1.0));
        assert_eq!(map_ratio(20.0, 10.0, Better::Higher, None), Ok(2.0));
        assert_eq!(map_ratio(20.0, 10.0, Better::Lower, Some(1.0)), Ok(0.5));
        assert_eq!(map_ratio(0.0, 10.0, Better::Lower, Some(1.0)), Ok(1.0));
        assert!(map_ratio(0.0, 10.0, Better::Lower, None).is_err());
        assert!(map_ratio(-1.0, 10.0, Better::Higher, Some(1.0)).is_err());
        let t = ThresholdsSpec {
            better: Better::Lower,
            steps: vec![[0.01, 1.0], [0.1, 0.5]],
            otherwise: 0.0,
        };
        assert_eq!(map_thresholds(0.005, &t), 1.0);
        assert_eq!(map_thresholds(0.05, &t), 0.5);
        assert_eq!(map_thresholds(0.5, &t), 0.0);
        let h = ThresholdsSpec {
            better: Better::Higher,
            ..t
        };
        assert_eq!(map_thresholds(0.05, &h), 1.0);
        assert_eq!(map_thresholds(0.001, &h), 0.0);
    }
}
