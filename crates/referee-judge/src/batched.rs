//! Calls of one text each whose texts travel in batches (embeddings, prompt logprobs): every
//! text is answered from the cache, from an identical text already in flight, or from the
//! endpoint's next batch request. One generic path, so each new kind of batched call is a
//! request builder and a reply reader, not another copy of the queueing.

use crate::cache::{self, Cache};
use crate::client::Client;
use futures::future::{BoxFuture, FutureExt, Shared};
use referee_core::judge::JudgeFailure;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, oneshot};

/// One text's answer: the value, the batch request's latency and size (0 when cached).
pub(crate) type Answer<O> = Result<(Arc<O>, f64, usize), JudgeFailure>;

/// A batch request's result: one result per text and the request's latency, or a failure of
/// the whole request.
pub(crate) type Sent<O> = BoxFuture<'static, Result<(Vec<Result<O, String>>, f64), JudgeFailure>>;

/// The batch queues by (endpoint, parameters).
type Queues<O> = Mutex<HashMap<(String, String), mpsc::UnboundedSender<Job<O>>>>;

/// What a kind of batched call sends and reads. `params` are the request parameters that go
/// into the cache key and pick the queue (calls with different parameters never share a
/// request).
pub(crate) trait Kind: Send + Sync + 'static {
    type Out: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The cache key's kind (`embed`, `prompt`).
    const NAME: &'static str;
    /// Sends one batch; one result per text, in order, or a failure for the whole request.
    fn send(client: Arc<Client>, params: Value, texts: Vec<String>) -> Sent<Self::Out>;
}

struct Job<O> {
    text: String,
    tx: oneshot::Sender<Answer<O>>,
}

type Pending<O> = Shared<BoxFuture<'static, (Answer<O>, bool)>>;

/// The calls of one kind in flight, and the batch queues, per endpoint and parameters.
pub(crate) struct Batched<K: Kind> {
    inflight: Mutex<HashMap<String, Pending<K::Out>>>,
    queues: Queues<K::Out>,
}

impl<K: Kind> Default for Batched<K> {
    fn default() -> Self {
        Batched {
            inflight: Mutex::new(HashMap::new()),
            queues: Mutex::new(HashMap::new()),
        }
    }
}

/// The answer for one text, and whether it cost no request of its own (cache or shared).
pub(crate) async fn call<K: Kind>(
    batched: Arc<Batched<K>>,
    cache: Arc<Cache>,
    client: Arc<Client>,
    endpoint: String,
    params: Value,
    text: String,
    deadline: Option<Instant>,
) -> (Answer<K::Out>, bool) {
    let cfg = client.config();
    let key = cache::value_key(K::NAME, &cfg.base_url, &cfg.model, &params, &text);
    let (pending, leader) = {
        let mut m = batched.inflight.lock().expect("inflight lock");
        if let Some(p) = m.get(&key) {
            (p.clone(), false)
        } else {
            let (b, c, k) = (batched.clone(), cache.clone(), key.clone());
            let p = async move {
                if let Some(v) = c.get_value::<K::Out>(&k).await {
                    return (Ok((Arc::new(v), 0.0, 0)), true);
                }
                let r = enqueue(&b, client, endpoint, params, text).await;
                if let Ok((v, ..)) = &r {
                    c.put_value(&k, &**v).await;
                }
                (r, false)
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
                (
                    Err(JudgeFailure {
                        reason: "judge_deadline".into(),
                        message: "the reply did not arrive before the sample's deadline".into(),
                    }),
                    false,
                )
            }),
        None => pending.await,
    };
    if leader {
        batched.inflight.lock().expect("inflight lock").remove(&key);
    }
    // A follower shared the leader's request: for it, that is a cache hit.
    (r.0, r.1 || !leader)
}

async fn enqueue<K: Kind>(
    batched: &Batched<K>,
    client: Arc<Client>,
    endpoint: String,
    params: Value,
    text: String,
) -> Answer<K::Out> {
    let (tx, rx) = oneshot::channel();
    let queue = {
        let mut q = batched.queues.lock().expect("queues lock");
        q.entry((endpoint, params.to_string()))
            .or_insert_with(|| {
                let (qtx, qrx) = mpsc::unbounded_channel();
                tokio::spawn(worker::<K>(client, params, qrx));
                qtx
            })
            .clone()
    };
    if queue.send(Job { text, tx }).is_err() {
        return Err(JudgeFailure {
            reason: "judge_connection".into(),
            message: "the batcher has stopped".into(),
        });
    }
    rx.await.unwrap_or_else(|_| {
        Err(JudgeFailure {
            reason: "judge_connection".into(),
            message: "the batch was dropped".into(),
        })
    })
}

/// Sends the texts that arrive within `batch_wait_ms` of the first (up to `max_batch`) as one
/// request; requests run concurrently within the endpoint's slots.
async fn worker<K: Kind>(
    client: Arc<Client>,
    params: Value,
    mut rx: mpsc::UnboundedReceiver<Job<K::Out>>,
) {
    while let Some(jobs) = crate::pool::next_batch(&mut rx, client.config()).await {
        let (client, params) = (client.clone(), params.clone());
        tokio::spawn(async move {
            let n = jobs.len();
            let texts = jobs.iter().map(|j| j.text.clone()).collect();
            match K::send(client, params, texts).await {
                Ok((outs, latency)) => {
                    for (job, out) in jobs.into_iter().zip(outs) {
                        let answer = out.map(|v| (Arc::new(v), latency, n)).map_err(|message| {
                            JudgeFailure {
                                reason: "judge_unparseable".into(),
                                message,
                            }
                        });
                        let _ = job.tx.send(answer);
                    }
                }
                Err(f) => {
                    for job in jobs {
                        let _ = job.tx.send(Err(f.clone()));
                    }
                }
            }
        });
    }
}

/// One result per text from a reply's list (`data`, `choices`) whose entries say their text by
/// `index` (else by position): a list of the wrong length, an index out of range or a text left
/// without an entry fails the request; `read` decides each entry.
pub(crate) fn by_index<T>(
    items: &[Value],
    n: usize,
    what: &str,
    read: impl Fn(&Value) -> Result<T, String>,
) -> Result<Vec<Result<T, String>>, String> {
    if items.len() != n {
        return Err(format!("{} {what}s for {n} texts", items.len()));
    }
    let mut out: Vec<Option<Result<T, String>>> = (0..n).map(|_| None).collect();
    for (i, d) in items.iter().enumerate() {
        let at = d
            .get("index")
            .and_then(Value::as_u64)
            .map_or(i, |x| x as usize);
        let slot = out
            .get_mut(at)
            .ok_or_else(|| format!("{what} index {at} for {n} texts"))?;
        *slot = Some(read(d));
    }
    out.into_iter()
        .enumerate()
        .map(|(i, o)| o.ok_or_else(|| format!("no {what} for text {i}")))
        .collect()
}
