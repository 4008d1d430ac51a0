pub mod fuzz;
pub mod perturb;
