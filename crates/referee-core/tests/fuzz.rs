//! `audit::fuzz` end to end on real specs and data: the shipped example specs, the deliberately
//! weak specs in `fixtures/fuzz/weak/` (which holes each has), the judge with and without its
//! prefilter (a gullible scripted judge), and the perturbation audits.

use referee_core::audit::fuzz::{corpus::Corpus, fuzz, FuzzOptions, FuzzReport};
use referee_core::exec::Env;
use referee_core::input::InputMapping;
use referee_core::judge::script::ScriptJudge;
use referee_core::program::parse_spec_text;
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rows(path: &str) -> Vec<Sample> {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| InputMapping::default().parse_line(l).ok())
        .collect()
}

fn run_with(spec_path: &str, data: &str, env: Env, opts: &FuzzOptions) -> FuzzReport {
    let text = std::fs::read_to_string(root().join(spec_path)).unwrap();
    let spec = parse_spec_text(&text).unwrap();
    let program = Program::compile_with(&spec, env).unwrap();
    fuzz(
        &program,
        &spec,
        json!(spec_path),
        &rows(data),
        opts,
        Corpus::embedded(),
    )
    .unwrap()
}

fn run(spec_path: &str, data: &str) -> FuzzReport {
    run_with(spec_path, data, Env::default(), &FuzzOptions::default())
}

/// The families with at least one variant that passed.
fn holes(r: &FuzzReport) -> BTreeSet<&str> {
    r.families
        .iter()
        .filter(|f| f.passed > 0)
        .map(|f| f.family.as_str())
        .collect()
}

fn gullible() -> Env {
    let judge = ScriptJudge::from_value(&json!([{"content": "{\"steps\": [{\"description\": \"check\", \"conclusion\": \"perfect\"}], \"result\": 10}"}]))
        .unwrap();
    Env {
        judge: Some(Arc::new(judge)),
        ..Env::default()
    }
}

#[test]
fn rule_based_examples_find_nothing() {
    for (spec, data) in [
        ("examples/gsm8k/spec.yaml", "examples/gsm8k/samples.jsonl"),
        (
            "examples/grpo-group/spec.yaml",
            "examples/gsm8k/samples.jsonl",
        ),
        ("examples/math/spec.yaml", "examples/math/samples.jsonl"),
        (
            "examples/r1-format/spec.yaml",
            "examples/r1-format/samples.jsonl",
        ),
        // The Ray example's spec, on TRL rows of the same shape as its generated Parquet file.
        ("examples/ray/spec.yaml", "examples/r1-format/samples.jsonl"),
        (
            "examples/json_schema/spec.yaml",
            "examples/json_schema/rollouts.jsonl",
        ),
        (
            "examples/openai-multi/grader.json",
            "examples/openai-multi/samples.jsonl",
        ),
        // Rewards that do not read the answer's meaning, with a `guard` in front: IFEval
        // constraints, and the text reply on tool-call rows that need no call.
        (
            "examples/tool_calls/spec.yaml",
            "examples/tool_calls/rollouts.jsonl",
        ),
        (
            "examples/ifeval/spec.yaml",
            "examples/ifeval/rollouts.jsonl",
        ),
        // Agent rollouts: the outcome is the environment's state, gated by the path's rules,
        // the claims' backing, the patch audit and a real reply.
        (
            "examples/agent-booking/spec.yaml",
            "examples/agent-booking/rollouts.jsonl",
        ),
        (
            "examples/agent-support/spec.yaml",
            "examples/agent-support/rollouts.jsonl",
        ),
        (
            "examples/agent-swe/spec.yaml",
            "examples/agent-swe/rollouts.jsonl",
        ),
    ] {
        let r = run(spec, data);
        assert!(
            !r.failed && holes(&r).is_empty(),
            "{spec}: {}",
            serde_json::to_string_pretty(&r).unwrap()
        );
        let total: usize = r.families.iter().map(|f| f.variants).sum();
        assert!(total > 200, "{spec}: only {total} variants");
        let names: Vec<&str> = r.families.iter().map(|f| f.family.as_str()).collect();
        assert!(names.iter().any(|n| n.starts_with("exploits:")), "{spec}");
    }
}

