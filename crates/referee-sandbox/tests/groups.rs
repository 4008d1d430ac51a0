//! Difficulty weights: a GRPO group is scored together, tests weighted by how few of the group's
//! rollouts pass them, and every test still runs once per rollout.

use referee_core::exec::Env;
use referee_core::{Program, Sample};
use referee_sandbox::{Config, Pool};
use serde_json::json;
use std::sync::Arc;

fn rollout(group: &str, code: &str) -> Sample {
    let tests = json!([
        {"input": "1 2\n", "output": "3\n"},
        {"input": "5 7\n", "output": "12\n"},
        {"input": "-4 10\n", "output": "6\n"},
        {"input": "100 200\n", "output": "300\n"},
    ]);
    let mut s = Sample::new(format!("```python\n{code}\n```"), json!({ "tests": tests }));
    s.group = Some(group.into());
    s
}

#[test]
fn difficulty_weights_come_from_the_group() {
    let pool = Pool::start(&Config::default())
        .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let env = Env {
        sandbox: Some(Arc::new(pool)),
        ..Env::default()
    };
    let spec = json!({"type": "code_exec", "tests": "{{item.tests}}", "reward": "difficulty"});
    let program = Program::compile_with(&spec, env).unwrap();
    assert!(program.grouped());
    let right = "a, b = map(int, input().split())\nprint(a + b)";
    let public_only = "print({'1 2': 3, '5 7': 12}.get(input().strip(), 0))";
    let wrong = "print(0)";
    let samples = vec![
        rollout("g1", right),
        rollout("g1", public_only),
        rollout("g1", wrong),
        // Another group where everyone is right: nothing to tell apart, everyone gets 1.
        rollout("g2", right),
        rollout("g2", right),
        // No group: plain fraction.
        {
            let mut s = rollout("", public_only);
            s.group = None;
            s
        },
    ];
    let r = referee_core::score::samples(&program, &samples, true).0;
    let reward = |i: usize| r[i].reward.unwrap();
    // Pass rates in g1: tests 1-2 by 2 of 3 rollouts, tests 3-4 by 1 of 3; weights 1/3,1/3,2/3,2/3.
    assert!((reward(0) - 1.0).abs() < 1e-9);
    assert!((reward(1) - (2.0 / 3.0) / 2.0).abs() < 1e-9, "{:?}", r[1]);
    assert!(reward(2).abs() < 1e-9);
    assert!((reward(3) - 1.0).abs() < 1e-9 && (reward(4) - 1.0).abs() < 1e-9);
    assert!((reward(5) - 0.5).abs() < 1e-9, "{:?}", r[5]);
    let trace = serde_json::to_value(&r[1].trace).unwrap();
    assert_eq!(trace["detail"]["weights"], json!([0.33, 0.33, 0.67, 0.67]));
    assert!(trace["note"].as_str().unwrap().contains("difficulty"));
}

/// A group's two passes agree: a waiting node's first-pass outcome is replayed in the second, so a
/// gate on a node that may answer differently each time (here: a coin flip in the sandbox) opens
/// the same way twice, and a rollout is never scored against rates that left it out.
#[test]
fn the_second_pass_replays_the_first() {
    let pool = Pool::start(&Config::default())
        .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let env = Env {
        sandbox: Some(Arc::new(pool)),
        ..Env::default()
    };
    let tests = json!([
        {"input": "1\n", "output": "1\n"}, {"input": "2\n", "output": "2\n"}, {"input": "3\n", "output": "3\n"}
    ])
    .to_string();
    let spec = json!({
        "type": "gate",
        "if": {"type": "python", "source": "import os\ndef grade(sample, item):\n    return float(os.urandom(1)[0] & 1)\n"},
        "then": {"type": "code_exec", "name": "tests", "reward": "difficulty", "tests": tests},
    });
    let program = Program::compile_with(&spec, env).unwrap();
    // A passes tests 1-2, B passes test 1: counted together, A's value is 1/3 (weights 0, 1/2, 1);
    // A alone, 0. Scored against B's rates only (A left out), it would be 1/2.
    let a = "n = int(input())\nprint(n if n < 3 else 0)";
    let b = "n = int(input())\nprint(n if n < 2 else 0)";
    let mut samples = Vec::new();
    for g in 0..16 {
        for code in [a, b] {
            let mut s = Sample::new(format!("```python\n{code}\n```"), json!({}));
            s.group = Some(format!("g{g}"));
            samples.push(s);
        }
    }
    let r = referee_core::score::samples(&program, &samples, false).0;
    for (i, res) in r.iter().enumerate().step_by(2) {
        let tests = res
            .components
            .iter()
            .find(|(n, _)| &**n == "tests")
            .unwrap()
            .1;
        if let Some(v) = tests {
            assert!(
                (v - 1.0 / 3.0).abs() < 1e-9 || v.abs() < 1e-9,
                "rollout A of group {} scored {v}",
                i / 2
            );
        }
    }
}
