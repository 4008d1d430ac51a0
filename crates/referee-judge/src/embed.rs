//! Embeddings: `POST /v1/embeddings` with the batch's texts as `input` (vLLM, llama-server
//! `--embedding`, OpenAI, TEI's OpenAI route); `data[i].embedding` is text `data[i].index`'s
//! vector.

use crate::batched::{Kind, Sent};
use crate::client::Client;
use futures::future::FutureExt;
use referee_core::judge::JudgeFailure;
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) struct Embed;

impl Kind for Embed {
    type Out = Vec<f32>;
    const NAME: &'static str = "embed";

    fn send(client: Arc<Client>, _params: Value, texts: Vec<String>) -> Sent<Vec<f32>> {
        async move {
            let cfg = client.config();
            let url = format!("{}/embeddings", cfg.base_url.trim_end_matches('/'));
            let body = json!({"model": cfg.model, "input": texts, "encoding_format": "float"});
            let est: u64 = texts.iter().map(|t| t.len() as u64 / 4).sum();
            let n = texts.len();
            client
                .post(&url, &body, est, None, |b, latency| {
                    vectors(b, n).map(|v| (v, latency))
                })
                .await
                .map(|(r, _)| r)
                .map_err(|e| JudgeFailure {
                    reason: e.reason.into(),
                    message: format!("{} (after {} attempts)", e.message, e.attempts),
                })
        }
        .boxed()
    }
}

/// Each text's vector in input order; a vector that is empty or not all finite numbers is
/// that text's failure, a reply without one vector per text fails the request.
pub(crate) fn vectors(body: &[u8], n: usize) -> Result<Vec<Result<Vec<f32>, String>>, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or("the reply has no `data` list")?;
    crate::batched::by_index(data, n, "embedding", |d| vector(d.get("embedding")))
}

fn vector(v: Option<&Value>) -> Result<Vec<f32>, String> {
    let a = v
        .and_then(Value::as_array)
        .ok_or("the embedding is not a list of numbers (base64 replies are not read)")?;
    if a.is_empty() {
        return Err("the embedding is empty".into());
    }
    a.iter()
        .map(|x| {
            x.as_f64()
                .filter(|f| f.is_finite())
                .map(|f| f as f32)
                .ok_or_else(|| format!("the embedding holds {x}, not a finite number"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_read_by_index_and_checked() {
        let body = br#"{"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [2, 3]}]}"#;
        let v = vectors(body, 2).unwrap();
        assert_eq!(v[0], Ok(vec![2.0, 3.0]));
        assert_eq!(v[1], Ok(vec![0.5, 1.0]));
        assert!(vectors(body, 3).is_err());
        let bad =
            br#"{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [null]}]}"#;
        let v = vectors(bad, 2).unwrap();
        assert!(v[0].is_err() && v[1].is_err());
        let dup = br#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [1]}]}"#;
        assert!(vectors(dup, 2).is_err());
        assert!(vectors(b"[]", 1).is_err());
    }
}
