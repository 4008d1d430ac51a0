//! # gate
//! *What it scores:* if / then / else. The `if` node is scored first; the branch that is not
//! taken is never scored, which is how a cheap check saves an expensive one (no judge call for
//! an answer with broken format).
//!
//! *Spec:* `if` (grader), `then` (grader), `else` (grader, optional: without it a failed
//! condition gives 0), `threshold` (the condition holds when its value ≥ this; default 1.0).
//!
//! *Example:*
//! ```yaml
//! type: gate
//! if: {type: format, style: r1}
//! then: {type: numeric, reference: "{{item.answer}}"}
//! else: {type: const, value: -1}
//! ```
//!
//! *Score and failure modes:* the value of the branch taken. A condition that failed without
//! `on_error` fails the gate (neither branch runs); a condition that does not apply makes the
//! gate not applicable. Components inside the branch not taken are `null` in `components`.

use super::{one, propagate};
use crate::compile::{sync, At, Child, Compiler};
use crate::node::{Node, ScoreCtx, SyncComponent};
use crate::outcome::{Outcome, StatusAcc};
use crate::sample::Sample;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    /// The condition.
    #[serde(rename = "if")]
    pub cond: Child,
    /// Scored when the condition holds.
    pub then: Child,
    /// Scored when it does not (default: 0).
    #[serde(rename = "else", default)]
    pub otherwise: Option<Child>,
    /// The condition holds when its value is at least this (default 1.0).
    #[serde(default = "one")]
    pub threshold: f64,
}

pub struct Gate {
    cond: Node,
    then: Node,
    otherwise: Option<Node>,
    threshold: f64,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: GateSpec = cx.spec(v, at)?;
    let cond = cx.child(&spec.cond, at, "if");
    let then = cx.child(&spec.then, at, "then");
    let otherwise = match &spec.otherwise {
        Some(c) => Some(cx.child(c, at, "else")?),
        None => None,
    };
    Some(sync(Gate {
        cond: cond?,
        then: then?,
        otherwise,
        threshold: spec.threshold,
    }))
}

impl SyncComponent for Gate {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        let c = self.cond.eval(s, cx);
        if !c.usable() {
            return if c.is_error() {
                propagate(&self.cond, c)
            } else {
                Outcome::not_applicable()
            };
        }
        let mut st = StatusAcc::default();
        st.add(&c);
        let holds = c.holds(self.threshold);
        cx.note(|| {
            format!(
                "condition {} (value {} vs threshold {})",
                if holds { "holds" } else { "fails" },
                c.value,
                self.threshold
            )
        });
        let branch = if holds {
            Some(&self.then)
        } else {
            self.otherwise.as_ref()
        };
        let Some(b) = branch else {
            return st.finish(0.0);
        };
        let o = b.eval(s, cx);
        if o.usable() {
            st.add(&o);
            st.finish(o.value)
        } else if o.is_error() {
            propagate(b, o)
        } else {
            o
        }
    }
    fn children(&self) -> Vec<&Node> {
        let mut v = vec![&self.cond, &self.then];
        v.extend(self.otherwise.as_ref());
        v
    }
}
