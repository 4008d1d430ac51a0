//! The stage on hand-built results: statuses, missing rewards and missing components exactly
//! where a test wants them.

use super::*;
use crate::outcome::Failure;
use crate::Program;

const TWO: &str = "{grader: {type: weighted_sum, normalize: sum, weights: [1, 1], inputs: [{type: contains, name: a, keywords: [x]}, {type: contains, name: b, keywords: [y]}]}, group: GROUP}";

fn program(group: &str) -> Program {
    Program::compile_str(&TWO.replace("GROUP", group)).unwrap()
}

fn ok(reward: f64, a: Option<f64>, b: Option<f64>) -> ScoreResult {
    res(Some(reward), Status::Ok, a, b)
}

fn res(reward: Option<f64>, status: Status, a: Option<f64>, b: Option<f64>) -> ScoreResult {
    ScoreResult {
        reward,
        status,
        components: vec![("a".into(), a), ("b".into(), b)],
        trace: None,
        usage: None,
        group: None,
        step_rewards: None,
        token_error: None,
    }
}

fn error() -> Status {
    Status::Error(Failure {
        reason: "sandbox_error".into(),
        message: "x".into(),
    })
}

fn run(p: &Program, rs: &mut [ScoreResult], groups: &[Vec<usize>]) -> GroupReport {
    p.group_stage()
        .expect("stage on")
        .apply(rs, groups, p.component_names(), &[])
}

fn advs(rs: &[ScoreResult]) -> Vec<Option<f64>> {
    rs.iter().map(|r| r.group.unwrap().advantage).collect()
}

fn close(got: &[Option<f64>], want: &[Option<f64>]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        match (g, w) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{got:?} vs {want:?}"),
            (None, None) => {}
            _ => panic!("{got:?} vs {want:?}"),
        }
    }
}

#[test]
fn failed_and_unrewarded_samples_are_left_out_of_the_baseline() {
    let p = program("{}");
    // An error with an `on_error` reward is still a failure: never part of the mean.
    let mut rs = vec![
        ok(1.0, Some(1.0), Some(0.0)),
        ok(0.0, Some(0.0), Some(0.0)),
        res(Some(0.5), error(), None, None),
        res(None, Status::NotApplicable, None, None),
    ];
    let rep = run(&p, &mut rs, &[vec![0, 1, 2, 3]]);
    let a = 0.5 / (0.5f64.sqrt() + 1e-4);
    close(&advs(&rs), &[Some(a), Some(-a), None, None]);
    assert_eq!(rs[2].group.unwrap().flag, Some(GroupFlag::Excluded));
    assert_eq!(rs[3].group.unwrap().flag, Some(GroupFlag::Excluded));
    assert_eq!(rs[0].group.unwrap().flag, None);
    assert_eq!(rs[2].reward, Some(0.5), "the raw reward is untouched");
    assert_eq!((rep.groups, rep.excluded_samples, rep.mixed), (1, 2, 1));
}

#[test]
fn rloo_excludes_errors_from_the_leave_one_out_mean() {
    let p = program("{advantage: rloo}");
    let mut rs = vec![
        ok(1.0, None, None),
        ok(0.0, None, None),
        ok(0.0, None, None),
        res(None, error(), None, None),
    ];
    run(&p, &mut rs, &[vec![0, 1, 2, 3]]);
    // 1 − mean(0, 0) = 1; 0 − mean(1, 0) = −0.5.
    close(&advs(&rs), &[Some(1.0), Some(-0.5), Some(-0.5), None]);
}

#[test]
fn every_sample_failed_gives_an_empty_group() {
    let p = program("{}");
    let mut rs = vec![
        res(None, error(), None, None),
        res(None, error(), None, None),
    ];
    let rep = run(&p, &mut rs, &[vec![0, 1]]);
    close(&advs(&rs), &[None, None]);
    assert_eq!(
        (rep.groups, rep.empty_groups, rep.excluded_samples),
        (0, 1, 2)
    );
    assert_eq!(rep.frac_all_fail, None);
}

#[test]
fn normalize_then_sum_skips_missing_components_and_whitens_the_batch() {
    let p = program("{combine: normalize_then_sum}");
    let mut rs = vec![
        ok(1.0, Some(1.0), Some(1.0)),
        ok(0.5, Some(1.0), Some(0.0)),
        ok(0.0, Some(0.0), None),
        ok(0.0, Some(0.0), Some(0.0)),
        ok(0.5, Some(1.0), Some(0.0)),
        ok(0.0, Some(0.0), Some(0.0)),
    ];
    run(&p, &mut rs, &[vec![0, 1, 2, 3], vec![4, 5]]);
    // Per component: group mean/std (b over the three values it has), sum, then batch
    // whitening; computed independently in Python.
    close(
        &advs(&rs),
        &[
            Some(1.597_391_473_727_097_8),
            Some(0.228_198_781_961_014_12),
            Some(-0.684_596_345_883_042),
            Some(-1.140_993_909_805_069_9),
            Some(0.558_988_339_383_752),
            Some(-0.558_988_339_383_752),
        ],
    );
    let p = program("{combine: normalize_then_sum, weights: {a: 2}}");
    for r in &mut rs {
        r.group = None;
    }
    run(&p, &mut rs, &[vec![0, 1, 2, 3], vec![4, 5]]);
    let (x, y) = (0.968_184_011_918_489_9, 0.790_544_057_523_608_1);
    close(
        &advs(&rs),
        &[Some(x), Some(x), Some(-x), Some(-x), Some(y), Some(-y)],
    );
}

