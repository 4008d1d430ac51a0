//! The `referee` Python package's native module, `referee._referee`: a shell like the CLI and the
//! server (DESIGN.md §4). It builds the `Env`, converts Python values to rows and results back,
//! and releases the GIL while the core scores; every behaviour lives in `referee-core`.

#![forbid(unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use referee_core::audit::params::{self, CompareParams, EvalParams, FuzzParams};
use referee_core::audit::Row;
use referee_core::exec::JudgeOptions;
use referee_core::input::{InputMapping, RowError, RowFormat};
use referee_core::{Program, Rows, ScoreResult, Status};
use serde_json::Value;
use std::sync::Arc;

/// The executors, as the CLI builds them: a sandbox started on first use (one per process,
/// shared by every program, so their runs share its slots) and the spec's judges connected
/// with their cache (by default `.referee-judge-cache.redb` in the working directory).
fn env(opts: &JudgeOptions) -> referee_core::exec::Env {
    static SANDBOX: std::sync::OnceLock<Arc<referee_sandbox::Lazy>> = std::sync::OnceLock::new();
    let sandbox = SANDBOX
        .get_or_init(|| {
            Arc::new(referee_sandbox::Lazy::new(
                referee_sandbox::Config::default(),
            ))
        })
        .clone();
    opts.env(
        Some(sandbox),
        Arc::new(referee_judge::Connector {
            default_cache_path: Some(".referee-judge-cache.redb".into()),
        }),
    )
}

mod convert;

use convert::to_value;

fn to_py<'py, T: serde::Serialize + ?Sized>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn mapping(
    format: &str,
    id_field: Option<String>,
    group_field: Option<String>,
    response_field: Option<String>,
) -> PyResult<InputMapping> {
    Ok(InputMapping {
        format: format.parse::<RowFormat>().map_err(PyValueError::new_err)?,
        id_field,
        group_field,
        response_field,
        ..InputMapping::default()
    })
}

/// Compiles spec text or a spec value. `Ok(Err(errors))` carries every compile error as
/// `(path, node_type, message)`; the Python side raises them as one `SpecError`.
type Errors = Vec<(String, Option<String>, String)>;
type Compiled = Result<Program, Errors>;

fn compile_value(spec: &Value, opts: &JudgeOptions) -> Compiled {
    Program::compile_with(spec, env(opts)).map_err(|e| {
        e.0.into_iter()
            .map(|e| (e.path, e.node_type, e.message))
            .collect()
    })
}

fn spec_value(py_spec: &Bound<'_, PyAny>) -> Result<Value, Errors> {
    if let Ok(text) = py_spec.extract::<String>() {
        return referee_core::program::parse_spec_text(&text).map_err(|e| {
            e.0.into_iter()
                .map(|e| (e.path, e.node_type, e.message))
                .collect()
        });
    }
    Ok(to_value(py_spec))
}

/// A compiled spec: immutable, shared by every thread that scores with it.
#[pyclass(frozen, module = "referee._referee", name = "Program")]
struct PyProgram {
    program: Arc<Program>,
    spec: Arc<Value>,
    opts: JudgeOptions,
    /// `compile(..., tokenizer=PATH)`: token spans for rows with `completion_ids`.
    tokenizer: Option<Arc<referee_core::steps::tokens::Tokenizer>>,
}

