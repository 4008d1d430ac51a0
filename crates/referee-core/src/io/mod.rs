//! File formats the shells share (DESIGN §4: reading and writing rows is I/O, but the same in
//! the CLI and in Python, so it lives here once).

#[cfg(feature = "parquet")]
pub mod parquet;
