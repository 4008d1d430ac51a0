//! `referee eval`: how good a reward spec is on benchmark data, in four formats.
//!
//! - **RewardBench v1** (`rewardbench`): rows `{prompt, chosen, rejected, subset, id?}`. Both
//!   responses are scored as samples; a row is right iff `reward(chosen) > reward(rejected)`,
//!   strictly (a tie is wrong). Accuracy per subset, per section (Chat, Chat Hard, Safety,
//!   Reasoning, Prior Sets) weighted by RewardBench's `EXAMPLE_COUNTS`, and overall: `accuracy`
//!   over every row, and `score`, the leaderboard number (sections weighted 2,2,2,2 and 1 for
//!   Prior Sets, over the sections present).
//! - **RewardBench 2** (`rewardbench2`): rows `{prompt, chosen: [..], rejected: [..], subset,
//!   num_correct?, id}`. Each completion is scored; outside the Ties subset a row gets `1/k` when
//!   the first chosen completion is at the maximum and `k` completions share it, else 0. The Ties
//!   subset (ids `ref:<n>` / `tied:<n>`, the first `num_correct` completions correct) gets its
//!   own formula: `0.30 tied_accuracy + 0.30 ref_accuracy + 0.20 correctness_preferred + 0.20
//!   correctness_preferred_hard + 0.01 correctness_margin_score`. `score` is the mean of the
//!   subsets' scores (the leaderboard's mean of six); `accuracy` pools the non-Ties rows. As
//!   upstream, only the first chosen completion is compared outside Ties (RewardBench 2 has one).
//! - **Scored data** (`scores`, with `--gold FIELD`): any row Referee can score, with a human or
//!   gold score; Pearson, Spearman and Kendall tau-b between reward and gold, each with a seeded
//!   percentile bootstrap interval, overall and per subset.
//! - **Best-of-N** (`best-of-n`, with `--correct FIELD`): rows with N `responses` and which are
//!   correct; selection accuracy is whether the top-scored response is correct, ties counted as
//!   the expected value of picking one of the tied uniformly.
//!
//! The RewardBench rules reproduce `allenai/reward-bench` after its RewardBench 2 release (2025):
//! `rewardbench/utils.py` at commit `a0096928` (`calculate_scores_per_section`,
//! `reroll_and_score_dataset`, `_compute_prompt_stats` and `process_single_model`: the Ties
//! version with a NumPy division in the margin term, so a zero spread among correct answers
//! gives a term of ±1), `rewardbench/constants.py` at `a32e272b` (`EXAMPLE_COUNTS`,
//! `SUBSET_MAPPING`), `rewardbench/rewardbench.py` (the strict `chosen > rejected`) and
//! `analysis/get_benchmark_results.py` (`get_average_over_rewardbench`: the 2,2,2,2,1 weighting
//! and the Prior Sets mean of `anthropic_helpful`, `anthropic_hhh`, `shp`, `summarize`). An
//! earlier RewardBench 2 `utils.py` (`sample_stats`) averaged the margin term only over prompts
//! with a positive spread; that is not what this reproduces. Where we differ from `a0096928`, it
//! is to count what it could not represent:
//! - A row with a response the spec could not score is an **error**: counted in `errors` (and
//!   `errors_by_reason`) and left out of the accuracy, never scored as a loss or as a 0. Upstream
//!   reward models always return a number, so it has no such rows; without errors the numbers
//!   are the same.
//! - A section with no subset present is left out (upstream's `calculate_scores_per_section`
//!   reports it as 0; its leaderboard masks it as NaN, as we do).
//! - In the Ties formula, a mean over no prompt (no prompt with both a `ref` and a `tied` row) is
//!   0 here; NumPy gives NaN there. A prompt without correct or without incorrect completions
//!   (upstream raises on it) is not accurate and is left out of the margin terms, as is a tied
//!   prompt with a single correct completion (upstream compares with `None` there).
//! - Each completion is scored on its own, as RewardBench scores each independently: a spec
//!   whose rewards depend on the group (difficulty weights) sees every completion alone.
//!
//! One file per format (`rewardbench`, `rewardbench2` with its `ties` formula, `scores`,
//! `best_of_n`), each with how its rows become samples, how a scored row is tallied and how
//! the tallies become the report; `format` tells the format, `plan` turns rows into samples and
//! `tally` holds the per-subset counts. `evaluate` runs them.

mod best_of_n;
mod format;
mod plan;
mod rewardbench;
mod rewardbench2;
mod scores;
mod steps;
mod tally;
mod ties;

