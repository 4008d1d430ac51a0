//! The answer as a flat tape the validator reads in place ([`Tape`] implements the `jsonschema`
//! crate's `Json` representation traits), and the one-pass parser that builds it.
//!
//! Building a `serde_json::Value` (an `IndexMap` and a `String` per object, a `String` per key
//! and string) cost more than validating it. The tape is two buffers: one entry per value or
//! key, and one text pool holding every unescaped string and every number as written.
//!
//! [`parse_fast`] is strict and conservative: it accepts only what `serde_json::from_str`
//! accepts, gives the same value, and bails out (`None`) on anything the slower path must decide
//! (invalid JSON, a duplicated key, `NaN`, deep nesting, lone surrogates, serde_json's private
//! number token). The caller then runs the lenient scanner and serde_json, exactly as before, so
//! a bail-out costs time and never changes a verdict.

use jsonschema::json::{cmp, unique, Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Null,
    False,
    True,
    Num,
    Str,
    Arr,
    Obj,
}

/// One value (or object key). Strings and numbers point into the pool; containers record how
/// many children they have and where their subtree ends, so siblings are one jump apart.
#[derive(Debug, Clone, Copy)]
struct Entry {
    tag: Tag,
    /// Pool offset (strings, numbers).
    off: u32,
    /// Byte length (strings, numbers) or member/element count (containers).
    len: u32,
    /// Index just past this entry's subtree.
    next: u32,
}

/// A parsed JSON document. An object's children are its keys and values, alternating.
#[derive(Debug, Default)]
pub struct Doc {
    entries: Vec<Entry>,
    pool: String,
}

thread_local! {
    /// The buffers of the last document dropped on this thread, reused by the next parse: one
    /// answer after another, no allocation once they have grown.
    static SPARE: std::cell::Cell<Option<(Vec<Entry>, String)>> = const { std::cell::Cell::new(None) };
}

impl Drop for Doc {
    fn drop(&mut self) {
        if self.pool.capacity() > 0 && self.pool.capacity() <= (1 << 20) {
            let mut entries = std::mem::take(&mut self.entries);
            let mut pool = std::mem::take(&mut self.pool);
            entries.clear();
            pool.clear();
            SPARE.set(Some((entries, pool)));
        }
    }
}

/// The representation marker for `jsonschema::options_for`.
pub struct Tape;

/// serde_json stops at 128 levels; the fast path stops well before and leaves the rest to it.
const FAST_DEPTH: usize = 100;
/// Keys per object compared pairwise; past this, by hash.
const SMALL_OBJECT: usize = 16;

impl Doc {
    fn with_capacity(bytes: usize) -> Doc {
        let (mut entries, mut pool) = SPARE.take().unwrap_or_default();
        entries.reserve(bytes / 6 + 4);
        pool.reserve(bytes);
        Doc { entries, pool }
    }

    pub fn root(&self) -> Nd<'_> {
        Nd { doc: self, idx: 0 }
    }

    fn str_at(&self, e: &Entry) -> &str {
        &self.pool[e.off as usize..(e.off + e.len) as usize]
    }

    fn push(&mut self, tag: Tag, off: usize, len: usize) -> u32 {
        let i = self.entries.len() as u32;
        self.entries.push(Entry {
            tag,
            off: off as u32,
            len: len as u32,
            next: i + 1,
        });
        i
    }

    fn push_str(&mut self, tag: Tag, s: &str) {
        let off = self.pool.len();
        self.pool.push_str(s);
        self.push(tag, off, s.len());
    }

    /// The tape of a value built by serde_json (the slow path's result), in its key order.
    pub fn from_value(v: &Value) -> Doc {
        let mut d = Doc::default();
        d.add_value(v);
        d
    }

    fn add_value(&mut self, v: &Value) {
        match v {
            Value::Null => {
                self.push(Tag::Null, 0, 0);
            }
            Value::Bool(b) => {
                self.push(if *b { Tag::True } else { Tag::False }, 0, 0);
            }
            Value::Number(n) => self.push_str(Tag::Num, n.as_str()),
            Value::String(s) => self.push_str(Tag::Str, s),
            Value::Array(a) => {
                let i = self.push(Tag::Arr, 0, a.len());
                for x in a {
                    self.add_value(x);
                }
                self.entries[i as usize].next = self.entries.len() as u32;
            }
            Value::Object(o) => {
                let i = self.push(Tag::Obj, 0, o.len());
                for (k, x) in o {
                    self.push_str(Tag::Str, k);
                    self.add_value(x);
                }
                self.entries[i as usize].next = self.entries.len() as u32;
            }
        }
    }
}

