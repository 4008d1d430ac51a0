//! The pool as the core uses it: `Judge::call` awaited with a plain executor (no tokio context),
//! against an OpenAI-compatible endpoint served on loopback from another runtime.

use axum::routing::post;
use axum::{Json, Router};
use referee_core::judge::{Judge, JudgeCall};
use referee_judge::{EndpointConfig, Pool};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn serve() -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = Router::new().route(
                "/v1/chat/completions",
                post(|Json(b): Json<Value>| async move {
                    let q = b["messages"][0]["content"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    Json(
                        json!({"choices": [{"message": {"content": format!("echo: {q}")},
                                             "finish_reason": "stop"}],
                                "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
                    )
                }),
            );
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

#[test]
fn calls_complete_from_a_plain_executor_and_unknown_endpoints_fail_with_a_reason() {
    let base = serve();
    let pool = Pool::new(BTreeMap::from([(
        "default".to_string(),
        EndpointConfig::new(base, "judge"),
    )]))
    .unwrap();
    assert_eq!(pool.endpoints(), vec!["default".to_string()]);
    let call = JudgeCall {
        messages: vec![("user".into(), "hi".into())],
        max_tokens: Some(8),
        ..JudgeCall::default()
    };
    let r = futures::executor::block_on(pool.call("default", call.clone(), None)).unwrap();
    assert_eq!(r.content, "echo: hi");
    assert_eq!(
        (r.prompt_tokens, r.completion_tokens, r.attempts),
        (5, 2, 1)
    );
    // Many calls at once, all awaited from this (non-tokio) thread.
    let calls: Vec<_> = (0..16)
        .map(|_| pool.call("default", call.clone(), None))
        .collect();
    for r in futures::executor::block_on(futures::future::join_all(calls)) {
        assert_eq!(r.unwrap().content, "echo: hi");
    }
    let e = futures::executor::block_on(pool.call("other", call, None)).unwrap_err();
    assert_eq!(e.reason, "judge_config");
    assert!(e.message.contains("default"));
    assert_eq!(e.outcome().failure().unwrap().reason, "judge_config");
}
