//! `--tokenizer`: step rewards with token spans through the real binary, for `score` and
//! `serve`, with a byte-level BPE trained here and saved as the `tokenizer.json` a trainer ships.

mod common;

use common::{post, referee, scratch, serve};
use serde_json::{json, Value};
use tokenizers::models::bpe::{BpeTrainer, BPE};
use tokenizers::models::TrainerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;

const SPEC: &str = r#"
type: each_step
name: steps
steps: {split: paragraphs}
grader: {type: regex, pattern: "wrong", mode: forbid}
aggregate: min
"#;

const TEXT: &str = "Step 1: 3 + 4 = 7.\n\nStep 2: 7 * 2 = 14, so 14.";

/// Writes the spec and a trained tokenizer; returns the tokenizer and both paths.
fn setup(name: &str) -> (tokenizers::Tokenizer, String, String) {
    let dir = scratch("tokens", name);
    let mut t = tokenizers::Tokenizer::new(BPE::default());
    let bl = ByteLevel::default().add_prefix_space(false);
    t.with_pre_tokenizer(Some(bl));
    t.with_decoder(Some(bl));
    let mut trainer: TrainerWrapper = BpeTrainer::builder()
        .vocab_size(300)
        .show_progress(false)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .build()
        .into();
    t.train(&mut trainer, [TEXT].iter()).unwrap();
    let tok = dir.join("tokenizer.json");
    t.save(&tok, false).unwrap();
    let spec = dir.join("spec.yaml");
    std::fs::write(&spec, SPEC).unwrap();
    (t, tok.display().to_string(), spec.display().to_string())
}

fn ids(t: &tokenizers::Tokenizer) -> Vec<u32> {
    t.encode(TEXT, false).unwrap().get_ids().to_vec()
}

/// Each step's `[token_start, token_end)`, checked against the tokenizer: the last token is the
/// one that completes the step's text.
fn check_spans(t: &tokenizers::Tokenizer, ids: &[u32], result: &Value) {
    let steps = result["step_rewards"].as_array().expect("step rewards");
    assert_eq!(steps.len(), 2, "{result}");
    for st in steps {
        let end = st["end"].as_u64().unwrap() as usize;
        let b = st["token_end"].as_u64().expect("token_end") as usize;
        let upto = |k: usize| t.decode(&ids[..k], true).unwrap().chars().count();
        assert!(upto(b) >= end && upto(b - 1) < end, "{st}");
    }
}

#[test]
fn score_gives_token_spans_with_a_tokenizer_and_says_why_not_without() {
    let (t, tok, spec) = setup("score");
    let ids = ids(&t);
    let rows = [
        json!({"id": 1, "sample": {"output_text": TEXT, "completion_ids": ids}}),
        json!({"id": 2, "sample": {"output_text": "Other text.", "completion_ids": ids}}),
    ];
    let input = rows.map(|r| r.to_string()).join("\n");
    let run = |extra: &[&str]| -> Vec<Value> {
        let out = referee()
            .args(["score", &spec, "-q"])
            .args(extra)
            .write_stdin(input.clone())
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
    };
    let got = run(&["--tokenizer", &tok]);
    check_spans(&t, &ids, &got[0]);
    assert!(got[0].get("token_error").is_none(), "{}", got[0]);
    assert_eq!(got[1]["reward"], json!(1.0));
    let e = got[1]["token_error"].as_str().unwrap();
    assert!(e.contains("decode to a different text"), "{e}");
    let without = run(&[]);
    assert_eq!(without[0]["reward"], got[0]["reward"]);
    assert!(without[0]["token_error"]
        .as_str()
        .unwrap()
        .contains("no tokenizer"));

    let out = referee()
        .args([
            "score",
            &spec,
            "-q",
            "--tokenizer",
            "no/such/tokenizer.json",
        ])
        .write_stdin(input)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot load tokenizer no/such/tokenizer.json"),
        "{err}"
    );
}

#[test]
fn serve_gives_token_spans_with_a_tokenizer() {
    let (t, tok, spec) = setup("serve");
    let ids = ids(&t);
    let srv = serve(&["--spec", &format!("steps={spec}"), "--tokenizer", &tok]);
    let (status, body) = post(
        &srv.addr,
        "/v1/score",
        &json!({"program": "steps", "samples": [{"sample": {"output_text": TEXT, "completion_ids": ids}}]}),
    );
    assert_eq!(status, 200, "{body}");
    check_spans(&t, &ids, &body["results"][0]);
}