/// Parses the JSON value at the start of `t` (leading JSON whitespace allowed). `Some((doc,
/// end))` only when serde_json would parse `t[..end]` to the same value, the lenient scanner
/// would end the value at `end` with no duplicated key and no `NaN`/`Infinity`. `None`: let the
/// slow path decide.
pub fn parse_fast(t: &str) -> Option<(Doc, usize)> {
    let mut p = Parser {
        b: t.as_bytes(),
        t,
        i: 0,
        doc: Doc::with_capacity(t.len().min(1 << 16)),
        frames: Vec::new(),
        keys: Vec::new(),
    };
    p.value()?;
    let end = p.i;
    // A bare scalar ends where the scanner says only if a delimiter follows it (`12abc` is one
    // word to the scanner, and invalid to serde_json).
    let scalar = !matches!(t.as_bytes()[skip_ws(t.as_bytes(), 0)], b'{' | b'[' | b'"');
    if scalar
        && end < t.len()
        && !matches!(
            t.as_bytes()[end],
            b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'{' | b'['
        )
    {
        return None;
    }
    Some((p.doc, end))
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

struct Frame {
    entry: u32,
    count: u32,
    obj: bool,
    /// Where this object's keys start in `Parser::keys`.
    keys_from: usize,
    /// Hashes of the keys, once the object has more than [`SMALL_OBJECT`].
    hashes: Option<std::collections::HashSet<u64>>,
}

struct Parser<'t> {
    b: &'t [u8],
    t: &'t str,
    i: usize,
    doc: Doc,
    frames: Vec<Frame>,
    /// Pool ranges (offset, length) of the keys of the open objects.
    keys: Vec<(u32, u32)>,
}

