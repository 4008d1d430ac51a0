//! The client against a scripted OpenAI-compatible server on loopback (axum, in the test
//! process): each test picks the server's behaviour through the `model` it asks for. Real
//! servers (llama.cpp's llama-server) come with the judge graders.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use referee_judge::{ChatRequest, Client, EndpointConfig, Message, StructuredOutputs};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Script {
    calls: Mutex<HashMap<String, usize>>,
    bodies: Mutex<Vec<Value>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

fn ok_reply(content: &str) -> Response {
    Json(json!({
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                     "logprobs": {"content": [{"token": "yes", "logprob": -0.1, "top_logprobs": []}]}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 3}
    }))
    .into_response()
}

async fn chat(State(s): State<Arc<Script>>, Json(body): Json<Value>) -> Response {
    let model = body["model"].as_str().unwrap_or("").to_string();
    let n = {
        let mut c = s.calls.lock().unwrap();
        let e = c.entry(model.clone()).or_default();
        *e += 1;
        *e
    };
    s.bodies.lock().unwrap().push(body.clone());
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let r = match model.as_str() {
        "ok" => ok_reply("yes"),
        "flaky" if n <= 2 => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "flaky" => ok_reply("recovered"),
        "busy" if n == 1 => {
            let mut h = HeaderMap::new();
            h.insert("retry-after", "0".parse().unwrap());
            (StatusCode::TOO_MANY_REQUESTS, h, "slow down").into_response()
        }
        "busy" => ok_reply("ok now"),
        "down" => (StatusCode::BAD_GATEWAY, "bad gateway").into_response(),
        "bad_request" => (StatusCode::BAD_REQUEST, "max_tokens too large").into_response(),
        "stall" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            ok_reply("late")
        }
        "slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            ok_reply("slow")
        }
        "garbage" => (StatusCode::OK, "<html>not json</html>").into_response(),
        "no_schema" if body.get("response_format").is_some() => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "response_format json_schema is not supported",
        )
            .into_response(),
        "no_schema" => ok_reply("{\"verdict\": \"yes\"}"),
        other => (StatusCode::NOT_FOUND, format!("no model {other}")).into_response(),
    };
    s.in_flight.fetch_sub(1, Ordering::SeqCst);
    r
}

async fn server() -> (String, Arc<Script>) {
    let script = Arc::new(Script::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), script)
}

fn cfg(base: &str, model: &str) -> EndpointConfig {
    let mut c = EndpointConfig::new(base, model);
    c.backoff_ms = 10;
    c.backoff_max_ms = 50;
    c.timeout_ms = 2_000;
    c
}

/// One default call to `model` on the scripted server.
async fn once(
    base: &str,
    model: &str,
) -> Result<referee_judge::ChatReply, referee_judge::JudgeError> {
    Client::new(cfg(base, model))
        .unwrap()
        .chat(&ask(), None)
        .await
}

/// `n` default calls at once on one client; the replies in order (each must succeed).
async fn at_once(c: EndpointConfig, n: usize) -> Vec<referee_judge::ChatReply> {
    let j = Arc::new(Client::new(c).unwrap());
    let calls: Vec<_> = (0..n)
        .map(|_| {
            let j = j.clone();
            tokio::spawn(async move { j.chat(&ask(), None).await })
        })
        .collect();
    let mut out = Vec::new();
    for c in calls {
        out.push(c.await.unwrap().unwrap());
    }
    out
}

fn ask() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("Client."), Message::user("Is 2+2=4?")],
        max_tokens: Some(4),
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn a_reply_carries_content_usage_and_latency() {
    let (base, s) = server().await;
    let j = Client::new(cfg(&base, "ok")).unwrap();
    let mut req = ask();
    req.temperature = Some(0.0);
    req.top_logprobs = Some(2);
    let r = j.chat(&req, None).await.unwrap();
    assert_eq!(r.content, "yes");
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (20, 3));
    assert_eq!(r.attempts, 1);
    assert!(r.latency_ms > 0.0);
    assert!(r.logprobs.is_some());
    let body = s.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["model"], "ok");
    assert_eq!(body["logprobs"], true);
    assert_eq!(body["top_logprobs"], 2);
    assert_eq!(body["max_tokens"], 4);
    assert_eq!(body["messages"][1]["content"], "Is 2+2=4?");
}

#[tokio::test]
async fn server_errors_are_retried_until_they_pass() {
    let (base, s) = server().await;
    let j = Client::new(cfg(&base, "flaky")).unwrap();
    let r = j.chat(&ask(), None).await.unwrap();
    assert_eq!((r.content.as_str(), r.attempts), ("recovered", 3));
    assert_eq!(s.calls.lock().unwrap()["flaky"], 3);
}

#[tokio::test]
async fn rate_limits_are_retried_after_retry_after() {
    let (base, _) = server().await;
    let r = once(&base, "busy").await.unwrap();
    assert_eq!((r.content.as_str(), r.attempts), ("ok now", 2));
}

#[tokio::test]
async fn a_server_that_keeps_failing_is_an_error_with_a_reason() {
    let (base, s) = server().await;
    let e = once(&base, "down").await.unwrap_err();
    assert_eq!(e.reason, "judge_http_5xx");
    assert_eq!(e.attempts, 4); // the first and max_retries = 3 more
    assert_eq!(s.calls.lock().unwrap()["down"], 4);
}