/// One sample's result (DESIGN.md §2).
#[pyclass(frozen, get_all, module = "referee._referee", name = "Result")]
struct PyResult_ {
    /// The sample's id, when the row had one.
    id: Py<PyAny>,
    /// `None` when the sample could not be scored (or nothing applied).
    reward: Option<f64>,
    /// `ok`, `not_applicable` or `error`.
    status: &'static str,
    /// A stable snake_case reason when `status == "error"`.
    reason: Option<String>,
    message: Option<String>,
    /// Every named component's value, in spec order (`None`: did not apply / failed / skipped).
    components: Py<PyDict>,
    /// The group stage's advantage, when the spec has a `group:` section.
    advantage: Option<f64>,
    /// The group stage's flag (`flat`, ...), when it set one.
    group_flag: Option<&'static str>,
    /// Judge calls and tokens, for programs with model graders.
    usage: Option<Py<PyAny>>,
    /// Per-step credit (`[{start, end, value, component, turn?, token_start?, token_end?}]`,
    /// char offsets into the output; token spans when the row gave its tokens), for programs
    /// with step components; `None` otherwise.
    step_rewards: Option<Py<PyAny>>,
    /// Why the row's `completion_ids`/`token_offsets` could not be placed on the step rewards
    /// (they then have char spans only); `None` otherwise.
    token_error: Option<String>,
    /// The explanation tree (explain only).
    trace: Option<Py<PyAny>>,
}

#[pymethods]
impl PyResult_ {
    /// The result as the CLI writes it (one JSONL line's object).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", self.id.bind(py))?;
        d.set_item("reward", self.reward)?;
        d.set_item("status", self.status)?;
        if self.status == "error" {
            d.set_item("reason", &self.reason)?;
            d.set_item("message", &self.message)?;
        }
        d.set_item("components", self.components.bind(py).copy()?)?;
        if let Some(a) = self.advantage {
            d.set_item("advantage", a)?;
        }
        if let Some(f) = self.group_flag {
            d.set_item("group_flag", f)?;
        }
        if let Some(st) = &self.step_rewards {
            d.set_item("step_rewards", st.bind(py))?;
        }
        if let Some(e) = &self.token_error {
            d.set_item("token_error", e)?;
        }
        if let Some(u) = &self.usage {
            d.set_item("usage", u.bind(py))?;
        }
        if let Some(t) = &self.trace {
            d.set_item("trace", t.bind(py))?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let reason = self
            .reason
            .as_ref()
            .map_or_else(String::new, |r| format!(", reason={r:?}"));
        let comps = self
            .components
            .bind(py)
            .repr()
            .map_or_else(|_| "{}".into(), |r| r.to_string());
        format!(
            "Result(reward={}, status={:?}{reason}, components={comps})",
            self.reward
                .map_or_else(|| "None".to_string(), |r| format!("{r:?}")),
            self.status
        )
    }
}

fn build_result(py: Python<'_>, id: Option<&Value>, r: &ScoreResult) -> PyResult<PyResult_> {
    let comps = PyDict::new(py);
    for (k, v) in &r.components {
        comps.set_item(&**k, *v)?;
    }
    let (reason, message) = match &r.status {
        Status::Error(f) => (Some(f.reason.to_string()), Some(f.message.clone())),
        _ => (None, None),
    };
    let (advantage, group_flag) = match &r.group {
        Some(g) => (
            if g.has_advantage { g.advantage } else { None },
            g.flag.map(referee_core::group::GroupFlag::as_str),
        ),
        None => (None, None),
    };
    Ok(PyResult_ {
        id: match id {
            Some(v) => to_py(py, v)?.unbind(),
            None => py.None(),
        },
        reward: r.reward,
        status: r.status.as_str(),
        reason,
        message,
        components: comps.unbind(),
        advantage,
        group_flag,
        usage: r
            .usage
            .as_ref()
            .map(|u| to_py(py, u))
            .transpose()?
            .map(Bound::unbind),
        step_rewards: r
            .step_rewards
            .as_ref()
            .map(|st| to_py(py, st))
            .transpose()?
            .map(Bound::unbind),
        token_error: r.token_error.clone(),
        trace: r
            .trace
            .as_ref()
            .map(|t| to_py(py, t))
            .transpose()?
            .map(Bound::unbind),
    })
}