pub use format::EvalFormat;
pub use rewardbench::{sections_v1, EXAMPLE_COUNTS, PRIOR_SECTION, PRIOR_SETS, SECTIONS};
pub use rewardbench2::best_of_first;
pub use ties::{ties_score_rows, TiesScore, TIES};

use super::stats::{Bootstrap, Estimate};
use super::{row_subset, usable_reward, Reasons, Row, Unscored};
use crate::input::{InputMapping, RowError};
use crate::Program;
use format::detect;
use plan::{plan_row, Plan, PlanKind};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use tally::{tally, Tally};

/// The subset a row without a subset field is counted in.
pub const NO_SUBSET: &str = "(none)";

/// What `evaluate` needs besides the program and the rows.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub format: EvalFormat,
    /// The gold score's field (dotted path, at the top level or under `item`): the `scores`
    /// format.
    pub gold: Option<String>,
    /// Which responses are correct (a list of booleans, an index, or a list of indices): the
    /// `best-of-n` format.
    pub correct: Option<String>,
    /// Where the N responses are, for `best-of-n`.
    pub responses: String,
    /// The subset's field.
    pub subset: String,
    /// How `scores` rows become samples.
    pub mapping: InputMapping,
    pub bootstrap: Bootstrap,
    /// Scored data whose gold scores are all 0 or 1 (labelled trajectories: solved or not,
    /// hacked or not): a reward at or above this is a predicted 1.
    pub threshold: f64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            format: EvalFormat::Auto,
            gold: None,
            correct: None,
            responses: "responses".into(),
            subset: "subset".into(),
            mapping: InputMapping::default(),
            bootstrap: Bootstrap::default(),
            threshold: 0.5,
        }
    }
}

/// Why an evaluation could not run at all (as opposed to rows that failed, which are counted).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    #[error("{0}")]
    Format(String),
}

/// The three correlations, each with its bootstrap interval.
#[derive(Debug, Clone, Serialize)]
pub struct Correlation {
    pub pearson: Estimate,
    pub spearman: Estimate,
    pub kendall_tau_b: Estimate,
}

/// The `referee eval` report (its JSON is the CLI's `-o` output).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub kind: &'static str,
    pub format: &'static str,
    pub spec: Option<String>,
    pub rows: usize,
    pub errors: usize,
    #[serde(skip_serializing_if = "Reasons::is_empty")]
    pub errors_by_reason: Reasons,
    pub overall: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<Map<String, Value>>>,
    pub subsets: Vec<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
}

/// Scores every row's responses in one batch (so judges and sandboxes run concurrently) and
/// computes the format's metrics.
pub fn evaluate(
    program: &Program,
    rows: &[Row],
    opts: &EvalOptions,
) -> Result<EvalReport, EvalError> {
    let format = detect(rows, opts)?;
    let mut samples = Vec::new();
    let plans: Vec<Result<Plan, RowError>> = rows
        .iter()
        .map(|r| plan_row(r, format, opts, &mut samples))
        .collect();
    // Step-labelled rows read each step's score from the trace.
    let (results, _) = crate::score::samples(program, &samples, format == EvalFormat::Steps);
    let mut reasons = Reasons::default();
    let mut errors = 0;
    let mut subsets: BTreeMap<String, Tally> = BTreeMap::new();
    let mut any_subset = false;
    let mut all = Tally::default();
    for (row, plan) in rows.iter().zip(&plans) {
        let subset_name = match plan {
            Ok(p) => p.subset.clone(),
            Err(_) => row
                .value
                .as_ref()
                .ok()
                .and_then(|v| row_subset(v, &opts.subset)),
        };
        any_subset |= subset_name.is_some();
        let t = subsets
            .entry(subset_name.unwrap_or_else(|| NO_SUBSET.to_string()))
            .or_default();
        t.n += 1;
        all.n += 1;
        let rewards: Result<Vec<f64>, Unscored> = match plan {
            Err(e) => Err(Unscored {
                reason: e.reason.to_string(),
                message: e.message.clone(),
            }),
            Ok(p) => results[p.range.clone()].iter().map(usable_reward).collect(),
        };
        let step_scores = match (plan, &rewards) {
            (Ok(Plan { kind: PlanKind::Steps(labels), range, .. }), Ok(_)) => {
                match steps::step_scores(results[range.start].trace.as_ref()) {
                    None => Err(Unscored {
                        reason: "no_step_component".into(),
                        message: "the spec has no step component (each_step, prm, step_judge) to read step scores from".into(),
                    }),
                    Some(s) if s.len() != labels.n => Err(Unscored {
                        reason: "step_count_mismatch".into(),
                        message: format!("the spec cut {} steps where the row has {}", s.len(), labels.n),
                    }),
                    Some(s) => Ok(Some(s)),
                }
            }
            _ => Ok(None),
        };
        let (rewards, step_scores) = match step_scores {
            Err(u) => (Err(u), None),
            Ok(s) => (rewards, s),
        };
        let (Ok(plan), Ok(rw)) = (plan, rewards.as_ref()) else {
            let reason = rewards.err().map_or_else(String::new, |u| u.reason);
            reasons.add(&reason);
            errors += 1;
            t.errors += 1;
            all.errors += 1;
            continue;
        };
        for t in [&mut *t, &mut all] {
            t.scored += 1;
            tally(t, &plan.kind, rw);
            if let (PlanKind::Steps(labels), Some(s)) = (&plan.kind, &step_scores) {
                steps::tally(t, labels, s, opts.threshold);
            }
        }
    }
    let boot = &opts.bootstrap;
    let mut report = EvalReport {
        kind: "eval",
        format: format.as_str(),
        spec: None,
        rows: rows.len(),
        errors,
        errors_by_reason: reasons,
        overall: Map::new(),
        sections: None,
        subsets: Vec::new(),
        correlation: None,
    };
    let subset_rows: Vec<(String, Tally)> = if any_subset {
        subsets.into_iter().collect()
    } else {
        Vec::new()
    };
    match format {
        EvalFormat::RewardBench | EvalFormat::Auto => {
            rewardbench::report(&mut report, &subset_rows, &all);
        }
        EvalFormat::RewardBench2 => {
            rewardbench2::report(&mut report, &subset_rows, &all, any_subset);
        }
        EvalFormat::Scores => {
            scores::report(&mut report, &subset_rows, &all, boot, opts.threshold);
        }
        EvalFormat::BestOfN => best_of_n::report(&mut report, &subset_rows, &all),
        EvalFormat::Steps => steps::report(&mut report, &subset_rows, &all),
    }
    Ok(report)
}

