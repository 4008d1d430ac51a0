//! Where a value the agent passed to a tool came from: the first turn that showed it to the
//! agent, among the sources a `grounded` rule accepts.
//!
//! A source is a successful result (a `tool` turn answering a call of a tool in `from`, not
//! flagged as an error) or, with `from_user`, a user message. The value must occur in the
//! source's text as a whole token ([`crate::text::has_token`]: `T-17` is in "tables T-17,
//! T-18", `7` is not in "7pm" nor in "17"). A result never shows the agent a value that its own
//! call was given: a search that echoes its query ("no table T-99") would otherwise ground any
//! invented id. The assistant's own text and orphan tool turns are never sources.
//!
//! The sources are indexed once per rule and sample by their words (runs of letters and
//! digits), so looking a value up costs the occurrences of its first word, not a search of the
//! whole transcript: a rollout with many values and long results stays linear.

use super::rules::Tools;
use crate::text::{has_token, whole_at};
use crate::trajectory::Trajectory;
use std::collections::HashMap;

/// Candidate occurrences a rule may check per sample before it gives up: a bound for rollouts
/// made to be slow (a value whose first word is in every result, thousands of times), far
/// above what a real one needs.
pub(super) const BUDGET: usize = 1 << 20;

/// One rule's sources, with the first showing of each value looked up once per sample.
pub(super) struct Sources<'r, 't> {
    from: &'r Tools,
    from_user: bool,
    /// Word → where it starts in the sources: (turn, byte offset), in turn order. Built on the
    /// first lookup.
    words: Option<HashMap<&'t str, Vec<(usize, usize)>>>,
    /// Value → the first turn (index into the trajectory's turns) that showed it.
    first: HashMap<String, Option<usize>>,
    checked: usize,
}

impl<'r, 't> Sources<'r, 't> {
    pub(super) fn new(from: &'r Tools, from_user: bool) -> Self {
        Sources {
            from,
            from_user,
            words: None,
            first: HashMap::new(),
            checked: 0,
        }
    }

    /// Whether `value` was shown to the agent before turn `turn` (results arrive after the
    /// turn that made the call, so a result in a turn before `turn` was there to read).
    /// `Err(budget)` when the rule's budget of candidate occurrences is spent.
    pub(super) fn shown_before(
        &mut self,
        t: &'t Trajectory,
        value: &str,
        turn: usize,
    ) -> Result<bool, usize> {
        let value = value.trim();
        let first = if let Some(f) = self.first.get(value) {
            *f
        } else {
            let f = self.first_showing(t, value)?;
            self.first.insert(value.to_string(), f);
            f
        };
        Ok(first.is_some_and(|f| f < turn))
    }

    fn first_showing(&mut self, t: &'t Trajectory, value: &str) -> Result<Option<usize>, usize> {
        if value.is_empty() {
            return Ok(None);
        }
        let (from, from_user) = (self.from, self.from_user);
        let Some((offset, word)) = words(value).next() else {
            // No letter or digit to index by (`--`): search the sources' text.
            for k in 0..t.turns.len() {
                spend(&mut self.checked)?;
                if source(t, k, value, from, from_user) && has_token(&t.turns[k].text, value) {
                    return Ok(Some(k));
                }
            }
            return Ok(None);
        };
        let index = self.words.get_or_insert_with(|| index(t, from, from_user));
        for &(k, pos) in index.get(word).into_iter().flatten() {
            spend(&mut self.checked)?;
            let text = t.turns[k].text.as_str();
            let Some(start) = pos.checked_sub(offset) else {
                continue;
            };
            if text.is_char_boundary(start)
                && text[start..].starts_with(value)
                && whole_at(text, start, value)
                && source(t, k, value, from, from_user)
            {
                return Ok(Some(k));
            }
        }
        Ok(None)
    }
}

/// Counts one candidate against the budget.
fn spend(checked: &mut usize) -> Result<(), usize> {
    *checked += 1;
    if *checked > BUDGET {
        Err(BUDGET)
    } else {
        Ok(())
    }
}

/// Whether turn `k` is a source for `value` (see the module doc).
fn source(t: &Trajectory, k: usize, value: &str, from: &Tools, from_user: bool) -> bool {
    let turn = &t.turns[k];
    match turn.role.as_str() {
        "user" => from_user,
        "tool" => turn.answers.is_some_and(|j| {
            let c = &t.calls[j];
            !turn.error && from.has(&c.name) && !has_token(&c.arguments_text, value)
        }),
        _ => false,
    }
}

/// The words of the turns that may be sources (user turns with `from_user`, answered
/// successful results of tools in `from`), where each starts.
fn index<'t>(
    t: &'t Trajectory,
    from: &Tools,
    from_user: bool,
) -> HashMap<&'t str, Vec<(usize, usize)>> {
    let mut out: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (k, turn) in t.turns.iter().enumerate() {
        let maybe = match turn.role.as_str() {
            "user" => from_user,
            "tool" => turn
                .answers
                .is_some_and(|j| !turn.error && from.has(&t.calls[j].name)),
            _ => false,
        };
        if maybe {
            for (pos, w) in words(&turn.text) {
                out.entry(w).or_default().push((k, pos));
            }
        }
    }
    out
}

