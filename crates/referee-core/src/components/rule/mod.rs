//! Rule graders: pure functions of the text, no model, no sandbox.

pub mod arithmetic;
pub mod choice;
pub mod claim_check;
pub mod contains;
pub mod format;
pub mod guard;
pub mod ifeval;
pub mod items;
pub mod json_schema;
pub mod length;
pub mod math_equiv;
pub mod numeric;
pub mod patch_audit;
pub mod ranking;
pub mod regex;
mod scan;
pub mod set_match;
pub mod squad;
pub mod state_match;
pub mod tool_call;
pub mod tool_trace;
