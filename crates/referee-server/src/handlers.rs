//! The endpoints: body parsing, admission, scoring on blocking threads, response shapes.

use crate::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use referee_core::input::{InputMapping, RowFormat};
use referee_core::{CompileError, Program, Rows, ScoreResult, Scored};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// An error answer: `{"error": code, "message", "errors"?: [{path, node_type, message}]}`.
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    errors: Vec<CompileError>,
    retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            retry_after: None,
        }
    }

    pub(crate) fn spec(e: referee_core::CompileErrors) -> Self {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "spec_error",
            message: format!("the spec has {} error(s)", e.0.len()),
            errors: e.0,
            retry_after: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.code, "message": self.message});
        if !self.errors.is_empty() {
            body["errors"] = json!(self.errors);
        }
        let mut r = (self.status, Json(body)).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(s));
        }
        r
    }
}

pub(crate) fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("the body is not the expected JSON: {e}"),
        )
    })
}

/// A spec given inline: YAML/JSON text, or a JSON object.
pub(crate) fn spec_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Compiles a spec off the I/O threads (compiling is CPU work and may connect judges).
async fn compile(st: &Arc<AppState>, text: String) -> Result<Program, ApiError> {
    let st = st.clone();
    tokio::task::spawn_blocking(move || st.compile(&text))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(ApiError::spec)
}

pub async fn metrics(State(st): State<Arc<AppState>>) -> impl IntoResponse {
    if let Some(n) = st.sandbox_runs_in_flight() {
        st.metrics
            .sandbox_runs
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        st.metrics.encode(),
    )
}

pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterReq {
    name: String,
    spec: Value,
}

pub async fn register(
    State(st): State<Arc<AppState>>,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let req: RegisterReq = parse(&body)?;
    if req.name.is_empty() || req.name.len() > 200 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "`name` must be 1 to 200 characters",
        ));
    }
    let text = spec_text(&req.spec);
    let st2 = st.clone();
    let name = req.name.clone();
    // Compiling may connect judges or start nothing heavy, but it is CPU work: off the I/O threads.
    let p = tokio::task::spawn_blocking(move || st2.register(&name, &text))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(ApiError::spec)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"name": req.name, "components": p.component_names()})),
    ))
}

pub async fn list_programs(State(st): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({"programs": st.program_names()}))
}

/// Releases an admitted request's place when it ends, however it ends.
struct Admitted<'a>(&'a AppState);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, Ordering::SeqCst);
        self.0.metrics.in_flight.dec();
    }
}

/// Runs blocking work (scoring, an audit) with admission control and the request deadline: at
/// most `max_in_flight` run at once on blocking threads, `max_queued` wait, the rest get 429.
pub(crate) async fn admitted<T: Send + 'static>(
    st: &Arc<AppState>,
    started: Instant,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    let cfg = &st.config;
    if st.admitted.fetch_add(1, Ordering::SeqCst) >= cfg.max_in_flight + cfg.max_queued {
        st.admitted.fetch_sub(1, Ordering::SeqCst);
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "overloaded",
            "too many scoring requests in flight; retry later",
        );
        e.retry_after = Some(1);
        return Err(e);
    }
    let _admitted = Admitted(st);
    st.metrics.in_flight.inc();
    let deadline = started + cfg.request_timeout;
    let late = || {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "deadline",
            format!(
                "the request did not finish within {} ms",
                cfg.request_timeout.as_millis()
            ),
        )
    };
    let permit = tokio::time::timeout_at(deadline.into(), st.slots.clone().acquire_owned())
        .await
        .map_err(|_| late())?
        .map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "shutting_down",
                e.to_string(),
            )
        })?;
    let work = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    });
    tokio::time::timeout_at(deadline.into(), work)
        .await
        .map_err(|_| late())?
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
}

/// Scores rows with admission control and the request deadline, through the core's one
/// scoring call: results in input order, a row that does not map as an error result.
async fn run(
    st: &Arc<AppState>,
    program: Arc<Program>,
    rows: Vec<Value>,
    mapping: InputMapping,
    explain: bool,
    started: Instant,
) -> Result<Scored, ApiError> {
    let opts = referee_core::Options {
        explain,
        tokenizer: st.config.tokenizer.clone(),
        ..referee_core::Options::default()
    };
    let out = admitted(st, started, move || {
        referee_core::score(&program, Rows::Values(rows), &mapping, &opts)
    })
    .await?;
    st.metrics.results(out.rows.iter().map(|r| &r.result));
    Ok(out)
}

fn result_json(id: Option<&Value>, r: &ScoreResult) -> Value {
    serde_json::to_value(r.with_id(id, None)).unwrap_or(Value::Null)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScoreReq {
    #[serde(default)]
    spec: Option<Value>,
    #[serde(default)]
    program: Option<String>,
    samples: Vec<Value>,
    #[serde(default)]
    explain: bool,
}

pub async fn score(State(st): State<Arc<AppState>>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let req: ScoreReq = parse(&body)?;
    if req.samples.len() > st.config.max_batch {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!(
                "{} samples; this server takes at most {} per request",
                req.samples.len(),
                st.config.max_batch
            ),
        ));
    }
    let program = match (&req.spec, &req.program) {
        (Some(spec), None) => Arc::new(compile(&st, spec_text(spec)).await?),
        (None, Some(name)) => st.program(name).ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_program",
                format!("no program `{name}`; registered: {:?}", st.program_names()),
            )
        })?,
        _ => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "give exactly one of `spec` and `program`",
            ))
        }
    };
    let scored = run(
        &st,
        program,
        req.samples,
        InputMapping::default(),
        req.explain,
        started,
    )
    .await?;
    let out: Vec<Value> = scored
        .rows
        .iter()
        .map(|r| result_json(r.id.as_ref(), &r.result))
        .collect();
    Ok(Json(json!({"results": out, "summary": scored.summary()})))
}

