//! Named endpoints behind the core's `Judge` trait.

use crate::client::{ChatRequest, Client, Message};
use futures::future::BoxFuture;
use referee_core::judge::EndpointConfig;
use referee_core::judge::{Judge, JudgeCall, JudgeFailure, JudgeReply};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// The endpoints a run uses, by name, and the runtime their I/O runs on. The core scores on
/// rayon threads and awaits with a plain executor; reqwest needs tokio's reactor, so every call
/// is spawned here and its handle awaited from wherever the grader runs.
pub struct Pool {
    clients: BTreeMap<String, Arc<Client>>,
    rt: tokio::runtime::Runtime,
}

impl Pool {
    pub fn new(endpoints: BTreeMap<String, EndpointConfig>) -> Result<Pool, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("referee-judge")
            .enable_all()
            .build()
            .map_err(|e| format!("judge runtime: {e}"))?;
        let mut clients = BTreeMap::new();
        for (name, cfg) in endpoints {
            // reqwest's client must be built inside the runtime it will run on.
            let c = rt
                .block_on(async { Client::new(cfg) })
                .map_err(|e| format!("endpoint `{name}`: {e}"))?;
            clients.insert(name, Arc::new(c));
        }
        Ok(Pool { clients, rt })
    }
}

impl Judge for Pool {
    fn call(
        &self,
        endpoint: &str,
        call: JudgeCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<JudgeReply, JudgeFailure>> {
        let Some(client) = self.clients.get(endpoint).cloned() else {
            let known: Vec<&str> = self.clients.keys().map(String::as_str).collect();
            let failure = JudgeFailure {
                reason: "judge_config".into(),
                message: format!("no endpoint `{endpoint}` (known: {})", known.join(", ")),
            };
            return Box::pin(async move { Err(failure) });
        };
        let req = ChatRequest {
            messages: call
                .messages
                .into_iter()
                .map(|(role, content)| Message { role, content })
                .collect(),
            temperature: call.temperature,
            max_tokens: call.max_tokens,
            top_logprobs: call.top_logprobs,
            json_schema: call.json_schema,
            extra: call.extra,
        };
        let handle = self
            .rt
            .spawn(async move { client.chat(&req, deadline).await });
        Box::pin(async move {
            match handle.await {
                Ok(Ok(r)) => Ok(JudgeReply {
                    content: r.content,
                    finish_reason: r.finish_reason,
                    prompt_tokens: r.usage.prompt_tokens,
                    completion_tokens: r.usage.completion_tokens,
                    logprobs: r.logprobs,
                    latency_ms: r.latency_ms,
                    attempts: r.attempts,
                    structured: r.structured,
                    cached: false,
                }),
                Ok(Err(e)) => Err(JudgeFailure {
                    reason: e.reason.into(),
                    message: format!("{} (after {} attempts)", e.message, e.attempts),
                }),
                Err(e) => Err(JudgeFailure {
                    reason: "judge_connection".into(),
                    message: format!("the judge task failed: {e}"),
                }),
            }
        })
    }

    fn endpoints(&self) -> Vec<String> {
        self.clients.keys().cloned().collect()
    }
}
