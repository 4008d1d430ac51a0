//! Digests of item fields: the row's own text from where a field's value starts to some point
//! after it ends, with a hash of that text.
//!
//! Why: a grader that keeps something expensive per distinct item value (`json_schema` compiles
//! one validator per schema) must recognise the value on every row, soundly. Walking the row's
//! `Value` against the cached one costs about as much as a small validation; comparing two byte
//! strings costs almost nothing. A JSON value delimits itself, so the text that starts with it
//! determines it: two rows whose digests are equal byte for byte hold equal values (the same
//! value written differently is only a cache miss). The input layer records the text while it
//! parses the row, only for the fields a compiled spec asks for
//! ([`crate::compile::Compiler::want_item_digest`]), so nothing is read twice.

use std::hash::{BuildHasher, Hasher};

/// The text a value starts (the value, then whatever followed it in its row up to a later
/// anchor: a closing bracket, a comma, the next key), and its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    hash: u64,
    bytes: Box<[u8]>,
}

impl Digest {
    /// The digest of `text`, which must start with the value (optionally after `:` and
    /// whitespace) it stands for.
    pub(crate) fn of_text(text: &[u8]) -> Digest {
        let mut h = foldhash::fast::FixedState::default().build_hasher();
        h.write(text);
        Digest {
            hash: h.finish(),
            bytes: text.into(),
        }
    }

    /// A hash of the text, for picking a cache bucket (equality decides, never the hash).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
