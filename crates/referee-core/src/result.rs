//! What scoring returns for one sample, shared by the scorer and the group stage (which writes
//! its advantage and flag onto results), so neither imports the other.

use crate::node::Trace;
use crate::outcome::{Failure, Status};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

/// The result for one sample (DESIGN.md §2). `reward` is `None` when the sample could not be
/// scored (and no `on_error` said what a failure gets) or when nothing applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreResult {
    pub reward: Option<f64>,
    pub status: Status,
    pub components: Vec<(Arc<str>, Option<f64>)>,
    pub trace: Option<Trace>,
    /// Judge calls and tokens spent on this sample; `Some` for programs with model graders.
    pub usage: Option<crate::judge::Usage>,
    /// What the group stage wrote (`advantage`, flag); `None` when the stage is off.
    pub group: Option<GroupOutcome>,
    /// Per-step credit; `Some` (possibly empty) for programs with step components.
    pub step_rewards: Option<Vec<crate::steps::StepReward>>,
    /// Why the completion's tokens given with the row could not be placed on the step rewards
    /// (they keep their char spans; the reward is unaffected).
    pub token_error: Option<String>,
}

impl ScoreResult {
    /// The result for an input that never became a sample (bad JSON, missing field).
    pub fn input_error(reason: &'static str, message: String) -> Self {
        ScoreResult {
            reward: None,
            status: Status::Error(Failure {
                reason: reason.into(),
                message,
            }),
            components: Vec::new(),
            trace: None,
            usage: None,
            group: None,
            step_rewards: None,
            token_error: None,
        }
    }

    pub fn reason(&self) -> Option<&str> {
        match &self.status {
            Status::Error(f) => Some(&f.reason),
            _ => None,
        }
    }

    /// Serializes with the sample's id and line number, the shape the CLI and server emit.
    pub fn with_id<'a>(&'a self, id: Option<&'a Value>, line: Option<usize>) -> Identified<'a> {
        Identified {
            id,
            line,
            result: self,
        }
    }
}

/// A result with its sample id, for output.
pub struct Identified<'a> {
    pub id: Option<&'a Value>,
    pub line: Option<usize>,
    pub result: &'a ScoreResult,
}

impl Serialize for Identified<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let r = self.result;
        let mut st = ser.serialize_struct("Result", 13)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("reward", &r.reward)?;
        st.serialize_field("status", r.status.as_str())?;
        if let Status::Error(f) = &r.status {
            st.serialize_field("reason", &f.reason)?;
            st.serialize_field("message", &f.message)?;
            if let Some(l) = self.line {
                st.serialize_field("line", &l)?;
            }
        }
        st.serialize_field("components", &Components(&r.components))?;
        if let Some(g) = &r.group {
            if g.has_advantage {
                st.serialize_field("advantage", &g.advantage)?;
            }
            if let Some(f) = g.flag {
                st.serialize_field("group_flag", f.as_str())?;
            }
            if let Some(v) = g.group_reward {
                st.serialize_field("group_reward", &v)?;
            }
        }
        if let Some(steps) = &r.step_rewards {
            st.serialize_field("step_rewards", steps)?;
        }
        if let Some(e) = &r.token_error {
            st.serialize_field("token_error", e)?;
        }
        if let Some(u) = &r.usage {
            st.serialize_field("usage", u)?;
        }
        if let Some(t) = &r.trace {
            st.serialize_field("trace", t)?;
        }
        st.end()
    }
}

struct Components<'a>(&'a [(Arc<str>, Option<f64>)]);

impl Serialize for Components<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(&**k, v)?;
        }
        m.end()
    }
}

/// Why a result's advantage is what it is, when that is not the ordinary case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupFlag {
    /// Status error or no reward: no advantage, left out of the group's statistics.
    Excluded,
    /// The only scored sample of its group: advantage 0.
    SingletonGroup,
    /// Every scored sample of the group has the same reward: advantage 0 (no signal).
    FlatGroup,
    /// A flat group whose values were spread by the judged tie-break (`group_reward`).
    TieBreak,
}

impl GroupFlag {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupFlag::Excluded => "excluded",
            GroupFlag::SingletonGroup => "singleton_group",
            GroupFlag::FlatGroup => "flat_group",
            GroupFlag::TieBreak => "tie_break",
        }
    }
}

/// What the group stage wrote on one result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupOutcome {
    /// `None` for excluded samples (and for every sample with `advantage: none`).
    pub advantage: Option<f64>,
    pub flag: Option<GroupFlag>,
    /// Whether the estimator writes advantages at all (false for `none`).
    pub has_advantage: bool,
    /// The value the advantage was computed from when it is not the reward (HERO).
    pub group_reward: Option<f64>,
}
