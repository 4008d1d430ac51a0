//! Per-subset tallies: what each scored row adds, and the columns every report row starts with.

use super::plan::PlanKind;
use super::ties::TieKind;
use super::{best_of_n, rewardbench, rewardbench2, scores};
use crate::audit::obj;
use serde_json::{json, Map, Value};

/// Per-subset tallies: rows, errors, and the metric's numerator(s).
#[derive(Default)]
pub(super) struct Tally {
    pub(super) n: usize,
    pub(super) errors: usize,
    pub(super) scored: usize,
    /// Credit summed over scored rows (accuracy numerator).
    pub(super) credit: f64,
    /// Rows whose comparison tied at the top (v1: chosen == rejected; v2/best-of-N: k > 1).
    pub(super) ties: usize,
    /// best-of-N: rows with some correct response; the summed fraction of correct responses.
    pub(super) oracle: f64,
    pub(super) random: f64,
    /// scores: (reward, gold) pairs.
    pub(super) rewards: Vec<f64>,
    pub(super) golds: Vec<f64>,
    /// RewardBench 2 Ties rows: (kind, prompt id, scores, num_correct).
    pub(super) tie_rows: Vec<(TieKind, String, Vec<f64>, usize)>,
    /// steps: rows with and without a labelled error (their accuracies are `credit` and
    /// `oracle` over these), and the per-step confusion counts for finding wrong steps.
    pub(super) step_err_rows: usize,
    pub(super) step_ok_rows: usize,
    pub(super) step_tp: usize,
    pub(super) step_fp: usize,
    pub(super) step_fn: usize,
}

/// `n`, `scored` and `errors`: the head of every report row.
pub(super) fn head(t: &Tally) -> Map<String, Value> {
    obj([
        ("n", json!(t.n)),
        ("scored", json!(t.scored)),
        ("errors", json!(t.errors)),
    ])
}

/// A subset's report row: its name, then the head.
pub(super) fn named(name: &str, t: &Tally) -> Map<String, Value> {
    let mut m = obj([("subset", json!(name))]);
    m.extend(head(t));
    m
}

/// Adds one scored row to a tally.
pub(super) fn tally(t: &mut Tally, kind: &PlanKind, rw: &[f64]) {
    match kind {
        PlanKind::Pair => rewardbench::tally(t, rw),
        PlanKind::Bo4 { num_correct, ties } => {
            rewardbench2::tally(t, *num_correct, ties.as_ref(), rw);
        }
        PlanKind::Gold(g) => scores::tally(t, *g, rw),
        PlanKind::BestOf(correct) => best_of_n::tally(t, correct, rw),
        // Tallied from the per-step scores in `evaluate`, not from the reward.
        PlanKind::Steps(_) => {}
    }
}
