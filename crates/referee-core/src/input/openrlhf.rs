//! OpenRLHF's shapes: its reward rows in, its reward answer out.
//!
//! Rows are `{"query", "prompt", "label"}`, where the query is the prompt and the response
//! decoded together (`SingleTurnAgentExecutor`: `decode(prompt_ids + action_ids)`, special
//! tokens kept).
//!
//! The response is what follows the prompt. OpenRLHF cuts a prompt that leaves no room to
//! generate from the **left** (`prompt_token_ids[-max_prompt_length:]`), so a long query starts
//! with only a suffix of the prompt, and cutting the prompt off by prefix would grade prompt text
//! as if the policy wrote it. The boundary is found instead:
//! - the query starts with the whole prompt: the rest is the response;
//! - else the **longest** suffix of the prompt (at least [`MIN_KEPT`] bytes, or the whole
//!   prompt) that the query starts with, allowing up to [`MAX_GARBLED`] bytes at the very start
//!   that decode differently (a token cut inside a multi-byte character). Longest first: a
//!   shorter match would need the kept part of the prompt to repeat inside the prompt, a longer
//!   one can only come from the prompt's own text;
//! - no such suffix: `prompt_not_found`, an error for the row. Grading the whole query would
//!   pay the policy for the prompt.

use super::{err, RowError};
use crate::ScoreResult;
use serde_json::{json, Map, Value};

/// The shortest prompt suffix taken as the prompt's end (a shorter one matches by chance).
pub const MIN_KEPT: usize = 16;
/// Bytes at the start of a truncated query that may not decode as in the prompt.
pub const MAX_GARBLED: usize = 4;

/// The response part of an OpenRLHF query (see the module docs).
pub fn response<'q>(query: &'q str, prompt: &str) -> Result<&'q str, RowError> {
    if let Some(rest) = query.strip_prefix(prompt) {
        return Ok(rest);
    }
    let need = MIN_KEPT.min(prompt.len());
    for skip in (0..=MAX_GARBLED.min(query.len())).filter(|&s| query.is_char_boundary(s)) {
        let q = &query[skip..];
        for (k, _) in prompt.char_indices() {
            let tail = &prompt[k..];
            if tail.len() < need {
                break;
            }
            if let Some(rest) = q.strip_prefix(tail) {
                return Ok(rest);
            }
        }
    }
    Err(err(
        "prompt_not_found",
        "the query does not start with its prompt, nor with a left-truncated part of it: \
         the response cannot be told apart from the prompt",
    ))
}

/// OpenRLHF's answer `{"rewards", "scores", "extra_logs"}` for results in row order.
///
/// OpenRLHF turns every value into a tensor without a check (`torch.tensor([value])`), so a
/// `null` anywhere crashes the run: every entry is a number.
/// - `rewards`: the reward; a row that could not be scored gets the spec's `on_error` value when
///   it has one, else 0.0, and `extra_logs.referee_error` says it failed.
/// - `scores` (what dynamic filtering reads): the reward clamped to [0, 1].
/// - `extra_logs`: `referee_error` (1.0 / 0.0), and each named component, 0.0 where it did not
///   run or apply (`referee_error` and the status tell those rows apart).
pub fn reward_answer(component_names: &[std::sync::Arc<str>], results: &[ScoreResult]) -> Value {
    let number = |v: Option<f64>| v.filter(|x| x.is_finite()).unwrap_or(0.0);
    let rewards: Vec<f64> = results.iter().map(|r| number(r.reward)).collect();
    let scores: Vec<f64> = rewards.iter().map(|r| r.clamp(0.0, 1.0)).collect();
    let mut logs = Map::new();
    for (k, name) in component_names.iter().enumerate() {
        let col: Vec<f64> = results
            .iter()
            .map(|r| number(r.components.get(k).and_then(|(_, v)| *v)))
            .collect();
        logs.insert(name.to_string(), json!(col));
    }
    let errors: Vec<f64> = results
        .iter()
        .map(|r| f64::from(u8::from(r.status.as_str() == "error")))
        .collect();
    logs.insert("referee_error".into(), json!(errors));
    json!({"rewards": rewards, "scores": scores, "extra_logs": logs})
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPT: &str = "<|im_start|>user\nWhat is 6 times 12? Think step by step.<|im_end|>\n<|im_start|>assistant\n";

    #[test]
    fn whole_prompt_is_cut() {
        let q = format!("{PROMPT}The answer is 72.<|im_end|>");
        assert_eq!(response(&q, PROMPT).unwrap(), "The answer is 72.<|im_end|>");
        assert_eq!(response("just text", "").unwrap(), "just text");
    }

    #[test]
    fn left_truncated_prompt_is_cut_at_its_end() {
        for cut in [1, 10, 30, PROMPT.len() - MIN_KEPT] {
            let q = format!("{}\\boxed{{72}}", &PROMPT[cut..]);
            assert_eq!(response(&q, PROMPT).unwrap(), "\\boxed{72}", "cut {cut}");
        }
        // A first token that decodes to a replacement character.
        let q = format!("\u{fffd}{}\\boxed{{72}}", &PROMPT[20..]);
        assert_eq!(response(&q, PROMPT).unwrap(), "\\boxed{72}");
    }

    #[test]
    fn a_response_that_repeats_the_prompt_end_keeps_its_text() {
        let q = format!("{}<|im_start|>assistant\n72", &PROMPT[25..]);
        assert_eq!(response(&q, PROMPT).unwrap(), "<|im_start|>assistant\n72");
    }

    #[test]
    fn every_row_answers_a_number() {
        use crate::Status;
        let names: Vec<std::sync::Arc<str>> = vec!["a".into(), "b".into()];
        let r = |reward, status, a| ScoreResult {
            reward,
            status,
            components: vec![("a".into(), a), ("b".into(), None)],
            trace: None,
            usage: None,
            group: None,
            step_rewards: None,
            token_error: None,
        };
        let failed = || ScoreResult::input_error("prompt_not_found", "x".into());
        let results = [
            r(Some(1.5), Status::Ok, Some(1.0)),
            failed(),
            r(Some(-0.5), failed().status, None), // an on_error value
            r(None, Status::NotApplicable, Some(f64::NAN)),
        ];
        assert_eq!(
            reward_answer(&names, &results),
            json!({"rewards": [1.5, 0.0, -0.5, 0.0], "scores": [1.0, 0.0, 0.0, 0.0],
                   "extra_logs": {"a": [1.0, 0.0, 0.0, 0.0], "b": [0.0, 0.0, 0.0, 0.0],
                                  "referee_error": [0.0, 1.0, 1.0, 0.0]}})
        );
    }

    #[test]
    fn no_prompt_in_the_query_is_an_error() {
        let e = response("The answer is 72.", PROMPT).unwrap_err();
        assert_eq!(e.reason, "prompt_not_found");
        // Too little of the prompt left to know where it ends.
        let q = format!("{}72", &PROMPT[PROMPT.len() - 5..]);
        assert_eq!(response(&q, PROMPT).unwrap_err().reason, "prompt_not_found");
    }
}
