//! The client against a real OpenAI-compatible server: llama.cpp's `llama-server` with the tiny
//! generated model, started on loopback by `scripts/judge_server.py` (which builds and caches it
//! on first use; `scripts/test.sh` runs its `ensure` first) and stopped when the test ends.

use referee_core::judge::soft;
use referee_judge::{ChatRequest, Client, EndpointConfig, Message};
use serde_json::{json, Value};

mod common;

use common::LlamaServer as Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_server_answers_plain_logprob_and_schema_calls() {
    let server = Server::start("tiny");
    let client = Client::new(EndpointConfig::new(&server.base_url, &server.model)).unwrap();
    let mut req = ChatRequest {
        messages: vec![Message::user("Is the sky blue? Answer yes or no.")],
        temperature: Some(0.0),
        max_tokens: Some(8),
        ..ChatRequest::default()
    };

    let a = client.chat(&req, None).await.unwrap();
    let b = client.chat(&req, None).await.unwrap();
    assert_eq!(
        a.content, b.content,
        "temperature 0 on one slot is deterministic"
    );
    assert!(a.usage.prompt_tokens > 0 && a.usage.completion_tokens > 0);
    assert!(a.finish_reason.is_some());

    req.top_logprobs = Some(3);
    let r = client.chat(&req, None).await.unwrap();
    let tokens = r
        .logprobs
        .as_ref()
        .and_then(|l| l["content"].as_array())
        .unwrap();
    assert!(!tokens.is_empty());
    assert_eq!(tokens[0]["top_logprobs"].as_array().unwrap().len(), 3);
    // The soft-verdict reader understands the real server's shape: at the first position whose
    // token is a word, with that position's alternatives as the labels, the renormalised
    // probabilities sum to 1.
    let lp = r.logprobs.as_ref().unwrap();
    let pos = soft::positions(lp).unwrap();
    assert_eq!(pos.len(), tokens.len());
    let (_, alts) = pos
        .iter()
        .find(|(t, _)| !soft::norm(t).is_empty())
        .expect("some generated token is not blank");
    let labels: Vec<&str> = alts
        .iter()
        .map(|(t, _)| t.as_str())
        .filter(|t| !soft::norm(t).is_empty())
        .collect();
    let p = soft::label_distribution(lp, &labels).unwrap();
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{p:?}");

    req.top_logprobs = None;
    req.max_tokens = Some(64);
    req.json_schema = Some(json!({
        "type": "object",
        "properties": {"verdict": {"enum": ["yes", "no"]}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["verdict", "score"],
        "additionalProperties": false
    }));
    let r = client.chat(&req, None).await.unwrap();
    assert!(
        r.structured,
        "llama-server supports response_format json_schema"
    );
    let v: Value = serde_json::from_str(&r.content)
        .unwrap_or_else(|e| panic!("not JSON: {:?}: {e}", r.content));
    assert!(v["verdict"] == "yes" || v["verdict"] == "no", "{v}");
    let score = v["score"].as_i64().unwrap();
    assert!((1..=5).contains(&score), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_a_connection_error_not_a_score() {
    let server = Server::start("tiny");
    let mut cfg = EndpointConfig::new(&server.base_url, &server.model);
    cfg.max_retries = 1;
    cfg.backoff_ms = 10;
    let client = Client::new(cfg).unwrap();
    let req = ChatRequest {
        messages: vec![Message::user("hi")],
        max_tokens: Some(4),
        ..ChatRequest::default()
    };
    client.chat(&req, None).await.unwrap();
    drop(server); // stops it
    let e = client.chat(&req, None).await.unwrap_err();
    assert_eq!(e.reason, "judge_connection", "{e}");
    assert_eq!(e.attempts, 2);
}
