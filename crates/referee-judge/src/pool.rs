//! Named endpoints behind the core's `Judge` trait, with the cache in front of them.

use crate::batched::{self, Batched, Kind};
use crate::cache::{self, Cache};
use crate::client::{ChatRequest, Client, Message};
use crate::embed::Embed;
use crate::prompt::Prompt;
use crate::steps;
use futures::future::{BoxFuture, FutureExt, Shared};
use referee_core::judge::{
    CacheConfig, EmbedCall, EmbedReply, EndpointConfig, Judge, JudgeCall, JudgeConnect,
    JudgeFailure, JudgeReply, PromptCall, PromptLogprobApi, PromptReply, RewardApi, RewardCall,
    RewardReply, StepApi, StepCall, StepReply,
};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

type Pending = Shared<BoxFuture<'static, Result<JudgeReply, JudgeFailure>>>;
type PendingSteps = Shared<BoxFuture<'static, Result<StepReply, JudgeFailure>>>;

/// The cache and the calls in flight, by content address.
struct Front {
    cache: Arc<Cache>,
    /// Embeddings and prompt logprobs: cached, shared in flight and batched by one path.
    embeds: Arc<Batched<Embed>>,
    prompts: Arc<Batched<Prompt>>,
    /// An identical call already on its way: later callers wait for its reply instead of
    /// calling again (GRPO groups repeat completions, early training repeats degenerate ones).
    inflight: Mutex<HashMap<String, Pending>>,
    /// One batcher per reward-model endpoint and API, started on first use.
    batchers: Mutex<HashMap<(String, RewardApi), mpsc::UnboundedSender<RewardJob>>>,
    /// Process-reward-model texts in flight, by content address: GRPO groups repeat
    /// completions, and each identical text is sent once.
    steps_inflight: Mutex<HashMap<String, PendingSteps>>,
    /// One batcher per process-reward-model endpoint and API (with its request parameters).
    step_batchers: Mutex<HashMap<(String, StepApi), mpsc::UnboundedSender<steps::StepJob>>>,
}

/// One text waiting for its reward-model batch.
struct RewardJob {
    text: String,
    index: usize,
    tx: oneshot::Sender<Result<RewardReply, JudgeFailure>>,
}

/// The endpoints a run uses, by name, and the runtime their I/O runs on. The core scores on
/// rayon threads and awaits with a plain executor; reqwest needs tokio's reactor, so every call
/// is spawned here and its handle awaited from wherever the grader runs.
pub struct Pool {
    clients: BTreeMap<String, Arc<Client>>,
    front: Arc<Front>,
    /// Always `Some` until drop (taken there to shut it down without blocking).
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for Pool {
    /// A pool may be dropped anywhere, including inside another runtime's task (a server
    /// dropping a spec compiled for one request): shutting down in the background never blocks,
    /// where dropping a runtime there would panic.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
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
                cache: Arc::new(cache),
                embeds: Arc::default(),
                prompts: Arc::default(),
                inflight: Mutex::default(),
                batchers: Mutex::default(),
                steps_inflight: Mutex::default(),
                step_batchers: Mutex::default(),
            }),
            rt: Some(rt),
        })
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
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
            more: r.more,
        }),
        Err(e) => Err(JudgeFailure {
            reason: e.reason.into(),
            message: format!("{} (after {} attempts)", e.message, e.attempts),
        }),
    }
}