impl PyProgram {
    /// Converts rows (GIL held), then maps and scores them with the GIL released through the
    /// core's one scoring call; every row's result comes back in order, a row that does not map
    /// as an error result, never an exception.
    fn run(
        &self,
        py: Python<'_>,
        samples: &Bound<'_, PyAny>,
        m: &InputMapping,
        explain: bool,
    ) -> PyResult<Vec<(Option<Value>, ScoreResult)>> {
        // Every value converts (numpy, pydantic, ...): a bad row is one the mapping refuses.
        let rows = samples
            .try_iter()?
            .map(|row| row.map(|r| to_value(&r)))
            .collect::<PyResult<Vec<Value>>>()?;
        let program = self.program.clone();
        let opts = referee_core::Options {
            explain,
            tokenizer: self.tokenizer.clone(),
            ..referee_core::Options::default()
        };
        let scored = py.detach(move || referee_core::score(&program, Rows::Values(rows), m, &opts));
        Ok(scored.rows.into_iter().map(|r| (r.id, r.result)).collect())
    }
}

/// An audit's rows: a `str` is a data file's text (JSON Lines or a JSON array, read as the CLI
/// reads it), anything else an iterable of rows (converted as scoring converts them).
fn audit_rows(rows: &Bound<'_, PyAny>) -> PyResult<Vec<Row>> {
    if let Ok(text) = rows.cast::<PyString>() {
        return Ok(referee_core::audit::read_rows(&text.to_cow()?));
    }
    let mut values = Vec::new();
    for row in rows.try_iter()? {
        values.push(Ok::<_, RowError>(to_value(&row?)));
    }
    Ok(params::rows_from_values(values))
}

/// An options dict (keyword arguments, `None` values dropped by the Python layer) as the core's
/// params; a bad key or value is a `ValueError` with the core's message.
fn audit_params<T: serde::de::DeserializeOwned + Default>(
    options: Option<&Bound<'_, PyAny>>,
) -> PyResult<T> {
    let v = match options {
        Some(o) if !o.is_none() => to_value(o),
        _ => Value::Null,
    };
    params::from_value(v).map_err(PyValueError::new_err)
}

fn report_py<'py, T: serde::Serialize>(py: Python<'py>, report: &T) -> PyResult<Bound<'py, PyAny>> {
    // Through a JSON value, so the dict is exactly the CLI's `--json` document.
    let v = serde_json::to_value(report).map_err(|e| PyValueError::new_err(e.to_string()))?;
    to_py(py, &v)
}

#[pymethods]
impl PyProgram {
    /// Rewards only, in input order (`None` where a sample could not be scored).
    #[pyo3(signature = (samples, *, format="auto", id_field=None, group_field=None, response_field=None))]
    fn score(
        &self,
        py: Python<'_>,
        samples: &Bound<'_, PyAny>,
        format: &str,
        id_field: Option<String>,
        group_field: Option<String>,
        response_field: Option<String>,
    ) -> PyResult<Vec<Option<f64>>> {
        let m = mapping(format, id_field, group_field, response_field)?;
        Ok(self
            .run(py, samples, &m, false)?
            .into_iter()
            .map(|(_, r)| r.reward)
            .collect())
    }

    /// Full results, in input order.
    #[pyo3(signature = (samples, *, format="auto", id_field=None, group_field=None, response_field=None, explain=false))]
    #[allow(clippy::too_many_arguments)]
    fn score_detailed(
        &self,
        py: Python<'_>,
        samples: &Bound<'_, PyAny>,
        format: &str,
        id_field: Option<String>,
        group_field: Option<String>,
        response_field: Option<String>,
        explain: bool,
    ) -> PyResult<Vec<PyResult_>> {
        let m = mapping(format, id_field, group_field, response_field)?;
        self.run(py, samples, &m, explain)?
            .iter()
            .map(|(id, r)| build_result(py, id.as_ref(), r))
            .collect()
    }