#[test]
fn agent_examples_run_every_trajectory_family() {
    for (spec, data, families) in [
        (
            "examples/agent-booking/spec.yaml",
            "examples/agent-booking/rollouts.jsonl",
            &[
                "tool_spam",
                "fake_tool_results",
                "claim_without_call",
                "answer_only",
            ][..],
        ),
        (
            "examples/agent-swe/spec.yaml",
            "examples/agent-swe/rollouts.jsonl",
            &[
                "tool_spam",
                "fake_tool_results",
                "claim_without_call",
                "answer_only",
                "test_edit",
            ][..],
        ),
    ] {
        let r = run(spec, data);
        for f in families {
            let fam = r.families.iter().find(|x| x.family == *f);
            assert!(
                fam.is_some_and(|x| x.variants > 0),
                "{spec}: {f} made no variant"
            );
        }
    }
}

#[test]
fn weak_agent_specs_have_the_holes_agents_find() {
    let r = run(
        "fixtures/fuzz/weak/agent_says_booked.yaml",
        "examples/agent-booking/rollouts.jsonl",
    );
    assert!(r.failed);
    let h = holes(&r);
    for f in ["fake_tool_results", "claim_without_call", "answer_only"] {
        assert!(h.contains(f), "{f} not found: {h:?}");
    }
    let r = run(
        "fixtures/fuzz/weak/agent_state_only.yaml",
        "examples/agent-booking/rollouts.jsonl",
    );
    assert!(r.failed);
    let h = holes(&r);
    // The path is unbounded, the reply unread, and a task whose right outcome is to change
    // nothing (no free slot) is paid without a single call: the holes a state check leaves.
    for f in [
        "tool_spam",
        "empty",
        "master_key",
        "claim_without_call",
        "answer_only",
    ] {
        assert!(h.contains(f), "{f} not found: {h:?}");
    }
    let spam = r.families.iter().find(|f| f.family == "tool_spam").unwrap();
    assert!(
        spam.examples
            .iter()
            .any(|e| e.id == serde_json::json!("clean")),
        "the spammed clean rollout pays: {spam:?}"
    );
}

#[test]
fn substring_check_holes() {
    let r = run(
        "fixtures/fuzz/weak/substring.yaml",
        "fixtures/fuzz/weak/data.jsonl",
    );
    assert!(r.failed);
    assert_eq!(
        holes(&r),
        BTreeSet::from(["truncated", "answer_listing", "format_correct_wrong"])
    );
    let listing = r
        .families
        .iter()
        .find(|f| f.family == "answer_listing")
        .unwrap();
    assert!(listing.rate > 0.5, "{}", listing.rate);
    assert_eq!(listing.examples.len(), 5);
    assert_eq!(listing.examples[0].status, "ok");
}

#[test]
fn last_number_holes() {
    let r = run(
        "fixtures/fuzz/weak/last_number.yaml",
        "fixtures/fuzz/weak/data.jsonl",
    );
    assert_eq!(
        holes(&r),
        BTreeSet::from(["truncated", "answer_listing", "exploits:numeric"])
    );
    // The final answer replaced: the last number is wrong, so that family finds nothing.
    let f = r
        .families
        .iter()
        .find(|f| f.family == "format_correct_wrong")
        .unwrap();
    assert_eq!((f.variants, f.passed), (18, 0));
}

