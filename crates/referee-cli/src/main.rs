//! `referee`: the command-line shell. Parses arguments, reads and writes files, and calls the
//! core; it holds no scoring logic (DESIGN.md §4).

#![forbid(unsafe_code)]

mod compare;
mod eval;
mod fuzz;
mod report;
mod score;

/// mimalloc: glibc's allocator was a quarter of the CPU of a judge-bound batch.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use referee_core::input::{InputMapping, RowFormat};
use referee_core::registry::COMPONENTS;
use referee_core::Program;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit codes, documented in the README.
pub const EXIT_OK: u8 = 0;
pub const EXIT_SPEC: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_IO: u8 = 3;
pub const EXIT_ROW_ERRORS: u8 = 4;

#[derive(Parser)]
#[command(
    name = "referee",
    version,
    about = "Reward engine for RL on language models: grader specs compiled once, scored fast, explained."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
pub struct MappingArgs {
    /// Row format of the input: auto (per row), referee (= openai: item + sample), trl, verl,
    /// openrlhf (query + prompt + label).
    #[arg(long, default_value = "auto")]
    pub format: RowFormat,
    /// Dotted path of the id in each row (default: `id`; verl: also `extra_info.index`).
    #[arg(long)]
    pub id_field: Option<String>,
    /// Dotted path of the group (GRPO prompt) in each row (default: `group`; verl: `uid`).
    #[arg(long)]
    pub group_field: Option<String>,
    /// Dotted path of the model output in each row, overriding the format's default.
    #[arg(long)]
    pub response_field: Option<String>,
}

/// Judge endpoints and cache from the command line.
#[derive(clap::Args, Clone, Default)]
pub struct JudgeArgs {
    /// A judge endpoint (`http://host:port/v1`) named `default`: for specs without a `judges:`
    /// section (OpenAI grader files), or to point a spec's `default` at another server.
    #[arg(long, value_name = "URL")]
    pub judge: Option<String>,
    /// The model name sent to `--judge` (default: `judge`).
    #[arg(long, value_name = "NAME")]
    pub judge_model: Option<String>,
    /// Where judge replies are cached, overriding the spec's `judge_cache:`: `off`, `memory`,
    /// a file path, or `redis://host:port/db`. Default: the spec's choice, whose file is
    /// `.referee-judge-cache.redb` next to the output (or in the current directory).
    #[arg(long, value_name = "WHERE")]
    pub judge_cache: Option<String>,
}

impl JudgeArgs {
    fn options(&self) -> referee_core::exec::JudgeOptions {
        referee_core::exec::JudgeOptions {
            judge: self.judge.clone(),
            judge_model: self.judge_model.clone(),
            judge_cache: self.judge_cache.clone(),
            judge_fallback: None,
        }
    }
}

