//! Audits of a spec rather than scores of a policy: how it can be gamed (`fuzz`) and how much
//! its reward moves when correctness does not (`perturb`).

pub mod fuzz;
pub mod perturb;
