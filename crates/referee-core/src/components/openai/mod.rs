//! OpenAI's grader types, accepted verbatim (the spec language is a superset of them).

pub mod label_model;
pub mod multi;
pub mod python;
pub mod score_model;
pub mod string_check;
pub mod text_similarity;
