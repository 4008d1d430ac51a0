//! The judge cache: replies kept by content address, so a verdict is paid for once across
//! steps, restarts and (with Redis) replicas.
//!
//! - The key is the SHA-256 of the endpoint's URL and model, the rendered messages, every
//!   sampling parameter and the schema: a changed prompt, model or temperature never reads an
//!   old verdict.
//! - Only completed replies are stored; a failure is retried next time, never cached.
//! - Stores: `file` (redb: one file, transactional, survives crashes and restarts), `redis`
//!   (shared by replicas; the entry's age is kept in the value, a TTL also set on the key),
//!   `memory` (this process), `off`.
//! - With sampling (`temperature` > 0) a cached verdict is reused as is: identical inputs get
//!   identical rewards. Set a `seed` to vary it per run, or turn the cache off.

use referee_core::judge::media::MediaKind;
use referee_core::judge::{CacheBackend, CacheConfig, JudgeCall, JudgeReply};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

const TABLE: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("judge_replies");

/// The content address of a call to an endpoint.
pub fn key(base_url: &str, model: &str, call: &JudgeCall) -> String {
    let mut canon = serde_json::json!({
        "v": 1,
        "url": base_url,
        "model": model,
        "messages": call.messages,
        "temperature": call.temperature,
        "max_tokens": call.max_tokens,
        "top_logprobs": call.top_logprobs,
        "schema": call.json_schema,
        "extra": call.extra,
    });
    // Media by digest, never by payload (absent without media, so older keys stay valid).
    if !call.media.is_empty() {
        canon["media"] = call
            .media
            .iter()
            .map(|m| {
                let kind = match &m.media.kind {
                    MediaKind::Image { detail } => serde_json::json!(["image", detail]),
                    MediaKind::Audio { format } => serde_json::json!(["audio", format]),
                };
                serde_json::json!([m.message, m.offset, kind, m.media.digest])
            })
            .collect();
    }
    hex(&Sha256::digest(canon.to_string().as_bytes()))
}

/// A reward model's score, and when.
#[derive(Debug, Serialize, Deserialize)]
struct RewardEntry {
    reward: f64,
    at: u64,
}

/// The content address of a reward-model text.
pub fn reward_key(base_url: &str, model: &str, call: &referee_core::judge::RewardCall) -> String {
    let canon = serde_json::json!({
        "v": 1, "kind": "reward", "url": base_url, "model": model,
        "api": format!("{:?}", call.api), "index": call.index, "text": call.text,
    });
    hex(&Sha256::digest(canon.to_string().as_bytes()))
}

/// A process reward model's step scores, and when.
#[derive(Debug, Serialize, Deserialize)]
struct StepsEntry {
    steps: Vec<f64>,
    at: u64,
}

/// The content address of a process-reward-model text: the API with every request parameter,
/// the full text and where its tags are.
pub fn steps_key(base_url: &str, model: &str, call: &referee_core::judge::StepCall) -> String {
    let canon = serde_json::json!({
        "v": 1, "kind": "steps", "url": base_url, "model": model,
        "api": format!("{:?}", call.api), "tags": call.tags, "text": call.text,
    });
    hex(&Sha256::digest(canon.to_string().as_bytes()))
}

/// The content address of a batched call of another kind (`embed`, `prompt`): the endpoint,
/// model, every request parameter and the text.
pub fn value_key(
    kind: &str,
    base_url: &str,
    model: &str,
    params: &serde_json::Value,
    text: &str,
) -> String {
    let canon = serde_json::json!({
        "v": 1, "kind": kind, "url": base_url, "model": model, "params": params, "text": text,
    });
    hex(&Sha256::digest(canon.to_string().as_bytes()))
}

/// A stored value of a batched call, and when.
#[derive(Debug, Serialize, Deserialize)]
struct ValueEntry<T> {
    value: T,
    at: u64,
}

