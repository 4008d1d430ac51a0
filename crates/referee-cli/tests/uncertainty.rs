//! The uncertainty example (`examples/uncertainty`) through the real CLI against a loopback
//! noisy judge (`scripts/fault_server.py --mode noisy`: a deterministic coin per candidate,
//! seed and choice, biased towards candidates with digits): five seeded calls for one judge,
//! one five-choice call for the other, and an ensemble that pays their mean minus one standard
//! deviation, so a wrong answer the judges like is paid little for the disagreement.

mod common;

use common::{addr, fault, get, post, referee};
use serde_json::Value;

fn by_id<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter().find(|r| r["id"] == id).unwrap()
}

#[test]
fn the_uncertainty_example_reduces_samples_and_penalises_disagreement() {
    let (_srv, url) = fault(&["--mode", "noisy"]);
    post(&addr(&url), "/reset?record=1", &Value::Null);
    let out = referee()
        .args([
            "score",
            "examples/uncertainty/spec.yaml",
            "examples/uncertainty/rows.jsonl",
            "-q",
        ])
        .args([
            "--judge",
            &url,
            "--judge-model",
            "judge",
            "--judge-cache",
            "off",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    // Every sample of both judges passes the right answer: no spread, full reward.
    let right = by_id(&rows, "right");
    assert_eq!(right["reward"], 1.0, "{right}");
    assert_eq!(right["components"]["quality.std"], 0.0, "{right}");
    assert_eq!(right["components"]["judges.std"], 0.0, "{right}");
    // Five calls for `quality`, one call with n = 5 for `verdict` (its other four samples share it).
    assert_eq!(right["usage"]["judge_calls"], 6, "{right}");
    assert_eq!(right["usage"]["cache_hits"], 4, "{right}");
    // The wrong answer fools the judges (0.8 and a majority of passes) but not the exact check:
    // the ensemble's mean 0.6 less its spread.
    let wrong = by_id(&rows, "wrong");
    let c = &wrong["components"];
    assert_eq!(
        (c["quality"].as_f64(), c["verdict"].as_f64()),
        (Some(0.8), Some(1.0)),
        "{wrong}"
    );
    assert!(c["quality.std"].as_f64().unwrap() > 0.0, "{wrong}");
    assert_eq!(c["exact"], 0.0);
    let (std, reward) = (
        c["judges.std"].as_f64().unwrap(),
        wrong["reward"].as_f64().unwrap(),
    );
    assert!(
        (reward - (0.6 - std)).abs() < 1e-9 && reward < 0.2,
        "{wrong}"
    );
    // Content-free and forged candidates: 0 in every sample of every judge, no call.
    for id in ["opener", "forged"] {
        let r = by_id(&rows, id);
        assert_eq!(
            (r["reward"].as_f64(), r["usage"]["judge_calls"].as_u64()),
            (Some(0.0), Some(0)),
            "{r}"
        );
    }
    // On the wire: per judged candidate five seeded requests and one with n = 5.
    let recorded = get(&addr(&url), "/recorded");
    let bodies: Vec<Value> = recorded
        .as_array()
        .unwrap()
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(bodies.len(), 3 * 6, "three judged candidates");
    let with_n = bodies.iter().filter(|b| b["n"] == 5).count();
    assert_eq!(with_n, 3);
    let mut seeds: Vec<u64> = bodies.iter().filter_map(|b| b["seed"].as_u64()).collect();
    seeds.sort_unstable();
    assert_eq!(seeds, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]);
    assert!(bodies.iter().all(|b| b["temperature"] == 1.0));
}