/// What the tests of every format share.
#[cfg(test)]
mod test_support {
    use super::Row;
    use crate::Program;

    pub(super) fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-12, "{a} != {b}");
    }

    pub(super) fn program(spec: &str) -> Program {
        Program::compile_str(spec).unwrap()
    }

    pub(super) fn rows(jsonl: &str) -> Vec<Row> {
        crate::audit::read_rows(jsonl)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{close, program, rows};
    use super::{evaluate, EvalOptions};

    #[test]
    fn best_of_n_and_scores_through_evaluate() {
        let p = program("{type: string_check, name: good, operation: like, input: '{{sample.output_text}}', reference: 'good'}");
        let data = rows(concat!(
            r#"{"prompt": "q", "responses": ["good", "bad"], "ok": [true, false]}"#,
            "\n",
            r#"{"prompt": "q", "responses": ["good", "good!"], "ok": 1}"#,
            "\n",
            r#"{"prompt": "q", "responses": ["good"], "ok": [true, true]}"#,
            "\n",
            r#"{"prompt": "q", "responses": ["good"], "ok": 3}"#,
            "\n",
        ));
        let opts = EvalOptions {
            correct: Some("ok".into()),
            ..EvalOptions::default()
        };
        let r = evaluate(&p, &data, &opts).unwrap();
        assert_eq!(r.format, "best-of-n");
        assert_eq!(r.errors_by_reason.0["invalid_correct"], 2);
        // Row 1: 1; row 2: both tie, one correct: 1/2.
        close(r.overall["accuracy"].as_f64().unwrap(), 0.75);
        close(r.overall["random"].as_f64().unwrap(), 0.5);

        let data = rows(concat!(
            r#"{"completion": "good", "gold": 2}"#,
            "\n",
            r#"{"completion": "bad", "gold": "1"}"#,
            "\n",
            r#"{"completion": "good", "gold": true}"#,
            "\n",
            r#"{"completion": "bad", "gold": "n/a"}"#,
            "\n",
        ));
        let opts = EvalOptions {
            gold: Some("gold".into()),
            ..EvalOptions::default()
        };
        let r = evaluate(&p, &data, &opts).unwrap();
        assert_eq!(r.format, "scores");
        assert_eq!(r.errors_by_reason.0["invalid_gold"], 1);
        // Rewards 1, 0, 1 against gold 2, 1, 1: Pearson sxy 1/3, sxx 2/3, syy 2/3 -> 0.5.
        let c = r.correlation.unwrap();
        close(c.pearson.value.unwrap(), 0.5);
        // Three pairs are enough for an interval.
        assert!(c.pearson.ci.is_some());
        assert!(r.subsets.is_empty());
    }
}