fn hex(digest: &[u8]) -> String {
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// What is stored: the reply as the server gave it, and when.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    content: String,
    finish_reason: Option<String>,
    prompt_tokens: u64,
    completion_tokens: u64,
    logprobs: Option<serde_json::Value>,
    structured: bool,
    /// The other choices of an `n`-choice call (absent in entries written before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    more: Vec<referee_core::judge::JudgeChoice>,
    /// Unix seconds.
    at: u64,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub enum Store {
    Off,
    Memory(Mutex<HashMap<String, Vec<u8>>>),
    File(redb::Database),
    Redis(redis::aio::ConnectionManager),
}

/// A store and its policy.
pub struct Cache {
    store: Store,
    ttl_s: Option<u64>,
    /// Where it lives, for messages.
    pub location: String,
}

impl Cache {
    /// Opens the configured store. `default_path` is where a `file` cache without a `path` goes.
    /// Redis is connected here (inside the runtime that will use it), so a wrong URL is an error
    /// at start-up rather than a silent miss on every call.
    pub async fn open(cfg: &CacheConfig, default_path: Option<&Path>) -> Result<Cache, String> {
        let (store, location) = match cfg.backend {
            CacheBackend::Off => (Store::Off, "off".to_string()),
            CacheBackend::Memory => (Store::Memory(Mutex::default()), "memory".to_string()),
            CacheBackend::File => {
                let path: PathBuf = match (&cfg.path, default_path) {
                    (Some(p), _) => PathBuf::from(p),
                    (None, Some(d)) => d.to_path_buf(),
                    (None, None) => {
                        return Ok(Cache {
                            store: Store::Memory(Mutex::default()),
                            ttl_s: cfg.ttl_s,
                            location: "memory (no file given)".into(),
                        })
                    }
                };
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| format!("judge cache {}: {e}", dir.display()))?;
                }
                let db = redb::Database::create(&path)
                    .map_err(|e| format!("judge cache {}: {e}", path.display()))?;
                (Store::File(db), path.display().to_string())
            }
            CacheBackend::Redis => {
                let url = cfg
                    .url
                    .as_deref()
                    .ok_or("a redis judge cache needs `url` (redis://host:port/db)")?;
                let client = redis::Client::open(url).map_err(|e| format!("redis {url}: {e}"))?;
                let conn = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    redis::aio::ConnectionManager::new(client),
                )
                .await
                .map_err(|_| format!("redis {url}: no answer within 5 s"))?
                .map_err(|e| format!("redis {url}: {e}"))?;
                (Store::Redis(conn), url.to_string())
            }
        };
        Ok(Cache {
            store,
            ttl_s: cfg.ttl_s,
            location,
        })
    }

    pub fn enabled(&self) -> bool {
        !matches!(self.store, Store::Off)
    }

    /// The stored reply, marked `cached`. A store that fails to answer is a miss (the call is
    /// then made), never an error: the cache only ever saves work.
    pub async fn get(&self, key: &str) -> Option<JudgeReply> {
        let e: Entry = serde_json::from_slice(&self.get_bytes(key).await?).ok()?;
        if self
            .ttl_s
            .is_some_and(|ttl| now().saturating_sub(e.at) > ttl)
        {
            return None;
        }
        Some(JudgeReply {
            content: e.content,
            finish_reason: e.finish_reason,
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            logprobs: e.logprobs,
            latency_ms: 0.0,
            attempts: 0,
            structured: e.structured,
            cached: true,
            more: e.more,
        })
    }

    /// A stored reward-model score.
    pub async fn get_reward(&self, key: &str) -> Option<f64> {
        let e: RewardEntry = serde_json::from_slice(&self.get_bytes(key).await?).ok()?;
        if self
            .ttl_s
            .is_some_and(|ttl| now().saturating_sub(e.at) > ttl)
        {
            return None;
        }
        Some(e.reward)
    }

    pub async fn put_reward(&self, key: &str, reward: f64) {
        if let Ok(b) = serde_json::to_vec(&RewardEntry { reward, at: now() }) {
            self.put_bytes(key, b).await;
        }
    }

    /// Stored step scores.
    pub async fn get_steps(&self, key: &str) -> Option<Vec<f64>> {
        let e: StepsEntry = serde_json::from_slice(&self.get_bytes(key).await?).ok()?;
        if self
            .ttl_s
            .is_some_and(|ttl| now().saturating_sub(e.at) > ttl)
        {
            return None;
        }
        Some(e.steps)
    }

    pub async fn put_steps(&self, key: &str, steps: &[f64]) {
        let e = StepsEntry {
            steps: steps.to_vec(),
            at: now(),
        };
        if let Ok(b) = serde_json::to_vec(&e) {
            self.put_bytes(key, b).await;
        }
    }

    /// A stored value of a batched call ([`value_key`]).
    pub async fn get_value<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        let e: ValueEntry<T> = serde_json::from_slice(&self.get_bytes(key).await?).ok()?;
        if self
            .ttl_s
            .is_some_and(|ttl| now().saturating_sub(e.at) > ttl)
        {
            return None;
        }
        Some(e.value)
    }

    pub async fn put_value<T: Serialize>(&self, key: &str, value: &T) {
        if let Ok(b) = serde_json::to_vec(&ValueEntry { value, at: now() }) {
            self.put_bytes(key, b).await;
        }
    }

    async fn get_bytes(&self, key: &str) -> Option<Vec<u8>> {
        match &self.store {
            Store::Off => None,
            Store::Memory(m) => m.lock().ok()?.get(key).cloned(),
            Store::File(db) => {
                let tx = db.begin_read().ok()?;
                let table = tx.open_table(TABLE).ok()?;
                table.get(key).ok()?.map(|v| v.value().to_vec())
            }
            Store::Redis(conn) => {
                let mut c = conn.clone();
                redis::cmd("GET")
                    .arg(format!("referee:judge:{key}"))
                    .query_async::<Option<Vec<u8>>>(&mut c)
                    .await
                    .ok()?
            }
        }
    }

    /// Stores a completed reply (failures to store are ignored, as misses are).
    pub async fn put(&self, key: &str, r: &JudgeReply) {
        let e = Entry {
            content: r.content.clone(),
            finish_reason: r.finish_reason.clone(),
            prompt_tokens: r.prompt_tokens,
            completion_tokens: r.completion_tokens,
            logprobs: r.logprobs.clone(),
            structured: r.structured,
            more: r.more.clone(),
            at: now(),
        };
        if let Ok(bytes) = serde_json::to_vec(&e) {
            self.put_bytes(key, bytes).await;
        }
    }

    async fn put_bytes(&self, key: &str, bytes: Vec<u8>) {
        match &self.store {
            Store::Off => {}
            Store::Memory(m) => {
                if let Ok(mut m) = m.lock() {
                    m.insert(key.to_string(), bytes);
                }
            }
            Store::File(db) => {
                let write = || -> Result<(), Box<redb::Error>> {
                    let tx = db.begin_write().map_err(|e| Box::new(e.into()))?;
                    {
                        let mut t = tx.open_table(TABLE).map_err(|e| Box::new(e.into()))?;
                        t.insert(key, bytes.as_slice())
                            .map_err(|e| Box::new(e.into()))?;
                    }
                    tx.commit().map_err(|e| Box::new(e.into()))?;
                    Ok(())
                };
                let _ = write();
            }
            Store::Redis(conn) => {
                let mut c = conn.clone();
                let mut cmd = redis::cmd("SET");
                cmd.arg(format!("referee:judge:{key}")).arg(bytes);
                if let Some(ttl) = self.ttl_s {
                    cmd.arg("EX").arg(ttl.max(1));
                }
                let _ = cmd.query_async::<()>(&mut c).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::ReadableTable as _;

    fn call(text: &str, t: f64) -> JudgeCall {
        JudgeCall {
            messages: vec![("user".into(), text.into())],
            temperature: Some(t),
            ..JudgeCall::default()
        }
    }

    #[test]
    fn keys_change_with_every_input() {
        let k = key("http://a/v1", "m", &call("x", 0.0));
        assert_eq!(k, key("http://a/v1", "m", &call("x", 0.0)));
        assert_eq!(k.len(), 64);
        for other in [
            key("http://b/v1", "m", &call("x", 0.0)),
            key("http://a/v1", "n", &call("x", 0.0)),
            key("http://a/v1", "m", &call("y", 0.0)),
            key("http://a/v1", "m", &call("x", 0.5)),
        ] {
            assert_ne!(k, other);
        }
    }

    #[tokio::test]
    async fn the_file_store_survives_reopening_and_honours_the_ttl() {
        let dir = std::env::temp_dir().join(format!("referee-cache-test-{}", std::process::id()));
        let path = dir.join("judge.redb");
        let cfg = CacheConfig {
            backend: CacheBackend::File,
            path: Some(path.display().to_string()),
            url: None,
            ttl_s: None,
        };
        let reply = JudgeReply {
            content: "{\"result\": 1}".into(),
            finish_reason: Some("stop".into()),
            prompt_tokens: 12,
            completion_tokens: 3,
            ..JudgeReply::default()
        };
        {
            let c = Cache::open(&cfg, None).await.unwrap();
            assert!(c.get("k").await.is_none());
            c.put("k", &reply).await;
        }
        let c = Cache::open(&cfg, None).await.unwrap();
        let got = c.get("k").await.unwrap();
        assert!(got.cached && got.content == reply.content && got.prompt_tokens == 12);
        drop(c);
        let expired = CacheConfig {
            ttl_s: Some(0),
            ..cfg.clone()
        };
        // An entry written now is 0 s old: still fresh at ttl 0 within the same second, so
        // backdate it by rewriting its time.
        let c = Cache::open(&expired, None).await.unwrap();
        if let Store::File(db) = &c.store {
            let tx = db.begin_write().unwrap();
            {
                let mut t = tx.open_table(TABLE).unwrap();
                let mut e: Entry =
                    serde_json::from_slice(t.get("k").unwrap().unwrap().value()).unwrap();
                e.at -= 10;
                t.insert("k", serde_json::to_vec(&e).unwrap().as_slice())
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        assert!(c.get("k").await.is_none());
        drop(c);
        let _ = std::fs::remove_dir_all(dir);
    }
}
