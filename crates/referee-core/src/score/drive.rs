//! Programs that wait, scored as futures driven together.
//!
//! A sample is scored in rounds: the tree is evaluated (rule nodes run, waiting nodes replay
//! what they produced or ask to be started, see `Node::eval`), the waiting nodes it asked for
//! are started together, and the tree is evaluated again once they are done, until nothing is
//! pending. Every sample of a batch is such a future; a few driver threads poll them all, so a
//! thousand judge calls in flight cost a thousand small futures, not a thousand blocked
//! threads. What bounds the calls is each endpoint's own `max_concurrency` (the judge client's
//! semaphore) and the sandbox's slots; [`super::Options::max_in_flight`] optionally bounds the
//! samples held at once.

use super::finish;
use crate::node::{run_waiting, Done, GroupStats, Memo, Node, ScoreCtx, Seed};
use crate::outcome::Outcome;
use crate::result::ScoreResult;
use crate::sample::Sample;
use crate::Program;
use futures::stream::StreamExt;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

type DoneMap = HashMap<Arc<str>, Arc<Done>>;

/// `f(0..n)`, every future driven together, results in order. Spread over one driver thread
/// per core (the rule parts of a waiting tree are CPU work), each holding its share of the
/// in-flight cap; a driver thread sleeps while its futures wait.
pub(super) fn all<'a, T, F, Fut>(n: usize, cap: Option<usize>, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> Fut + Sync,
    Fut: Future<Output = T> + 'a,
{
    if n == 0 {
        return Vec::new();
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    // Small batches are not worth a thread each.
    let drivers = cores.min(n.div_ceil(32)).max(1);
    let per = cap.map_or(usize::MAX, |c| c.div_ceil(drivers).max(1));
    let run = |lo: usize, hi: usize| -> Vec<T> {
        let mut out: Vec<Option<T>> = (lo..hi).map(|_| None).collect();
        let f = &f;
        let stream = futures::stream::iter(lo..hi)
            .map(|i| async move { (i, f(i).await) })
            .buffer_unordered(per);
        futures::executor::block_on(stream.for_each(|(i, t)| {
            out[i - lo] = Some(t);
            futures::future::ready(())
        }));
        out.into_iter()
            .map(|t| t.expect("every future finished"))
            .collect()
    };
    if drivers == 1 {
        return run(0, n);
    }
    let bounds: Vec<(usize, usize)> = (0..drivers)
        .map(|d| (d * n / drivers, (d + 1) * n / drivers))
        .collect();
    std::thread::scope(|scope| {
        let run = &run;
        let handles: Vec<_> = bounds[1..]
            .iter()
            .map(|&(lo, hi)| {
                std::thread::Builder::new()
                    .name("referee-drive".into())
                    .spawn_scoped(scope, move || run(lo, hi))
                    .expect("driver thread")
            })
            .collect();
        let mut out = run(bounds[0].0, bounds[0].1);
        for h in handles {
            out.extend(h.join().expect("driver thread"));
        }
        out
    })
}

/// One sample, scored on its own.
pub(super) async fn sample(program: &Program, s: &Sample, explain: bool) -> ScoreResult {
    let seed = Seed {
        explain,
        ..Seed::default()
    };
    let mut done = DoneMap::new();
    let (out, mut cx) = settle(&program.root, s, &seed, &mut done).await;
    finish(program, out, &mut cx)
}

/// One group of a program with group-aware nodes, in two passes: the first scores every
/// sample and records what the group-aware nodes saw; the second scores each again with the
/// group's statistics, replaying every other waiting node from the first (no test or judge
/// call runs twice). Both passes run the group's samples together.
pub(super) async fn group(
    program: &Program,
    members: &[&Sample],
    explain: bool,
) -> Vec<ScoreResult> {
    let first = futures::future::join_all(members.iter().map(|s| async move {
        let seed = Seed {
            explain,
            collecting: true,
            ..Seed::default()
        };
        let mut done = DoneMap::new();
        let (_, cx) = settle(&program.root, s, &seed, &mut done).await;
        (cx.record, cx.memo, done)
    }))
    .await;
    let (records, kept): (Vec<_>, Vec<_>) = first.into_iter().map(|(r, m, d)| (r, (m, d))).unzip();
    let stats = Arc::new(GroupStats::from_records(&records));
    futures::future::join_all(members.iter().zip(kept).map(|(s, (memo, mut done))| {
        let stats = stats.clone();
        async move {
            let seed = Seed {
                explain,
                group: Some(stats),
                collecting: false,
                memo: Some(Arc::new(memo as Memo)),
            };
            done.retain(|_, d| !d.group_aware);
            let (out, mut cx) = settle(&program.root, s, &seed, &mut done).await;
            finish(program, out, &mut cx)
        }
    }))
    .await
}

/// Evaluates a sample's tree round after round, starting the waiting nodes each round asks
/// for together, until a round asks for none: that round's outcome and context are the
/// sample's.
async fn settle(root: &Node, s: &Sample, seed: &Seed, done: &mut DoneMap) -> (Outcome, ScoreCtx) {
    loop {
        let mut cx = seed.ctx(std::mem::take(done));
        let out = root.eval(s, &mut cx);
        *done = std::mem::take(&mut cx.done);
        if cx.pending.is_empty() {
            return (out, cx);
        }
        let pending = std::mem::take(&mut cx.pending);
        let runs = pending.iter().map(|(path, _)| {
            let node = root.find(path).expect("a pending node is in the tree");
            run_waiting(node, s, seed)
        });
        let finished = futures::future::join_all(runs).await;
        for ((path, _), d) in pending.into_iter().zip(finished) {
            done.insert(path, Arc::new(d));
        }
    }
}

/// A subtree scored on its own for a sample that is not a row (a turn of a trajectory), in
/// rounds like any sample: its outcome and context (with its trace when explaining).
pub(crate) async fn nested(root: &Node, s: &Sample, explain: bool) -> (Outcome, ScoreCtx) {
    let seed = Seed {
        explain,
        ..Seed::default()
    };
    settle(root, s, &seed, &mut DoneMap::new()).await
}
