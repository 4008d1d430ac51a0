//! Cutting a text (or a trajectory) into steps, the same way for every step component.
//!
//! Modes (`split:`): `paragraphs` (blank lines, the default), `lines`, `numbered` (a step starts
//! at each `1.`, `2)`, `(3)`, `Step 4:` line), `regex` (`pattern` matches the separators),
//! `tag` (`<step>…</step>`, `tag: step`), `separator` (a PRM's own step tag, `ки` or
//! `<extra_0>`: the text between them) and `turns` (a trajectory's assistant turns).
//!
//! What a policy can do to a segmenter, and what it gets:
//! - **No text escapes the steps.** Every non-blank character is in some step: in `tag` mode
//!   the text between tags is a step too, so an error written outside the tags is graded.
//! - **Tiny steps do not count.** A step shorter than `min_chars` (after trimming) is merged
//!   into the step before it (the first into the one after), so "1.\n\n2.\n\n3." is one step.
//! - **The cap is a penalty, not a truncation.** Steps past `max_steps` (default 100) are kept
//!   (their spans are in the result) but not graded: they score 0, so padding past the cap can
//!   only lower min, mean, product and fraction, and graders are called at most `max_steps`
//!   times per sample.
//! - **Repeats are worth nothing.** A step equal to an earlier one (case, spacing and its
//!   leading number ignored) scores 0 without being graded (`repeated: zero`, the default);
//!   `repeated: keep` grades it like any other.

use crate::compile::{At, Compiler};
use crate::trajectory::Trajectory;
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// How a step component cuts its input (`steps:` in the spec).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepsSpec {
    /// `paragraphs` (default), `lines`, `numbered`, `regex`, `tag`, `separator` or `turns`.
    #[serde(default)]
    pub split: Split,
    /// `split: regex`: a regex matching the separators between steps.
    #[serde(default)]
    pub pattern: Option<String>,
    /// `split: tag`: the tag name, `step` for `<step>…</step>`.
    #[serde(default)]
    pub tag: Option<String>,
    /// `split: separator`: the literal step tag between steps (`ки`, `<extra_0>`).
    #[serde(default)]
    pub separator: Option<String>,
    /// Steps past this many score 0 and are not graded (default 100).
    #[serde(default)]
    pub max_steps: Option<usize>,
    /// A step shorter than this many characters is merged into its neighbour (default 1).
    #[serde(default)]
    pub min_chars: Option<usize>,
    /// `zero` (default): a step repeating an earlier one scores 0; `keep`: it is graded.
    #[serde(default)]
    pub repeated: Repeated,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    #[default]
    Paragraphs,
    Lines,
    Numbered,
    Regex,
    Tag,
    Separator,
    Turns,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Repeated {
    #[default]
    Zero,
    Keep,
}

/// Default cap on graded steps per sample.
pub const MAX_STEPS: usize = 100;

enum Mode {
    /// Steps are the text between the matches.
    Cut(Regex),
    /// A step starts at each match (and the text before the first is a step).
    Starts(Regex),
    /// `<tag>…</tag>` contents, and the text between the tags.
    Tag(Regex),
    Separator(String),
    /// `paragraphs`: cut at blank lines ([`blank_lines`]).
    Blank,
    /// `lines`: cut at `\n` and `\r\n`.
    Lines,
    Turns,
}

/// A compiled `steps:` section.
pub struct Segmenter {
    mode: Mode,
    max_steps: usize,
    min_chars: usize,
    repeated: Repeated,
    /// A leading step number, ignored when comparing steps for repeats.
    marker: Regex,
}

/// One step of a sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<'a> {
    pub text: &'a str,
    /// Char offsets into the segmented text (or into the turn's text).
    pub start: usize,
    pub end: usize,
    pub turn: Option<usize>,
    /// The earlier step this one repeats (`repeated: zero`): it scores 0, ungraded.
    pub repeat_of: Option<usize>,
    /// Past `max_steps`: it scores 0, ungraded.
    pub over_cap: bool,
}

impl Step<'_> {
    /// Whether a grader sees this step (it is neither a repeat nor past the cap).
    pub fn graded(&self) -> bool {
        self.repeat_of.is_none() && !self.over_cap
    }
}

