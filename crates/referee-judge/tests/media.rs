//! Images and audio on the wire: a loopback chat server records every request body, and the
//! tests check the exact shape a vision or audio model receives (OpenAI's content parts), that
//! the cache and in-flight dedup key a part by its bytes' digest, and that a policy's image
//! never makes the judge fetch a URL or the grader read a file.

use axum::routing::post;
use axum::{Json, Router};
use base64::Engine as _;
use referee_core::exec::Env;
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

type Seen = Arc<Mutex<Vec<Value>>>;

/// A chat server that answers `{"result": 1}` after `delay_ms` and keeps each request body.
fn serve(delay_ms: u64) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let keep = seen.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new().route(
                "/v1/chat/completions",
                post(move |Json(b): Json<Value>| {
                    let keep = keep.clone();
                    async move {
                        keep.lock().unwrap().push(b);
                        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
                        Json(
                            json!({"choices": [{"message": {"content": "{\"result\": 1}"},
                                                 "finish_reason": "stop"}],
                                    "usage": {"prompt_tokens": 90, "completion_tokens": 4}}),
                        )
                    }
                }),
            );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (format!("http://{}/v1", rx.recv().unwrap()), seen)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../fixtures/media/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn compile(spec: &str) -> Program {
    let env = Env {
        connect: Some(Arc::new(referee_judge::Connector::default())),
        ..Env::default()
    };
    Program::compile_str_with(spec, env).unwrap_or_else(|e| panic!("{e}\n{spec}"))
}

/// OpenAI's `score_model` with an `input_image` block, as an OpenAI grader file writes it.
fn vision_spec(base: &str, cache: &str) -> String {
    format!(
        r#"
judges:
  default: {{base_url: "{base}", model: "vision-judge"}}
judge_cache: {{backend: {cache}}}
grader:
  type: score_model
  name: caption
  model: vision-judge
  steps: false
  media: {{root: "{root}"}}
  input:
    - role: system
      content: Does the caption describe the picture? Answer 1 or 0.
    - role: user
      content:
        - {{type: input_text, text: "Caption: {{{{sample.output_text}}}}"}}
        - {{type: input_image, image_url: "{{{{item.image}}}}", detail: low}}
        - {{type: input_text, text: "Be strict."}}
"#,
        root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/media"),
    )
}

#[test]
fn an_image_is_sent_as_openai_content_parts_in_order() {
    let (base, seen) = serve(0);
    let red = fixture("red.png");
    let program = compile(&vision_spec(&base, "off"));
    let s = Sample::new(
        "A red square.",
        json!({"image": format!("data:image/png;base64,{}", b64(&red))}),
    );
    let rs = referee_core::score::samples(&program, &[s], false).0;
    assert_eq!(rs[0].reward, Some(1.0), "{:?}", rs[0]);
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1);
    let msgs = bodies[0]["messages"].as_array().unwrap();
    // The system message stays a string; the user message is text, image, text.
    assert!(msgs[0]["content"].is_string(), "{}", msgs[0]);
    assert_eq!(msgs[0]["role"], "system");
    let parts = msgs[1]["content"].as_array().unwrap();
    assert_eq!(parts.len(), 3, "{}", msgs[1]);
    assert_eq!(parts[0]["type"], "text");
    let caption = parts[0]["text"].as_str().unwrap();
    assert!(
        caption.starts_with("Caption: <candidate_response>\nA red square.\n</candidate_response>"),
        "{caption}"
    );
    assert_eq!(
        parts[1],
        json!({"type": "image_url", "image_url": {
            "url": format!("data:image/png;base64,{}", b64(&red)), "detail": "low"}})
    );
    assert_eq!(parts[2], json!({"type": "text", "text": "Be strict."}));
}

