//! What backs a claim: a tool call that succeeded before it, a condition on the final state,
//! and the values a claim quotes found where the environment put them.

use crate::node::shorten;
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::fold::fold;
use crate::trajectory::{Call, Trajectory};
use regex::Regex;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

/// Which of the calls made before the claim must back it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhichCall {
    /// The last call to the tool (a later failure undoes an earlier success: the tests that
    /// passed, then broke).
    #[default]
    Last,
    /// Any call to the tool.
    Any,
}

/// A named check of a tool's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultCheck {
    /// A test run's summary (pytest, unittest, cargo, go, jest) reports at least one passing test
    /// and no failure, error, or empty run (`0 passed`, `no tests ran`, `collected 0 items`).
    TestsPassed,
}

/// A successful call to one of `names` before the claim.
pub(super) struct ToolCheck {
    pub names: Vec<String>,
    pub which: WhichCall,
    pub matches: Option<Regex>,
    pub not_matches: Option<Regex>,
    pub result: Option<ResultCheck>,
}

/// A condition on the final state (or on any template): the value exists, or equals one.
pub(super) struct StateCheck {
    pub value: Template,
    pub equals: Option<Expected>,
    /// How the trace names it (`state bookings[0].status`).
    pub shown: String,
}

pub(super) enum Expected {
    Value(Value),
    Template(Template),
}

pub(super) enum Evidence {
    Tool(ToolCheck),
    State(StateCheck),
}

impl Evidence {
    /// What it requires, for the trace.
    pub fn describe(&self) -> String {
        match self {
            Evidence::Tool(t) => {
                let mut d = format!(
                    "{} call to {} succeeded before it",
                    match t.which {
                        WhichCall::Last => "the last",
                        WhichCall::Any => "a",
                    },
                    t.shown_names()
                );
                if let Some(r) = &t.matches {
                    let _ = write!(d, ", its result matching `{}`", r.as_str());
                }
                if let Some(r) = &t.not_matches {
                    let _ = write!(d, ", its result not matching `{}`", r.as_str());
                }
                if t.result == Some(ResultCheck::TestsPassed) {
                    d.push_str(", its result a passing test run");
                }
                d
            }
            Evidence::State(s) => match &s.equals {
                None => format!("{} exists", s.shown),
                Some(Expected::Value(v)) => format!("{} is {}", s.shown, short(v)),
                Some(Expected::Template(t)) => format!("{} is {}", s.shown, t.source()),
            },
        }
    }

    /// `Ok(None)`: it holds for a claim in turn `before`; `Ok(Some(why))`: it does not;
    /// `Err`: the row cannot be scored (the dataset or the record lacks what it reads).
    pub fn check(
        &self,
        s: &Sample,
        t: &Trajectory,
        before: usize,
    ) -> Result<Option<String>, Outcome> {
        match self {
            Evidence::Tool(c) => Ok(c.check(t, before)),
            Evidence::State(c) => c.check(s),
        }
    }
}

impl ToolCheck {
    fn shown_names(&self) -> String {
        self.names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(" or ")
    }

