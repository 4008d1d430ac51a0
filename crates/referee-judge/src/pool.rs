//! Named endpoints behind the core's `Judge` trait, with the cache in front of them.

use crate::cache::{self, Cache};
use crate::client::{ChatRequest, Client, Message};
use futures::future::{BoxFuture, FutureExt, Shared};
use referee_core::judge::{
    CacheConfig, EndpointConfig, Judge, JudgeCall, JudgeConnect, JudgeFailure, JudgeReply,
};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

type Pending = Shared<BoxFuture<'static, Result<JudgeReply, JudgeFailure>>>;

/// The cache and the calls in flight, by content address.
struct Front {
    cache: Cache,
    /// An identical call already on its way: later callers wait for its reply instead of
    /// calling again (GRPO groups repeat completions, early training repeats degenerate ones).
    inflight: Mutex<HashMap<String, Pending>>,
}

/// The endpoints a run uses, by name, and the runtime their I/O runs on. The core scores on
/// rayon threads and awaits with a plain executor; reqwest needs tokio's reactor, so every call
/// is spawned here and its handle awaited from wherever the grader runs.
pub struct Pool {
    clients: BTreeMap<String, Arc<Client>>,
    front: Arc<Front>,
    rt: tokio::runtime::Runtime,
}

impl Pool {
    /// A pool without a cache.
    pub fn new(endpoints: BTreeMap<String, EndpointConfig>) -> Result<Pool, String> {
        Pool::with_cache(
            endpoints,
            &CacheConfig {
                backend: referee_core::judge::CacheBackend::Off,
                ..CacheConfig::default()
            },
            None,
        )
    }

    /// A pool whose replies go through the configured cache (`default_path`: where a `file`
    /// cache without its own `path` lives).
    pub fn with_cache(
        endpoints: BTreeMap<String, EndpointConfig>,
        cache: &CacheConfig,
        default_path: Option<&std::path::Path>,
    ) -> Result<Pool, String> {
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
        let cache = rt.block_on(Cache::open(cache, default_path))?;
        Ok(Pool {
            clients,
            front: Arc::new(Front {
                cache,
                inflight: Mutex::default(),
            }),
            rt,
        })
    }

    /// Where the cache lives (`off`, `memory`, a file, a Redis URL).
    pub fn cache_location(&self) -> &str {
        &self.front.cache.location
    }
}

async fn send(
    client: Arc<Client>,
    req: ChatRequest,
    deadline: Option<Instant>,
) -> Result<JudgeReply, JudgeFailure> {
    match client.chat(&req, deadline).await {
        Ok(r) => Ok(JudgeReply {
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
        Err(e) => Err(JudgeFailure {
            reason: e.reason.into(),
            message: format!("{} (after {} attempts)", e.message, e.attempts),
        }),
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
        let front = self.front.clone();
        let key = front
            .cache
            .enabled()
            .then(|| cache::key(&client.config().base_url, &client.config().model, &call));
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
        let handle = self.rt.spawn(async move {
            let Some(key) = key else {
                return send(client, req, deadline).await;
            };
            let (pending, leader) = {
                let mut m = front.inflight.lock().expect("inflight lock");
                if let Some(p) = m.get(&key) {
                    (p.clone(), false)
                } else {
                    let (f, k) = (front.clone(), key.clone());
                    let p = async move {
                        if let Some(hit) = f.cache.get(&k).await {
                            return Ok(hit);
                        }
                        let r = send(client, req, deadline).await;
                        if let Ok(reply) = &r {
                            f.cache.put(&k, reply).await;
                        }
                        r
                    }
                    .boxed()
                    .shared();
                    m.insert(key.clone(), p.clone());
                    (p, true)
                }
            };
            let r = pending.await;
            if leader {
                front.inflight.lock().expect("inflight lock").remove(&key);
            }
            match r {
                // A follower shared the leader's call: for it, that is a cache hit.
                Ok(mut reply) if !leader => {
                    reply.cached = true;
                    Ok(reply)
                }
                other => other,
            }
        });
        Box::pin(async move {
            handle.await.unwrap_or_else(|e| {
                Err(JudgeFailure {
                    reason: "judge_connection".into(),
                    message: format!("the judge task failed: {e}"),
                })
            })
        })
    }

    fn endpoints(&self) -> Vec<String> {
        self.clients.keys().cloned().collect()
    }
}

/// What shells give the core (`Env::connect`): builds a [`Pool`] for a spec's `judges:`, with
/// its cache. `default_cache_path` is where a file cache without its own `path` lives (the CLI
/// puts it next to the run's output).
#[derive(Debug, Clone, Default)]
pub struct Connector {
    pub default_cache_path: Option<PathBuf>,
}

impl JudgeConnect for Connector {
    fn connect(
        &self,
        endpoints: &BTreeMap<String, EndpointConfig>,
        cache: &CacheConfig,
    ) -> Result<Arc<dyn Judge>, String> {
        let pool = Pool::with_cache(endpoints.clone(), cache, self.default_cache_path.as_deref())?;
        Ok(Arc::new(pool))
    }
}
