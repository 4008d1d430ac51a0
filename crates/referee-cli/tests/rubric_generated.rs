//! The generated-rubric example (`examples/rubric-generated`) through the real CLI against a
//! loopback writer-and-grader (`scripts/fault_server.py --mode rubric`, recording every request
//! body): one writer call per prompt, the rubric in the trace, and on the wire the writer's
//! requests carry the question and reference but none of the candidates' text.

mod common;

use common::{fault, send};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;

/// `GET /recorded`: every request body the server kept since `/reset?record=1`.
fn recorded(addr: &str) -> Vec<Value> {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /recorded HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let body = out.split_once("\r\n\r\n").unwrap().1;
    let list: Vec<Value> =
        serde_json::from_str(&body[body.find('[').unwrap()..=body.rfind(']').unwrap()]).unwrap();
    list.into_iter()
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect()
}

fn is_writer(body: &Value) -> bool {
    body["messages"][0]["content"]
        .as_str()
        .is_some_and(|c| c.contains("You write grading rubrics"))
}

#[test]
fn a_prompt_rubric_is_written_once_and_never_sees_the_candidate() {
    let (_srv, url) = fault(&["--mode", "rubric"]);
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    assert_eq!(send(&addr, "POST", "/reset?record=1", "").0, 200);
    let out = common::referee()
        .args(["score", "examples/rubric-generated/spec.yaml"])
        .args(["examples/rubric-generated/rows.jsonl", "-q", "--explain"])
        .args(["--judge", &url, "--judge-model", "writer-and-grader"])
        .args(["--judge-cache", "off"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 9);
    let row = |id: &str| rows.iter().find(|r| r["id"] == id).unwrap();
    // Categories 1.0 / 0.7 / −0.9 over Σ positive 1.7 (see the example's README).
    for (id, want) in [
        ("p1-a", Some(1.0)),
        ("p1-b", Some(1.0 / 1.7)),
        ("p1-c", Some(0.1 / 1.7)),
        ("p1-d", Some(0.0)),
        ("p1-e", Some(0.0)),
        ("p2-a", Some(1.0)),
        ("p2-b", Some(0.0)),
        ("p2-c", Some(1.0 / 1.7)),
    ] {
        let r = row(id);
        assert_eq!(r["status"], "ok", "{r}");
        let got = r["reward"].as_f64();
        assert!(
            got.zip(want).is_some_and(|(g, w)| (g - w).abs() < 1e-9),
            "{id}: want {want:?}, got {r}"
        );
    }
    // The row without a reference cannot ask the writer: an error, not a 0.
    let p3 = row("p3-a");
    assert_eq!(
        (p3["status"].as_str(), p3["reason"].as_str()),
        (Some("error"), Some("missing_field")),
        "{p3}"
    );
    assert!(p3["reward"].is_null(), "{p3}");

    // One writer call per prompt; every other sample of the prompt counts a cache hit.
    let (_, stats) = send(&addr, "GET", "/stats", "");
    assert_eq!(stats["writes"], 2, "{stats}");
    let total = |k: &str| -> u64 {
        rows.iter()
            .map(|r| r["usage"][k].as_u64().unwrap_or(0))
            .sum()
    };
    assert_eq!(total("judge_calls"), stats["requests"].as_u64().unwrap());
    assert_eq!(total("cache_hits"), 6, "8 rubric rows, 2 prompts");
    for p in ["p1", "p2"] {
        // Output rows carry the input's id, not its group: the ids name the prompt.
        let group: Vec<&Value> = rows
            .iter()
            .filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with(p)))
            .collect();
        assert_eq!(group.len(), if p == "p1" { 5 } else { 3 });
        let generated: Vec<&Value> = group
            .iter()
            .map(|r| &r["trace"]["detail"]["generated"])
            .collect();
        // One rubric per prompt, shared by all its samples, made by exactly one of them.
        assert!(generated
            .iter()
            .all(|g| g["request"] == generated[0]["request"]));
        assert_eq!(
            generated.iter().filter(|g| g["shared"] == false).count(),
            1,
            "{p}: {generated:?}"
        );
        let c = &generated[0]["criteria"];
        assert_eq!(c.as_array().unwrap().len(), 3, "{c}");
        assert_eq!(c[0]["category"], "essential", "{c}");
        assert_eq!(c[2]["category"], "pitfall", "{c}");
    }
    assert_ne!(
        row("p1-a")["trace"]["detail"]["generated"]["request"],
        row("p2-a")["trace"]["detail"]["generated"]["request"]
    );
    assert!(row("p1-b").to_string().contains("written by the writer"));

    // On the wire: the writer saw the questions and references, never a candidate's text.
    let bodies = recorded(&addr);
    let (writes, grades): (Vec<&Value>, Vec<&Value>) = bodies.iter().partition(|b| is_writer(b));
    assert_eq!(writes.len(), 2);
    let candidates: Vec<String> =
        std::fs::read_to_string(common::root().join("examples/rubric-generated/rows.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["sample"]["output_text"].as_str().unwrap().to_string()
            })
            .collect();
    for w in &writes {
        let text = w.to_string();
        assert!(text.contains("Reference answer:"), "{text}");
        assert_eq!(w["temperature"], 0.0, "{text}");
        for c in &candidates {
            let c = serde_json::to_string(c).unwrap();
            assert!(
                !text.contains(c.trim_matches('"')),
                "{c} reached the writer"
            );
        }
        for fragment in [
            "award full marks",
            "381",
            "Sydney",
            "verdicts",
            "candidate_response",
        ] {
            assert!(
                !text.contains(fragment),
                "`{fragment}` reached the writer: {text}"
            );
        }
    }
    // The check can see a candidate: the grader's requests do carry theirs.
    assert!(grades
        .iter()
        .any(|g| g.to_string().contains("It is 391 or 381.")));
}
