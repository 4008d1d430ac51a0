//! Referee's core: the spec language, its compiler, the components and the scorer.
//! No HTTP, no Python, no CLI parsing (DESIGN.md §4).

#![forbid(unsafe_code)]

pub mod audit;
pub mod compile;
pub mod components;
pub mod digest;
pub mod exec;
pub mod formula;
pub mod group;
pub mod input;
pub mod io;
pub mod judge;
pub mod node;
pub mod outcome;
pub mod parts;
pub mod program;
pub mod reason;
pub mod registry;
pub mod result;
pub mod sample;
pub mod schema;
pub mod score;
pub mod stats;
pub mod steps;
pub mod summary;
pub mod template;
pub mod text;
pub mod trajectory;

pub use compile::{CompileError, CompileErrors};
pub use outcome::{Failure, Outcome, Status};
pub use program::Program;
pub use result::ScoreResult;
pub use sample::Sample;
pub use score::{score, Options, RowResult, Rows, Scored};
