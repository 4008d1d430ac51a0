//! Every component, one file per `type` (DESIGN.md §5).

pub mod combinator;
pub mod exec;
pub mod judge;
pub mod openai;
pub mod rule;