impl MappingArgs {
    pub fn mapping(&self) -> InputMapping {
        InputMapping {
            format: self.format,
            id_field: self.id_field.clone(),
            group_field: self.group_field.clone(),
            response_field: self.response_field.clone(),
            ..InputMapping::default()
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Score a JSONL or Parquet file: one result per input row, in input order.
    Score {
        /// The grader spec (YAML or JSON).
        spec: PathBuf,
        /// Input JSONL, or Parquet when it ends in `.parquet` (default: JSONL on stdin).
        input: Option<PathBuf>,
        /// Output (default: stdout): Parquet when it ends in `.parquet`, or when the input is
        /// Parquet and no other path is given; JSONL otherwise. Parquet results have columns id,
        /// reward, status, reason, message, line, one per component, advantage/group_flag/
        /// group_reward with a group stage, and JSON-text columns usage and trace.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Add the explanation tree to every result.
        #[arg(long)]
        explain: bool,
        #[command(flatten)]
        mapping: MappingArgs,
        #[command(flatten)]
        judge: JudgeArgs,
        /// Worker threads (default: all cores).
        #[arg(short = 'j', long)]
        threads: Option<usize>,
        /// At most this many samples of a spec that waits (judge, sandbox) in flight at once, to
        /// bound memory. Default: no cap beyond the endpoints' `max_concurrency` and the
        /// sandbox's slots.
        #[arg(long, value_name = "N")]
        max_samples_in_flight: Option<usize>,
        /// The policy's `tokenizer.json`: step rewards of rows with `completion_ids` get the
        /// token span of each step (`token_start`, `token_end`). Rows may give `token_offsets`
        /// instead, which need no tokenizer.
        #[arg(long, value_name = "PATH")]
        tokenizer: Option<PathBuf>,
        /// Write the summary to stderr as JSON instead of text.
        #[arg(long)]
        summary_json: bool,
        /// Print no summary.
        #[arg(short, long)]
        quiet: bool,
        /// Exit with code 4 when any line got status `error`.
        #[arg(long)]
        strict: bool,
    },
    /// Check a spec: print every error with its path; exit 1 if there are any. Never calls a
    /// judge nor opens its cache.
    Check {
        spec: PathBuf,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Score one sample and print its full explanation tree.
    Explain {
        spec: PathBuf,
        /// The sample: a JSON row, a path to a file holding one, or `-` for stdin.
        sample: String,
        #[command(flatten)]
        mapping: MappingArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// List the grader types, or print one type's documentation, or (--reasons) the reason
    /// codes of failed samples.
    List {
        #[arg(value_name = "TYPE", conflicts_with = "reasons")]
        type_name: Option<String>,
        /// List every `reason` a failed sample can carry, grouped by where it arises, each with
        /// what happened and what to do.
        #[arg(long)]
        reasons: bool,
    },
    /// Print the JSON Schema of the spec language.
    Schema,
    /// Evaluate a spec on benchmark data: RewardBench v1/v2 accuracy, agreement with gold
    /// scores, best-of-N selection accuracy; a JSON report and a table.
    Eval(eval::EvalArgs),
    /// Compare a spec with another spec or a label column: confusion matrix, error rates and
    /// the disagreeing samples.
    Compare(compare::CompareArgs),
    /// Write one self-contained HTML report (no network, no external assets) from `referee
    /// score` results (JSONL or Parquet, with or without `--explain`) or from the JSON output
    /// of `referee eval`, `fuzz` or `compare`.
    Report {
        /// The results or audit JSON file.
        results: PathBuf,
        /// The HTML file to write.
        #[arg(short, long, default_value = "report.html")]
        output: PathBuf,
        /// The scored input (JSONL or Parquet), to take each row's group from when the results
        /// carry none; mapped with the same flags as `referee score`.
        #[arg(long, value_name = "INPUT")]
        data: Option<PathBuf>,
        #[command(flatten)]
        mapping: MappingArgs,
    },
    /// Audit a spec for reward hacks: score adversarial variants of real outputs (empty,
    /// truncated, master keys, judge injection, answer listing, padding, format-only, wrong
    /// answers in the right format, the exploit corpus of each grader type used) and report per
    /// family how many passed; exit 5 when any did. Perturbation audits (step inflation,
    /// reordering, confidence markers) report how far the reward moves on outputs with steps.
    Fuzz(Box<fuzz::FuzzArgs>),
    /// Serve rewards over HTTP (`/v1/score`, `/v1/programs`, the audits `/v1/fuzz`, `/v1/eval`,
    /// `/v1/compare`, OpenRLHF's `/get_reward`, OpenAI's grader endpoints, `/healthz`) until
    /// SIGINT/SIGTERM, finishing requests in flight.
    Serve {
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        #[arg(long, default_value_t = 8000)]
        port: u16,
        /// A spec to serve: `NAME=PATH`, or `PATH` (named after the file's stem). Repeatable.
        /// `/get_reward` scores with the one named `default` (or the only one).
        #[arg(long = "spec", value_name = "[NAME=]PATH")]
        specs: Vec<String>,
        /// Serve every `*.yaml`, `*.yml` and `*.json` spec in this directory, by file stem.
        #[arg(long, value_name = "DIR")]
        spec_dir: Option<PathBuf>,
        /// Most samples per request.
        #[arg(long, default_value_t = 65_536)]
        max_batch: usize,
        /// Most request body bytes.
        #[arg(long, default_value_t = 64 << 20)]
        max_body_bytes: usize,
        /// Scoring requests running at once (default: the number of CPUs).
        #[arg(long)]
        max_in_flight: Option<usize>,
        /// Scoring requests waiting beyond those; more get 429 with Retry-After.
        #[arg(long, default_value_t = 256)]
        max_queued: usize,
        /// Per-request deadline in seconds (504 when exceeded).
        #[arg(long, default_value_t = 600.0)]
        timeout_s: f64,
        /// The policy's `tokenizer.json`, to give step rewards token spans (as `score`).
        #[arg(long, value_name = "PATH")]
        tokenizer: Option<PathBuf>,
        #[command(flatten)]
        judge: JudgeArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::from(EXIT_OK);
            }
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_IO)
        }
    }
}

/// A closed pipe (`referee score ... | head`) is success, not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// How a command reaches judges: `Call` connects to the endpoints (with the cache file next to
/// `output`); `Check` only validates, with a judge that is never called.
enum JudgeUse<'a> {
    Call { output: Option<&'a std::path::Path> },
    Check,
}

/// Answers nothing: `referee check` compiles judge specs without touching their endpoints.
struct Unreachable(Vec<String>);

impl referee_core::judge::Judge for Unreachable {
    fn call(
        &self,
        _endpoint: &str,
        _call: referee_core::judge::JudgeCall,
        _deadline: Option<std::time::Instant>,
    ) -> futures::future::BoxFuture<
        'static,
        Result<referee_core::judge::JudgeReply, referee_core::judge::JudgeFailure>,
    > {
        Box::pin(async {
            Err(referee_core::judge::JudgeFailure {
                reason: "judge_config".into(),
                message: "judges are not called by `referee check`".into(),
            })
        })
    }
    fn endpoints(&self) -> Vec<String> {
        self.0.clone()
    }
}

struct CheckConnect;

impl referee_core::judge::JudgeConnect for CheckConnect {
    fn connect(
        &self,
        endpoints: &std::collections::BTreeMap<String, referee_core::judge::EndpointConfig>,
        _cache: &referee_core::judge::CacheConfig,
    ) -> Result<std::sync::Arc<dyn referee_core::judge::Judge>, String> {
        Ok(std::sync::Arc::new(Unreachable(
            endpoints.keys().cloned().collect(),
        )))
    }
}

/// The executors graders get: a sandbox that starts on first use, so specs that never run code
/// never start one; judge endpoints from the spec's `judges:` (and `--judge`), connected when
/// the spec is compiled, with their cache.
fn env(judge: &JudgeArgs, using: &JudgeUse) -> referee_core::exec::Env {
    let connect: std::sync::Arc<dyn referee_core::judge::JudgeConnect> = match using {
        JudgeUse::Check => std::sync::Arc::new(CheckConnect),
        JudgeUse::Call { output } => {
            let dir = output
                .and_then(std::path::Path::parent)
                .filter(|d| !d.as_os_str().is_empty())
                .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf);
            std::sync::Arc::new(referee_judge::Connector {
                default_cache_path: Some(dir.join(".referee-judge-cache.redb")),
            })
        }
    };
    judge.options().env(
        Some(std::sync::Arc::new(referee_sandbox::Lazy::new(
            referee_sandbox::Config::default(),
        ))),
        connect,
    )
}