    /// The calls to its tools made before turn `before`.
    pub fn calls_before<'t>(
        &'t self,
        t: &'t Trajectory,
        before: usize,
    ) -> impl Iterator<Item = &'t Call> + 't {
        t.calls
            .iter()
            .filter(move |c| c.turn < before && self.names.contains(&c.name))
    }

    fn check(&self, t: &Trajectory, before: usize) -> Option<String> {
        let calls: Vec<&Call> = self.calls_before(t, before).collect();
        let Some(last) = calls.last() else {
            let orphan = t
                .orphans()
                .any(|o| o.name.as_ref().is_some_and(|n| self.names.contains(n)));
            return Some(format!(
                "no call to {} before it{}",
                self.shown_names(),
                if orphan {
                    " (a tool turn that answers no call is not a result)"
                } else {
                    ""
                }
            ));
        };
        match self.which {
            WhichCall::Last => self.backs(t, last, before).err(),
            WhichCall::Any => {
                let mut why = None;
                for c in calls.iter().rev() {
                    match self.backs(t, c, before) {
                        Ok(()) => return None,
                        Err(w) => {
                            why.get_or_insert(w);
                        }
                    }
                }
                why.map(|w| format!("no call to {} backs it; the last: {w}", self.shown_names()))
            }
        }
    }

    /// Whether one call backs the claim; why not, if it does not.
    fn backs(&self, t: &Trajectory, c: &Call, before: usize) -> Result<(), String> {
        let at = t.turns[c.turn].index;
        let name = &c.name;
        let Some(r) = c.result.filter(|r| *r < before) else {
            return Err(format!(
                "the call to `{name}` (message {at}) has no result before the claim"
            ));
        };
        let turn = &t.turns[r];
        if turn.error {
            return Err(format!(
                "the call to `{name}` (message {at}) failed: the environment flagged its result (message {}) as an error",
                turn.index
            ));
        }
        let text = turn.text.as_str();
        if let Some(re) = &self.matches {
            if !re.is_match(text) {
                return Err(format!(
                    "the result of `{name}` (message {}) does not match `{}`",
                    turn.index,
                    re.as_str()
                ));
            }
        }
        if let Some(re) = &self.not_matches {
            if let Some(m) = re.find(text) {
                return Err(format!(
                    "the result of `{name}` (message {}) has `{}`",
                    turn.index,
                    shorten(m.as_str())
                ));
            }
        }
        if self.result == Some(ResultCheck::TestsPassed) {
            if let Some(m) = TESTS_FAILED.find(text) {
                return Err(format!(
                    "the test run (message {}) shows a failure or an empty run: `{}`",
                    turn.index,
                    shorten(m.as_str())
                ));
            }
            if !TESTS_PASSED.is_match(text) {
                return Err(format!(
                    "the test run (message {}) shows no passing test",
                    turn.index
                ));
            }
        }
        Ok(())
    }
}

/// At least one passing test in a runner's summary.
static TESTS_PASSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?imx)
        \b[1-9]\d*\s+(?:tests?\s+)?pass(?:ed|ing|es)?\b
      | \bran\s+[1-9]\d*\s+tests?\b
      | ^ok\s+\S+
      | (?-i:^PASS\s*$)",
    )
    .expect("tests passed")
});

/// A failure, an error or an empty run in a runner's summary. `FAILED`, `FAIL` and `ERROR` in
/// capitals are the runners' own markers; in lower case only with a count (`0 failed` is fine).
static TESTS_FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?imx)
        \b[1-9]\d*\s+(?:tests?\s+)?(?:failed|failing|failures?|errors?|errored)\b
      | (?-i:\bFAILED\b|\bFAIL\b|\bERROR\b)
      | \bno\s+tests?\s+(?:ran|run|were\s+run|found|collected|executed|to\s+run)\b
      | \bno\s+test\s+files\b
      | \bcollected\s+0\s+items\b
      | \b0\s+selected\b
      | \bran\s+0\s+tests\b
      | (?:^|[^\d.])0\s+(?:tests?\s+)?passed\b
      | \b0\s+tests\b
      | \bpanicked\s+at\b
      | \btraceback\s+\(most\s+recent\s+call\s+last\)
      | \berror(?:\[E\d+\])?:",
    )
    .expect("tests failed")
});

impl StateCheck {
    fn check(&self, s: &Sample) -> Result<Option<String>, Outcome> {
        let got = match self.value.render_value(s) {
            Ok(v) => v,
            Err(m) if m.policy => return Ok(Some(m.message)),
            Err(m) => return Err(Outcome::error(m.reason, m.message)),
        };
        let Some(equals) = &self.equals else {
            return Ok((!present(&got)).then(|| format!("{} is {}", self.shown, short(&got))));
        };
        let want: Cow<'_, Value> = match equals {
            Expected::Value(v) => Cow::Borrowed(v),
            Expected::Template(t) => match t.render_value(s) {
                Ok(v) => v,
                Err(m) if m.policy => return Ok(Some(m.message)),
                Err(m) => return Err(Outcome::error(m.reason, m.message)),
            },
        };
        Ok((!same(&want, &got))
            .then(|| format!("{} is {}, not {}", self.shown, short(&got), short(&want))))
    }
}