    /// One sample's result with its explanation tree.
    #[pyo3(signature = (sample, *, format="auto", id_field=None, group_field=None, response_field=None))]
    fn explain(
        &self,
        py: Python<'_>,
        sample: &Bound<'_, PyAny>,
        format: &str,
        id_field: Option<String>,
        group_field: Option<String>,
        response_field: Option<String>,
    ) -> PyResult<PyResult_> {
        let m = mapping(format, id_field, group_field, response_field)?;
        let list = PyList::new(py, [sample])?;
        let (id, r) = self.run(py, list.as_any(), &m, true)?.remove(0);
        build_result(py, id.as_ref(), &r)
    }

    /// OpenRLHF's reward answer `{"rewards", "scores", "extra_logs"}` for rows in the `openrlhf`
    /// format (`{"query", "prompt", "label"}`): what `referee serve`'s `/get_reward` answers.
    fn openrlhf_answer<'py>(
        &self,
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let m = InputMapping {
            format: RowFormat::Openrlhf,
            ..InputMapping::default()
        };
        let results: Vec<ScoreResult> = self
            .run(py, rows, &m, false)?
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        let answer =
            referee_core::input::openrlhf::reward_answer(self.program.component_names(), &results);
        to_py(py, &answer)
    }

    /// Every named component, in spec order: the keys of each result's `components`.
    #[getter]
    fn component_names(&self) -> Vec<String> {
        self.program
            .component_names()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Whether scoring waits on a sandbox or judge.
    #[getter]
    fn waits(&self) -> bool {
        self.program.waits()
    }

    /// The top-level parts (`referee_core::parts`): `(name, weight, Program | errors)` each,
    /// for trainers that combine rewards themselves.
    fn parts(slf: &Bound<'_, Self>) -> PyResult<Vec<(String, f64, Py<PyAny>)>> {
        let py = slf.py();
        let this = slf.get();
        let parts = referee_core::parts::top_level_parts(&this.program, &this.spec);
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            // A one-part split is this program: no second compile.
            let prog = if p.spec == *this.spec {
                slf.clone().into_any().unbind()
            } else {
                let opts = this.opts.clone();
                let spec = p.spec.clone();
                match py.detach(move || compile_value(&spec, &opts)) {
                    Ok(prog) => Py::new(
                        py,
                        PyProgram {
                            program: Arc::new(prog),
                            spec: Arc::new(p.spec),
                            opts: this.opts.clone(),
                            tokenizer: this.tokenizer.clone(),
                        },
                    )?
                    .into_any(),
                    Err(errs) => errs.into_pyobject(py)?.into_any().unbind(),
                }
            };
            out.push((p.name, p.weight, prog));
        }
        Ok(out)
    }

    /// `referee fuzz`: `(report, skipped)`, the report as the CLI's `--json`, `skipped` the rows
    /// that did not map. `exploits`: corpus files `(name, yaml)` instead of the built-in corpus.
    #[pyo3(signature = (rows, options=None, *, label=None, exploits=None, data_name="rows"))]
    fn fuzz<'py>(
        &self,
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyAny>>,
        label: Option<String>,
        exploits: Option<Vec<(String, String)>>,
        data_name: &str,
    ) -> PyResult<(Bound<'py, PyAny>, Vec<String>)> {
        let p: FuzzParams = audit_params(options)?;
        let mapping = p.mapping().map_err(PyValueError::new_err)?;
        let rows = audit_rows(rows)?;
        let corpus = exploits
            .map(|files| {
                referee_core::audit::fuzz::corpus::Corpus::parse(&files)
                    .map_err(|e| PyValueError::new_err(format!("exploit corpus: {e}")))
            })
            .transpose()?;
        let (program, spec) = (self.program.clone(), self.spec.clone());
        let name = data_name.to_string();
        let out = py.detach(move || {
            let (samples, skipped) = params::fuzz_samples(&rows, &mapping, p.rows, &name)?;
            let corpus = corpus
                .as_ref()
                .unwrap_or_else(|| referee_core::audit::fuzz::corpus::Corpus::embedded());
            let label = label.map_or(Value::Null, Value::String);
            referee_core::audit::fuzz::fuzz(&program, &spec, label, &samples, &p.options(), corpus)
                .map(|r| (r, skipped))
        });
        let (report, skipped) = out.map_err(PyValueError::new_err)?;
        Ok((report_py(py, &report)?, skipped))
    }

    /// `referee eval`: the report as the CLI's JSON.
    #[pyo3(signature = (rows, options=None, *, label=None))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyAny>>,
        label: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let p: EvalParams = audit_params(options)?;
        let opts = p.options().map_err(PyValueError::new_err)?;
        let rows = audit_rows(rows)?;
        let program = self.program.clone();
        let mut report = py
            .detach(move || referee_core::audit::eval::evaluate(&program, &rows, &opts))
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        report.spec = label;
        report_py(py, &report)
    }

    /// `referee compare`: this program (a) against `other` (b) or the `label` option's field.
    #[pyo3(signature = (other, rows, options=None, *, a_name="a", b_name="b"))]
    fn compare<'py>(
        &self,
        py: Python<'py>,
        other: Option<&Bound<'py, PyProgram>>,
        rows: &Bound<'py, PyAny>,
        options: Option<&Bound<'py, PyAny>>,
        a_name: &str,
        b_name: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        use referee_core::audit::compare::{compare, Reference};
        let p: CompareParams = audit_params(options)?;
        let opts = p.options(other.is_some()).map_err(PyValueError::new_err)?;
        let rows = audit_rows(rows)?;
        let a = self.program.clone();
        let b = other.map(|o| o.get().program.clone());
        let b_name = match &p.label {
            Some(f) => format!("label:{f}"),
            None => b_name.to_string(),
        };
        let a_name = a_name.to_string();
        let report = py.detach(move || {
            let reference = match (&b, p.label) {
                (Some(b), _) => Reference::Spec(b),
                (None, Some(f)) => Reference::Label(f),
                (None, None) => unreachable!("checked by CompareParams::options"),
            };
            compare(&a, &reference, &rows, &opts, &a_name, &b_name)
        });
        report_py(py, &report)
    }

    fn __repr__(&self) -> String {
        format!("Program(components={:?})", self.component_names())
    }
}