impl Parser<'_> {
    fn ws(&mut self) {
        self.i = skip_ws(self.b, self.i);
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// One value, iteratively (an explicit frame stack rather than recursion).
    fn value(&mut self) -> Option<()> {
        loop {
            self.ws();
            match self.peek()? {
                c @ (b'{' | b'[') => {
                    if self.frames.len() >= FAST_DEPTH {
                        return None;
                    }
                    self.i += 1;
                    let obj = c == b'{';
                    let entry = self.doc.push(if obj { Tag::Obj } else { Tag::Arr }, 0, 0);
                    self.frames.push(Frame {
                        entry,
                        count: 0,
                        obj,
                        keys_from: self.keys.len(),
                        hashes: None,
                    });
                    self.ws();
                    let close = if obj { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                        self.close();
                    } else if obj {
                        self.key()?;
                        continue;
                    } else {
                        continue;
                    }
                }
                b'"' => {
                    self.i += 1;
                    self.string(Tag::Str)?;
                }
                b't' => self.literal(b"true", Tag::True)?,
                b'f' => self.literal(b"false", Tag::False)?,
                b'n' => self.literal(b"null", Tag::Null)?,
                b'-' | b'0'..=b'9' => self.number()?,
                _ => return None,
            }
            // After a value: close containers or move to the next member.
            loop {
                let Some(f) = self.frames.last_mut() else {
                    return Some(());
                };
                f.count += 1;
                let obj = f.obj;
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if obj {
                            self.ws();
                            if self.peek()? != b'"' {
                                return None;
                            }
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if obj => {
                        self.i += 1;
                        self.close();
                    }
                    b']' if !obj => {
                        self.i += 1;
                        self.close();
                    }
                    _ => return None,
                }
            }
        }
    }

    fn close(&mut self) {
        let f = self.frames.pop().expect("an open container");
        self.keys.truncate(f.keys_from);
        let next = self.doc.entries.len() as u32;
        let e = &mut self.doc.entries[f.entry as usize];
        e.len = f.count;
        e.next = next;
    }

    /// An object key (at its opening quote), its duplicate check, and the colon after it.
    fn key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.i += 1;
        self.string(Tag::Str)?;
        let e = self.doc.entries[self.doc.entries.len() - 1];
        let pool = self.doc.pool.as_bytes();
        let at = |off: u32, len: u32| &pool[off as usize..(off + len) as usize];
        let key = at(e.off, e.len);
        // serde_json reads an object whose first key is its private token as a number.
        if key.starts_with(b"$serde_json::private::") {
            return None;
        }
        let f = self.frames.last_mut()?;
        let mine = &self.keys[f.keys_from..];
        if mine.len() < SMALL_OBJECT {
            if mine
                .iter()
                .any(|&(o, l)| l == e.len && same_bytes(at(o, l), key))
            {
                return None;
            }
        } else {
            let hash = |s: &[u8]| {
                use std::hash::BuildHasher;
                foldhash::fast::FixedState::default().hash_one(s)
            };
            let set = f
                .hashes
                .get_or_insert_with(|| mine.iter().map(|&(o, l)| hash(at(o, l))).collect());
            // A hash seen before is a duplicate or a collision: either way, the slow path.
            if !set.insert(hash(key)) {
                return None;
            }
        }
        self.keys.push((e.off, e.len));
        self.ws();
        if self.peek()? != b':' {
            return None;
        }
        self.i += 1;
        Some(())
    }

    fn literal(&mut self, word: &[u8], tag: Tag) -> Option<()> {
        if !self.b[self.i..].starts_with(word) {
            return None;
        }
        self.i += word.len();
        self.doc.push(tag, 0, 0);
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, kept as written (serde_json's
    /// `arbitrary_precision` does the same).
    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        if b[i] == b'-' {
            i += 1;
        }
        let digits = |mut i: usize| {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            (i > s).then_some(i)
        };
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => i = digits(i)?,
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i = digits(i + 1)?;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(i)?;
        }
        self.i = i;
        let text = &self.t[start..i];
        self.doc.push_str(Tag::Num, text);
        Some(())
    }

    /// A string's contents (after its opening quote), unescaped into the pool.
    fn string(&mut self, tag: Tag) -> Option<()> {
        let b = self.b;
        let off = self.doc.pool.len();
        let mut run = self.i;
        let mut i = self.i;
        loop {
            i = plain_run(b, i);
            let c = *b.get(i)?;
            match c {
                b'"' => {
                    self.doc.pool.push_str(&self.t[run..i]);
                    self.i = i + 1;
                    let len = self.doc.pool.len() - off;
                    self.doc.push(tag, off, len);
                    return Some(());
                }
                b'\\' => {
                    self.doc.pool.push_str(&self.t[run..i]);
                    let e = *b.get(i + 1)?;
                    i += 2;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = hex4(b.get(i..i + 4)?)?;
                            i += 4;
                            if (0xD800..0xDC00).contains(&hi) {
                                // Only a complete pair; anything else is serde_json's call.
                                if b.get(i..i + 2)? != b"\\u" {
                                    return None;
                                }
                                let lo = hex4(b.get(i + 2..i + 6)?)?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return None;
                                }
                                i += 6;
                                char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))?
                            } else {
                                char::from_u32(hi)?
                            }
                        }
                        _ => return None,
                    };
                    self.doc.pool.push(ch);
                    run = i;
                }
                0..=0x1f => return None,
                _ => i += 1,
            }
        }
    }
}

/// Skips the bytes of a string that need no attention (not `"`, `\\` or a control
/// character), eight at a time.
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The lowest flagged byte of each test is exact (borrows only run upwards).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    while let Some(w) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
        let hit = zero(w ^ (ONES * u64::from(b'"')))
            | zero(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i
}