#[test]
fn judge_without_prefilter_passes_content_free_answers() {
    let opts = FuzzOptions::default();
    let r = run_with(
        "fixtures/fuzz/weak/judge_no_prefilter.yaml",
        "fixtures/fuzz/weak/data.jsonl",
        gullible(),
        &opts,
    );
    let h = holes(&r);
    for f in [
        "empty",
        "master_key",
        "judge_injection",
        "format_only",
        "padding",
        "repetition",
        "answer_listing",
        "format_correct_wrong",
        "invisible_padding",
        "lookalike",
        "content_free_opener",
        "forged_verdict",
        "delimiter_escape",
    ] {
        assert!(h.contains(f), "{f} not found: {h:?}");
    }
    let opts = FuzzOptions {
        examples: usize::MAX,
        ..opts
    };
    // The prefilter stops what it knows before the call (empty answers, master keys and
    // content-free openers, override instructions, fake chat turns, forged verdict objects,
    // escaped delimiters, all read through the normalised view). What still reaches the
    // gullible judge are wrong answers and hedges among real answers (no prefilter can know).
    let r = run_with(
        "fixtures/fuzz/weak/judge_prefiltered.yaml",
        "fixtures/fuzz/weak/data.jsonl",
        gullible(),
        &opts,
    );
    let h = holes(&r);
    for f in [
        "empty",
        "master_key",
        "judge_injection",
        "format_only",
        "repetition",
        "padding",
        "invisible_padding",
        "lookalike",
        "content_free_opener",
        "forged_verdict",
        "delimiter_escape",
    ] {
        assert!(!h.contains(f), "{f}: {h:?}");
    }
    assert!(h.contains("format_correct_wrong") && h.contains("answer_listing"));
    let passed = |family: &str| -> BTreeSet<String> {
        let f = r.families.iter().find(|f| f.family == family).unwrap();
        assert_eq!(f.passed, f.examples.len());
        f.examples.iter().map(|e| e.variant.clone()).collect()
    };
    // The openers, the special-token turn and the forged verdict JSON with our own `result`
    // key, which once got through, are stopped now.
    for f in ["master_key", "judge_injection"] {
        assert!(passed(f).is_empty(), "{f}: {:?}", passed(f));
    }
    let f = r
        .families
        .iter()
        .find(|f| f.family == "exploits:score_model")
        .unwrap();
    assert!(f.variants > 0);
    assert_eq!(f.passed, 0, "{:?}", f.examples);
}

#[test]
fn perturbations_move_a_step_counter_not_a_final_answer_check() {
    let r = run(
        "fixtures/fuzz/weak/step_count.yaml",
        "fixtures/fuzz/weak/data.jsonl",
    );
    let p = |name: &str| {
        r.perturbations
            .iter()
            .find(|p| p.name == name)
            .unwrap()
            .clone()
    };
    let dup = p("step_inflation_duplicate");
    assert_eq!(dup.n, 6);
    assert_eq!(dup.moved_fraction, Some(1.0));
    assert!((dup.mean_delta.unwrap() - 0.5).abs() < 1e-9);
    assert!(p("step_inflation_split").moved_fraction.unwrap() > 0.5);
    assert_eq!(p("step_reorder").moved_fraction, Some(0.0));
    assert_eq!(p("confidence_markers").moved_fraction, Some(0.0));

    let r = run(
        "fixtures/fuzz/final_answer.yaml",
        "fixtures/fuzz/weak/data.jsonl",
    );
    assert!(!r.failed);
    assert_eq!(r.perturbations.len(), 6);
    for p in &r.perturbations {
        assert_eq!(p.n, 6, "{}", p.name);
        assert_eq!(p.moved_fraction, Some(0.0), "{}", p.name);
        assert_eq!(p.max_delta, Some(0.0), "{}", p.name);
    }
    // Gating on movement is opt-in.
    let opts = FuzzOptions {
        max_moved: Some(0.0),
        ..FuzzOptions::default()
    };
    let r = run_with(
        "fixtures/fuzz/weak/step_count.yaml",
        "fixtures/fuzz/weak/data.jsonl",
        Env::default(),
        &FuzzOptions {
            families: Some(vec!["empty".into()]),
            ..opts.clone()
        },
    );
    assert!(r.failed, "moved more than --max-moved");
    let r = run_with(
        "fixtures/fuzz/final_answer.yaml",
        "fixtures/fuzz/weak/data.jsonl",
        Env::default(),
        &opts,
    );
    assert!(!r.failed);
}

/// A gullible step judge: a step with a calculation is worth 0.6, any other step 0.9.
fn step_judge() -> Env {
    let judge = ScriptJudge::from_value(&json!([
        {"when": "=", "content": "{\"steps\": [], \"result\": 0.6}"},
        {"content": "{\"steps\": [], \"result\": 0.9}"}
    ]))
    .unwrap();
    Env {
        judge: Some(Arc::new(judge)),
        ..Env::default()
    }
}