/// Compiles a spec (text, or a dict/list value). Returns `(Program, None)` or `(None, errors)`
/// with every error as `(path, node_type, message)`: the Python wrapper raises `SpecError`.
#[pyfunction]
#[pyo3(signature = (spec, *, judge=None, judge_model=None, judge_cache=None, judge_fallback=None, tokenizer=None))]
fn compile(
    py: Python<'_>,
    spec: &Bound<'_, PyAny>,
    judge: Option<String>,
    judge_model: Option<String>,
    judge_cache: Option<String>,
    judge_fallback: Option<String>,
    tokenizer: Option<std::path::PathBuf>,
) -> PyResult<(Option<Py<PyProgram>>, Option<Errors>)> {
    let tokenizer = tokenizer
        .map(|p| referee_core::steps::tokens::Tokenizer::from_file(&p).map(Arc::new))
        .transpose()
        .map_err(PyValueError::new_err)?;
    let value = match spec_value(spec) {
        Ok(v) => v,
        Err(errs) => return Ok((None, Some(errs))),
    };
    let opts = JudgeOptions {
        judge,
        judge_model,
        judge_cache,
        judge_fallback,
    }
    .for_spec(&value);
    let o = opts.clone();
    // Compiling may connect judges: no reason to hold the GIL meanwhile.
    let (value, compiled) = py.detach(move || {
        let c = compile_value(&value, &o);
        (value, c)
    });
    match compiled {
        Ok(p) => Ok((
            Some(Py::new(
                py,
                PyProgram {
                    program: Arc::new(p),
                    spec: Arc::new(value),
                    opts,
                    tokenizer,
                },
            )?),
            None,
        )),
        Err(errs) => Ok((None, Some(errs))),
    }
}

#[pymodule]
fn _referee(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_class::<PyProgram>()?;
    m.add_class::<PyResult_>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