/// Byte equality without a `memcmp` call for short keys, which is what objects are looked up by.
pub(super) fn same_bytes(x: &[u8], y: &[u8]) -> bool {
    x.len() == y.len()
        && if x.len() <= 16 {
            x.iter().zip(y).all(|(a, b)| a == b)
        } else {
            x == y
        }
}

fn hex4(h: &[u8]) -> Option<u32> {
    let mut n = 0;
    for &c in h {
        n = n * 16 + (c as char).to_digit(16)?;
    }
    Some(n)
}

// ---- the `jsonschema` representation ----

/// A node: the document and an entry index. Copying it is copying two words.
#[derive(Clone, Copy)]
pub struct Nd<'a> {
    doc: &'a Doc,
    idx: u32,
}

impl<'a> Nd<'a> {
    fn entry(&self) -> &'a Entry {
        &self.doc.entries[self.idx as usize]
    }

    fn text(&self) -> &'a str {
        self.doc.str_at(self.entry())
    }

    pub fn is_object(&self) -> bool {
        self.entry().tag == Tag::Obj
    }

    /// The value of an object's member, for partial credit.
    pub fn member(&self, name: &str) -> Option<Nd<'a>> {
        Obj(*self)
            .members()
            .find(|(k, _)| same_bytes(k.as_bytes(), name.as_bytes()))
            .map(|(_, v)| v)
    }

    pub fn value(self) -> Value {
        let e = self.entry();
        match e.tag {
            Tag::Null => Value::Null,
            Tag::False => Value::Bool(false),
            Tag::True => Value::Bool(true),
            Tag::Num => Value::Number(num(self.text())),
            Tag::Str => Value::String(self.text().to_string()),
            Tag::Arr => Value::Array(Elements::of(self).map(Nd::value).collect()),
            Tag::Obj => Value::Object(
                Obj(self)
                    .members()
                    .map(|(k, v)| (k.to_string(), v.value()))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

/// A number's text (valid JSON, as the parser or serde_json wrote it) as serde_json's number.
fn num(t: &str) -> Number {
    t.parse().expect("a JSON number")
}

impl Json for Tape {
    type Node<'a> = Nd<'a>;
    type PreparedKey = String;
    type StringBuffer = Doc;
    // Keys are compared in place, as serde_json's small ordered maps are.
    const KEYS_PER_LOOKUP: usize = 2;
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> String {
        key.to_owned()
    }

    fn with_string_node<T>(buffer: &mut Doc, string: &str, f: impl FnOnce(Nd<'_>) -> T) -> T {
        buffer.entries.clear();
        buffer.pool.clear();
        buffer.push_str(Tag::Str, string);
        f(buffer.root())
    }
}

/// A number as written; every reading follows serde_json's `arbitrary_precision` `Number`.
#[derive(Clone, Copy)]
pub struct Num<'a>(&'a str);

impl JsonNumber for Num<'_> {
    fn as_u64(&self) -> Option<u64> {
        self.0.parse().ok()
    }
    fn as_i64(&self) -> Option<i64> {
        self.0.parse().ok()
    }
    fn as_f64(&self) -> Option<f64> {
        self.0.parse::<f64>().ok().filter(|f| f.is_finite())
    }
    fn as_str(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0)
    }
    fn to_number(&self) -> Cow<'_, Number> {
        Cow::Owned(num(self.0))
    }
    fn is_integer(&self) -> bool {
        // An integer literal that fits is the common case; the rest goes the way serde_json's
        // number does.
        self.as_i64().is_some() || self.as_u64().is_some() || JsonNumber::is_integer(&num(self.0))
    }
    fn is_written_as_integer(&self) -> bool {
        JsonNumber::is_written_as_integer(&num(self.0))
    }
}