/// Compiles a spec file, printing every error to stderr. `None` means exit 1.
fn load_spec(path: &PathBuf, judge: &JudgeArgs, using: &JudgeUse) -> Result<Option<Program>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read spec {}", path.display()))?;
    match Program::compile_str_with(&text, env(judge, using)) {
        Ok(p) => Ok(Some(p)),
        Err(errs) => {
            eprint!("{}: {errs}", path.display());
            Ok(None)
        }
    }
}

/// Loads `--tokenizer` once for the whole run.
fn load_tokenizer(
    path: Option<&std::path::Path>,
) -> Result<Option<std::sync::Arc<referee_core::steps::tokens::Tokenizer>>> {
    path.map(|p| {
        referee_core::steps::tokens::Tokenizer::from_file(p)
            .map(std::sync::Arc::new)
            .map_err(anyhow::Error::msg)
    })
    .transpose()
}

fn run(cli: Cli) -> Result<u8> {
    match cli.cmd {
        Cmd::Score {
            spec,
            input,
            output,
            explain,
            mapping,
            judge,
            threads,
            max_samples_in_flight,
            tokenizer,
            summary_json,
            quiet,
            strict,
        } => {
            let using = JudgeUse::Call {
                output: output.as_deref(),
            };
            let Some(program) = load_spec(&spec, &judge, &using)? else {
                return Ok(EXIT_SPEC);
            };
            if let Some(n) = threads {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build_global()
                    .ok();
            }
            let opts = score::Options {
                score: referee_core::Options {
                    explain,
                    max_in_flight: max_samples_in_flight,
                    tokenizer: load_tokenizer(tokenizer.as_deref())?,
                },
                mapping: mapping.mapping().for_program(&program),
                summary_json,
                quiet,
            };
            let summary = score::run(&program, input.as_deref(), output.as_deref(), &opts)?;
            Ok(if strict && summary.errors > 0 {
                EXIT_ROW_ERRORS
            } else {
                EXIT_OK
            })
        }
        Cmd::Check { spec, judge } => {
            let Some(program) = load_spec(&spec, &judge, &JudgeUse::Check)? else {
                return Ok(EXIT_SPEC);
            };
            let names = program.component_names();
            println!(
                "{}: ok{}",
                spec.display(),
                if names.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (components: {})",
                        names.iter().map(|n| &**n).collect::<Vec<_>>().join(", ")
                    )
                }
            );
            Ok(EXIT_OK)
        }
        Cmd::Explain {
            spec,
            sample,
            mapping,
            judge,
        } => {
            let Some(program) = load_spec(&spec, &judge, &JudgeUse::Call { output: None })? else {
                return Ok(EXIT_SPEC);
            };
            let text = if sample == "-" {
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s)?;
                s
            } else if sample.trim_start().starts_with('{') {
                sample
            } else {
                std::fs::read_to_string(&sample)
                    .with_context(|| format!("cannot read sample {sample}"))?
            };
            let rows = referee_core::Rows::Lines {
                first_line: 1,
                lines: vec![text.trim().as_bytes()],
            };
            let opts = referee_core::Options {
                explain: true,
                ..referee_core::Options::default()
            };
            let mut scored = referee_core::score(&program, rows, &mapping.mapping(), &opts);
            let r = scored.rows.remove(0);
            println!(
                "{}",
                serde_json::to_string_pretty(&r.result.with_id(r.id.as_ref(), None))?
            );
            Ok(EXIT_OK)
        }
        Cmd::List { reasons: true, .. } => Ok(list_reasons()),
        Cmd::List { type_name, .. } => Ok(list(type_name.as_deref())),
        Cmd::Eval(args) => eval::run(args),
        Cmd::Compare(args) => compare::run(&args),
        Cmd::Serve {
            host,
            port,
            specs,
            spec_dir,
            max_batch,
            max_body_bytes,
            max_in_flight,
            max_queued,
            timeout_s,
            tokenizer,
            judge,
        } => {
            let config = referee_server::Config {
                tokenizer: load_tokenizer(tokenizer.as_deref())?,
                max_body_bytes,
                max_batch,
                max_in_flight: max_in_flight.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
                }),
                max_queued,
                request_timeout: std::time::Duration::from_secs_f64(timeout_s.max(0.001)),
            };
            serve(&host, port, &specs, spec_dir.as_deref(), config, judge)
        }
        Cmd::Report {
            results,
            output,
            data,
            mapping,
        } => {
            let input = report::load(&results)?;
            let groups = data
                .as_deref()
                .map(|d| report::groups_from_input(d, &mapping.mapping()))
                .transpose()?;
            let html = report::render(&input, &results.display().to_string(), groups.as_deref());
            std::fs::write(&output, html)
                .with_context(|| format!("cannot write {}", output.display()))?;
            eprintln!("wrote {}", output.display());
            Ok(EXIT_OK)
        }
        Cmd::Fuzz(args) => fuzz::run(&args),
        Cmd::Schema => {
            println!(
                "{}",
                serde_json::to_string_pretty(&referee_core::schema::spec_schema())?
            );
            Ok(EXIT_OK)
        }
    }
}

