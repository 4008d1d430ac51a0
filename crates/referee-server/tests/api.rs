//! Every endpoint and error shape through `app(state).oneshot(req)`.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use referee_server::{app, AppState, Config};
use serde_json::{json, Value};
use std::sync::Arc;
use tower::ServiceExt;

fn state(config: Config) -> Arc<AppState> {
    AppState::new(config, Arc::new(referee_core::exec::Env::default))
}

async fn call(
    st: &Arc<AppState>,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value, Option<String>) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    let resp = app(st.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, v, retry)
}

const GSM: &str = "{type: numeric, name: correct, reference: '{{item.answer}}', extract: last}";

#[tokio::test]
async fn step_rewards_come_back_with_each_result() {
    let st = state(Config::default());
    let spec = "{type: each_step, name: process, steps: {split: numbered}, grader: {type: regex, mode: forbid, pattern: wrong}}";
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": spec, "samples": [
            {"id": "a", "item": {}, "sample": {"output_text": "1. fine\n2. wrong é"}},
            {"id": "b", "nonsense": true}
        ]})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = v["results"].as_array().unwrap();
    assert_eq!(
        r[0]["step_rewards"],
        json!([
            {"start": 0, "end": 7, "value": 1.0, "component": "process"},
            {"start": 8, "end": 18, "value": 0.0, "component": "process"}
        ])
    );
    assert_eq!(r[1]["status"], "error");
    assert!(r[1].get("step_rewards").is_none(), "{}", r[1]);
}

#[tokio::test]
async fn health_and_scoring_inline_in_order_with_a_bad_row_as_a_result() {
    let st = state(Config::default());
    let (s, v, _) = call(&st, "GET", "/healthz", None).await;
    assert_eq!((s, v), (StatusCode::OK, json!({"status": "ok"})));
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": [
            {"id": "a", "item": {"answer": "42"}, "sample": {"output_text": "so 42"}},
            {"id": "b", "item": {"answer": "42"}, "sample": {"output_text": "so 41"}},
            {"id": "c", "nonsense": true},
            {"prompt": "p", "completion": "7", "answer": "7"}
        ]})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(
        (r[0]["id"].clone(), r[0]["reward"].clone()),
        (json!("a"), json!(1.0))
    );
    assert_eq!(
        (r[1]["id"].clone(), r[1]["reward"].clone()),
        (json!("b"), json!(0.0))
    );
    assert_eq!(r[2]["status"], "error");
    assert_eq!(r[2]["reason"], "unknown_row_format");
    assert_eq!(r[3]["reward"], 1.0, "TRL rows are read too: {}", r[3]);
    assert_eq!(v["summary"]["samples"], 4);
    assert_eq!(v["summary"]["errors"], 1);
}

#[tokio::test]
async fn programs_are_registered_once_and_scored_by_name() {
    let st = state(Config::default());
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/programs",
        Some(json!({"name": "gsm", "spec": GSM})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["components"], json!(["correct"]));
    let (_, v, _) = call(&st, "GET", "/v1/programs", None).await;
    assert_eq!(v, json!({"programs": ["gsm"]}));
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"program": "gsm", "explain": true,
                    "samples": [{"item": {"answer": "3"}, "sample": {"output_text": "3"}}]})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["results"][0]["reward"], 1.0);
    assert!(v["results"][0]["trace"].is_object(), "explain gives traces");
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"program": "nope", "samples": []})),
    )
    .await;
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::NOT_FOUND, json!("unknown_program"))
    );
}

#[tokio::test]
async fn errors_have_their_status_and_shape() {
    let st = state(Config {
        max_batch: 2,
        max_body_bytes: 4096,
        ..Config::default()
    });
    // A spec error lists every problem with its path.
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": {"type": "weighted_sum", "weights": [1, "x"], "inputs": [{"type": "nope"}]}, "samples": []})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert_eq!(v["error"], "spec_error");
    let paths: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"/inputs/0/type") && paths.contains(&"/weights/1"),
        "{paths:?}"
    );
    // Malformed JSON, both or neither of spec/program, too many samples, too large a body.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/score")
        .body(Body::from("{not json"))
        .unwrap();
    let resp = app(st.clone()).oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let (s, _, _) = call(&st, "POST", "/v1/score", Some(json!({"samples": []}))).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let row = json!({"item": {"answer": "1"}, "sample": {"output_text": "1"}});
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": [row, row, row]})),
    )
    .await;
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::PAYLOAD_TOO_LARGE, json!("batch_too_large"))
    );
    let big = "x".repeat(5000);
    let (s, _, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": [{"item": {}, "sample": {"output_text": big}}]})),
    )
    .await;
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
}

/// A judge that takes half a second per call: a slow request, deterministically.
struct SlowJudge;

impl referee_core::judge::Judge for SlowJudge {
    fn call(
        &self,
        _endpoint: &str,
        _call: referee_core::judge::JudgeCall,
        _deadline: Option<std::time::Instant>,
    ) -> futures_boxed::BoxFuture {
        Box::pin(async {
            std::thread::sleep(std::time::Duration::from_millis(500));
            Ok(referee_core::judge::JudgeReply {
                content: "{\"result\": 1}".into(),
                finish_reason: Some("stop".into()),
                ..Default::default()
            })
        })
    }
    fn endpoints(&self) -> Vec<String> {
        vec!["default".into()]
    }
}

mod futures_boxed {
    pub type BoxFuture = std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<
                        referee_core::judge::JudgeReply,
                        referee_core::judge::JudgeFailure,
                    >,
                > + Send,
        >,
    >;
}

