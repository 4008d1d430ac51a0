//! The vision example (`examples/vision`): OpenAI's `score_model` and `label_model` grader files
//! with `input_image` blocks, unchanged, through the real CLI against a strict loopback vision
//! judge (`scripts/fault_server.py --mode vision`: it rejects any request not in the chat
//! content-parts shape, decodes each PNG and checks that the caption names its colour).

mod common;

use common::{fault, referee};
use serde_json::Value;

fn score(grader: &str, url: &str) -> Vec<Value> {
    let out = referee()
        .args(["score", grader, "examples/vision/rows.jsonl", "-q"])
        .args(["--judge", url, "--judge-model", "vision-judge"])
        .args(["--judge-cache", "off"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_id<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter().find(|r| r["id"] == id).unwrap()
}

#[test]
fn openai_graders_with_images_run_verbatim() {
    let (_srv, url) = fault(&["--mode", "vision"]);
    for grader in ["examples/vision/grader.json", "examples/vision/label.json"] {
        let rows = score(grader, &url);
        assert_eq!(rows.len(), 6, "{grader}");
        // The judge saw each image: a right caption passes, a wrong one fails, inline or file.
        for (id, want) in [
            ("red-right", 1.0),
            ("red-wrong", 0.0),
            ("blue-file", 1.0),
            ("blue-file-wrong", 0.0),
        ] {
            let r = by_id(&rows, id);
            assert_eq!(
                (r["status"].as_str(), r["reward"].as_f64()),
                (Some("ok"), Some(want)),
                "{grader} {r}"
            );
            assert_eq!(r["usage"]["judge_calls"], 1, "{grader} {r}");
        }
        // An empty caption is the policy's miss, scored without a call.
        let empty = by_id(&rows, "empty");
        assert_eq!(
            (
                empty["reward"].as_f64(),
                empty["usage"]["judge_calls"].as_u64()
            ),
            (Some(0.0), Some(0)),
            "{empty}"
        );
        // A row whose image file is missing cannot be scored: an error with its reason.
        let missing = by_id(&rows, "missing-file");
        assert_eq!(missing["status"], "error", "{missing}");
        assert_eq!(missing["reason"], "media_unreadable", "{missing}");
        assert!(missing["reward"].is_null(), "{missing}");
    }
}