/// A value that says something exists: not null, false, or empty.
fn present(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

/// Equal values; numbers by value (`7` and `7.0`), never a number and the string spelling it.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn short(v: &Value) -> String {
    shorten(&v.to_string())
}

/// Texts a quoted value is looked for in, folded and lower-cased.
#[derive(Default)]
pub(super) struct Haystack(Vec<String>);

impl Haystack {
    pub fn push(&mut self, text: &str) {
        self.0.push(fold(text).to_lowercase());
    }

    /// The string leaves of a value, its keys and numbers too.
    pub fn push_leaves(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.push(s),
            Value::Number(n) => self.0.push(n.to_string()),
            Value::Array(a) => a.iter().for_each(|x| self.push_leaves(x)),
            Value::Object(o) => {
                for (k, x) in o {
                    self.push(k);
                    self.push_leaves(x);
                }
            }
            _ => {}
        }
    }

    /// Whether a text holds the value as a whole token (not `A17` inside `A170`).
    pub fn holds(&self, value: &str) -> bool {
        let needle = fold(value).to_lowercase();
        !needle.is_empty() && self.0.iter().any(|h| holds_token(h, &needle))
    }
}

fn holds_token(hay: &str, needle: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay[..i].chars().next_back();
        let after = hay[i + needle.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_runs_are_read_from_their_summaries() {
        let passing = |t: &str| TESTS_PASSED.is_match(t) && !TESTS_FAILED.is_match(t);
        for t in [
            "===== 12 passed in 0.31s =====",
            "Ran 5 tests in 0.002s\n\nOK",
            "test result: ok. 7 passed; 0 failed; 0 ignored",
            "ok  \texample.com/pkg\t0.012s",
            "Tests:       4 passed, 4 total",
        ] {
            assert!(passing(t), "{t:?}");
        }
        for t in [
            "==== 3 passed, 1 failed in 0.2s ====",
            "FAILED tests/test_x.py::test_y - AssertionError",
            "Ran 5 tests in 0.002s\n\nFAILED (failures=2)",
            "collected 0 items\n\n==== no tests ran in 0.01s ====",
            "collected 4 items / 4 deselected / 0 selected",
            "0 passed, 0 failed",
            "test result: FAILED. 6 passed; 1 failed",
            "ok  \texample.com/pkg\t0.012s [no tests to run]",
            "?   \texample.com/pkg\t[no test files]",
            "Tests: 1 failed, 3 passed, 4 total",
            "error[E0425]: cannot find value `x` in this scope",
            "all good",
        ] {
            assert!(!passing(t), "{t:?}");
        }
    }

    #[test]
    fn quoted_values_are_whole_tokens() {
        let mut h = Haystack::default();
        h.push("Booked. Confirmation A170, table 7");
        h.push_leaves(&serde_json::json!({"files": {"out/report.csv": "…"}, "n": 42}));
        assert!(!h.holds("A17"));
        assert!(h.holds("a170"));
        assert!(h.holds("out/report.csv"));
        assert!(h.holds("42"));
        assert!(!h.holds(""));
    }

    #[test]
    fn values_compare_by_kind() {
        use serde_json::json;
        assert!(same(&json!(7), &json!(7.0)));
        assert!(!same(&json!(7), &json!("7")));
        assert!(same(&json!({"a": [1, 2]}), &json!({"a": [1.0, 2]})));
        assert!(!present(&json!([])) && !present(&json!(null)) && present(&json!(0)));
    }
}