/// The maximal runs of letters and digits in `text`, with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while rest.peek().is_some_and(|(_, c)| !c.is_alphanumeric()) {
            rest.next();
        }
        let (start, _) = *rest.peek()?;
        let mut end = start;
        while let Some(&(i, c)) = rest.peek() {
            if !c.is_alphanumeric() {
                break;
            }
            end = i + c.len_utf8();
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn traj(v: &serde_json::Value) -> Trajectory {
        Trajectory::from_messages(v.as_array().unwrap())
    }

    #[test]
    fn words_are_runs_of_letters_and_digits() {
        let w: Vec<(usize, &str)> = words("#W12, é-3 .x").collect();
        assert_eq!(w, [(1, "W12"), (6, "é"), (9, "3"), (12, "x")]);
        assert_eq!(words("  --  ").count(), 0);
    }

    #[test]
    fn a_value_is_shown_by_an_earlier_successful_result_that_did_not_echo_it() {
        let t = traj(&json!([
            {"role": "user", "content": "a table for 2, I'm in room 7"},
            {"role": "assistant", "tool_calls": [
                {"id": "1", "name": "search", "arguments": "{\"q\": \"T-99\"}"},
                {"id": "2", "name": "search", "arguments": "{\"q\": \"any\"}"},
                {"id": "3", "name": "lookup", "arguments": "{}"}]},
            {"role": "tool", "tool_call_id": "1", "content": "no table T-99"},
            {"role": "tool", "tool_call_id": "2", "content": "free: T-17, T-18, 3.4, --"},
            {"role": "tool", "tool_call_id": "3", "content": "T-40", "is_error": true},
            {"role": "assistant", "content": "T-55 is free"},
            {"role": "tool", "content": "T-60 booked"},
            {"role": "assistant", "tool_calls": [{"id": "4", "name": "book", "arguments": "{}"}]}
        ]));
        let any = Tools::Any;
        let mut s = Sources::new(&any, false);
        let book_turn = 7;
        assert_eq!(s.shown_before(&t, "T-17", book_turn), Ok(true));
        assert_eq!(s.shown_before(&t, " T-18 ", book_turn), Ok(true));
        assert_eq!(
            s.shown_before(&t, "T-17", 2),
            Ok(false),
            "not before it came"
        );
        assert_eq!(
            s.shown_before(&t, "T-1", book_turn),
            Ok(false),
            "inside T-17"
        );
        assert_eq!(s.shown_before(&t, "4", book_turn), Ok(false), "inside 3.4");
        assert_eq!(
            s.shown_before(&t, "--", book_turn),
            Ok(true),
            "no word: a plain search"
        );
        assert_eq!(s.shown_before(&t, "T-99", book_turn), Ok(false), "an echo");
        assert_eq!(s.shown_before(&t, "T-40", book_turn), Ok(false), "an error");
        assert_eq!(
            s.shown_before(&t, "T-55", book_turn),
            Ok(false),
            "its own text"
        );
        assert_eq!(
            s.shown_before(&t, "T-60", book_turn),
            Ok(false),
            "an orphan"
        );
        assert_eq!(
            s.shown_before(&t, "7", book_turn),
            Ok(false),
            "user not a source"
        );
        assert_eq!(s.shown_before(&t, "", book_turn), Ok(false));
        let mut u = Sources::new(&any, true);
        assert_eq!(u.shown_before(&t, "7", book_turn), Ok(true));
        let lookup = Tools::Only(vec!["lookup".into()]);
        let mut l = Sources::new(&lookup, false);
        assert_eq!(
            l.shown_before(&t, "T-17", book_turn),
            Ok(false),
            "not from lookup"
        );
    }

    #[test]
    fn many_values_over_long_results_stay_linear_and_a_flood_stops_at_the_budget() {
        // 2,000 results of 1 KB each and 2,000 distinct values, half of them shown: the index
        // answers each from the occurrences of its first word.
        let mut msgs = Vec::new();
        for i in 0..2000 {
            msgs.push(json!({"role": "assistant", "tool_calls": [{"id": format!("c{i}"), "name": "s", "arguments": "{}"}]}));
            let filler = "lorem ipsum ".repeat(80);
            msgs.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("{filler} id{i}")}));
        }
        let t = Trajectory::from_messages(&msgs);
        let any = Tools::Any;
        let mut s = Sources::new(&any, false);
        let started = std::time::Instant::now();
        for i in 0..2000 {
            let want = i % 2 == 0;
            let v = if want {
                format!("id{i}")
            } else {
                format!("zz{i}")
            };
            assert_eq!(s.shown_before(&t, &v, t.turns.len()), Ok(want), "{v}");
        }
        assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
        // A value whose first word is in every result, thousands of times, is given up on.
        let mut f = Sources::new(&any, false);
        let flood: Vec<Result<bool, usize>> = (0..400)
            .map(|i| f.shown_before(&t, &format!("lorem x{i}"), t.turns.len()))
            .collect();
        assert_eq!(flood.last(), Some(&Err(BUDGET)));
    }
}
