//! `referee compare`: reads the data, calls `referee_core::audit::compare`, writes the JSON
//! report and prints the confusion matrix and the disagreeing samples.

use crate::eval::{emit, read_data, table};
use crate::{
    load_spec, JudgeArgs, JudgeUse, MappingArgs, EXIT_OK, EXIT_ROW_ERRORS, EXIT_SPEC, EXIT_USAGE,
};
use anyhow::Result;
use referee_core::audit::compare::{compare, CompareOptions, CompareReport, Reference};
use referee_core::audit::params::CompareParams;
use std::fmt::Write as _;
use std::path::PathBuf;

/// How many disagreements the table lists (the JSON lists them all).
const LISTED: usize = 20;

/// Compare a spec with another spec or a label column: confusion matrix, false-positive,
/// false-negative and disagreement rates (the second spec or the label as the reference), and
/// the samples they disagree on.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The spec under test (a).
    spec_a: PathBuf,
    /// `SPEC_B DATA`, or `DATA` with `--label`.
    #[arg(num_args = 1..=2, required = true, value_name = "SPEC_B|DATA")]
    rest: Vec<PathBuf>,
    /// Compare with this label field (truthy = pass) instead of a second spec.
    #[arg(long, value_name = "FIELD")]
    label: Option<String>,
    /// Also tabulate per value of this field (e.g. VerifyBench's `answer_type`).
    #[arg(long, value_name = "FIELD")]
    subset_field: Option<String>,
    /// A reward at or above this passes.
    #[arg(long, default_value_t = 0.5)]
    threshold: f64,
    /// Write the JSON report here (the table then goes to stdout); default: JSON on stdout,
    /// the table on stderr.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print no table.
    #[arg(short, long)]
    quiet: bool,
    /// Exit with code 4 when any sample is an error on either side.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    mapping: MappingArgs,
    #[command(flatten)]
    judge: JudgeArgs,
}

pub fn run(args: &CompareArgs) -> Result<u8> {
    let (spec_b, data) = match (&args.label, args.rest.as_slice()) {
        (None, [b, d]) => (Some(b.clone()), d.clone()),
        (Some(_), [d]) => (None, d.clone()),
        (None, _) => {
            eprintln!("error: compare needs SPEC_A SPEC_B DATA, or SPEC_A DATA --label FIELD");
            return Ok(EXIT_USAGE);
        }
        (Some(_), _) => {
            eprintln!("error: with --label, compare takes SPEC_A DATA (no second spec)");
            return Ok(EXIT_USAGE);
        }
    };
    // The options as every shell builds them (defaults and checks in the core); the row
    // mapping comes from the flags clap already parsed.
    let params = CompareParams {
        label: args.label.clone(),
        subset_field: args.subset_field.clone(),
        threshold: args.threshold,
        ..CompareParams::default()
    };
    let opts = match params.options(spec_b.is_some()) {
        Ok(o) => CompareOptions {
            mapping: args.mapping.mapping(),
            ..o
        },
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(EXIT_USAGE);
        }
    };
    let using = JudgeUse::Call {
        output: args.output.as_deref(),
    };
    let Some(a) = load_spec(&args.spec_a, &args.judge, &using)? else {
        return Ok(EXIT_SPEC);
    };
    let b_program = match &spec_b {
        Some(p) => match load_spec(p, &args.judge, &using)? {
            Some(b) => Some(b),
            None => return Ok(EXIT_SPEC),
        },
        None => None,
    };
    let (reference, b_name) = match (&b_program, &args.label) {
        (Some(b), _) => (
            Reference::Spec(b),
            spec_b.as_ref().expect("spec b").display().to_string(),
        ),
        (None, Some(f)) => (Reference::Label(f.clone()), format!("label:{f}")),
        (None, None) => unreachable!("checked above"),
    };
    let rows = read_data(&data)?;
    let report = compare(
        &a,
        &reference,
        &rows,
        &opts,
        &args.spec_a.display().to_string(),
        &b_name,
    );
    emit(
        &report,
        &render(&report),
        args.output.as_deref(),
        args.quiet,
    )?;
    Ok(if args.strict && report.errors.total > 0 {
        EXIT_ROW_ERRORS
    } else {
        EXIT_OK
    })
}

fn rate(v: &serde_json::Value) -> String {
    v.as_f64()
        .map_or_else(|| "n/a".into(), |x| format!("{x:.4}"))
}

fn render(r: &CompareReport) -> String {
    let mut o = String::new();
    let e = &r.errors;
    let _ = writeln!(
        o,
        "compare {} (a) with {} (b) at threshold {}: {} rows, {} errors (a only {}, b only {}, both {})",
        r.a, r.b, r.threshold, r.rows, e.total, e.a_only, e.b_only, e.both
    );
    if !e.by_reason.is_empty() {
        let v: Vec<String> = e
            .by_reason
            .0
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(o, "  errors by reason: {}", v.join(", "));
    }
    let m = &r.matrix;
    o.push_str(&table(
        &[String::new(), "b pass".into(), "b fail".into()],
        &[
            vec!["a pass".into(), m.tp.to_string(), m.fp.to_string()],
            vec!["a fail".into(), m.fn_.to_string(), m.tn.to_string()],
        ],
    ));
    let _ = writeln!(
        o,
        "  false positive rate {}, false negative rate {}, disagreement {}",
        rate(&r.rates.false_positive),
        rate(&r.rates.false_negative),
        rate(&r.rates.disagreement)
    );
    if let Some(subs) = &r.subsets {
        let rows: Vec<Vec<String>> = subs
            .iter()
            .map(|s| {
                vec![
                    s.subset.clone(),
                    s.n.to_string(),
                    s.errors.to_string(),
                    s.matrix.tp.to_string(),
                    s.matrix.fp.to_string(),
                    s.matrix.fn_.to_string(),
                    s.matrix.tn.to_string(),
                    rate(&s.rates.false_positive),
                    rate(&s.rates.false_negative),
                    rate(&s.rates.disagreement),
                ]
            })
            .collect();
        o.push_str(&table(
            &[
                "subset", "n", "errors", "tp", "fp", "fn", "tn", "fp rate", "fn rate", "disagree",
            ]
            .map(String::from),
            &rows,
        ));
    }
    if !r.disagreements.is_empty() {
        let _ = writeln!(o, "disagreements ({}):", r.disagreements.len());
        let rows: Vec<Vec<String>> = r
            .disagreements
            .iter()
            .take(LISTED)
            .map(|d| {
                vec![
                    d.id.as_ref()
                        .map_or_else(|| "-".into(), referee_core::template::value_text),
                    d.line.to_string(),
                    format!("{:.4}", d.a),
                    match &d.b {
                        serde_json::Value::Number(n) => {
                            format!("{:.4}", n.as_f64().unwrap_or(f64::NAN))
                        }
                        other => referee_core::template::value_text(other),
                    },
                    d.output.replace('\n', " ").chars().take(60).collect(),
                ]
            })
            .collect();
        o.push_str(&table(
            &["id", "line", "a", "b", "output"].map(String::from),
            &rows,
        ));
        if r.disagreements.len() > LISTED {
            let _ = writeln!(
                o,
                "  ... {} more in the JSON report",
                r.disagreements.len() - LISTED
            );
        }
    }
    o
}