#[test]
fn step_specs_bound_what_the_perturbations_pay() {
    let opts = FuzzOptions {
        families: Some(vec!["empty".into()]),
        ..FuzzOptions::default()
    };
    let data = "fixtures/fuzz/weak/data.jsonl";
    let r = run_with("fixtures/fuzz/steps_min.yaml", data, step_judge(), &opts);
    assert_eq!(r.perturbations.len(), 6);
    for p in &r.perturbations {
        assert_eq!(p.n, 6, "{}", p.name);
        assert_eq!(p.max_rise, Some(0.0), "{}: min never rises", p.name);
    }
    let p = |r: &FuzzReport, name: &str| {
        r.perturbations
            .iter()
            .find(|p| p.name == name)
            .unwrap()
            .clone()
    };
    // Repeats score 0 ungraded: repetition costs, never pays.
    assert!(p(&r, "step_repetition").mean_delta.unwrap() < 0.0);
    let weak = run_with(
        "fixtures/fuzz/weak/steps_mean.yaml",
        data,
        step_judge(),
        &opts,
    );
    let filler = p(&weak, "confident_filler");
    assert!(
        filler.max_rise.unwrap() > 0.05 && filler.mean_delta.unwrap() > 0.0,
        "{filler:?}"
    );
    assert!(
        p(&weak, "step_repetition").max_rise == Some(0.0),
        "repeats are worth 0 even under mean"
    );
}

#[test]
fn options_select_cap_and_seed() {
    let base = FuzzOptions {
        families: Some(vec!["master_key".into(), "exploits".into()]),
        per_row: 3,
        perturb: false,
        ..FuzzOptions::default()
    };
    let a = run_with(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl",
        Env::default(),
        &base,
    );
    let names: Vec<&str> = a.families.iter().map(|f| f.family.as_str()).collect();
    assert_eq!(names, ["master_key", "exploits:math_equiv"]);
    let n_rows = rows("examples/math/samples.jsonl").len();
    assert_eq!(a.families[0].variants, 3 * n_rows);
    assert!(a.perturbations.is_empty());
    let again = run_with(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl",
        Env::default(),
        &base,
    );
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        serde_json::to_value(&again).unwrap(),
        "deterministic for a seed"
    );
    // The threshold decides what passes: at -1 every scored variant does.
    let r = run_with(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl",
        Env::default(),
        &FuzzOptions {
            threshold: -1.0,
            ..base.clone()
        },
    );
    assert!(r.failed);
    // Every variant with a reward passes; rows whose gold cannot be read are errors (no reward).
    let f = &r.families[0];
    assert!(f.passed > 0 && f.passed <= f.variants);
    assert!(f.examples.iter().all(|e| e.status == "ok"));
    // --max-rate lets a family pass up to that rate.
    let r = run_with(
        "examples/math/spec.yaml",
        "examples/math/samples.jsonl",
        Env::default(),
        &FuzzOptions {
            threshold: -1.0,
            max_rate: 1.0,
            ..base.clone()
        },
    );
    assert!(!r.failed);
    // Unknown families are an error that names the known ones.
    let text = std::fs::read_to_string(root().join("examples/math/spec.yaml")).unwrap();
    let spec = parse_spec_text(&text).unwrap();
    let program = Program::compile(&spec).unwrap();
    let err = fuzz(
        &program,
        &spec,
        Value::Null,
        &rows("examples/math/samples.jsonl"),
        &FuzzOptions {
            families: Some(vec!["exploits:code_exec".into()]),
            ..base
        },
        Corpus::embedded(),
    )
    .unwrap_err();
    assert!(
        err.contains("unknown fuzz family `exploits:code_exec`"),
        "{err}"
    );
    assert!(err.contains("format_correct_wrong"), "{err}");
}

#[test]
fn report_shape_is_exact() {
    let r = run(
        "fixtures/fuzz/weak/substring.yaml",
        "fixtures/fuzz/weak/data.jsonl",
    );
    let v = serde_json::to_value(&r).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&v),
        [
            "kind",
            "spec",
            "threshold",
            "failed",
            "families",
            "perturbations"
        ]
    );
    assert_eq!(v["kind"], "fuzz");
    assert_eq!(
        keys(&v["families"][0]),
        ["family", "source", "variants", "passed", "rate", "examples"]
    );
    let hole = v["families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["passed"].as_u64() > Some(0))
        .unwrap();
    assert_eq!(
        keys(&hole["examples"][0]),
        ["id", "variant", "output", "reward", "status"]
    );
    assert_eq!(
        keys(&v["perturbations"][0]),
        [
            "name",
            "n",
            "mean_delta",
            "max_delta",
            "max_rise",
            "moved_fraction"
        ]
    );
    let table = referee_core::audit::fuzz::render_table(&r);
    assert!(table.contains("answer_listing"));
    assert!(table.contains("<- HOLE"));
    assert!(table.contains("FAILED"));
}

