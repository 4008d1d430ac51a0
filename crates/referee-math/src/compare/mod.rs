//! Equivalence by type: structure first (sets, tuples, intervals, relations, matrices), then
//! scalars exactly where both sides are exact, to the written precision where the gold is a
//! decimal, a decimal answer to an exact gold by the `approximate` policy, and at deterministic
//! sample points where variables appear.
//!
//! [`verify`] is the entry point; the comparison itself is [`Cx::top`], which dispatches on the
//! gold's type to one file per kind of answer.

mod assign;
mod collection;
mod interval;
mod plus_minus;
mod points;
pub(crate) mod precision;
mod relation;
mod same;
mod scalar;
mod verify;

pub(crate) use verify::verify;

use crate::num::Budget;
use crate::options::Options;

/// One comparison's state: the options, the seed of the sample points, the step budget, and how
/// the verdict was reached (`how`) and why it is negative (`why`), for [`Verdict::detail`](crate::Verdict::detail).
struct Cx<'a> {
    opts: &'a Options,
    /// Seeds the sample points: derived from the gold, so the points differ from problem to
    /// problem (nothing for a policy to learn) yet every run gives the same verdict.
    seed: u64,
    b: Budget,
    how: &'static str,
    why: Option<String>,
    /// A decimal approximation of an exact gold was turned down on the way (inside a tuple, a
    /// set, an interval): the verdict's detail says so even when `why` names another step.
    approximated: bool,
}
