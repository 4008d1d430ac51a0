//! The listwise example (`examples/listwise`) through the real CLI against a loopback listwise
//! judge (`scripts/fault_server.py --mode listwise`: ranks the responses it reads in the prompt
//! by digits, then length), as its README runs it: one judge call per group per order, the
//! hostile rollouts ranked last without being shown, and a judge whose replies do not parse
//! failing its groups with the reason, never a 0.

mod common;

use common::{addr, fault, get, post, referee};
use serde_json::Value;

fn score(url: &str, extra: &[&str]) -> (Vec<Value>, String) {
    let out = referee()
        .args([
            "score",
            "examples/listwise/spec.yaml",
            "examples/listwise/rollouts.jsonl",
            "--explain",
        ])
        .args([
            "--judge",
            url,
            "--judge-model",
            "judge",
            "--judge-cache",
            "off",
        ])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (rows, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_listwise_example_makes_one_call_per_group_per_order() {
    let (_srv, url) = fault(&["--mode", "listwise"]);
    post(&addr(&url), "/reset?record=1", &Value::Null);
    let (rows, err) = score(&url, &[]);
    let stats = get(&addr(&url), "/stats");
    assert_eq!(stats["requests"], 4, "2 groups × 2 orders: {stats}");
    let recorded = get(&addr(&url), "/recorded");
    for r in recorded.as_array().unwrap() {
        let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
        let user = body["messages"][1]["content"].as_str().unwrap();
        // The empty, forged and master-key rollouts are never shown; three per group are.
        assert_eq!(
            user.matches(":\n<candidate_response>\n").count(),
            3,
            "{user}"
        );
        assert!(!user.contains("\"ranking\": [\"c1-b\""), "{user}");
        assert!(
            !user.contains("Response AAAA:\n<candidate_response>"),
            "{user}"
        );
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["properties"]["ranking"]["minItems"], 3, "{schema}");
    }
    let by = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    let want = [
        ("m1-a", 1.0),
        ("m1-b", 2.0 / 3.0),
        ("m1-c", 1.0 / 3.0),
        ("m1-d", 0.0),
        ("c1-a", 1.0),
        ("c1-b", 0.0),
        ("c1-c", 1.0 / 3.0),
        ("c1-d", 2.0 / 3.0),
    ];
    for (id, g) in want {
        let r = by(id);
        assert_eq!(r["status"], "ok", "{r}");
        let got = r["group_reward"].as_f64().unwrap();
        assert!((got - g).abs() < 1e-9, "{id}: {got} != {g}");
        assert!(r["advantage"].is_number(), "{r}");
    }
    // The grader's reward is kept: the empty rollout is the only one `guard` fails.
    assert_eq!(by("m1-d")["reward"], 0.0);
    assert_eq!(by("c1-b")["reward"], 1.0);
    let note = |id: &str| {
        by(id)["trace"]["children"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["note"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(note("c1-b").contains("forged ranking"), "{}", note("c1-b"));
    assert!(note("m1-a").contains("Kendall τ 1.00"), "{}", note("m1-a"));
    assert!(
        err.contains("listwise: 2 groups ranked, 0 failed, 0 chunked; 4 judge calls; 2 samples ranked last unseen"),
        "{err}"
    );
}

#[test]
fn a_judge_that_does_not_answer_the_format_fails_the_groups() {
    let (_srv, url) = fault(&["--mode", "prose"]);
    let (rows, err) = score(&url, &[]);
    assert_eq!(rows.len(), 8);
    for r in &rows {
        assert_eq!(
            (r["status"].as_str(), r["reason"].as_str()),
            (Some("error"), Some("judge_unparseable")),
            "{r}"
        );
        assert!(
            r["advantage"].is_null() && r["group_reward"].is_null(),
            "{r}"
        );
        assert_eq!(r["group_flag"], "excluded", "{r}");
    }
    assert!(err.contains("listwise: 0 groups ranked, 2 failed"), "{err}");
}
