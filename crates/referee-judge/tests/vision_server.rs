//! Images against a real vision server: llama-server with the tiny model and its tiny
//! random-weight CLIP encoder (`scripts/judge_server.py start --model tiny --vision`, which
//! generates and caches `tiny-mmproj.gguf`; `scripts/test.sh` runs `ensure` first). The
//! weights are random, so the tests assert on structure (the reply parsed, the score is in
//! range, the image cost the prompt tokens the encoder makes), never on verdicts.

mod common;

use base64::Engine as _;
use common::LlamaServer;
use referee_core::exec::Env;
use referee_core::judge::media::{self, MediaKind, MediaLimits};
use referee_core::{Program, Sample, ScoreResult};
use referee_judge::{ChatRequest, Client, EndpointConfig, Message};
use serde_json::{json, Value};
use std::sync::Arc;

/// `judge_server.py`'s tiny encoder: a 32x32 image in 8x8 patches, one prompt token per patch.
const IMAGE_TOKENS: u64 = (32 / 8) * (32 / 8);

fn compile(spec: &str) -> Program {
    let env = Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    Program::compile_str_with(spec, env).unwrap_or_else(|e| panic!("{e}\n{spec}"))
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../fixtures/media/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn data_uri(mime: &str, bytes: &[u8]) -> String {
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// OpenAI's `score_model` with `image` (a template, or none) between two text parts, scored
/// 0 to 9 (llama-server enforces the range through `response_format` `json_schema`).
fn spec(server: &LlamaServer, image: Option<&str>) -> String {
    let image = image.map_or(String::new(), |t| {
        format!("        - {{type: input_image, image_url: \"{t}\"}}\n")
    });
    format!(
        r#"
judges:
  default: {{base_url: "{base}", model: "{model}", max_retries: 0}}
judge_cache: {{backend: off}}
grader:
  type: score_model
  name: caption
  steps: false
  range: [0, 9]
  sampling_params: {{max_completions_tokens: 64}}
  media: {{root: "{root}"}}
  input:
    - role: system
      content: Rate from 0 to 9 how well the caption describes the picture.
    - role: user
      content:
        - {{type: input_text, text: "Caption: {{{{sample.output_text}}}}"}}
{image}        - {{type: input_text, text: "Be strict."}}
"#,
        base = server.base_url,
        model = server.model,
        root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/media"),
    )
}

fn score(spec: &str, samples: &[Sample]) -> Vec<ScoreResult> {
    referee_core::score::samples(&compile(spec), samples, false).0
}

fn prompt_tokens(r: &ScoreResult) -> u64 {
    r.usage
        .unwrap_or_else(|| panic!("no usage: {r:?}"))
        .prompt_tokens
}

fn assert_scored(r: &ScoreResult) {
    assert_eq!(r.status.as_str(), "ok", "{r:?}");
    let v = r.reward.unwrap();
    assert!((0.0..=9.0).contains(&v), "{r:?}");
    assert_eq!(r.usage.unwrap().judge_calls, 1, "{r:?}");
}

#[test]
fn images_from_data_uris_and_files_are_consumed_by_a_real_vision_server() {
    let server = LlamaServer::start_with("tiny", &["--vision"]);
    let red = data_uri("image/png", &fixture("red.png"));
    let row = |item: Value| Sample::new("A red square.", item);
    let batch = [
        row(json!({ "image": red })),
        row(json!({ "image": "blue.png" })), // a dataset path, read under the media root
        row(json!({ "image": [red, "blue.png"] })), // a list variable: one part per element
    ];
    let with = score(&spec(&server, Some("{{item.image}}")), &batch);
    for r in &with {
        assert_scored(r);
    }
    let without = score(&spec(&server, None), &batch[..1]);
    assert_scored(&without[0]);

    // The server turned each image into the encoder's tokens: a second image costs exactly
    // IMAGE_TOKENS more, and the first about as much (the text around its marker tokenises a
    // little differently from the two text parts joined: 15 here).
    let (none, one_uri, one_file, two) = (
        prompt_tokens(&without[0]),
        prompt_tokens(&with[0]),
        prompt_tokens(&with[1]),
        prompt_tokens(&with[2]),
    );
    assert_eq!(one_uri, one_file, "{with:?}");
    assert_eq!(
        two - one_uri,
        IMAGE_TOKENS,
        "one image: {one_uri}, two: {two}"
    );
    assert!(
        one_uri.abs_diff(none + IMAGE_TOKENS) <= 2,
        "no image: {none} prompt tokens, one: {one_uri}"
    );
}

/// The first answer token's top alternatives for "Caption: hi" and the image in `uri`.
async fn first_token(client: &Client, uri: &str) -> Vec<(String, f64)> {
    let image = media::resolve(
        uri,
        &MediaKind::Image { detail: None },
        false,
        &MediaLimits::default(),
    )
    .unwrap();
    let mut m = Message::user("Caption: hi");
    m.media = vec![(m.content.len(), Arc::new(image))];
    let req = ChatRequest {
        messages: vec![m],
        temperature: Some(0.0),
        max_tokens: Some(1),
        top_logprobs: Some(3),
        ..ChatRequest::default()
    };
    let r = client.chat(&req, None).await.unwrap();
    r.logprobs.as_ref().unwrap()["content"][0]["top_logprobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["token"].as_str().unwrap().to_string(),
                t["logprob"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_sees_the_pixels() {
    let server = LlamaServer::start_with("tiny", &["--vision"]);
    let client = Client::new(EndpointConfig::new(&server.base_url, &server.model)).unwrap();
    let red = data_uri("image/png", &fixture("red.png"));
    let blue = data_uri("image/png", &fixture("blue.png"));
    let a = first_token(&client, &red).await;
    let b = first_token(&client, &red).await;
    let c = first_token(&client, &blue).await;
    assert_eq!(a.len(), 3, "{a:?}");
    // Equal up to float noise (a reused prompt cache batches the tokens differently).
    let close = |x: &[(String, f64)], y: &[(String, f64)]| {
        x.iter()
            .zip(y)
            .all(|((t, l), (u, m))| t == u && (l - m).abs() < 1e-3)
    };
    assert!(close(&a, &b), "the same image: {a:?} then {b:?}");
    // Random weights, but a red and a blue square are different encoder inputs, so the text
    // model sees different embeddings and answers with a different distribution.
    assert!(!close(&a, &c), "red {a:?} and blue {c:?}");
}

/// Bytes that pass our sniff (PNG's signature) but are no image: the server cannot decode them.
fn broken_png() -> Vec<u8> {
    let mut b = fixture("red.png");
    b.truncate(20);
    b.extend_from_slice(b"\0\0\0\0 not the rest of a PNG");
    b
}

#[test]
fn an_image_the_server_cannot_decode_is_the_rows_error_or_the_policys_zero() {
    let server = LlamaServer::start_with("tiny", &["--vision"]);
    let rs = score(
        &spec(&server, Some("{{item.image}}")),
        &[Sample::new(
            "A red square.",
            json!({ "image": data_uri("image/png", &broken_png()) }),
        )],
    );
    let r = &rs[0];
    assert_eq!(r.status.as_str(), "error", "{r:?}");
    assert_eq!(r.reward, None, "{r:?}");
    // llama-server refuses an image it cannot load with HTTP 400: not retried.
    assert_eq!(r.reason(), Some("judge_http_4xx"), "{r:?}");
    let msg = format!("{r:?}");
    assert!(msg.contains("Failed to load image"), "{msg}");

    // The same bytes written by the policy are decoded before any call, and are its miss: a
    // row the server refuses would be an error a trainer drops, so the policy would escape.
    let rs = score(
        &spec(&server, Some("{{sample.output_text}}")),
        &[Sample::new(data_uri("image/png", &broken_png()), json!({}))],
    );
    let r = &rs[0];
    assert_eq!((r.status.as_str(), r.reward), ("ok", Some(0.0)), "{r:?}");
    assert_eq!(r.usage.map_or(0, |u| u.judge_calls), 0, "{r:?}");
}

#[test]
fn an_image_sent_to_a_server_without_vision_is_an_error_with_a_reason() {
    let server = LlamaServer::start("tiny");
    let rs = score(
        &spec(&server, Some("{{item.image}}")),
        &[Sample::new(
            "A red square.",
            json!({ "image": data_uri("image/png", &fixture("red.png")) }),
        )],
    );
    let r = &rs[0];
    assert_eq!(r.status.as_str(), "error", "{r:?}");
    assert_eq!(r.reward, None, "{r:?}");
    // llama-server calls this a server error (HTTP 500), so the client retries it like one.
    assert_eq!(r.reason(), Some("judge_http_5xx"), "{r:?}");
    let msg = format!("{r:?}");
    assert!(msg.contains("image input is not supported"), "{msg}");
}
