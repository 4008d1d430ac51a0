//! # group
//! *What it scores:* an all-must-hold group with an optional failure clause, as in ProRubric's
//! protocol dimensions: it counts (1) only when every member holds and the failure clause does
//! not fire; otherwise 0. Put groups in a `weighted_sum` to give each its weight.
//!
//! *Spec:* `inputs` (members), `fail_if` (grader, optional: the group fails when it holds),
//! `threshold` (a member or the clause holds when its value ≥ this; default 1.0).
//!
//! *Example:*
//! ```yaml
//! type: group
//! name: cites_sources
//! inputs:
//!   - {type: contains, keywords: ["[1]"]}
//!   - {type: regex, pattern: "(?i)references?:"}
//! fail_if: {type: contains, keywords: ["as an AI"]}
//! ```
//!
//! *Score and failure modes:* 1 or 0. Fail-closed: a member or clause that failed without
//! `on_error` fails the group (it is not counted as held, nor as 0).

use super::{fold, list, one, propagate};
use crate::compile::{sync, At, Child, Compiler};
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// Members: all must hold.
    pub inputs: Vec<Child>,
    /// Failure clause: when it holds, the group does not count.
    #[serde(default)]
    pub fail_if: Option<Child>,
    /// A member (or the clause) holds when its value is at least this (default 1.0).
    #[serde(default = "one")]
    pub threshold: f64,
}

pub struct Group {
    members: Vec<Node>,
    fail_if: Option<Node>,
    threshold: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: GroupSpec = cx.spec(v, at)?;
    let members = list(cx, at, &spec.inputs);
    let fail_if = match &spec.fail_if {
        Some(c) => Some(cx.child(c, at, "fail_if")?),
        None => None,
    };
    Some(sync(Group {
        members: members?,
        fail_if,
        threshold: spec.threshold,
    }))
}

impl SyncComponent for Group {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let t = self.threshold;
        let r = fold(
            &self.members,
            s,
            cx,
            (0usize, 0usize),
            |(h, n), _, v| (h + usize::from(v >= t - 1e-9), n + 1),
            None,
        );
        let ((held, n), mut st) = match r {
            Err(o) => return o,
            Ok(None) => return Outcome::not_applicable(),
            Ok(Some(x)) => x,
        };
        let mut fired = false;
        if let Some(f) = &self.fail_if {
            let o = f.eval(s, cx);
            if o.is_error() && !o.usable() {
                return propagate(f, o);
            }
            st.add(&o);
            fired = o.holds(t);
        }
        let counts = held == n && !fired;
        cx.note(|| {
            format!(
                "{held} of {n} members hold{}",
                if fired { "; failure clause fired" } else { "" }
            )
        });
        st.finish(if counts { 1.0 } else { 0.0 })
    }
    fn children(&self) -> Vec<&Node> {
        let mut v: Vec<&Node> = self.members.iter().collect();
        v.extend(self.fail_if.as_ref());
        v
    }
}
