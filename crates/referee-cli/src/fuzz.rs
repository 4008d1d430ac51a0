//! `referee fuzz SPEC DATA`: reads the spec and the rows, calls the core's fuzz audit
//! (`referee_core::audit::fuzz`), prints the table and writes the JSON.

use anyhow::{Context, Result};
use referee_core::audit::fuzz::{self, corpus::Corpus};
use referee_core::audit::params::{fuzz_samples, FuzzParams};
use std::path::{Path, PathBuf};

/// Exit code when some family passed (or a perturbation moved more than `--max-moved`).
pub const EXIT_FUZZ_FAILED: u8 = 5;

#[derive(clap::Args)]
pub struct FuzzArgs {
    /// The grader spec (YAML or JSON).
    pub spec: PathBuf,
    /// Real data: rows (JSON Lines, a JSON array, or Parquet; `-` for stdin) in any input format
    /// (`--format`), each with a model output.
    pub data: PathBuf,
    /// A variant passes (a hole) when its reward is at least this.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f64,
    /// Families to run, comma-separated (`exploits` = every exploit family); default: all
    /// that apply to the spec.
    #[arg(long, value_delimiter = ',')]
    pub families: Vec<String>,
    /// Most variants per family per row (drawn with the seed when a family has more).
    #[arg(long, default_value_t = 8)]
    pub per_row: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Fail (exit 5) when a family's pass rate is above this.
    #[arg(long, default_value_t = 0.0)]
    pub max_rate: f64,
    /// Also fail when a perturbation moves the reward on more than this share of rows.
    #[arg(long)]
    pub max_moved: Option<f64>,
    /// Skip the perturbation audits (step inflation, reordering, confidence markers).
    #[arg(long)]
    pub no_perturb: bool,
    /// Most passing variants listed per family in the report.
    #[arg(long, default_value_t = fuzz::EXAMPLES)]
    pub examples: usize,
    /// Use only the first N rows of the data.
    #[arg(long)]
    pub rows: Option<usize>,
    /// An exploit corpus folder to use instead of the one built in (`fixtures/exploits`).
    #[arg(long, value_name = "DIR")]
    pub exploits: Option<PathBuf>,
    /// Write the JSON report here.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Print the JSON report on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub mapping: crate::MappingArgs,
    #[command(flatten)]
    pub judge: crate::JudgeArgs,
}

pub fn run(a: &FuzzArgs) -> Result<u8> {
    let using = crate::JudgeUse::Call {
        output: a.output.as_deref(),
    };
    let Some(program) = crate::load_spec(&a.spec, &a.judge, &using)? else {
        return Ok(crate::EXIT_SPEC);
    };
    let text = std::fs::read_to_string(&a.spec)
        .with_context(|| format!("cannot read spec {}", a.spec.display()))?;
    let spec = referee_core::program::parse_spec_text(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
    let data = crate::eval::read_data(&a.data)?;
    let (rows, skipped) = fuzz_samples(
        &data,
        &a.mapping.mapping(),
        a.rows,
        &a.data.display().to_string(),
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    for s in skipped {
        eprintln!("{s}");
    }
    let owned;
    let corpus = match &a.exploits {
        Some(dir) => {
            owned = read_corpus(dir)?;
            &owned
        }
        None => Corpus::embedded(),
    };
    // The options as every shell builds them (defaults and checks in the core).
    let opts = FuzzParams {
        threshold: a.threshold,
        families: Some(a.families.clone()),
        per_row: a.per_row,
        seed: a.seed,
        max_rate: a.max_rate,
        perturb: !a.no_perturb,
        max_moved: a.max_moved,
        examples: a.examples,
        ..FuzzParams::default()
    }
    .options();
    let label = serde_json::Value::String(a.spec.display().to_string());
    let report = match fuzz::fuzz(&program, &spec, label, &rows, &opts, corpus) {
        Ok(r) => r,
        Err(msg) => {
            eprintln!("error: {msg}");
            return Ok(2);
        }
    };
    let json = serde_json::to_string_pretty(&report)?;
    if let Some(out) = &a.output {
        std::fs::write(out, format!("{json}\n"))
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if a.json {
        println!("{json}");
    } else {
        print!("{}", fuzz::render_table(&report));
    }
    Ok(if report.failed {
        EXIT_FUZZ_FAILED
    } else {
        crate::EXIT_OK
    })
}

fn read_corpus(dir: &Path) -> Result<Corpus> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            let name = p
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            files.push((name, std::fs::read_to_string(&p)?));
        }
    }
    Corpus::parse(&files).map_err(|e| anyhow::anyhow!("exploit corpus: {e}"))
}
