//! The scoring room (DESIGN.md §4): every shell hands its rows here, in the form it received
//! them, and gets every row's result back in input order with the batch's group report.
//!
//! One call does it all: map rows to samples (a row that does not map is an error result in its
//! place), gather groups, score (rule-only programs on the rayon pool; programs that wait as
//! futures driven together, see [`drive`]), the two passes of grouped programs, and the group
//! stage. The CLI, the server and Python call [`score`] and nothing else.

pub(crate) mod drive;
mod rows;

pub use rows::Rows;

use crate::group::GroupReport;
use crate::input::InputMapping;
use crate::node::{ScoreCtx, Seed};
use crate::outcome::Outcome;
use crate::result::ScoreResult;
use crate::sample::Sample;
use crate::steps::tokens::{self, Tokenizer};
use crate::summary::Summary;
use crate::Program;
use rayon::prelude::*;
use serde_json::Value;
use std::sync::Arc;

/// How to score a batch.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Build each result's explanation tree.
    pub explain: bool,
    /// At most this many samples (of a program that waits) in flight at once, to bound memory.
    /// `None`: no cap beyond the endpoints' own `max_concurrency` and the sandbox's slots, which
    /// bound the calls and runs themselves.
    pub max_in_flight: Option<usize>,
    /// The policy's tokenizer, to place step rewards on rows' `completion_ids`
    /// ([`crate::steps::tokens`]).
    pub tokenizer: Option<Arc<Tokenizer>>,
}

/// One row's result, with what the shells print beside it.
#[derive(Debug, Clone)]
pub struct RowResult {
    /// The sample's id (`None` for a row that never became a sample).
    pub id: Option<Value>,
    /// The row's line number, for rows read as lines.
    pub line: Option<usize>,
    pub result: ScoreResult,
}

/// A batch's results in input order, and the group stage's report (`None` without a `group:`
/// section).
#[derive(Debug, Clone)]
pub struct Scored {
    pub rows: Vec<RowResult>,
    pub report: Option<GroupReport>,
}

impl Scored {
    /// The batch summary the CLI prints and the server returns (folded in parallel).
    pub fn summary(&self) -> Summary {
        let mut s = self
            .rows
            .par_chunks(1024)
            .map(|rows| {
                let mut s = Summary::default();
                for r in rows {
                    s.add(&r.result);
                }
                s
            })
            .reduce(Summary::default, |mut a, b| {
                a.merge(b);
                a
            });
        if let Some(g) = &self.report {
            s.add_group(g.clone());
        }
        s
    }

    /// The results alone, in input order.
    pub fn results(self) -> Vec<ScoreResult> {
        self.rows.into_iter().map(|r| r.result).collect()
    }
}

/// Scores a batch: the one entry point of every shell.
pub fn score(program: &Program, rows: Rows<'_>, mapping: &InputMapping, opts: &Options) -> Scored {
    if !program.waits && !program.grouped && program.group.is_none() {
        // The fast path of rule-only specs: each row is mapped, scored and let go in one task,
        // so a batch never holds all its samples at once.
        let explain = opts.explain;
        let rows = rows.par_each(mapping, |line, sample| match sample {
            Ok(s) => {
                let mut result = evaluate_now(program, s.get(), explain);
                place_tokens(&mut result, s.get(), opts);
                RowResult {
                    line,
                    id: s.into_id(),
                    result,
                }
            }
            Err(e) => RowResult {
                line,
                id: None,
                result: *e,
            },
        });
        return Scored { rows, report: None };
    }
    let slots = rows.map(mapping);
    let samples: Vec<Option<&Sample>> = slots.iter().map(rows::Slot::sample).collect();
    let mut results: Vec<Option<ScoreResult>> = (0..slots.len()).map(|_| None).collect();
    let ok: Vec<usize> = (0..slots.len()).filter(|&i| samples[i].is_some()).collect();
    let staged = program.group.is_some();
    let groups = if program.grouped || staged {
        group_indices(
            ok.iter()
                .map(|&i| (i, samples[i].and_then(|s| s.group.as_deref()))),
        )
    } else {
        Vec::new()
    };
    let scored: Vec<(usize, ScoreResult)> = if program.grouped {
        let units: Vec<Vec<&Sample>> = groups
            .iter()
            .map(|g| g.iter().map(|&i| samples[i].expect("mapped")).collect())
            .collect();
        let per_group = units_scored(program, &units, opts);
        groups
            .iter()
            .flatten()
            .copied()
            .zip(per_group.into_iter().flatten())
            .collect()
    } else {
        let members: Vec<&Sample> = ok.iter().map(|&i| samples[i].expect("mapped")).collect();
        ok.iter()
            .copied()
            .zip(each_scored(program, &members, opts))
            .collect()
    };
    for (i, r) in scored {
        results[i] = Some(r);
    }
    let mut results: Vec<ScoreResult> = results
        .into_iter()
        .zip(&slots)
        .map(|(r, slot)| match (r, slot.sample()) {
            (Some(mut r), Some(s)) => {
                place_tokens(&mut r, s, opts);
                r
            }
            (r, _) => r.unwrap_or_else(|| slot.failed().expect("every row has a result")),
        })
        .collect();
    let report = program
        .group
        .as_ref()
        .map(|g| g.apply(&mut results, &groups, &program.names, &samples));
    let rows = slots
        .into_iter()
        .zip(results)
        .map(|(slot, result)| RowResult {
            line: slot.line,
            id: slot.id(),
            result,
        })
        .collect();
    Scored { rows, report }
}

