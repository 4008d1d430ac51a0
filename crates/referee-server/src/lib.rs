//! Referee's reward service (`referee serve`): compiled specs shared by every request, scored
//! over HTTP in the shapes trainers already speak.
//!
//! - `POST /v1/score`: `{spec | program, samples: [rows], explain?}` → `{results, summary}`, the
//!   results in input order, rows in any format the CLI reads (Referee/OpenAI, TRL, verl).
//! - `POST /v1/programs`: `{name, spec}` compiles once and registers; `GET /v1/programs` lists.
//! - `POST /v1/fuzz`, `/v1/eval`, `/v1/compare`: the audits (`referee fuzz|eval|compare`),
//!   `{spec | program, rows: [rows], options?}` (compare: also `spec_b | program_b`, or the
//!   `label` option) → the CLI's `--json` report; options are the CLI's flags, snake_case.
//! - `POST /get_reward`: OpenRLHF's remote reward shape (`{query, prompts, labels}` →
//!   `{rewards, scores, extra_logs}`), scored by the program named `default` (or the only one).
//! - `POST /v1/fine_tuning/alpha/graders/run` and `/validate`: OpenAI's grader endpoints.
//! - `GET /healthz`; `GET /metrics` (Prometheus: requests and latency by endpoint, samples by
//!   status and reason, judge calls, cache hits and tokens, scoring requests in flight).
//!
//! Behaviour under stress: bodies over `max_body_bytes` are refused (413) before they are read
//! whole, batches over `max_batch` samples are refused (413), at most `max_in_flight` scoring
//! requests run at once with `max_queued` more waiting, and anything beyond gets 429 with
//! `Retry-After` instead of growing memory; each request has a deadline (504). A spec error is a
//! 422 listing every error with its path; a bad row is an error *result* for that row. Scoring
//! runs on blocking threads, so a slow judge call in one request never stalls another's I/O.

#![forbid(unsafe_code)]

mod audit;
mod handlers;
pub mod metrics;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use referee_core::exec::Env;
use referee_core::{CompileErrors, Program};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Limits of one server.
#[derive(Debug, Clone)]
pub struct Config {
    pub max_body_bytes: usize,
    pub max_batch: usize,
    /// Scoring requests running at once.
    pub max_in_flight: usize,
    /// Scoring requests waiting for a slot; beyond this, 429.
    pub max_queued: usize,
    /// From arrival to answer; a request still scoring then gets 504.
    pub request_timeout: Duration,
    /// The policy's tokenizer, to place step rewards on the rows' `completion_ids`.
    pub tokenizer: Option<Arc<referee_core::steps::tokens::Tokenizer>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_body_bytes: 64 << 20,
            max_batch: 65_536,
            max_in_flight: 8,
            max_queued: 256,
            request_timeout: Duration::from_secs(600),
            tokenizer: None,
        }
    }
}

/// Builds the executors a compiled spec gets (sandbox, judge connector); called per compile. It
/// should hand every program the same sandbox, so the server's runs share one set of slots.
pub type EnvFactory = Arc<dyn Fn() -> Env + Send + Sync>;

/// A registered program and its spec's JSON.
type Registered = (Arc<Program>, Arc<Value>);

/// What every request shares: the registered programs and the limits.
pub struct AppState {
    pub config: Config,
    env: EnvFactory,
    /// Each registered program with its spec's JSON (the fuzz audit reads the spec's types and
    /// gold fields).
    programs: RwLock<BTreeMap<String, Registered>>,
    /// Scoring requests admitted (running or waiting).
    admitted: AtomicUsize,
    /// Held by the scoring work itself, so work abandoned at its deadline still counts until it ends.
    slots: Arc<tokio::sync::Semaphore>,
    pub metrics: metrics::Metrics,
}

impl AppState {
    pub fn new(config: Config, env: EnvFactory) -> Arc<AppState> {
        Arc::new(AppState {
            slots: Arc::new(tokio::sync::Semaphore::new(config.max_in_flight.max(1))),
            config,
            env,
            programs: RwLock::default(),
            admitted: AtomicUsize::new(0),
            metrics: metrics::Metrics::new(),
        })
    }

    /// Compiles a spec (YAML or JSON text) with this server's executors.
    pub fn compile(&self, spec_text: &str) -> Result<Program, CompileErrors> {
        Program::compile_str_with(spec_text, (self.env)())
    }

    /// Compiles a spec (YAML or JSON text) and returns it with the spec's JSON.
    pub fn compile_with_spec(&self, spec_text: &str) -> Result<(Program, Value), CompileErrors> {
        let value = referee_core::program::parse_spec_text(spec_text)?;
        let p = Program::compile_with(&value, (self.env)())?;
        Ok((p, value))
    }

    /// Compiles and registers a spec under `name` (replacing any program of that name).
    pub fn register(&self, name: &str, spec_text: &str) -> Result<Arc<Program>, CompileErrors> {
        let (p, value) = self.compile_with_spec(spec_text)?;
        let p = Arc::new(p);
        self.programs
            .write()
            .expect("programs lock")
            .insert(name.to_string(), (p.clone(), Arc::new(value)));
        Ok(p)
    }

    /// A registered program with its spec's JSON.
    pub fn program_and_spec(&self, name: &str) -> Option<(Arc<Program>, Arc<Value>)> {
        self.programs
            .read()
            .expect("programs lock")
            .get(name)
            .cloned()
    }

    /// The shared sandbox's runs in flight, when the executors count them.
    pub fn sandbox_runs_in_flight(&self) -> Option<usize> {
        (self.env)().sandbox.and_then(|s| s.runs_in_flight())
    }

    pub fn program(&self, name: &str) -> Option<Arc<Program>> {
        self.program_and_spec(name).map(|(p, _)| p)
    }

    pub fn program_names(&self) -> Vec<String> {
        self.programs
            .read()
            .expect("programs lock")
            .keys()
            .cloned()
            .collect()
    }
}

/// The service's routes over `state`.
pub fn app(state: Arc<AppState>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/healthz", get(handlers::healthz))
        .route("/v1/score", post(handlers::score))
        .route(
            "/v1/programs",
            post(handlers::register).get(handlers::list_programs),
        )
        .route("/get_reward", post(handlers::get_reward))
        .route("/v1/fuzz", post(audit::fuzz))
        .route("/v1/eval", post(audit::eval))
        .route("/v1/compare", post(audit::compare))
        .route(
            "/v1/fine_tuning/alpha/graders/run",
            post(handlers::openai_run),
        )
        .route(
            "/v1/fine_tuning/alpha/graders/validate",
            post(handlers::openai_validate),
        )
        .route("/metrics", get(handlers::metrics))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), track))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Counts every routed request and its latency by endpoint and status.
async fn track(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let endpoint = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "other".to_string(), |p| p.as_str().to_string());
    let method = req.method().clone();
    let t = std::time::Instant::now();
    let resp = next.run(req).await;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    // One structured line per request (the shell chooses the format and the level).
    if resp.status().is_server_error() {
        tracing::warn!(target: "referee::request", %method, endpoint = %endpoint, status = resp.status().as_u16(), ms);
    } else {
        tracing::info!(target: "referee::request", %method, endpoint = %endpoint, status = resp.status().as_u16(), ms);
    }
    st.metrics
        .latency
        .get_or_create(&metrics::EndpointLabel {
            endpoint: endpoint.clone(),
        })
        .observe(t.elapsed().as_secs_f64());
    st.metrics
        .requests
        .get_or_create(&metrics::RequestLabels {
            endpoint,
            status: resp.status().as_u16(),
        })
        .inc();
    resp
}