#[tokio::test]
async fn a_bad_request_is_not_retried() {
    let (base, s) = server().await;
    let e = once(&base, "bad_request").await.unwrap_err();
    assert_eq!((e.reason, e.attempts), ("judge_http_4xx", 1));
    assert_eq!(s.calls.lock().unwrap()["bad_request"], 1);
}

#[tokio::test]
async fn a_stalled_server_times_out_per_attempt() {
    let (base, s) = server().await;
    let mut c = cfg(&base, "stall");
    c.timeout_ms = 150;
    c.max_retries = 1;
    let t = Instant::now();
    let e = Client::new(c)
        .unwrap()
        .chat(&ask(), None)
        .await
        .unwrap_err();
    assert_eq!((e.reason, e.attempts), ("judge_timeout", 2));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(s.calls.lock().unwrap()["stall"], 2);
}

#[tokio::test]
async fn the_deadline_ends_the_call_whatever_the_retries() {
    let (base, _) = server().await;
    let mut c = cfg(&base, "stall");
    c.timeout_ms = 10_000;
    let t = Instant::now();
    let e = Client::new(c)
        .unwrap()
        .chat(&ask(), Some(Instant::now() + Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert_eq!(e.reason, "judge_deadline");
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn the_timeout_does_not_count_time_spent_queueing() {
    // One slot, a 300 ms server, a 450 ms timeout: the second call waits about 300 ms for the
    // slot, then gets its own 450 ms. Were queue time counted, it would time out.
    let (base, s) = server().await;
    let mut c = cfg(&base, "slow");
    c.max_concurrency = 1;
    c.timeout_ms = 450;
    c.max_retries = 0;
    for r in at_once(c, 3).await {
        assert_eq!(r.content, "slow");
    }
    assert_eq!(s.max_in_flight.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn concurrency_is_limited_per_endpoint() {
    let (base, s) = server().await;
    let mut c = cfg(&base, "slow");
    c.max_concurrency = 3;
    let t = Instant::now();
    at_once(c, 9).await;
    assert_eq!(s.max_in_flight.load(Ordering::SeqCst), 3);
    // Three waves of 300 ms.
    assert!(
        t.elapsed() >= Duration::from_millis(850),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn requests_per_minute_spread_a_burst() {
    let (base, _) = server().await;
    let mut c = cfg(&base, "ok");
    c.requests_per_minute = Some(600); // 10 per second, a burst of 10
    let t = Instant::now();
    at_once(c, 20).await;
    // The first 10 go at once, the next 10 at 100 ms intervals.
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn an_unreadable_reply_is_unparseable_not_a_score() {
    let (base, _) = server().await;
    let e = once(&base, "garbage").await.unwrap_err();
    assert_eq!((e.reason, e.attempts), ("judge_unparseable", 1));
}

#[tokio::test]
async fn a_refused_connection_is_a_connection_error() {
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut c = cfg(&format!("http://127.0.0.1:{port}/v1"), "ok");
    c.max_retries = 1;
    let e = Client::new(c)
        .unwrap()
        .chat(&ask(), None)
        .await
        .unwrap_err();
    assert_eq!((e.reason, e.attempts), ("judge_connection", 2));
}

#[tokio::test]
async fn structured_outputs_fall_back_once_the_server_refuses_them() {
    let (base, s) = server().await;
    let j = Client::new(cfg(&base, "no_schema")).unwrap();
    let mut req = ask();
    req.json_schema =
        Some(json!({"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}}));
    let r = j.chat(&req, None).await.unwrap();
    assert_eq!(r.content, "{\"verdict\": \"yes\"}");
    assert!(!r.structured);
    assert_eq!(r.attempts, 1);
    // The endpoint remembers: the next call does not send response_format at all.
    let r = j.chat(&req, None).await.unwrap();
    assert!(!r.structured);
    let bodies = s.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0].get("response_format").is_some());
    assert!(bodies[1].get("response_format").is_none());
    assert!(bodies[2].get("response_format").is_none());
}

#[tokio::test]
async fn structured_outputs_are_sent_where_supported() {
    let (base, s) = server().await;
    let j = Client::new(cfg(&base, "ok")).unwrap();
    let mut req = ask();
    req.json_schema = Some(json!({"type": "object"}));
    assert!(j.chat(&req, None).await.unwrap().structured);
    let body = s.bodies.lock().unwrap()[0].clone();
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    // `always` turns a refusal into an error instead of a fallback.
    let mut c = cfg(&base, "no_schema");
    c.structured_outputs = StructuredOutputs::Always;
    let e = Client::new(c).unwrap().chat(&req, None).await.unwrap_err();
    assert_eq!(e.reason, "judge_http_4xx");
}

#[test]
fn a_missing_api_key_variable_is_a_configuration_error() {
    let mut c = EndpointConfig::new("http://127.0.0.1:9/v1", "m");
    c.api_key_env = Some("REFEREE_TEST_SURELY_UNSET_KEY".into());
    assert!(Client::new(c)
        .err()
        .unwrap()
        .contains("REFEREE_TEST_SURELY_UNSET_KEY"));
}