/// Puts the row's tokens (if it gave any) on the result's step rewards, or says why not.
fn place_tokens(r: &mut ScoreResult, s: &Sample, opts: &Options) {
    let (Some(tokens), Some(steps)) = (&s.tokens, r.step_rewards.as_mut()) else {
        return;
    };
    if let Err(e) = tokens::place(steps, &s.output_text, tokens, opts.tokenizer.as_deref()) {
        r.token_error = Some(e);
    }
}

/// Scores samples already built (audits, tests, benches): [`score`] on [`Rows::Samples`].
pub fn samples(
    program: &Program,
    samples: &[Sample],
    explain: bool,
) -> (Vec<ScoreResult>, Option<GroupReport>) {
    let opts = Options {
        explain,
        ..Options::default()
    };
    let Scored { rows, report } = score(
        program,
        Rows::Samples(samples),
        &InputMapping::default(),
        &opts,
    );
    (rows.into_iter().map(|r| r.result).collect(), report)
}

/// Scores one sample on its own (no group stage): what `Program::score` and `explain` do.
pub fn one(program: &Program, s: &Sample, explain: bool) -> ScoreResult {
    let opts = Options {
        explain,
        ..Options::default()
    };
    if program.grouped {
        return units_scored(program, &[vec![s]], &opts).remove(0).remove(0);
    }
    each_scored(program, &[s], &opts).remove(0)
}

/// Samples scored each on its own, in order.
fn each_scored(program: &Program, members: &[&Sample], opts: &Options) -> Vec<ScoreResult> {
    let explain = opts.explain;
    if !program.waits {
        return members
            .par_iter()
            .with_min_len(64)
            .map(|s| evaluate_now(program, s, explain))
            .collect();
    }
    drive::all(members.len(), opts.max_in_flight, |i| {
        drive::sample(program, members[i], explain)
    })
}

/// Groups scored in two passes each (the program has group-aware nodes), results per group.
fn units_scored(
    program: &Program,
    units: &[Vec<&Sample>],
    opts: &Options,
) -> Vec<Vec<ScoreResult>> {
    let explain = opts.explain;
    if !program.waits {
        // Nothing waits, so the group's future is ready on its first poll.
        return units
            .par_iter()
            .map(|u| {
                futures::FutureExt::now_or_never(drive::group(program, u, explain))
                    .expect("a program that does not wait never pends")
            })
            .collect();
    }
    // The cap counts samples; a group keeps all of its samples in flight.
    let cap = opts.max_in_flight.map(|c| {
        let largest = units.iter().map(Vec::len).max().unwrap_or(1).max(1);
        (c / largest).max(1)
    });
    drive::all(units.len(), cap, |i| {
        drive::group(program, &units[i], explain)
    })
}

/// A program with no waiting node, scored in a single evaluation.
fn evaluate_now(program: &Program, s: &Sample, explain: bool) -> ScoreResult {
    let mut cx = Seed {
        explain,
        ..Seed::default()
    }
    .ctx(std::collections::HashMap::new());
    let out = program.root.eval(s, &mut cx);
    debug_assert!(cx.pending.is_empty(), "a rule-only tree pended");
    finish(program, out, &mut cx)
}

/// The result of a sample's last evaluation.
fn finish(program: &Program, out: Outcome, cx: &mut ScoreCtx) -> ScoreResult {
    let reward = out.usable().then_some(out.value);
    let status = out.status;
    // Fixed key order and set: nodes skipped by a gate or left unstarted still appear, as null.
    let mut components: Vec<(Arc<str>, Option<f64>)> =
        program.names.iter().map(|n| (n.clone(), None)).collect();
    for (name, v) in std::mem::take(&mut cx.components) {
        if let Some(slot) = components.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = v;
        }
    }
    ScoreResult {
        reward,
        status,
        components,
        trace: cx.root.take(),
        usage: program.judged.then_some(cx.usage),
        group: None,
        step_rewards: program.dense.then(|| std::mem::take(&mut cx.steps)),
        token_error: None,
    }
}

/// The indices of the items of each group, groups in order of first appearance; an item with no
/// group is a group of its own. Takes `(index, group)` pairs.
pub fn group_indices<'a>(
    items: impl IntoIterator<Item = (usize, Option<&'a str>)>,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, g) in items {
        match g {
            Some(g) => {
                let k = *index.entry(g).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[k].push(i);
            }
            None => groups.push(vec![i]),
        }
    }
    groups
}