#[test]
fn diagnostics_count_saturation_flat_groups_and_spread() {
    let p = program("{}");
    let mut rs = vec![
        ok(0.5, Some(1.0), Some(0.0)),
        ok(1.0, Some(1.0), Some(1.0)),
        ok(0.5, Some(1.0), Some(0.0)),
        ok(0.5, Some(1.0), Some(0.0)),
        ok(1.0, Some(1.0), Some(1.0)),
    ];
    let rep = run(&p, &mut rs, &[vec![0, 1], vec![2, 3], vec![4]]);
    assert_eq!(rep.groups, 3);
    assert_eq!((rep.all_pass, rep.all_fail, rep.mixed), (1, 1, 1));
    assert_eq!((rep.flat_groups, rep.singleton_groups), (1, 1));
    assert_eq!(rs[2].group.unwrap().flag, Some(GroupFlag::FlatGroup));
    assert_eq!(rs[4].group.unwrap().flag, Some(GroupFlag::SingletonGroup));
    close(&advs(&rs)[2..], &[Some(0.0), Some(0.0), Some(0.0)]);
    // Group stds: sqrt(0.125) and 0 (the singleton has none).
    assert!((rep.mean_within_group_std.unwrap() - 0.125f64.sqrt() / 2.0).abs() < 1e-12);
    let a = &rep.components["a"];
    assert_eq!(
        (a.groups, a.constant, a.always_one, a.always_zero),
        (2, 2, 2, 0)
    );
    assert_eq!(a.frac_constant, Some(1.0));
    let b = &rep.components["b"];
    assert_eq!(
        (b.groups, b.constant, b.always_one, b.always_zero),
        (2, 1, 0, 1)
    );
    assert_eq!(rep.correlations.len(), 1);
    assert_eq!(rep.correlations[0].pearson, None, "a never varies");
    assert_eq!(rep.correlations[0].n, 5);
}

#[test]
fn reports_merge_to_the_whole() {
    let p = program("{advantage: dr_grpo}");
    let mk = || {
        vec![
            ok(0.5, Some(1.0), Some(0.0)),
            ok(1.0, Some(0.0), Some(1.0)),
            ok(0.0, Some(0.0), Some(0.0)),
            ok(1.0, Some(1.0), Some(1.0)),
            res(None, error(), None, None),
        ]
    };
    let mut whole = mk();
    let all = run(&p, &mut whole, &[vec![0, 1], vec![2, 3, 4]]);
    let mut parts = mk();
    let mut a = run(&p, &mut parts, &[vec![0, 1]]);
    a.merge(run(&p, &mut parts, &[vec![2, 3, 4]]));
    assert_eq!(a, all);
    let c = &all.correlations[0];
    // a = [1,0,0,1], b = [0,1,0,1]: covariance 0.
    assert!(c.pearson.unwrap().abs() < 1e-12);
}

#[test]
fn the_none_estimator_writes_no_advantage() {
    let p = program("{advantage: none}");
    let mut rs = vec![ok(1.0, None, None), ok(0.0, None, None)];
    let rep = run(&p, &mut rs, &[vec![0, 1]]);
    assert!(rs.iter().all(|r| !r.group.unwrap().has_advantage));
    assert_eq!(rep.mixed, 1);
    let json = serde_json::to_value(rs[0].with_id(None, None)).unwrap();
    assert!(json.get("advantage").is_none());
}

#[test]
fn compile_errors_have_paths() {
    let cases = [
        ("{bogus: 1}", "/group/bogus", "unknown field `bogus`"),
        (
            "{advantage: ppo}",
            "/group/advantage",
            "unknown variant `ppo`",
        ),
        ("{epsilon: -1}", "/group/epsilon", "≥ 0"),
        (
            "{weights: {a: 1}}",
            "/group/weights",
            "only to `combine: normalize_then_sum`",
        ),
        (
            "{combine: normalize_then_sum, weights: {c: 1}}",
            "/group/weights/c",
            "no component is named `c`",
        ),
    ];
    for (g, path, msg) in cases {
        let e = Program::compile_str(&TWO.replace("GROUP", g)).unwrap_err();
        assert!(
            e.0.iter()
                .any(|x| x.path == path && x.message.contains(msg)),
            "{g}: {e:?}"
        );
    }
    let e = Program::compile_str(
        "{grader: {type: contains, keywords: [x]}, group: {combine: normalize_then_sum}}",
    )
    .unwrap_err();
    assert!(e.0[0].message.contains("needs named components"), "{e:?}");
}