impl<'a> Node<'a, Tape> for Nd<'a> {
    type Object = Obj<'a>;
    type Array = Arr<'a>;
    type Number = Num<'a>;

    fn as_object(&self) -> Option<Obj<'a>> {
        (self.entry().tag == Tag::Obj).then_some(Obj(*self))
    }
    fn as_array(&self) -> Option<Arr<'a>> {
        (self.entry().tag == Tag::Arr).then_some(Arr(*self))
    }
    fn as_string(&self) -> Option<Cow<'a, str>> {
        (self.entry().tag == Tag::Str).then(|| Cow::Borrowed(self.text()))
    }
    fn as_number(&self) -> Option<Num<'a>> {
        (self.entry().tag == Tag::Num).then(|| Num(self.text()))
    }
    fn as_boolean(&self) -> Option<bool> {
        match self.entry().tag {
            Tag::True => Some(true),
            Tag::False => Some(false),
            _ => None,
        }
    }
    fn is_null(&self) -> bool {
        self.entry().tag == Tag::Null
    }
    fn is_number(&self) -> bool {
        self.entry().tag == Tag::Num
    }
    fn is_string(&self) -> bool {
        self.entry().tag == Tag::Str
    }
    fn json_type(&self) -> JsonType {
        match self.entry().tag {
            Tag::Null => JsonType::Null,
            Tag::False | Tag::True => JsonType::Boolean,
            Tag::Num => JsonType::Number,
            Tag::Str => JsonType::String,
            Tag::Arr => JsonType::Array,
            Tag::Obj => JsonType::Object,
        }
    }
    fn string_length_within(&self, min: u64, max: u64) -> Option<bool> {
        let s = self.as_string()?;
        // A code point takes one to four bytes: the byte length often settles it uncounted.
        let bytes = s.len() as u64;
        if bytes < min || bytes.div_ceil(4) > max {
            return Some(false);
        }
        if min <= bytes.div_ceil(4) && bytes <= max {
            return Some(true);
        }
        Some((min..=max).contains(&(s.chars().count() as u64)))
    }
    fn equals_value(&self, expected: &Value) -> bool {
        match (self.entry().tag, expected) {
            (Tag::Str, Value::String(s)) => self.text() == s,
            (Tag::Num, Value::Number(n)) => cmp::equal_numbers(&Num(self.text()), n),
            (Tag::Str | Tag::Num, _) => false,
            (Tag::Null, v) => v.is_null(),
            (Tag::True, v) => v == &Value::Bool(true),
            (Tag::False, v) => v == &Value::Bool(false),
            _ => cmp::equal(&self.to_value(), expected),
        }
    }
    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(self.value())
    }
    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(
            std::ptr::from_ref(self.doc) as usize,
            self.idx,
        ))
    }
}

#[derive(Clone, Copy)]
pub struct Obj<'a>(Nd<'a>);

pub struct Members<'a> {
    doc: &'a Doc,
    at: u32,
    left: u32,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, Nd<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let k = &self.doc.entries[self.at as usize];
        let v = Nd {
            doc: self.doc,
            idx: self.at + 1,
        };
        self.at = self.doc.entries[(self.at + 1) as usize].next;
        Some((self.doc.str_at(k), v))
    }
}

impl<'a> Object<'a, Tape> for Obj<'a> {
    type Node = Nd<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        self.0.entry().len as usize
    }
    fn get(&self, key: &String) -> Option<Nd<'a>> {
        self.members()
            .find(|(k, _)| same_bytes(k.as_bytes(), key.as_bytes()))
            .map(|(_, v)| v)
    }
    fn members(&self) -> Members<'a> {
        Members {
            doc: self.0.doc,
            at: self.0.idx + 1,
            left: self.0.entry().len,
        }
    }
}

#[derive(Clone, Copy)]
pub struct Arr<'a>(Nd<'a>);

pub struct Elements<'a> {
    doc: &'a Doc,
    at: u32,
    left: u32,
}

impl<'a> Elements<'a> {
    fn of(n: Nd<'a>) -> Self {
        Elements {
            doc: n.doc,
            at: n.idx + 1,
            left: n.entry().len,
        }
    }
}

impl<'a> Iterator for Elements<'a> {
    type Item = Nd<'a>;
    fn next(&mut self) -> Option<Nd<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let n = Nd {
            doc: self.doc,
            idx: self.at,
        };
        self.at = self.doc.entries[self.at as usize].next;
        Some(n)
    }
}