/// A sample's steps, with what segmentation did to them.
#[derive(Debug, Default)]
pub struct Segmented<'a> {
    pub steps: Vec<Step<'a>>,
    /// Steps shorter than `min_chars` merged into a neighbour.
    pub merged: usize,
    /// The segmented text is the sample's output text (so token spans can be placed).
    pub on_output: bool,
}

impl Segmented<'_> {
    pub fn over_cap(&self) -> usize {
        self.steps.iter().filter(|s| s.over_cap).count()
    }
    pub fn repeats(&self) -> usize {
        self.steps.iter().filter(|s| s.repeat_of.is_some()).count()
    }
}

const NUMBERED: &str =
    r"(?mi)^[ \t]*(?:[*#]+[ \t]*)?(?:step[ \t]*\d+\b|\d+[.)](?:[ \t]|$)|\(\d+\)|[ivx]+\.[ \t])";
const MARKER: &str = r"(?i)^(?:[*#]+\s*)?(?:step\s*\d+\s*[:.)]?|\d+[.)]|\(\d+\))\s*[*#]*\s*";

impl Segmenter {
    /// Compiles `steps:`; errors are reported at `at`/`steps` and yield `None`.
    pub fn compile(spec: Option<&StepsSpec>, cx: &mut Compiler, at: &At) -> Option<Segmenter> {
        let default = StepsSpec::default();
        let spec = spec.unwrap_or(&default);
        let mut ok = true;
        let mut err = |cx: &mut Compiler, msg: String| {
            cx.err(at, Some("steps"), msg);
            ok = false;
        };
        let needs = [
            (Split::Regex, spec.pattern.is_some(), "pattern"),
            (Split::Tag, spec.tag.is_some(), "tag"),
            (Split::Separator, spec.separator.is_some(), "separator"),
        ];
        for (mode, given, field) in needs {
            if given != (spec.split == mode) {
                let m = format!("{mode:?}").to_lowercase();
                err(
                    cx,
                    if given {
                        format!("`{field}` is for `split: {m}` only")
                    } else {
                        format!("`split: {m}` needs `{field}`")
                    },
                );
            }
        }
        if spec.max_steps == Some(0) {
            err(cx, "`max_steps` must be at least 1".into());
        }
        if spec.split == Split::Turns && spec.min_chars.is_some() {
            err(
                cx,
                "`min_chars` does not apply to `split: turns` (turns are never merged)".into(),
            );
        }
        let mode = match spec.split {
            Split::Paragraphs => Mode::Blank,
            Split::Lines => Mode::Lines,
            Split::Numbered => Mode::Starts(Regex::new(NUMBERED).expect("valid")),
            Split::Regex => {
                match Regex::new(spec.pattern.as_deref().unwrap_or("")) {
                    Ok(r) if r.is_match("") => {
                        err(cx, "`pattern` matches the empty string: every position would be a separator".into());
                        return None;
                    }
                    Ok(r) => Mode::Cut(r),
                    Err(e) => {
                        err(cx, format!("`pattern` is not a valid regex: {e}"));
                        return None;
                    }
                }
            }
            Split::Tag => {
                let t = spec.tag.as_deref().unwrap_or("");
                if t.is_empty() || !t.chars().all(|c| c.is_alphanumeric() || "_-:".contains(c)) {
                    err(
                        cx,
                        format!("`tag` must be a tag name (letters, digits, `_-:`), found `{t}`"),
                    );
                    return None;
                }
                let t = regex::escape(t);
                Mode::Tag(Regex::new(&format!(r"(?is)<{t}>(.*?)(?:</{t}>|\z)")).expect("valid"))
            }
            Split::Separator => match spec.separator.as_deref() {
                Some(s) if !s.trim().is_empty() => Mode::Separator(s.to_string()),
                _ => {
                    err(cx, "`separator` must not be empty or blank".into());
                    return None;
                }
            },
            Split::Turns => Mode::Turns,
        };
        ok.then(|| Segmenter {
            mode,
            max_steps: spec.max_steps.unwrap_or(MAX_STEPS),
            min_chars: spec.min_chars.unwrap_or(1),
            repeated: spec.repeated,
            marker: Regex::new(MARKER).expect("valid"),
        })
    }

