//! Placeholder for the `ifeval` component (written on another branch); here only so the
//! open-instruct extra checkers compile and their tests run. Replaced at merge.

pub mod tulu;
