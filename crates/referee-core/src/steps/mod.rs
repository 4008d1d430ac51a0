//! Steps: an output cut into the units process rewards give credit to, and the per-step values a
//! result carries (`step_rewards`, DESIGN.md §2).
//!
//! Every step component shares the same two halves, so a rule per step, a PRM endpoint and a
//! generative step judge cut the same text the same way and reduce it to a scalar by the same
//! published rules:
//! - [`segment`]: the text (or the trajectory's assistant turns) into steps with char spans;
//! - [`reduce`]: per-step scores to one value (min, product, Clip, Delta, ...), gated by the
//!   outcome when the spec says so, with the per-step values the result carries.

pub mod reduce;
pub mod segment;
pub mod tokens;

use serde::Serialize;
use std::sync::Arc;

/// One step's credit in a result: `start..end` are char offsets (Unicode scalar values, as
/// Python indexes a `str`) into the text that was segmented, by default `sample.output_text`;
/// `turn` names the message when the steps are a trajectory's turns (offsets into that turn's
/// text). `token_start..token_end` are the tokens the step overlaps, where the caller gave the
/// completion's tokens ([`tokens`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReward {
    pub start: usize,
    pub end: usize,
    pub value: f64,
    /// The step component's `name`, or its type when it has none.
    pub component: Arc<str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_start: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_end: Option<usize>,
    /// The spans are into the sample's output text (not a turn's, nor another `input`'s), so
    /// the completion's tokens can be placed on them.
    #[serde(skip)]
    pub on_output: bool,
}