#[derive(Deserialize)]
pub struct RewardReq {
    query: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    labels: Vec<Value>,
}

/// OpenRLHF's remote reward protocol (`--reward.remote_url http://.../get_reward`). Each query is
/// prompt + response, the prompt possibly cut from the left; the core's `openrlhf` row format
/// finds the response and [`referee_core::input::openrlhf::reward_answer`] writes the answer:
/// a number for every row (OpenRLHF tensors them unchecked), with `extra_logs.referee_error`
/// marking the rows that could not be scored.
pub async fn get_reward(
    State(st): State<Arc<AppState>>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let req: RewardReq = parse(&body)?;
    if req.query.len() > st.config.max_batch {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!("at most {} queries per request", st.config.max_batch),
        ));
    }
    for (what, n) in [("prompts", req.prompts.len()), ("labels", req.labels.len())] {
        if n != 0 && n != req.query.len() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                format!("`{what}` has {n} entries for {} queries", req.query.len()),
            ));
        }
    }
    let names = st.program_names();
    let program = st
        .program("default")
        .or_else(|| (names.len() == 1).then(|| st.program(&names[0])).flatten())
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "unknown_program",
                "/get_reward scores with the program named `default` (or the only one); none is registered",
            )
        })?;
    let mapping = InputMapping {
        format: RowFormat::Openrlhf,
        ..InputMapping::default()
    };
    let RewardReq {
        query,
        prompts,
        labels,
    } = req;
    let mut prompts = prompts.into_iter();
    let mut labels = labels.into_iter();
    let rows = query
        .into_iter()
        .map(|q| {
            json!({
                "query": q,
                "prompt": prompts.next().unwrap_or_default(),
                "label": labels.next().unwrap_or(Value::Null),
            })
        })
        .collect();
    let results = run(&st, program.clone(), rows, mapping, false, started)
        .await?
        .results();
    Ok(Json(referee_core::input::openrlhf::reward_answer(
        program.component_names(),
        &results,
    )))
}

#[derive(Deserialize)]
pub struct OpenAiRunReq {
    grader: Value,
    #[serde(default)]
    item: Value,
    #[serde(default)]
    model_sample: String,
}

/// OpenAI's `errors` flags for a failure reason.
fn openai_errors(r: &ScoreResult) -> Value {
    let mut e = json!({
        "formula_parse_error": false, "sample_parse_error": false,
        "truncated_observation_error": false, "unresponsive_reward_error": false,
        "invalid_variable_error": false, "other_error": false,
        "python_grader_server_error": false, "python_grader_server_error_type": null,
        "python_grader_runtime_error": false, "python_grader_runtime_error_details": null,
        "model_grader_server_error": false, "model_grader_refusal_error": false,
        "model_grader_parse_error": false, "model_grader_server_error_details": null});
    if let Some(reason) = r.reason() {
        let message = match &r.status {
            referee_core::Status::Error(f) => f.message.clone(),
            _ => String::new(),
        };
        match reason {
            "judge_unparseable" => e["model_grader_parse_error"] = json!(true),
            x if x.starts_with("judge_") => {
                e["model_grader_server_error"] = json!(true);
                e["model_grader_server_error_details"] = json!(message);
            }
            x if x.starts_with("python_") => {
                e["python_grader_runtime_error"] = json!(true);
                e["python_grader_runtime_error_details"] = json!(message);
            }
            x if x.starts_with("sandbox_") => {
                e["python_grader_server_error"] = json!(true);
                e["python_grader_server_error_type"] = json!(x);
            }
            "missing_field" => e["invalid_variable_error"] = json!(true),
            _ => e["other_error"] = json!(true),
        }
    }
    e
}

pub async fn openai_run(
    State(st): State<Arc<AppState>>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let req: OpenAiRunReq = parse(&body)?;
    let program = Arc::new(compile(&st, req.grader.to_string()).await?);
    let item = if req.item.is_null() {
        json!({})
    } else {
        req.item
    };
    let row = json!({"item": item, "model_sample": req.model_sample});
    let mapping = InputMapping::default();
    let r = run(&st, program, vec![row], mapping, false, started)
        .await?
        .results()
        .remove(0);
    let scores: Map<String, Value> = r
        .components
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let usage = r.usage.unwrap_or_default();
    Ok(Json(json!({
        "reward": r.reward,
        "status": r.status.as_str(),
        "reason": r.reason(),
        "sub_rewards": scores,
        "metadata": {
            "name": req.grader.get("name").cloned().unwrap_or(Value::Null),
            "type": req.grader.get("type").cloned().unwrap_or(Value::Null),
            "errors": openai_errors(&r),
            "execution_time": started.elapsed().as_secs_f64(),
            "scores": scores,
            "token_usage": {"prompt_tokens": usage.prompt_tokens,
                            "completion_tokens": usage.completion_tokens,
                            "total_tokens": usage.prompt_tokens + usage.completion_tokens},
            "sampled_model_name": null,
        },
        "model_grader_token_usage_per_model": {},
    })))
}

#[derive(Deserialize)]
pub struct OpenAiValidateReq {
    grader: Value,
}

pub async fn openai_validate(
    State(st): State<Arc<AppState>>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let req: OpenAiValidateReq = parse(&body)?;
    compile(&st, req.grader.to_string()).await?;
    Ok(Json(json!({"grader": req.grader})))
}