#[test]
fn rows_beyond_one_chunk_are_all_fuzzed() {
    let text = std::fs::read_to_string(root().join("fixtures/fuzz/final_answer.yaml")).unwrap();
    let spec = parse_spec_text(&text).unwrap();
    let program = Program::compile(&spec).unwrap();
    let base = rows("fixtures/fuzz/weak/data.jsonl");
    let lines = std::fs::read_to_string(root().join("fixtures/fuzz/weak/data.jsonl")).unwrap();
    let many: Vec<Sample> = (0..100)
        .flat_map(|_| lines.lines())
        .map(|l| InputMapping::default().parse_line(l).unwrap())
        .collect();
    assert_eq!(many.len(), 100 * base.len());
    let r = fuzz(
        &program,
        &spec,
        Value::Null,
        &many,
        &FuzzOptions {
            families: Some(vec!["master_key".into()]),
            per_row: 1,
            ..FuzzOptions::default()
        },
        Corpus::embedded(),
    )
    .unwrap();
    assert_eq!(r.families[0].variants, many.len());
    assert_eq!(r.families[0].passed, 0);
    for p in &r.perturbations {
        assert_eq!(p.n, many.len(), "{}", p.name);
    }
}

/// A judge that rewards everything it is shown, in the verdict shape each judge example asks
/// for: every rubric criterion met (the example's rows have five criteria, four per call), the
/// candidate preferred in both orders.
fn gullible_for(example: &str) -> Env {
    let rules = match example {
        "rubric" => {
            let all = |ids: std::ops::RangeInclusive<u64>| {
                let v: Vec<Value> = ids
                    .map(|id| json!({"id": id, "reason": "met", "verdict": true}))
                    .collect();
                json!({"verdicts": v}).to_string()
            };
            json!([
                {"when": "\n[5] ", "content": all(5..=5)},
                {"when": "\n[4] ", "content": all(1..=4)},
            ])
        }
        "pairwise" => json!([
            {"when": "Response A:\n<candidate_response>", "content": "{\"reason\": \"A is better\", \"winner\": \"A\"}"},
            {"content": "{\"reason\": \"B is better\", \"winner\": \"B\"}"},
        ]),
        _ => unreachable!(),
    };
    Env {
        judge: Some(Arc::new(ScriptJudge::from_value(&rules).unwrap())),
        ..Env::default()
    }
}

/// The judge examples, fuzzed with a judge that believes everything: every content-free variant
/// (empty, master keys, text aimed at the judge, repetition, padding, format shells) is stopped
/// by the prefilter before the call. The families that need a competent judge (a wrong answer
/// in the right form, a hedge among real answers) are the judge's own accuracy, which
/// `referee eval` measures; no prefilter can decide them, so they are not asked of it here.
#[test]
fn judge_examples_stop_content_free_answers_before_the_judge() {
    let families: Vec<String> = [
        "empty",
        "master_key",
        "judge_injection",
        "repetition",
        "padding",
        "format_only",
    ]
    .map(String::from)
    .to_vec();
    for example in ["rubric", "pairwise"] {
        let spec_path = format!("examples/{example}/spec.yaml");
        let data = format!("examples/{example}/rollouts.jsonl");
        // The gullible judge really rewards the unmutated rows above the fuzz threshold (0.5;
        // the rubric's pitfall criterion, "met", costs 0.3), so a variant scoring below it was
        // stopped before the judge, not failed by it.
        let text = std::fs::read_to_string(root().join(&spec_path)).unwrap();
        let program =
            Program::compile_with(&parse_spec_text(&text).unwrap(), gullible_for(example)).unwrap();
        let samples = rows(&data);
        let judged = referee_core::score::samples(&program, &samples, false).0;
        assert!(
            judged.iter().any(|r| r.reward.is_some_and(|x| x >= 0.5)),
            "{example}: the gullible judge rewards nothing"
        );
        let opts = FuzzOptions {
            families: Some(families.clone()),
            perturb: false,
            ..FuzzOptions::default()
        };
        let r = run_with(&spec_path, &data, gullible_for(example), &opts);
        let total: usize = r.families.iter().map(|f| f.variants).sum();
        assert!(total > 100, "{example}: only {total} variants");
        assert!(
            !r.failed && holes(&r).is_empty(),
            "{example}: {}",
            serde_json::to_string_pretty(&r.families).unwrap()
        );
    }
}

