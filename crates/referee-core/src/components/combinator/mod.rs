//! Combinators: nodes that build a reward from other nodes.
//!
//! Shared rule for all of them: a child that is not applicable is skipped; a child that failed
//! with no `on_error` makes the combinator fail with the child's reason (a failure is never
//! folded in as 0); a child that failed *with* `on_error` contributes that value, and the
//! failure still shows in the combinator's status.

pub mod all_of;
pub mod any_of;
pub mod clamp;
pub mod r#const;
pub mod each_step;
pub mod each_turn;
pub mod ensemble;
pub mod gate;
pub mod group;
pub mod max;
pub mod min;
pub mod product;
pub mod scale;
pub mod weighted_sum;

use crate::compile::{At, Child, Compiler};
use crate::node::{Node, ScoreCtx};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;

/// Whether a fold's value is decided, from its accumulator over the resolved children and its
/// unresolved children.
pub(crate) type Decider<'d, A> = Option<&'d dyn Fn(&A, &[&Node]) -> bool>;

/// Scores the children and folds the usable values with `f(acc, index, value)`. Rule children
/// are all scored (they are cheap, and every named component should appear in every result).
/// Waiting children (sandbox, judge) are left unstarted when the resolved children already
/// decide the value: a child failed without `on_error` (the combinator fails whatever the
/// others say), or `decides(acc, unresolved)` says so. A combinator that can be decided that
/// way (`decides` given) starts its waiting children cheapest kind first (DESIGN.md §4).
/// Returns `Err` with the failing child's outcome when a child failed without `on_error`,
/// `Ok(None)` when no child applied.
pub(crate) fn fold<A>(
    children: &[Node],
    s: &Sample,
    cx: &mut ScoreCtx,
    mut acc: A,
    mut f: impl FnMut(A, usize, f64) -> A,
    decides: Decider<'_, A>,
) -> Result<Option<(A, StatusAcc)>, Outcome> {
    let mut st = StatusAcc::default();
    let mut any = false;
    let mut failed: Option<(usize, Outcome)> = None;
    let mark = cx.mark();
    let mut unresolved: Vec<&Node> = Vec::new();
    for (i, c) in children.iter().enumerate() {
        let before = cx.mark();
        let o = c.eval(s, cx);
        if cx.mark() > before {
            unresolved.push(c);
        } else if o.usable() {
            st.add(&o);
            acc = f(acc, i, o.value);
            any = true;
        } else if o.is_error() && failed.is_none() {
            failed = Some((i, propagate(c, o)));
        }
    }
    if !unresolved.is_empty() {
        if let Some((i, _)) = &failed {
            let at = display_path(&children[*i].meta.path).to_string();
            cx.decided(mark, || {
                format!("not started: {at} failed, so the value is decided")
            });
        } else if decides.is_some_and(|d| d(&acc, &unresolved)) {
            cx.decided(mark, || {
                "not started: the children already scored decide the value".to_string()
            });
        } else if decides.is_some() {
            cx.cheapest_first(mark);
        }
    }
    if let Some((_, o)) = failed {
        return Err(o);
    }
    Ok(any.then_some((acc, st)))
}

/// A child's failure as its parent's, with the child's location prepended to the message.
pub(crate) fn propagate(child: &Node, o: Outcome) -> Outcome {
    match o.failure() {
        Some(f) => Outcome::error(
            f.reason.clone(),
            format!(
                "{} ({}): {}",
                display_path(&child.meta.path),
                child.meta.kind,
                f.message
            ),
        ),
        None => o,
    }
}

fn display_path(p: &str) -> &str {
    if p.is_empty() {
        "/"
    } else {
        p
    }
}

/// The spec of combinators that take a plain list of children.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSpec {
    /// The child graders.
    pub inputs: Vec<Child>,
}

/// The spec of combinators that test whether children hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldSpec {
    /// The child graders.
    pub inputs: Vec<Child>,
    /// A child holds when its value is at least this (default 1.0: fully satisfied).
    #[serde(default = "one")]
    pub threshold: f64,
}

pub(crate) fn one() -> f64 {
    1.0
}

/// Compiles a non-empty list of children.
pub(crate) fn list(cx: &mut Compiler, at: &At, inputs: &[Child]) -> Option<Vec<Node>> {
    if inputs.is_empty() {
        cx.err(at, Some("inputs"), "needs at least one grader");
        return None;
    }
    cx.children(inputs, at, "inputs")
}

/// Combinators of the form "fold all usable children with one operation".
pub(crate) struct Fold {
    pub children: Vec<Node>,
    pub init: f64,
    pub op: fn(f64, f64) -> f64,
    /// When the children scored so far already decide the value.
    pub decides: Decides,
}

/// When a fold's value can no longer change, whatever its unstarted children score.
#[derive(Clone, Copy)]
pub(crate) enum Decides {
    /// A product that is 0.
    Zero,
    /// A minimum at or below every unstarted child's lowest possible value.
    Floor,
    /// A maximum at or above every unstarted child's highest possible value.
    Ceiling,
}

impl Decides {
    fn check(self, acc: f64, rest: &[&Node]) -> bool {
        match self {
            Decides::Zero => acc == 0.0,
            Decides::Floor => rest.iter().all(|n| n.bounds().is_some_and(|b| b.0 >= acc)),
            Decides::Ceiling => rest.iter().all(|n| n.bounds().is_some_and(|b| b.1 <= acc)),
        }
    }
}

impl crate::node::SyncComponent for Fold {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let decides = |a: &f64, rest: &[&Node]| self.decides.check(*a, rest);
        let r = fold(
            &self.children,
            s,
            cx,
            self.init,
            |a, _, v| (self.op)(a, v),
            Some(&decides),
        );
        match r {
            Err(o) => o,
            Ok(None) => Outcome::not_applicable(),
            Ok(Some((v, st))) => st.finish(v),
        }
    }
    fn children(&self) -> Vec<&Node> {
        self.children.iter().collect()
    }
}

/// Combinators of the form "does every / any child hold".
pub(crate) struct Holds {
    pub children: Vec<Node>,
    pub threshold: f64,
    pub all: bool,
}

impl crate::node::SyncComponent for Holds {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let t = self.threshold;
        // all_of is decided by a child that does not hold, any_of by one that does.
        let all = self.all;
        let decides = |&(h, n): &(usize, usize), _: &[&Node]| if all { h < n } else { h > 0 };
        let r = fold(
            &self.children,
            s,
            cx,
            (0usize, 0usize),
            |(h, n), _, v| (h + usize::from(v >= t - 1e-9), n + 1),
            Some(&decides),
        );
        match r {
            Err(o) => o,
            Ok(None) => Outcome::not_applicable(),
            Ok(Some(((held, n), st))) => {
                let pass = if self.all { held == n } else { held > 0 };
                cx.note(|| format!("{held} of {n} hold (threshold {t})"));
                st.finish(if pass { 1.0 } else { 0.0 })
            }
        }
    }
    fn children(&self) -> Vec<&Node> {
        self.children.iter().collect()
    }
}

/// Scores one child and maps its usable value; failures propagate, not-applicable passes through.
pub(crate) fn unary(
    child: &Node,
    s: &Sample,
    cx: &mut ScoreCtx,
    f: impl FnOnce(f64) -> f64,
) -> Outcome {
    let o = child.eval(s, cx);
    if o.usable() {
        let mut st = StatusAcc::default();
        st.add(&o);
        st.finish(f(o.value))
    } else if o.is_error() {
        propagate(child, o)
    } else {
        o
    }
}
