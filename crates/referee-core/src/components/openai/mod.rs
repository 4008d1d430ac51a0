//! OpenAI's grader types, accepted verbatim (the spec language is a superset of them).

pub mod multi;
pub mod python;
pub mod string_check;
pub mod text_similarity;