/// A call through the cache and the in-flight table: identical calls (by `key`) share one
/// request; a follower's reply is a cache hit for it.
async fn shared(
    front: Arc<Front>,
    key: Option<String>,
    client: Arc<Client>,
    req: ChatRequest,
    deadline: Option<Instant>,
) -> Result<JudgeReply, JudgeFailure> {
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
        // The samples of an `n`-choice call share one request even without a cache: the key
        // leaves out which choice a caller reads.
        let choice = call.choice.map(|i| {
            let n = call.extra.get("n").and_then(serde_json::Value::as_u64);
            (i, n.map_or(1, |n| u32::try_from(n).unwrap_or(u32::MAX)))
        });
        let key = (front.cache.enabled() || choice.is_some())
            .then(|| cache::key(&client.config().base_url, &client.config().model, &call));
        let mut messages: Vec<Message> = call
            .messages
            .into_iter()
            .map(|(role, content)| Message {
                role,
                content,
                media: Vec::new(),
            })
            .collect();
        for m in call.media {
            if let Some(msg) = messages.get_mut(m.message) {
                msg.media.push((m.offset, m.media));
            }
        }
        let req = ChatRequest {
            messages,
            temperature: call.temperature,
            max_tokens: call.max_tokens,
            top_logprobs: call.top_logprobs,
            json_schema: call.json_schema,
            extra: call.extra,
        };
        let handle = self.rt().spawn(async move {
            let r = shared(front, key, client, req, deadline).await;
            match choice {
                Some((i, n)) => r.and_then(|reply| reply.choice(i, n)),
                None => r,
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

    fn step_rewards(
        &self,
        endpoint: &str,
        call: StepCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<StepReply, JudgeFailure>> {
        self.steps_of(endpoint, call, deadline)
    }

    fn embed(
        &self,
        endpoint: &str,
        call: EmbedCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<EmbedReply, JudgeFailure>> {
        let f = self.batched(
            endpoint,
            |f| f.embeds.clone(),
            json!({}),
            call.text,
            deadline,
        );
        Box::pin(async move {
            let (r, cached) = f.await;
            r.map(|(vector, latency_ms, batch_size)| EmbedReply {
                vector: vector.as_slice().into(),
                latency_ms,
                batch_size,
                cached,
            })
        })
    }

    fn prompt_logprobs(
        &self,
        endpoint: &str,
        call: PromptCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<PromptReply, JudgeFailure>> {
        let api = match call.api {
            PromptLogprobApi::Echo => "echo",
            PromptLogprobApi::PromptLogprobs => "prompt_logprobs",
        };
        let f = self.batched(
            endpoint,
            |f| f.prompts.clone(),
            json!({"api": api}),
            call.text,
            deadline,
        );
        Box::pin(async move {
            let (r, cached) = f.await;
            r.map(|(tokens, latency_ms, batch_size)| PromptReply {
                tokens,
                latency_ms,
                batch_size,
                cached,
            })
        })
    }

    fn reward(
        &self,
        endpoint: &str,
        call: RewardCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<RewardReply, JudgeFailure>> {
        let Some(client) = self.clients.get(endpoint).cloned() else {
            let failure = JudgeFailure {
                reason: "judge_config".into(),
                message: format!("no endpoint `{endpoint}`"),
            };
            return Box::pin(async move { Err(failure) });
        };
        let front = self.front.clone();
        let endpoint = endpoint.to_string();
        let handle = self.rt().spawn(async move {
            let key = front.cache.enabled().then(|| {
                cache::reward_key(&client.config().base_url, &client.config().model, &call)
            });
            if let Some(k) = &key {
                if let Some(v) = front.cache.get_reward(k).await {
                    return Ok(RewardReply {
                        value: v,
                        latency_ms: 0.0,
                        batch_size: 0,
                        cached: true,
                    });
                }
            }
            let (tx, rx) = oneshot::channel();
            let queue = {
                let mut b = front.batchers.lock().expect("batchers lock");
                b.entry((endpoint, call.api))
                    .or_insert_with(|| {
                        let (qtx, qrx) = mpsc::unbounded_channel();
                        tokio::spawn(batch_worker(client.clone(), call.api, qrx));
                        qtx
                    })
                    .clone()
            };
            let job = RewardJob {
                text: call.text,
                index: call.index,
                tx,
            };
            if queue.send(job).is_err() {
                return Err(JudgeFailure {
                    reason: "judge_connection".into(),
                    message: "the reward batcher has stopped".into(),
                });
            }
            let waited = match deadline {
                Some(d) => {
                    tokio::time::timeout_at(d.into(), rx)
                        .await
                        .map_err(|_| JudgeFailure {
                            reason: "judge_deadline".into(),
                            message: "the reward did not arrive before the sample's deadline"
                                .into(),
                        })?
                }
                None => rx.await,
            };
            let r = waited.unwrap_or_else(|_| {
                Err(JudgeFailure {
                    reason: "judge_connection".into(),
                    message: "the reward batch was dropped".into(),
                })
            });
            if let (Ok(reply), Some(k)) = (&r, &key) {
                front.cache.put_reward(k, reply.value).await;
            }
            r
        });
        Box::pin(async move {
            handle.await.unwrap_or_else(|e| {
                Err(JudgeFailure {
                    reason: "judge_connection".into(),
                    message: format!("the reward task failed: {e}"),
                })
            })
        })
    }
}

impl Pool {
    /// One text of a batched kind, on the pool's runtime.
    fn batched<K: Kind>(
        &self,
        endpoint: &str,
        which: fn(&Front) -> Arc<Batched<K>>,
        params: Value,
        text: String,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, (batched::Answer<K::Out>, bool)> {
        let Some(client) = self.clients.get(endpoint).cloned() else {
            let failure = JudgeFailure {
                reason: "judge_config".into(),
                message: format!("no endpoint `{endpoint}`"),
            };
            return Box::pin(async move { (Err(failure), false) });
        };
        let (b, c) = (which(&self.front), self.front.cache.clone());
        let handle = self.rt().spawn(batched::call(
            b,
            c,
            client,
            endpoint.to_string(),
            params,
            text,
            deadline,
        ));
        Box::pin(async move {
            handle.await.unwrap_or_else(|e| {
                (
                    Err(JudgeFailure {
                        reason: "judge_connection".into(),
                        message: format!("the judge task failed: {e}"),
                    }),
                    false,
                )
            })
        })
    }

    /// A process-reward-model text: from the cache, from an identical text in flight, or sent
    /// in the endpoint's next batch.
    fn steps_of(
        &self,
        endpoint: &str,
        call: StepCall,
        deadline: Option<Instant>,
    ) -> BoxFuture<'static, Result<StepReply, JudgeFailure>> {
        let Some(client) = self.clients.get(endpoint).cloned() else {
            let failure = JudgeFailure {
                reason: "judge_config".into(),
                message: format!("no endpoint `{endpoint}`"),
            };
            return Box::pin(async move { Err(failure) });
        };
        let front = self.front.clone();
        let endpoint = endpoint.to_string();
        let handle = self.rt().spawn(async move {
            let key = cache::steps_key(&client.config().base_url, &client.config().model, &call);
            let (pending, leader) = {
                let mut m = front.steps_inflight.lock().expect("inflight lock");
                if let Some(p) = m.get(&key) {
                    (p.clone(), false)
                } else {
                    let (f, k) = (front.clone(), key.clone());
                    let p = async move {
                        if let Some(values) = f.cache.get_steps(&k).await {
                            return Ok(StepReply {
                                values,
                                cached: true,
                                ..StepReply::default()
                            });
                        }
                        let r = enqueue_steps(&f, client, endpoint, call).await;
                        if let Ok(reply) = &r {
                            f.cache.put_steps(&k, &reply.values).await;
                        }
                        r
                    }
                    .boxed()
                    .shared();
                    m.insert(key.clone(), p.clone());
                    (p, true)
                }
            };
            let r = match deadline {
                Some(d) => tokio::time::timeout_at(d.into(), pending)
                    .await
                    .unwrap_or_else(|_| {
                        Err(JudgeFailure {
                            reason: "judge_deadline".into(),
                            message: "the step scores did not arrive before the sample's deadline"
                                .into(),
                        })
                    }),
                None => pending.await,
            };
            if leader {
                front
                    .steps_inflight
                    .lock()
                    .expect("inflight lock")
                    .remove(&key);
            }
            match r {
                // A follower shared the leader's request: for it, that is a cache hit.
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
                    message: format!("the step-reward task failed: {e}"),
                })
            })
        })
    }
}

async fn enqueue_steps(
    front: &Front,
    client: Arc<Client>,
    endpoint: String,
    call: StepCall,
) -> Result<StepReply, JudgeFailure> {
    let (tx, rx) = oneshot::channel();
    let queue = {
        let mut b = front.step_batchers.lock().expect("batchers lock");
        b.entry((endpoint, call.api.clone()))
            .or_insert_with(|| {
                let (qtx, qrx) = mpsc::unbounded_channel();
                tokio::spawn(steps::worker(client.clone(), call.api.clone(), qrx));
                qtx
            })
            .clone()
    };
    if queue.send(steps::StepJob { call, tx }).is_err() {
        return Err(JudgeFailure {
            reason: "judge_connection".into(),
            message: "the step-reward batcher has stopped".into(),
        });
    }
    rx.await.unwrap_or_else(|_| {
        Err(JudgeFailure {
            reason: "judge_connection".into(),
            message: "the step-reward batch was dropped".into(),
        })
    })
}

/// Collects the texts that arrive within `batch_wait_ms` of the first (up to `max_batch`) and
/// sends them as one request; requests run concurrently within the endpoint's slots.
async fn batch_worker(
    client: Arc<Client>,
    api: RewardApi,
    mut rx: mpsc::UnboundedReceiver<RewardJob>,
) {
    while let Some(jobs) = next_batch(&mut rx, client.config()).await {
        tokio::spawn(run_batch(client.clone(), api, jobs));
    }
}

/// The next batch: the first job to arrive and those within `batch_wait_ms` of it, up to
/// `max_batch`; `None` once the queue is closed.
pub(crate) async fn next_batch<J>(
    rx: &mut mpsc::UnboundedReceiver<J>,
    cfg: &EndpointConfig,
) -> Option<Vec<J>> {
    let max = cfg.max_batch.max(1);
    let wait = std::time::Duration::from_millis(cfg.batch_wait_ms);
    let first = rx.recv().await?;
    let mut jobs = vec![first];
    let until = tokio::time::Instant::now() + wait;
    while jobs.len() < max {
        match tokio::time::timeout_at(until, rx.recv()).await {
            Ok(Some(j)) => jobs.push(j),
            _ => break,
        }
    }
    Some(jobs)
}

async fn run_batch(client: Arc<Client>, api: RewardApi, jobs: Vec<RewardJob>) {
    let cfg = client.config();
    // vLLM serves its pooling APIs at the server's root, beside `/v1`.
    let root = cfg.base_url.trim_end_matches('/').trim_end_matches("/v1");
    let texts: Vec<&str> = jobs.iter().map(|j| j.text.as_str()).collect();
    let (url, body) = match api {
        RewardApi::Pooling => (
            format!("{root}/pooling"),
            json!({"model": cfg.model, "input": texts}),
        ),
        RewardApi::Classify => (
            format!("{root}/classify"),
            json!({"model": cfg.model, "input": texts}),
        ),
        RewardApi::Openrlhf => (format!("{root}/get_reward"), json!({"query": texts})),
    };
    let est: u64 = texts.iter().map(|t| t.len() as u64 / 4).sum();
    let n = jobs.len();
    let r = client
        .post(&url, &body, est, None, |b, latency| {
            outputs(api, b, n).map(|v| (v, latency))
        })
        .await;
    match r {
        Ok(((values, latency_ms), _)) => {
            for (job, v) in jobs.into_iter().zip(values) {
                let out = pick(&v, job.index)
                    .map(|value| RewardReply {
                        value,
                        latency_ms,
                        batch_size: n,
                        cached: false,
                    })
                    .ok_or_else(|| JudgeFailure {
                        reason: "judge_unparseable".into(),
                        message: format!(
                            "no finite number at index {} in the model's output {}",
                            job.index,
                            referee_core::node::shorten(&v.to_string())
                        ),
                    });
                let _ = job.tx.send(out);
            }
        }
        Err(e) => {
            for job in jobs {
                let _ = job.tx.send(Err(JudgeFailure {
                    reason: e.reason.into(),
                    message: format!("{} (after {} attempts)", e.message, e.attempts),
                }));
            }
        }
    }
}

/// Each text's raw output, in input order.
pub(crate) fn outputs(api: RewardApi, body: &[u8], n: usize) -> Result<Vec<Value>, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the reply is not JSON: {e}"))?;
    let items: Vec<Value> = match api {
        RewardApi::Openrlhf => v
            .get("rewards")
            .and_then(Value::as_array)
            .ok_or("the reply has no `rewards` list")?
            .clone(),
        RewardApi::Pooling | RewardApi::Classify => {
            let field = if api == RewardApi::Pooling {
                "data"
            } else {
                "probs"
            };
            let data = v
                .get("data")
                .and_then(Value::as_array)
                .ok_or("the reply has no `data` list")?;
            let mut out = vec![Value::Null; data.len()];
            for (i, d) in data.iter().enumerate() {
                let at = d
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(i, |x| x as usize);
                if at < out.len() {
                    out[at] = d.get(field).cloned().unwrap_or(Value::Null);
                }
            }
            out
        }
    };
    if items.len() == n {
        Ok(items)
    } else {
        Err(format!("{} outputs for {n} texts", items.len()))
    }
}

/// The reward in one text's output: a number; element `index` of a vector; or, for per-token
/// outputs (a list of rows), element `index` of the last row.
fn pick(v: &Value, index: usize) -> Option<f64> {
    let x = match v {
        Value::Number(_) => v.as_f64(),
        Value::Array(a) => match a.last() {
            Some(Value::Array(_)) => a.last()?.get(index)?.as_f64(),
            _ => a.get(index)?.as_f64(),
        },
        _ => None,
    }?;
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewards_are_picked_from_every_output_shape() {
        assert_eq!(pick(&json!(0.5), 0), Some(0.5));
        assert_eq!(pick(&json!([0.1, 0.9]), 1), Some(0.9));
        assert_eq!(pick(&json!([[0.1, 0.2], [0.3, 0.4]]), 0), Some(0.3));
        assert_eq!(pick(&json!([0.1]), 3), None);
        assert_eq!(pick(&json!("x"), 0), None);
        let body = br#"{"data": [{"index": 1, "data": [2.0]}, {"index": 0, "data": [1.0]}]}"#;
        let o = outputs(RewardApi::Pooling, body, 2).unwrap();
        assert_eq!((pick(&o[0], 0), pick(&o[1], 0)), (Some(1.0), Some(2.0)));
        assert!(outputs(RewardApi::Openrlhf, br#"{"rewards": [1]}"#, 2).is_err());
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