    /// Whether the steps are a trajectory's turns rather than a text's parts.
    pub fn on_turns(&self) -> bool {
        matches!(self.mode, Mode::Turns)
    }

    /// The separator a PRM request joins steps with, when the spec gave one.
    pub fn separator(&self) -> Option<&str> {
        match &self.mode {
            Mode::Separator(s) => Some(s),
            _ => None,
        }
    }

    /// A sample's steps: its trajectory's turns (`split: turns`), else the parts of `text`.
    pub fn segment<'a>(&self, s: &'a crate::sample::Sample, text: &'a str) -> Segmented<'a> {
        if self.on_turns() {
            self.split_turns(s.trajectory())
        } else {
            let mut seg = self.split(text);
            seg.on_output = text == s.output_text;
            seg
        }
    }

    /// The steps of a text.
    pub fn split<'a>(&self, text: &'a str) -> Segmented<'a> {
        let ranges = trimmed(text, self.raw(text));
        let (ranges, merged) = merge_short(text, ranges, self.min_chars);
        let mut steps = Vec::with_capacity(ranges.len());
        // In ASCII text (the common case) char offsets are byte offsets: nothing to count.
        let ascii = text.is_ascii();
        let count = |t: &str| if ascii { t.len() } else { t.chars().count() };
        let (mut byte, mut chr) = (0, 0);
        for (a, b) in ranges {
            chr += count(&text[byte..a]);
            let start = chr;
            chr += count(&text[a..b]);
            byte = b;
            steps.push(Step {
                text: &text[a..b],
                start,
                end: chr,
                turn: None,
                repeat_of: None,
                over_cap: false,
            });
        }
        let mut s = Segmented {
            steps,
            merged,
            on_output: false,
        };
        self.mark(&mut s);
        s
    }

    /// The steps of a trajectory: its assistant turns with text, each its own step (spans into
    /// the turn's text, never merged).
    pub fn split_turns<'a>(&self, t: &'a Trajectory) -> Segmented<'a> {
        let steps = t
            .assistant_turns()
            .filter_map(|u| {
                let lead = u.text.len() - u.text.trim_start().len();
                let text = u.text.trim();
                (!text.is_empty()).then(|| {
                    let start = u.text[..lead].chars().count();
                    Step {
                        text,
                        start,
                        end: start + text.chars().count(),
                        turn: Some(u.index),
                        repeat_of: None,
                        over_cap: false,
                    }
                })
            })
            .collect();
        let mut s = Segmented {
            steps,
            merged: 0,
            on_output: false,
        };
        self.mark(&mut s);
        s
    }

    /// Marks repeats and steps past the cap.
    fn mark(&self, s: &mut Segmented<'_>) {
        // Each step's folded text goes into one buffer (no string per step); repeats are found
        // by the hash of the folded text and confirmed by comparing it, so a hash collision
        // never makes a step a repeat.
        let mut arena: Vec<u8> = Vec::new();
        if self.repeated == Repeated::Zero {
            arena.reserve(s.steps.iter().map(|st| st.text.len()).sum());
        }
        let mut keys: Vec<std::ops::Range<usize>> = Vec::with_capacity(s.steps.len());
        // The first step with each hash; a later step with the same hash but other text (a
        // collision, practically never) is compared with every earlier step instead.
        let mut seen: HashMap<u64, usize, foldhash::fast::FixedState> =
            HashMap::with_capacity_and_hasher(s.steps.len(), foldhash::fast::FixedState::default());
        let hasher = foldhash::fast::FixedState::default();
        let mut graded = 0;
        for i in 0..s.steps.len() {
            if self.repeated == Repeated::Zero {
                let start = arena.len();
                fold_into(self.body(s.steps[i].text), &mut arena);
                keys.push(start..arena.len());
                let key = &arena[start..];
                if !key.is_empty() {
                    let same = |j: &usize| arena[keys[*j].clone()] == *key;
                    let earlier = match seen.entry(hasher.hash_one(key)) {
                        Entry::Vacant(v) => {
                            v.insert(i);
                            None
                        }
                        Entry::Occupied(o) if same(o.get()) => Some(*o.get()),
                        Entry::Occupied(_) => {
                            (0..i).find(|j| s.steps[*j].repeat_of.is_none() && same(j))
                        }
                    };
                    if let Some(j) = earlier {
                        s.steps[i].repeat_of = Some(j);
                        continue;
                    }
                }
            }
            graded += 1;
            s.steps[i].over_cap = graded > self.max_steps;
        }
    }

    /// A step as compared for repeats: without its leading number.
    fn body<'t>(&self, text: &'t str) -> &'t str {
        // Only these can begin a marker (`MARKER`): most steps skip the regex. Any non-ASCII
        // byte may (Unicode digits, `ſ` which `(?i)` folds to `s`).
        let may = |b: u8| {
            b >= 0x80 || b.is_ascii_digit() || matches!(b, b'*' | b'#' | b'(' | b's' | b'S')
        };
        if !text.bytes().next().is_some_and(may) {
            return text;
        }
        self.marker.find(text).map_or(text, |m| &text[m.end()..])
    }

    /// Byte ranges before trimming.
    fn raw(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        match &self.mode {
            Mode::Cut(re) => {
                let mut at = 0;
                for m in re.find_iter(text) {
                    out.push((at, m.start()));
                    at = m.end();
                }
                out.push((at, text.len()));
            }
            Mode::Starts(re) => {
                let mut at = 0;
                for m in re.find_iter(text) {
                    out.push((at, m.start()));
                    at = m.start();
                }
                out.push((at, text.len()));
            }
            Mode::Tag(re) => {
                let mut at = 0;
                for c in re.captures_iter(text) {
                    let (whole, inner) = (c.get(0).expect("match"), c.get(1).expect("group"));
                    out.push((at, whole.start()));
                    out.push((inner.start(), inner.end()));
                    at = whole.end();
                }
                out.push((at, text.len()));
            }
            Mode::Separator(sep) => {
                let mut at = 0;
                for (i, _) in text.match_indices(sep.as_str()) {
                    out.push((at, i));
                    at = i + sep.len();
                }
                out.push((at, text.len()));
            }
            Mode::Blank => {
                let mut at = 0;
                for (a, b) in blank_lines(text) {
                    out.push((at, a));
                    at = b;
                }
                out.push((at, text.len()));
            }
            Mode::Lines => {
                let mut at = 0;
                for i in memchr::memchr_iter(b'\n', text.as_bytes()) {
                    let cr = i > at && text.as_bytes()[i - 1] == b'\r';
                    out.push((at, if cr { i - 1 } else { i }));
                    at = i + 1;
                }
                out.push((at, text.len()));
            }
            Mode::Turns => out.push((0, text.len())),
        }
        out
    }
}