#[test]
fn the_cache_and_inflight_dedup_key_an_image_by_its_bytes() {
    let (base, seen) = serve(300);
    let red = fixture("red.png");
    let blue = fixture("blue.png");
    let program = compile(&vision_spec(&base, "memory"));
    let row = |image: String| Sample::new("A red square.", json!({ "image": image }));
    // The same bytes as a data URI, mislabelled, and as a file under the root; then other bytes.
    let batch = vec![
        row(format!("data:image/png;base64,{}", b64(&red))),
        row(format!("data:image/jpeg;base64,{}", b64(&red))),
        row("red.png".into()),
        row(format!("data:image/png;base64,{}", b64(&blue))),
    ];
    let rs = referee_core::score::samples(&program, &batch, false).0;
    for r in &rs {
        assert_eq!(r.reward, Some(1.0), "{r:?}");
    }
    let calls: u64 = rs.iter().map(|r| r.usage.unwrap().judge_calls).sum();
    let hits: u64 = rs.iter().map(|r| r.usage.unwrap().cache_hits).sum();
    assert_eq!((calls, hits), (2, 2), "{rs:?}");
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2, "one request per distinct image");
    let urls: Vec<&str> = bodies
        .iter()
        .map(|b| {
            b["messages"][1]["content"][1]["image_url"]["url"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(urls.contains(&format!("data:image/png;base64,{}", b64(&red)).as_str()));
    assert!(urls.contains(&format!("data:image/png;base64,{}", b64(&blue)).as_str()));
}

#[test]
fn audio_is_sent_as_input_audio() {
    let (base, seen) = serve(0);
    let wav = fixture("silence.wav");
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{base}", model: "audio-judge"}}
judge_cache: {{backend: off}}
grader:
  type: score_model
  steps: false
  input:
    - role: user
      content:
        - {{type: input_audio, input_audio: {{data: "{{{{item.clip}}}}", format: wav}}}}
        - {{type: input_text, text: "Transcript: {{{{sample.output_text}}}}"}}
"#
    );
    let s = Sample::new("(silence)", json!({ "clip": b64(&wav) }));
    let rs = referee_core::score::samples(&compile(&spec), &[s], false).0;
    assert_eq!(rs[0].reward, Some(1.0), "{:?}", rs[0]);
    let b = seen.lock().unwrap()[0].clone();
    // The system notice comes first (the prompt shows the candidate), then the user's parts.
    assert_eq!(b["messages"][0]["role"], "system");
    let parts = b["messages"][1]["content"].as_array().unwrap().clone();
    assert_eq!(
        parts[0],
        json!({"type": "input_audio", "input_audio": {"data": b64(&wav), "format": "wav"}})
    );
    assert_eq!(parts[1]["type"], "text");
}

#[test]
fn a_policy_url_or_path_never_reaches_the_server() {
    let (base, seen) = serve(0);
    let spec = format!(
        r#"
judges:
  default: {{base_url: "{base}", model: "vision-judge"}}
judge_cache: {{backend: off}}
grader:
  type: score_model
  steps: false
  input:
    - role: user
      content:
        - {{type: input_text, text: "Draw a red square."}}
        - {{type: input_image, image_url: "{{{{sample.output_text}}}}"}}
"#
    );
    let red = fixture("red.png");
    let outputs = [
        "http://127.0.0.1:1/steal".to_string(),
        "/etc/hostname".to_string(),
        "file:///etc/hostname".to_string(),
        format!("data:image/png;base64,{}", b64(&red)),
    ];
    let batch: Vec<Sample> = outputs.iter().map(|o| Sample::new(o, json!({}))).collect();
    let rs = referee_core::score::samples(&compile(&spec), &batch, false).0;
    let rewards: Vec<Option<f64>> = rs.iter().map(|r| r.reward).collect();
    assert_eq!(rewards, vec![Some(0.0), Some(0.0), Some(0.0), Some(1.0)]);
    assert!(rs.iter().all(|r| r.status.as_str() == "ok"));
    let bodies = seen.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "only the inline image was sent");
    let body = bodies[0].to_string();
    assert!(!body.contains("127.0.0.1:1") && !body.contains("hostname"));
}
