//! Embeddings through the `Pool` against a real server: llama-server `--embedding` (SmolLM2,
//! mean pooling) on loopback. Concurrent texts share requests, identical texts one slot, vectors
//! come back per text in order, and what the server refuses is a failure with its reason.

mod common;

use common::LlamaServer;
use futures::future::join_all;
use referee_core::judge::{EmbedCall, Judge};
use referee_judge::{EndpointConfig, Pool};
use std::collections::BTreeMap;

fn cos(a: &[f32], b: &[f32]) -> f64 {
    referee_core::components::judge::embedding_similarity::cosine(a, b)
}

#[test]
fn llama_server_embeddings_are_batched_shared_and_in_order() {
    let server = LlamaServer::start_with("smol", &["--embedding"]);
    let mut cfg = EndpointConfig::new(&server.base_url, &server.model);
    cfg.max_batch = 16;
    cfg.batch_wait_ms = 20;
    let pool = Pool::new(BTreeMap::from([("e".to_string(), cfg)])).unwrap();
    let texts = [
        "The cat sat on the mat.",
        "A cat was sitting on the mat.",
        "Quarterly revenue grew by four percent.",
        "The cat sat on the mat.",
    ];
    let calls = texts.iter().map(|t| {
        pool.embed(
            "e",
            EmbedCall {
                text: (*t).to_string(),
            },
            None,
        )
    });
    let replies: Vec<_> = futures::executor::block_on(join_all(calls))
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let dim = replies[0].vector.len();
    assert!(dim > 0 && replies.iter().all(|r| r.vector.len() == dim));
    // The repeated text rode on the other one's request (whichever the runtime started first).
    assert!(replies[0].cached != replies[3].cached);
    assert_eq!(replies.iter().filter(|r| r.cached).count(), 1);
    assert_eq!(replies[0].vector, replies[3].vector);
    // The distinct texts went in one request, not three.
    assert!(
        replies[..3].iter().all(|r| r.batch_size == 3),
        "{:?}",
        replies.iter().map(|r| r.batch_size).collect::<Vec<_>>()
    );
    // Each vector is its own text's: a paraphrase is closer than an unrelated sentence.
    let (v0, v1, v2) = (&replies[0].vector, &replies[1].vector, &replies[2].vector);
    assert!(
        cos(v0, v1) > cos(v0, v2),
        "{} vs {}",
        cos(v0, v1),
        cos(v0, v2)
    );
    // Sent alone, a text gets the vector it got in the batch (no cross-talk between inputs).
    let alone = futures::executor::block_on(pool.embed(
        "e",
        EmbedCall {
            text: "A cat was sitting on the mat.".into(),
        },
        None,
    ))
    .unwrap();
    assert!(
        cos(&alone.vector, v1) > 0.9999,
        "{}",
        cos(&alone.vector, v1)
    );
    // llama-server refuses an empty input (the graders never send one): a 4xx, not a vector.
    let e = futures::executor::block_on(pool.embed(
        "e",
        EmbedCall {
            text: String::new(),
        },
        None,
    ))
    .unwrap_err();
    assert_eq!(e.reason, "judge_http_4xx", "{e:?}");
}
