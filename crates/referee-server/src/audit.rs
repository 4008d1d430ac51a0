//! The audits over HTTP: `POST /v1/fuzz`, `/v1/eval`, `/v1/compare`. Each takes
//! `{"spec": ... | "program": NAME, "rows": [...], "options": {...}}` (compare: also
//! `"spec_b" | "program_b"`, or the `label` option) and answers the CLI's `--json` report. The
//! options are the CLI's flags in snake_case, parsed and checked by the core
//! (`referee_core::audit::params`), so the three shells agree on names, defaults and messages.
//! The audit runs where `/v1/score` scores: admitted, on a blocking thread, under the deadline.

use crate::handlers::{admitted, parse, spec_text, ApiError};
use crate::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use referee_core::audit::compare::Reference;
use referee_core::audit::params::{self, CompareParams, EvalParams, FuzzParams};
use referee_core::audit::Row;
use referee_core::Program;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditReq {
    #[serde(default)]
    spec: Option<Value>,
    #[serde(default)]
    program: Option<String>,
    /// `/v1/compare`'s reference spec (b).
    #[serde(default)]
    spec_b: Option<Value>,
    #[serde(default)]
    program_b: Option<String>,
    rows: Vec<Value>,
    #[serde(default)]
    options: Value,
}

fn bad(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

/// A program, its spec's JSON, and what the report calls it (the registered name; an inline
/// spec has none).
struct Resolved {
    program: Arc<Program>,
    spec: Arc<Value>,
    name: Option<String>,
}

async fn resolve(
    st: &Arc<AppState>,
    spec: Option<Value>,
    program: Option<String>,
    which: &str,
) -> Result<Option<Resolved>, ApiError> {
    match (spec, program) {
        (None, None) => Ok(None),
        (Some(spec), None) => {
            let st = st.clone();
            let text = spec_text(&spec);
            let (p, v) = tokio::task::spawn_blocking(move || st.compile_with_spec(&text))
                .await
                .map_err(|e| {
                    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
                })?
                .map_err(ApiError::spec)?;
            Ok(Some(Resolved {
                program: Arc::new(p),
                spec: Arc::new(v),
                name: None,
            }))
        }
        (None, Some(name)) => {
            let (p, v) = st.program_and_spec(&name).ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "unknown_program",
                    format!("no program `{name}`; registered: {:?}", st.program_names()),
                )
            })?;
            Ok(Some(Resolved {
                program: p,
                spec: v,
                name: Some(name),
            }))
        }
        (Some(_), Some(_)) => Err(bad(
            "bad_request",
            format!("give one of `spec{which}` and `program{which}`, not both"),
        )),
    }
}

/// The request, its spec (a) and its rows; refuses what `/v1/score` refuses (too many rows)
/// and a second spec where the audit takes none.
async fn prepare(
    st: &Arc<AppState>,
    body: &Bytes,
    takes_b: bool,
) -> Result<(AuditReq, Resolved, Vec<Row>), ApiError> {
    let mut req: AuditReq = parse(body)?;
    if req.rows.len() > st.config.max_batch {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "batch_too_large",
            format!(
                "{} rows; this server takes at most {} per request",
                req.rows.len(),
                st.config.max_batch
            ),
        ));
    }
    if !takes_b && (req.spec_b.is_some() || req.program_b.is_some()) {
        return Err(bad(
            "bad_request",
            "`spec_b`/`program_b` are for /v1/compare",
        ));
    }
    let a = resolve(st, req.spec.take(), req.program.take(), "")
        .await?
        .ok_or_else(|| bad("bad_request", "give exactly one of `spec` and `program`"))?;
    let rows =
        params::rows_from_values(std::mem::take(&mut req.rows).into_iter().map(Ok).collect());
    Ok((req, a, rows))
}

fn report_json<T: serde::Serialize>(r: &T) -> Result<Json<Value>, ApiError> {
    serde_json::to_value(r)
        .map(Json)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
}

pub async fn fuzz(State(st): State<Arc<AppState>>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let (req, a, rows) = prepare(&st, &body, false).await?;
    let p: FuzzParams = params::from_value(req.options).map_err(|e| bad("bad_options", e))?;
    let mapping = p.mapping().map_err(|e| bad("bad_options", e))?;
    let report = admitted(&st, started, move || {
        let (samples, _skipped) = params::fuzz_samples(&rows, &mapping, p.rows, "rows")?;
        let label = a.name.map_or(Value::Null, Value::String);
        referee_core::audit::fuzz::fuzz(
            &a.program,
            &a.spec,
            label,
            &samples,
            &p.options(),
            referee_core::audit::fuzz::corpus::Corpus::embedded(),
        )
    })
    .await?
    .map_err(|e| bad("bad_options", e))?;
    report_json(&report)
}

pub async fn eval(State(st): State<Arc<AppState>>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let (req, a, rows) = prepare(&st, &body, false).await?;
    let p: EvalParams = params::from_value(req.options).map_err(|e| bad("bad_options", e))?;
    let opts = p.options().map_err(|e| bad("bad_options", e))?;
    let report = admitted(&st, started, move || {
        referee_core::audit::eval::evaluate(&a.program, &rows, &opts).map(|mut r| {
            r.spec = a.name;
            r
        })
    })
    .await?
    .map_err(|e| bad("bad_data", e.to_string()))?;
    report_json(&report)
}

pub async fn compare(
    State(st): State<Arc<AppState>>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let started = Instant::now();
    let (mut req, a, rows) = prepare(&st, &body, true).await?;
    let b = resolve(&st, req.spec_b.take(), req.program_b.take(), "_b").await?;
    let p: CompareParams = params::from_value(req.options).map_err(|e| bad("bad_options", e))?;
    let opts = p.options(b.is_some()).map_err(|e| bad("bad_options", e))?;
    let a_name = a.name.clone().unwrap_or_else(|| "a".into());
    let b_name = match (&p.label, &b) {
        (Some(f), _) => format!("label:{f}"),
        (None, Some(b)) => b.name.clone().unwrap_or_else(|| "b".into()),
        (None, None) => unreachable!("checked by CompareParams::options"),
    };
    let report = admitted(&st, started, move || {
        let reference = match (&b, p.label) {
            (Some(b), _) => Reference::Spec(&b.program),
            (None, Some(f)) => Reference::Label(f),
            (None, None) => unreachable!("checked by CompareParams::options"),
        };
        referee_core::audit::compare::compare(
            &a.program, &reference, &rows, &opts, &a_name, &b_name,
        )
    })
    .await?;
    report_json(&report)
}