#[tokio::test]
async fn overload_is_a_429_with_retry_after_and_a_slow_request_meets_its_deadline() {
    let st = AppState::new(
        Config {
            max_in_flight: 1,
            max_queued: 0,
            request_timeout: std::time::Duration::from_millis(300),
            ..Config::default()
        },
        Arc::new(|| referee_core::exec::Env {
            judge: Some(Arc::new(SlowJudge)),
            ..Default::default()
        }),
    );
    let slow = json!({"spec": {"type": "score_model", "steps": false,
                               "input": [{"role": "user", "content": "{{sample.output_text}}"}]},
                      "samples": [{"item": {}, "sample": {"output_text": "Paris is the capital."}}]});
    let st2 = st.clone();
    let first = tokio::spawn(async move { call(&st2, "POST", "/v1/score", Some(slow)).await });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let (s, v, retry) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": []})),
    )
    .await;
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::TOO_MANY_REQUESTS, json!("overloaded"))
    );
    assert_eq!(retry.as_deref(), Some("1"));
    let (s, v, _) = first.await.unwrap();
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::GATEWAY_TIMEOUT, json!("deadline")),
        "{v}"
    );
    // Once the slow scoring has drained, the server takes requests again.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let (s, _, _) = call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": []})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn openrlhf_get_reward_strips_the_prompt_and_answers_numbers_with_flags() {
    let st = state(Config::default());
    st.register(
        "default",
        "{type: string_check, name: exact, input: '{{sample.output_text}}', reference: '{{item.label}}', operation: eq}",
    )
    .unwrap();
    let (s, v, _) = call(
        &st,
        "POST",
        "/get_reward",
        Some(
            json!({"query": ["Q: 2+2? A: 4", "Q: 2+3? A: 6", "Q: 1+1? A: 2"],
                    "prompts": ["Q: 2+2? A: ", "Q: 2+3? A: ", "Q: 1+1? A: "],
                    "labels": ["4", "5", {"not": "a string"}]}),
        ),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // OpenRLHF tensors every value unchecked: a number on every row (failures below).
    assert_eq!(v["rewards"], json!([1.0, 0.0, 0.0]), "{v}");
    assert_eq!(v["scores"], v["rewards"]);
    assert_eq!(v["extra_logs"]["exact"], json!([1.0, 0.0, 0.0]));
    assert_eq!(v["extra_logs"]["referee_error"], json!([0.0, 0.0, 0.0]));

    // A prompt OpenRLHF cut from the left: graded without its text. A query that holds no part
    // of its prompt is an error, not graded as if the policy wrote it all.
    let prompt = "<|im_start|>user\nWhat is 2+2? Answer with the number only.<|im_end|>\n<|im_start|>assistant\n";
    let (s, v, _) = call(
        &st,
        "POST",
        "/get_reward",
        Some(json!({"query": [format!("{}4", &prompt[30..]), "4"],
                    "prompts": [prompt, prompt], "labels": ["4", "4"]})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["rewards"], json!([1.0, 0.0]), "{v}");
    assert_eq!(v["extra_logs"]["referee_error"], json!([0.0, 1.0]));
    let (s, _, _) = call(
        &st,
        "POST",
        "/get_reward",
        Some(json!({"query": ["a"], "prompts": ["a", "b"]})),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn openai_grader_endpoints_in_their_shapes() {
    let st = state(Config::default());
    let grader = json!({"type": "string_check", "name": "s", "input": "{{sample.output_text}}",
                        "reference": "{{item.label}}", "operation": "eq"});
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/fine_tuning/alpha/graders/validate",
        Some(json!({"grader": grader})),
    )
    .await;
    assert_eq!((s, v["grader"].clone()), (StatusCode::OK, grader.clone()));
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/fine_tuning/alpha/graders/run",
        Some(json!({"grader": grader, "item": {"label": "yes"}, "model_sample": "yes"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["reward"], 1.0);
    assert_eq!(v["metadata"]["type"], "string_check");
    assert_eq!(v["metadata"]["errors"]["other_error"], false);
    // A missing item field: no reward, and the error is flagged, not a 0.
    let (_, v, _) = call(
        &st,
        "POST",
        "/v1/fine_tuning/alpha/graders/run",
        Some(json!({"grader": grader, "item": {}, "model_sample": "yes"})),
    )
    .await;
    assert_eq!(v["reward"], Value::Null, "{v}");
    assert_eq!(v["metadata"]["errors"]["invalid_variable_error"], true);
    let (s, v, _) = call(
        &st,
        "POST",
        "/v1/fine_tuning/alpha/graders/validate",
        Some(json!({"grader": {"type": "string_check", "operation": "eqq"}})),
    )
    .await;
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::UNPROCESSABLE_ENTITY, json!("spec_error"))
    );
}

#[tokio::test]
async fn metrics_count_requests_samples_and_reasons() {
    let st = state(Config::default());
    call(
        &st,
        "POST",
        "/v1/score",
        Some(json!({"spec": GSM, "samples": [
            {"item": {"answer": "1"}, "sample": {"output_text": "1"}},
            {"item": {}, "sample": {"output_text": "1"}}]})),
    )
    .await;
    call(&st, "POST", "/v1/score", Some(json!({"samples": []}))).await;
    let (s, v, _) = call(&st, "GET", "/metrics", None).await;
    assert_eq!(s, StatusCode::OK);
    let text = v.as_str().unwrap();
    for want in [
        r#"referee_requests_total{endpoint="/v1/score",status="200"} 1"#,
        r#"referee_requests_total{endpoint="/v1/score",status="400"} 1"#,
        r#"referee_samples_total{status="ok",reason=""} 1"#,
        r#"referee_samples_total{status="error",reason="missing_field"} 1"#,
        r#"referee_request_duration_seconds_count{endpoint="/v1/score"} 2"#,
        "referee_scoring_in_flight 0",
    ] {
        assert!(text.contains(want), "missing {want} in\n{text}");
    }
}