#[test]
fn the_documented_example_compiles() {
    let doc = include_str!("mod.rs");
    let start = doc.find("//! ```yaml\n").unwrap() + "//! ```yaml\n".len();
    let end = start + doc[start..].find("//! ```").unwrap();
    let yaml: String = doc[start..end]
        .lines()
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let p = Program::compile_str(&yaml).unwrap();
    assert_eq!(p.group_stage().unwrap().estimator, Estimator::Grpo);
}

#[test]
fn hero_ranks_the_reward_model_inside_the_verifier_strata() {
    let p = program("{advantage: dr_grpo, hero: {verifier: a, reward_model: b}}");
    let mut rs = vec![
        ok(1.0, Some(1.0), Some(0.2)),
        ok(1.0, Some(1.0), Some(0.8)),
        ok(0.9, Some(0.0), Some(0.9)), // wrong, but the reward model loves it
        ok(0.1, Some(0.0), Some(0.1)),
        ok(1.0, Some(1.0), Some(0.5)),
        ok(1.0, Some(1.0), None), // no reward-model score: excluded, not a 0
    ];
    let rep = run(&p, &mut rs, &[vec![0, 1, 2, 3, 4, 5]]);
    let hero: Vec<Option<f64>> = rs.iter().map(|r| r.group.unwrap().group_reward).collect();
    // Correct: 1 − 0.1 + 0.2·(rm − 0.2)/0.6; wrong: −0.1 + 0.2·(rm − 0.1)/0.8.
    close(
        &hero,
        &[Some(0.9), Some(1.1), Some(0.1), Some(-0.1), Some(1.0), None],
    );
    // dr_grpo on those: mean 0.6.
    close(
        &advs(&rs),
        &[
            Some(0.3),
            Some(0.5),
            Some(-0.5),
            Some(-0.7),
            Some(0.4),
            None,
        ],
    );
    assert_eq!(rs[5].group.unwrap().flag, Some(GroupFlag::Excluded));
    assert_eq!(rep.excluded_samples, 1);
    let j = serde_json::to_value(rs[2].with_id(None, None)).unwrap();
    assert!((j["group_reward"].as_f64().unwrap() - 0.1).abs() < 1e-12);
    assert_eq!(j["reward"], 0.9, "the raw reward is untouched");
}

#[test]
fn hero_compile_errors() {
    for (g, path, msg) in [
        (
            "{hero: {verifier: a, reward_model: c}}",
            "/group/hero/reward_model",
            "no component is named `c`",
        ),
        (
            "{hero: {verifier: a, reward_model: b, alpha: 0.5, beta: 0.5}}",
            "/group/hero",
            "alpha + beta < 1",
        ),
        (
            "{combine: normalize_then_sum, hero: {verifier: a, reward_model: b}}",
            "/group/hero",
            "normalize_then_sum",
        ),
    ] {
        let e = Program::compile_str(&TWO.replace("GROUP", g)).unwrap_err();
        assert!(
            e.0.iter()
                .any(|x| x.path == path && x.message.contains(msg)),
            "{g}: {e:?}"
        );
    }
}

#[test]
fn pow3r_downweights_a_saturated_criterion() {
    let p = program("{advantage: dr_grpo, pow3r: {weights: {a: 3, b: 1}}}");
    // a is passed by everyone (saturated); b separates the rollouts.
    let mut rs = vec![
        ok(1.0, Some(1.0), Some(1.0)),
        ok(0.75, Some(1.0), Some(0.0)),
        ok(1.0, Some(1.0), Some(1.0)),
        ok(0.75, Some(1.0), Some(0.0)),
        res(None, error(), Some(1.0), Some(1.0)),
    ];
    run(&p, &mut rs, &[vec![0, 1, 2, 3, 4]]);
    // Weights in the group: a 3·(0.1 + 0) = 0.3, b 1·(0.1 + sqrt(1/3)).
    let wb = 0.1 + (1.0f64 / 3.0).sqrt();
    let low = 0.3 / (0.3 + wb);
    let g: Vec<Option<f64>> = rs.iter().map(|r| r.group.unwrap().group_reward).collect();
    close(&g, &[Some(1.0), Some(low), Some(1.0), Some(low), None]);
    let half = (1.0 - low) / 2.0;
    close(
        &advs(&rs),
        &[Some(half), Some(-half), Some(half), Some(-half), None],
    );
    assert!(
        1.0 - low > 0.25,
        "the gap is wider than the static weights give"
    );
}

#[test]
fn pow3r_compile_errors() {
    for (g, path) in [
        ("{pow3r: {weights: {c: 1}}}", "/group/pow3r/weights/c"),
        ("{pow3r: {weights: {a: 0}}}", "/group/pow3r/weights/a"),
        ("{pow3r: {weights: {}}}", "/group/pow3r/weights"),
        (
            "{pow3r: {weights: {a: 1}, floor: -1}}",
            "/group/pow3r/floor",
        ),
        (
            "{pow3r: {weights: {a: 1}}, hero: {verifier: a, reward_model: b}}",
            "/group/pow3r",
        ),
    ] {
        let e = Program::compile_str(&TWO.replace("GROUP", g)).unwrap_err();
        assert!(e.0.iter().any(|x| x.path == path), "{g}: {e:?}");
    }
}