/// `referee serve`: registers the specs, binds, and runs the server crate's app until a
/// signal; a spec that does not compile stops start-up with its errors.
fn serve(
    host: &str,
    port: u16,
    specs: &[String],
    spec_dir: Option<&std::path::Path>,
    config: referee_server::Config,
    judge: JudgeArgs,
) -> Result<u8> {
    // One sandbox for every program the server compiles: their runs share its slots.
    let sandbox = env(&judge, &JudgeUse::Call { output: None }).sandbox;
    let state = referee_server::AppState::new(
        config,
        std::sync::Arc::new(move || referee_core::exec::Env {
            sandbox: sandbox.clone(),
            ..env(&judge, &JudgeUse::Call { output: None })
        }),
    );
    let mut todo: Vec<(String, PathBuf)> = Vec::new();
    for s in specs {
        let (name, path) = if let Some((n, p)) = s.split_once('=') {
            (n.to_string(), PathBuf::from(p))
        } else {
            let p = PathBuf::from(s);
            let stem = p
                .file_stem()
                .map_or_else(String::new, |x| x.to_string_lossy().into_owned());
            (stem, p)
        };
        todo.push((name, path));
    }
    if let Some(dir) = spec_dir {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
            })
            .collect();
        entries.sort();
        for p in entries {
            let stem = p
                .file_stem()
                .map_or_else(String::new, |x| x.to_string_lossy().into_owned());
            todo.push((stem, p));
        }
    }
    for (name, path) in &todo {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read spec {}", path.display()))?;
        if let Err(errs) = state.register(name, &text) {
            eprint!("{}: {errs}", path.display());
            return Ok(EXIT_SPEC);
        }
    }
    // Structured logs: one JSON line per event on stderr; `RUST_LOG` sets the level (default
    // info: one line per request).
    let _ = tracing_subscriber::fmt()
        .json()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind((host, port))
            .await
            .with_context(|| format!("cannot bind {host}:{port}"))?;
        let addr = listener.local_addr()?;
        // One machine-readable line, so scripts and tests can find a port chosen with --port 0.
        println!(
            "{}",
            serde_json::json!({"listening": format!("http://{addr}"), "programs": state.program_names()})
        );
        axum::serve(listener, referee_server::app(state))
            .with_graceful_shutdown(async {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .expect("SIGTERM handler");
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            })
            .await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(EXIT_OK)
}