#[cfg(test)]
impl Segmenter {
    fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }
}

/// The blank lines of `text` as byte ranges: what the regex `\n[ \t\r]*\n` finds, leftmost
/// first and not overlapping, by a `memchr` scan (the paragraph cut is on every step's path).
fn blank_lines(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let b = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        while let Some(i) = memchr::memchr(b'\n', &b[from..]).map(|k| from + k) {
            let mut j = i + 1;
            while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\r') {
                j += 1;
            }
            if j < b.len() && b[j] == b'\n' {
                from = j + 1;
                return Some((i, j + 1));
            }
            from = j.max(i + 1);
        }
        None
    })
}

/// Appends `text` case- and space-folded to `out`: lower-cased, runs of whitespace as one
/// space, none at either end (bytewise for ASCII, the common case).
fn fold_into(text: &str, out: &mut Vec<u8>) {
    let mut space = false;
    let mut first = true;
    if text.is_ascii() {
        for (i, w) in text.split_ascii_whitespace().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.extend(w.bytes().map(|b| b.to_ascii_lowercase()));
        }
        return;
    }
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space && !first {
            out.push(b' ');
        }
        for l in c.to_lowercase() {
            out.extend_from_slice(l.encode_utf8(&mut [0; 4]).as_bytes());
        }
        (space, first) = (false, false);
    }
}