impl<'a> Array<'a, Tape> for Arr<'a> {
    type Node = Nd<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        self.0.entry().len as usize
    }
    fn elements(&self) -> Elements<'a> {
        Elements::of(self.0)
    }
    fn is_unique(&self) -> bool {
        let all_strings = self.elements().all(|e| e.entry().tag == Tag::Str);
        if all_strings {
            // Strings are equal only when identical: no values need building.
            let mut seen = std::collections::HashSet::with_capacity(self.len());
            return self.elements().all(|e| seen.insert(e.text()));
        }
        let values: Vec<Value> = self.elements().map(Nd::value).collect();
        unique::is_unique(&values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's contract: when it answers, serde_json agrees on the value.
    fn agrees(t: &str) -> bool {
        match parse_fast(t) {
            Some((doc, end)) => {
                let v: Value = serde_json::from_str(&t[..end]).expect("serde_json accepts it");
                assert_eq!(doc.root().value(), v, "{t:?}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn fast_path_values_match_serde_json() {
        for t in [
            r#"{"a": 1, "b": [true, false, null], "c": {"d": "e"}}"#,
            r#"{"k\u0061y": "\ud83e\udd80 \n\t\"\\\/\b\f", "é": "ß"}"#,
            "[-0, 0.0, 1e400, -1E-400, 12345678901234567890123, 1.5e+3]",
            "  [ ]  ",
            "{}",
            r#""text""#,
            "0",
            "-12.5e7",
        ] {
            assert!(agrees(t), "{t}");
        }
    }

    #[test]
    fn fast_path_bails_out_where_the_slow_path_decides() {
        for t in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"a": 1, "\u0061": 2}"#,
            r#"{"a": NaN}"#,
            r#"["\ud800"]"#,
            r#"["\udc00\ud800"]"#,
            r#"["\ud800\u0041"]"#,
            "[01]",
            "[1.]",
            "[.5]",
            "[+1]",
            "[1e]",
            "[tru]",
            "12abc",
            "[1,]",
            r#"{"a":1,}"#,
            "{\"a\":\"\u{1}\"}",
            r#"{"$serde_json::private::Number": "1"}"#,
            r#"{"a" 1}"#,
            "[1 2]",
        ] {
            assert!(parse_fast(t).is_none(), "{t}");
        }
        let deep = format!(
            "{}{}",
            "[".repeat(FAST_DEPTH + 1),
            "]".repeat(FAST_DEPTH + 1)
        );
        assert!(parse_fast(&deep).is_none());
        let ok = format!("{}{}", "[".repeat(FAST_DEPTH), "]".repeat(FAST_DEPTH));
        assert!(agrees(&ok));
    }

    #[test]
    fn big_objects_check_duplicates_by_hash() {
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        let t = format!("{{{}}}", keys.join(", "));
        assert!(agrees(&t));
        let t = format!("{{{}, \"k7\": 0}}", keys.join(", "));
        assert!(parse_fast(&t).is_none());
    }

    /// The tape through the validator gives what serde_json's `Value` gives: verdicts, and
    /// every error's path, keyword and message.
    #[test]
    fn validates_like_serde_json_values() {
        let schemas = [
            r#"{"type": "integer"}"#,
            r#"{"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}"#,
            r#"{"type": "number", "minimum": 0, "maximum": 1e300}"#,
            r#"{"exclusiveMinimum": 0, "multipleOf": 0.01}"#,
            r#"{"multipleOf": 3}"#,
            r#"{"enum": [1, "a", null, true, [1, 2], {"k": 1.0}]}"#,
            r#"{"const": {"a": [1, {"b": "c"}]}}"#,
            r#"{"type": "array", "uniqueItems": true}"#,
            r#"{"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 3}, "maxItems": 3}"#,
            r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "^x+$"}, "b": {"type": "boolean"}}, "required": ["a", "b"], "additionalProperties": false}"#,
            r#"{"type": "object", "propertyNames": {"maxLength": 2}, "minProperties": 1, "maxProperties": 2}"#,
            r#"{"oneOf": [{"type": "string"}, {"type": "number"}], "not": {"const": 0}}"#,
            r##"{"$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}"##,
            r#"{"type": "object", "patternProperties": {"^k": {"type": "integer"}}, "unevaluatedProperties": false}"#,
            r#"{"type": "array", "prefixItems": [{"type": "integer"}], "contains": {"type": "null"}, "unevaluatedItems": false}"#,
        ];
        let instances = [
            "1",
            "1.0",
            "1e2",
            "-0",
            "0",
            "1.5",
            "1e400",
            "-1e400",
            "0.07",
            "12345678901234567890123",
            "18446744073709551615",
            "-9223372036854775809",
            "\"a\"",
            "\"xx\"",
            "\"héé\"",
            "\"🦀🦀\"",
            "null",
            "true",
            "[]",
            "[1, 1.0]",
            "[1, 2]",
            "[\"a\", \"a\"]",
            "[\"ab\", \"abc\", \"a\"]",
            "[{\"k\": 1}, {\"k\": 1.0}]",
            "[1, null]",
            "[1, null, 2]",
            "{}",
            "{\"a\": \"xx\", \"b\": true}",
            "{\"a\": \"xy\", \"b\": 1, \"c\": 2}",
            "{\"k\": 1.0}",
            "{\"k1\": 2, \"x\": 1}",
            "{\"a\": [1, {\"b\": \"c\"}]}",
            "{\"next\": {\"next\": {\"next\": 1}}}",
            "{\"abc\": 1}",
        ];
        for s in schemas {
            let schema: Value = serde_json::from_str(s).unwrap();
            let by_value = jsonschema::options().build(&schema).unwrap();
            let by_tape = jsonschema::options_for::<Tape>().build(&schema).unwrap();
            for t in instances {
                let v: Value = serde_json::from_str(t).unwrap();
                let (doc, _) = parse_fast(t).unwrap();
                assert_eq!(
                    by_value.is_valid(&v),
                    by_tape.is_valid(doc.root()),
                    "{s} on {t}"
                );
                let show = |e: jsonschema::ValidationError<'_>| {
                    (
                        e.instance_path().to_string(),
                        e.kind().keyword().to_string(),
                        e.to_string(),
                    )
                };
                let a: Vec<_> = by_value.iter_errors(&v).map(show).collect();
                let b: Vec<_> = by_tape.iter_errors(doc.root()).map(show).collect();
                assert_eq!(a, b, "{s} on {t}");
            }
        }
    }

    #[test]
    fn plain_runs_stop_at_the_first_special_byte() {
        for t in [
            "abcdefghijklmnop\"",
            "abcdefgh\\ijk",
            "abcdefghi\u{1f}",
            "ééééééé\"x",
            "abc\"",
            "",
            "abcdefgh",
            "a\u{7f}\u{80}bcdefghijk\"",
            "\u{20}\u{21}\u{1f}zzzzzzzz",
        ] {
            let b = t.as_bytes();
            let want = b.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
            let got = plain_run(b, 0);
            match want {
                // The skip may stop early (a partial last word) but never past the byte.
                Some(w) => assert!(got <= w && b[got..w].iter().all(|&c| c >= 0x20), "{t:?}"),
                None => assert!(got <= b.len(), "{t:?}"),
            }
            if let Some(w) = want {
                if w + 8 <= b.len() || w < b.len() - b.len() % 8 {
                    assert_eq!(got, w, "{t:?}");
                }
            }
        }
    }

    #[test]
    fn ends_where_the_value_ends() {
        assert_eq!(parse_fast(r#"{"a": "}"} x"#).map(|(_, e)| e), Some(10));
        assert_eq!(parse_fast("42 ").map(|(_, e)| e), Some(2));
        assert_eq!(parse_fast("true,").map(|(_, e)| e), Some(4));
        assert!(parse_fast("truex").is_none());
    }
}