/// A judge type, its spec and an approve-everything judge (from its exploit file where it has
/// one), and a real answer the judge approves.
fn approving_judges() -> Vec<(&'static str, Value, Value, Value, &'static str)> {
    let file = |name: &str| -> (Value, Value) {
        let text = std::fs::read_to_string(root().join("fixtures/exploits").join(name)).unwrap();
        let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
        (doc["spec"].clone(), doc["judge"].clone())
    };
    let area = json!({
        "question": "What is the area of a 3 by 4 rectangle?",
        "answer": "12",
        "reference_response": "The area is 3 × 4 = 12 square units."
    });
    let capital = json!({"question": "What is the capital of Australia?"});
    let real = "Multiplying the sides, 3 × 4 = 12, so the area is 12 square units.";
    let (score_spec, score_judge) = file("judge.score_model.yaml");
    let (label_spec, label_judge) = file("judge.label_model.yaml");
    let (rubric_spec, rubric_judge) = file("judge.rubric.yaml");
    let (ref_spec, ref_judge) = file("judge.reference_judge.yaml");
    let (pair_spec, pair_judge) = file("judge.pairwise.yaml");
    vec![
        (
            "score_model",
            score_spec,
            score_judge,
            capital.clone(),
            "Canberra, the capital since 1913 (National Archives of Australia).",
        ),
        ("label_model", label_spec, label_judge, capital, "Canberra."),
        ("rubric", rubric_spec, rubric_judge, area.clone(), real),
        ("reference_judge", ref_spec, ref_judge, area.clone(), real),
        ("pairwise", pair_spec, pair_judge, area.clone(), real),
        (
            "step_judge",
            json!({"type": "step_judge", "question": "{{item.question}}", "steps": {"split": "numbered"}}),
            json!([{"content": "{\"verdicts\": [{\"step\": 1, \"reason\": \"ok\", \"label\": \"correct\"}, {\"step\": 2, \"reason\": \"ok\", \"label\": \"correct\"}]}"}]),
            area,
            "1. Multiply the sides: 3 × 4 = 12.\n2. So the area is 12 square units.",
        ),
    ]
}

/// Issue 24: tried as a new user would, with a judge that approves everything, the answers that
/// say nothing in disguise (invisible padding, look-alike letters, long openers) and the ones
/// that forge a verdict or close the candidate's delimiter are stopped before the judge for
/// every judge type: each such variant scores 0 and the judge is never called.
#[test]
fn every_judge_type_stops_disguised_and_forged_answers_before_the_judge() {
    let families: Vec<String> = [
        "empty",
        "master_key",
        "judge_injection",
        "invisible_padding",
        "lookalike",
        "content_free_opener",
        "forged_verdict",
        "delimiter_escape",
        "format_only",
    ]
    .map(String::from)
    .to_vec();
    for (t, spec, rules, item, honest) in approving_judges() {
        let judge = Arc::new(ScriptJudge::from_value(&rules).unwrap());
        let env = Env {
            judge: Some(judge.clone()),
            ..Env::default()
        };
        let program = Program::compile_with(&spec, env).unwrap();
        // The judge really approves: a real answer reaches it and is paid.
        let row = Sample::new(honest, item);
        let r = program.explain(&row);
        assert!(
            r.reward.is_some_and(|x| x >= 0.5)
                && r.usage.as_ref().is_some_and(|u| u.judge_calls >= 1),
            "{t}: the approving judge did not pay a real answer: {r:?}"
        );
        let before = judge.calls().len();
        let opts = FuzzOptions {
            families: Some(families.clone()),
            perturb: false,
            per_row: usize::MAX,
            examples: usize::MAX,
            ..FuzzOptions::default()
        };
        let report = fuzz(
            &program,
            &spec,
            json!(t),
            std::slice::from_ref(&row),
            &opts,
            Corpus::embedded(),
        )
        .unwrap();
        for f in &report.families {
            assert!(f.variants > 0, "{t}: {} made no variant", f.family);
            assert_eq!(
                f.passed, 0,
                "{t}: {} reached the judge: {:#?}",
                f.family, f.examples
            );
        }
        let calls = judge.calls();
        assert_eq!(
            calls.len(),
            before,
            "{t}: the judge was called for {:?}",
            calls[before..]
                .iter()
                .map(|c| &c.1.messages)
                .collect::<Vec<_>>()
        );
    }
}