/// Ranges with their surrounding whitespace removed, empty ones dropped.
fn trimmed(text: &str, ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges
        .into_iter()
        .filter_map(|(a, b)| {
            let s = &text[a..b];
            let t = s.trim_start();
            let a = a + (s.len() - t.len());
            let b = a + t.trim_end().len();
            (b > a).then_some((a, b))
        })
        .collect()
}

/// Steps shorter than `min` chars merged into the step before (the first into the one after).
fn merge_short(
    text: &str,
    ranges: Vec<(usize, usize)>,
    min: usize,
) -> (Vec<(usize, usize)>, usize) {
    if min <= 1 {
        return (ranges, 0);
    }
    // A char is 1 to 4 bytes: only lengths in between need counting.
    let short = |a: usize, b: usize| {
        let n = b - a;
        n < min || (n < 4 * min && text[a..b].chars().count() < min)
    };
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    let mut merged = 0;
    let mut carry: Option<usize> = None;
    for (a, b) in ranges {
        // A step is judged short on its own text, not with what is carried into it.
        if short(a, b) {
            merged += 1;
            match out.last_mut() {
                Some(prev) => prev.1 = b,
                None => carry = carry.or(Some(a)),
            }
        } else {
            out.push((carry.take().unwrap_or(a), b));
        }
    }
    if let Some(a) = carry {
        // Everything was short: one step of it all.
        out.push((
            a,
            trimmed(text, vec![(a, text.len())])
                .first()
                .map_or(a, |r| r.1),
        ));
        merged -= 1;
    }
    (out, merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn seg(spec: serde_json::Value) -> Segmenter {
        let spec: StepsSpec = serde_json::from_value(spec).unwrap();
        let mut cx = Compiler::new();
        let s = Segmenter::compile(
            Some(&spec),
            &mut cx,
            &At {
                path: String::new(),
                kind: "each_step",
            },
        );
        assert!(!cx.has_errors(), "{:?}", cx.into_errors());
        s.unwrap()
    }

    fn texts<'a>(s: &'a Segmented<'a>) -> Vec<&'a str> {
        s.steps.iter().map(|s| s.text).collect()
    }

    proptest::proptest! {
        /// The hand-written cuts are the regexes they replace, on any mix of the bytes that
        /// matter.
        #[test]
        fn paragraph_and_line_cuts_are_the_regexes(
            text in proptest::string::string_regex("[ab \t\r\n]{0,40}").unwrap()
        ) {
            for (mode, re) in [(Mode::Blank, r"\n[ \t\r]*\n"), (Mode::Lines, r"\r?\n")] {
                let fast = seg(json!({})).with_mode(mode).raw(&text);
                let slow = seg(json!({})).with_mode(Mode::Cut(Regex::new(re).unwrap())).raw(&text);
                proptest::prop_assert_eq!(fast, slow, "{:?} {:?}", re, text);
            }
        }
    }

    #[test]
    fn paragraphs_are_cut_at_blank_lines_with_char_spans() {
        let t = "Héllo wörld.\n\n  x = 2 \n \nSo 4.";
        let s = seg(json!({}));
        let got = s.split(t);
        assert_eq!(texts(&got), ["Héllo wörld.", "x = 2", "So 4."]);
        let chars: Vec<char> = t.chars().collect();
        for st in &got.steps {
            assert_eq!(chars[st.start..st.end].iter().collect::<String>(), st.text);
        }
    }

    #[test]
    fn every_mode_keeps_every_non_blank_character() {
        let cases = [
            (json!({"split": "lines"}), "a\nb\r\n\nc"),
            (
                json!({"split": "numbered"}),
                "Intro\n1. one\n2) two\nStep 3: three\n(4) four",
            ),
            (json!({"split": "regex", "pattern": ";"}), "a;b;;c"),
            (
                json!({"split": "tag", "tag": "step"}),
                "pre <step>a</step> mid <STEP>b</step><step>open",
            ),
            (
                json!({"split": "separator", "separator": "ки"}),
                "a ки b кики c",
            ),
        ];
        for (spec, t) in cases {
            let s = seg(spec.clone());
            let got = s.split(t);
            let kept: String = got.steps.iter().map(|s| s.text).collect::<String>();
            let letters = |x: &str| {
                x.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
                    .to_lowercase()
                    .replace("step", "")
                    .replace("ки", "")
            };
            assert_eq!(letters(&kept), letters(t), "{spec}");
        }
    }

    #[test]
    fn numbered_steps_start_at_each_marker() {
        let s = seg(json!({"split": "numbered"}));
        let got = s.split("Let us see.\n1. a = 1\n2. b = 2\nStep 3: c = 3\n**Step 4** d");
        assert_eq!(
            texts(&got),
            [
                "Let us see.",
                "1. a = 1",
                "2. b = 2",
                "Step 3: c = 3",
                "**Step 4** d"
            ]
        );
    }

    #[test]
    fn text_outside_tags_is_a_step_too() {
        let s = seg(json!({"split": "tag", "tag": "step"}));
        let got = s.split("<step>2+2=4</step>\nwrong: 2+2=5\n<step>done</step>");
        assert_eq!(texts(&got), ["2+2=4", "wrong: 2+2=5", "done"]);
    }

    #[test]
    fn short_steps_merge_into_their_neighbours() {
        let s = seg(json!({"min_chars": 5}));
        let got = s.split("1.\n\n2.\n\nx = 12345\n\n3.\n\nthe end here");
        assert_eq!(texts(&got), ["1.\n\n2.\n\nx = 12345\n\n3.", "the end here"]);
        assert_eq!(got.merged, 3);
        let all_short = s.split("a\n\nb");
        assert_eq!(texts(&all_short), ["a\n\nb"]);
    }

    #[test]
    fn repeats_and_steps_past_the_cap_are_not_graded() {
        let s = seg(json!({"max_steps": 2}));
        let got = s.split("1. x = 2\n\n2.  X =  2\n\nx = 3\n\nx = 4");
        let marks: Vec<_> = got
            .steps
            .iter()
            .map(|s| (s.repeat_of, s.over_cap))
            .collect();
        assert_eq!(
            marks,
            [(None, false), (Some(0), false), (None, false), (None, true)]
        );
        let folded = seg(json!({})).split("Ünïcode  Step\n\nünïcode step");
        assert_eq!(folded.steps[1].repeat_of, Some(0));
        let keep = seg(json!({"repeated": "keep"})).split("a\n\na");
        assert!(keep.steps.iter().all(Step::graded));
    }

    #[test]
    fn bad_specs_are_refused_with_their_field() {
        for (spec, msg) in [
            (json!({"split": "regex"}), "needs `pattern`"),
            (json!({"split": "regex", "pattern": "x*"}), "empty string"),
            (
                json!({"split": "regex", "pattern": "("}),
                "not a valid regex",
            ),
            (json!({"pattern": "x"}), "`split: regex` only"),
            (json!({"split": "tag", "tag": "a b"}), "tag name"),
            (json!({"split": "separator", "separator": " "}), "blank"),
            (json!({"max_steps": 0}), "at least 1"),
            (json!({"split": "turns", "min_chars": 3}), "never merged"),
        ] {
            let spec: StepsSpec = serde_json::from_value(spec).unwrap();
            let mut cx = Compiler::new();
            assert!(Segmenter::compile(
                Some(&spec),
                &mut cx,
                &At {
                    path: String::new(),
                    kind: "each_step"
                }
            )
            .is_none());
            let e = cx.into_errors();
            assert!(e.iter().any(|e| e.message.contains(msg)), "{msg}: {e:?}");
        }
    }

    #[test]
    fn turns_are_the_assistant_turns_with_text() {
        let msgs = json!([
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "  look up", "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "r"},
            {"role": "assistant", "content": ""},
            {"role": "assistant", "content": "answer"}
        ]);
        let t = Trajectory::from_messages(msgs.as_array().unwrap());
        let got = seg(json!({"split": "turns"})).split_turns(&t);
        let v: Vec<_> = got
            .steps
            .iter()
            .map(|s| (s.turn, s.text, s.start, s.end))
            .collect();
        assert_eq!(v, [(Some(1), "look up", 2, 9), (Some(4), "answer", 0, 6)]);
    }
}
