//! TEMPORARY placeholder until the metrics land (replaced by helper's module).
pub fn fuzzy_match(_: &str, _: &str) -> f64 { unimplemented!() }
pub fn bleu(_: &str, _: &str) -> f64 { unimplemented!() }
pub fn gleu(_: &str, _: &str) -> f64 { unimplemented!() }
pub fn meteor(_: &str, _: &str) -> f64 { unimplemented!() }
pub fn rouge_n(_: &str, _: &str, _: usize) -> f64 { unimplemented!() }
pub fn rouge_l(_: &str, _: &str) -> f64 { unimplemented!() }
