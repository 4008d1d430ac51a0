//! The reasoning section of an output, and what is left once it is taken away.
//!
//! Graders of the *answer* (IFEval constraints, JSON outputs, tool calls written as text) must not
//! read the model's thinking: a constraint met only inside `<think>…</think>` is not met, and a
//! JSON object drafted in the reasoning is not the answer. The rule, shared by every grader that
//! offers `reasoning: strip`:
//! - the answer is what follows the **last** closing tag (`</think>`, `</thinking>`,
//!   `</reasoning>`), so a chat template that opened `<think>` in the prompt still works;
//! - an opening tag with no closing tag after it starts reasoning that never ended: the answer
//!   stops there (an output that is *only* reasoning, cut off or not, has an empty answer);
//! - an output with no tags at all is all answer.
//!
//! This is open-instruct's `split("</think>")[-1]`, plus the unclosed case, which open-instruct
//! would grade as if the reasoning were the answer.

use schemars::JsonSchema;
use serde::Deserialize;

const OPEN: &[&str] = &["<think>", "<thinking>", "<reasoning>"];
const CLOSE: &[&str] = &["</think>", "</thinking>", "</reasoning>"];

/// Whether a grader reads the whole output or only the part after the reasoning section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reasoning {
    /// Grade only what follows the reasoning section (see the module docs).
    #[default]
    Strip,
    /// Grade the text as given.
    Keep,
}

/// The answer part of an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    pub text: &'a str,
    /// A reasoning section was found and removed.
    pub stripped: bool,
    /// Reasoning was opened and never closed: everything after the opening tag was dropped.
    pub unclosed: bool,
}

impl Reasoning {
    pub fn apply(self, text: &str) -> Answer<'_> {
        match self {
            Reasoning::Strip => strip_reasoning(text),
            Reasoning::Keep => Answer {
                text,
                stripped: false,
                unclosed: false,
            },
        }
    }
}

/// See the module docs. One pass over the `<`s of the text (outputs have few), not a
/// substring search per tag.
pub fn strip_reasoning(text: &str) -> Answer<'_> {
    let b = text.as_bytes();
    if memchr::memchr(b'<', b).is_none() {
        return Answer {
            text,
            stripped: false,
            unclosed: false,
        };
    }
    let tag_at = |i: usize, tags: &[&str]| {
        tags.iter()
            .find(|t| b[i..].starts_with(t.as_bytes()))
            .map(|t| t.len())
    };
    let after_close = memchr::memrchr_iter(b'<', b).find_map(|i| tag_at(i, CLOSE).map(|n| i + n));
    let from = after_close.unwrap_or(0);
    let open = memchr::memchr_iter(b'<', &b[from..]).find(|&i| tag_at(from + i, OPEN).is_some());
    let rest = &text[from..];
    Answer {
        text: open.map_or(rest, |i| &rest[..i]),
        stripped: after_close.is_some() || open.is_some(),
        unclosed: open.is_some(),
    }
}

/// The reasoning section itself, tags removed: what a likelihood reward keeps of the output
/// when the answer must not be read. From the first opening tag (or the start, when a chat
/// template opened it in the prompt) to the last closing tag; reasoning never closed runs to
/// the end; an output without tags has none ("").
pub fn reasoning_section(text: &str) -> &str {
    let close = CLOSE.iter().filter_map(|t| text.rfind(t)).max();
    let open_in = |hay: &str| {
        OPEN.iter()
            .filter_map(|t| hay.find(t).map(|i| (i, t.len())))
            .min()
    };
    match close {
        Some(end) => {
            let head = &text[..end];
            match open_in(head) {
                Some((i, n)) => &head[i + n..],
                None => head,
            }
        }
        None => match open_in(text) {
            Some((i, n)) => &text[i + n..],
            None => "",
        },
    }
}

/// `<answer>…</answer>` wrappers removed (open-instruct removes the tags, keeping what they hold).
pub fn unwrap_answer_tags(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("<answer>") || text.contains("</answer>") {
        text.replace("<answer>", "").replace("</answer>", "").into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ans(t: &str) -> &str {
        strip_reasoning(t).text
    }

    #[test]
    fn the_reasoning_section_is_what_the_answer_is_not() {
        assert_eq!(reasoning_section("<think>a</think>b"), "a");
        assert_eq!(
            reasoning_section("opened in the prompt a</think>b"),
            "opened in the prompt a"
        );
        assert_eq!(
            reasoning_section("<think>a</think>b<think>c</think>d"),
            "a</think>b<think>c"
        );
        assert_eq!(reasoning_section("x<think>cut off"), "cut off");
        assert_eq!(reasoning_section("no tags"), "");
    }

    #[test]
    fn after_the_last_closing_tag() {
        assert_eq!(ans("<think>a</think>b"), "b");
        assert_eq!(ans("prompt-opened a</think>\nb"), "\nb");
        assert_eq!(ans("<think>a</think>b<think>c</think>d"), "d");
        assert_eq!(ans("<thinking>x</thinking>y"), "y");
        assert_eq!(ans("plain"), "plain");
        assert!(!strip_reasoning("plain").stripped);
    }

    #[test]
    fn unclosed_reasoning_is_not_an_answer() {
        let a = strip_reasoning("<think>the answer is {\"a\": 1}");
        assert_eq!(a.text, "");
        assert!(a.unclosed && a.stripped);
        assert_eq!(ans("<think>a</think>b <think>hidden"), "b ");
        assert_eq!(ans("lead <reasoning>cut"), "lead ");
    }

    #[test]
    fn keep_keeps() {
        assert_eq!(
            Reasoning::Keep.apply("<think>a</think>b").text,
            "<think>a</think>b"
        );
    }

    #[test]
    fn answer_tags() {
        assert_eq!(unwrap_answer_tags("<answer>x</answer>"), "x");
        assert_eq!(unwrap_answer_tags("y"), "y");
    }
}
