//! Graders that run the policy's code in the sandbox (`crate::exec::Sandbox`).

pub mod code_exec;
pub mod measure;
pub mod solution;
pub mod testcases;