/// `referee list --reasons`: every reason code, grouped, one line each.
fn list_reasons() -> u8 {
    use referee_core::reason::{GROUPS, REASONS};
    let width = REASONS.iter().map(|r| r.code.len()).max().unwrap_or(0);
    for (group, about) in GROUPS {
        println!("{group}: {about}");
        for r in REASONS.iter().filter(|r| r.group == *group) {
            println!("  {:<width$} {}", r.code, r.doc);
        }
    }
    println!("\nA failed sample has `status: error` and one of these as its `reason`.");
    EXIT_OK
}

/// `referee list [TYPE]`: the component docs, grouped, or one type's full documentation.
fn list(type_name: Option<&str>) -> u8 {
    let Some(t) = type_name else {
        for group in ["openai", "rule", "exec", "judge", "combinator"] {
            println!("{group}:");
            for c in COMPONENTS.iter().filter(|c| c.group == group) {
                println!("  {:<16} {}", c.type_name, c.summary());
            }
        }
        println!("\n`referee list TYPE` prints a type's full documentation.");
        return EXIT_OK;
    };
    if let Some(c) = referee_core::registry::find(t) {
        println!("{}", c.doc());
        return EXIT_OK;
    }
    let names: Vec<&str> = COMPONENTS.iter().map(|c| c.type_name).collect();
    eprintln!(
        "unknown type `{t}`{}; known: {}",
        referee_core::compile::did_you_mean(t, &names),
        names.join(", ")
    );
    EXIT_SPEC
}
