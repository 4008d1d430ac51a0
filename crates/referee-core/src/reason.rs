//! Every reason code a failure can carry, in one list (DESIGN.md §4 "Errors", §8.4).
//!
//! A sample that could not be scored has `status: error`, a stable `reason` from this list and a
//! message for people. The codes are written where they arise (`Outcome::error("bad_tests", ..)`,
//! `ScoreResult::input_error(..)`, `JudgeFailure { reason: .. }`); `tests/reasons.rs` scans the
//! workspace's sources and fails when a code used there is missing here or a code listed here is
//! used nowhere, so the list cannot drift. `referee list --reasons` prints it.
//!
//! Each entry's doc says what happened and what the user can do. A policy's malformed output is
//! never one of these: it scores 0 with status `ok` (DESIGN.md §2).

/// One reason code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    /// The stable `snake_case` code, as in results and metrics.
    pub code: &'static str,
    /// Where it arises: one of [`GROUPS`]' names.
    pub group: &'static str,
    /// What happened, and what the user can do about it (one line).
    pub doc: &'static str,
}

/// The groups of [`REASONS`], in order: `(name, what they are about)`.
pub const GROUPS: &[(&str, &str)] = &[
    ("input", "reading a row, before any grader runs"),
    ("item", "the row's own data that a grader scores against"),
    ("spec", "the spec at run time"),
    ("sandbox", "code and python graders"),
    ("judge", "judge and reward-model calls"),
    ("audit", "rows `referee eval`/`compare` leave unscored"),
];

const fn r(code: &'static str, group: &'static str, doc: &'static str) -> Reason {
    Reason { code, group, doc }
}

/// Every reason code, grouped as in [`GROUPS`].
#[rustfmt::skip]
pub const REASONS: &[Reason] = &[
    // input
    r("invalid_json", "input", "The line is not valid JSON: fix the writer of the file; the line is reported with its number, never dropped."),
    r("invalid_utf8", "input", "The line is not valid UTF-8: re-encode the file as UTF-8."),
    r("empty_line", "input", "The line is blank: remove it, or ignore these results."),
    r("invalid_row", "input", "The row is not a JSON object, or one of its fields has the wrong shape (`item` not an object, `sample` not an object): fix the row."),
    r("unknown_row_format", "input", "Referee cannot tell the row's format (referee, openai, verl, trl, openrlhf): pass `--format`."),
    r("missing_field", "input", "A field the row or the spec needs is not in the row (a response column, `item.answer`, a rubric): add it, or point the spec or `--response-field` at the field the data has."),
    r("prompt_not_found", "input", "An OpenRLHF query does not start with its prompt, so the response cannot be told from the prompt: pass the prompts the queries were generated from."),
    // item
    r("empty_reference", "item", "The reference or keyword list rendered empty, which every text would contain: fix the row's reference."),
    r("reference_too_long", "item", "A reference has more units (sentences, lines, items) than the set mode's `max_units`, or more items than `set_match`'s or `ranking`'s `max_items`: raise it, or shorten the reference."),
    r("reference_leak", "item", "The policy's text in a likelihood context restates the reference (the spec says `leak: {action: error}`): the sample cannot be scored fairly."),
    r("media_invalid", "item", "The row's image or audio is not what it claims (not a PNG, JPEG, GIF or WebP image; not WAV or MP3 audio; a data URI that does not decode): fix the row's media."),
    r("media_limit", "item", "The row's media is over the grader's limits (`media: {max_bytes, max_count}`): raise them, or send smaller or fewer parts."),
    r("media_unreadable", "item", "The row names a media file that cannot be read, or one outside the media root (`media: {root}`): fix the path or the root."),
    r("unparseable_reference", "item", "The row's reference is not what the grader compares against (not a number, not an option label): fix the row or the `reference` template."),
    r("unparseable_gold", "item", "math_equiv cannot read the row's gold answer: fix the gold, or check the template points at it."),
    r("too_complex", "item", "math_equiv gave up on the row's gold: it is too large to compare exactly; simplify the gold."),
    r("invalid_labels", "item", "The row's option labels for `choice` are missing, repeated or malformed: fix the row's labels."),
    r("bad_schema", "item", "The row's JSON Schema is not JSON, or not a valid schema: fix the row's schema."),
    r("bad_tools", "item", "The row's tool definitions cannot be read: give OpenAI-style function definitions."),
    r("bad_expected_calls", "item", "The row's expected tool calls cannot be read: give a list of `{name, arguments}`."),
    r("bad_min_calls", "item", "The row's minimal number of tool calls (tool_trace's `min_calls`) is not a non-negative number: fix the row or the template."),
    r("bad_instructions", "item", "The row's IFEval instruction list cannot be read (not a list, ids and kwargs of different lengths, an unreadable label): fix the row."),
    r("no_instructions", "item", "The row's IFEval instruction list is empty, so nothing can be checked: drop the row or give instructions."),
    r("unknown_instruction", "item", "An instruction id is neither IFEval's nor open-instruct's, so Referee cannot check it: fix the row's id."),
    r("bad_instruction_kwargs", "item", "An IFEval instruction's arguments are missing, of the wrong type or not ones its checker takes: fix the row's kwargs."),
    r("invalid_rubric", "item", "The row's rubric is empty or malformed: give a list of criteria (text, or `{criterion, weight}`)."),
    r("bad_tests", "item", "The row's tests cannot be run as given (none, the wrong shape, broken test code): fix the row's tests."),
    r("bad_globs", "item", "The row's `allowed` globs for patch_audit are not a list of valid globs: fix the row, or give the globs in the spec."),
    r("bad_weights", "item", "The row's test weights do not fit its tests (wrong length, negative): fix the weights."),
    // spec
    r("non_finite", "spec", "A node or `calculate_output` computed NaN or an infinity (a division by zero, a log of 0): guard the formula, or give the node `on_error`."),
    r("zero_normaliser", "spec", "A normalised weighted_sum's applicable weights sum to zero: give weights that cannot cancel out."),
    r("invalid_variable", "spec", "A `multi` sub-grader did not apply, so `calculate_output` has no value for it: make the sub-grader always apply, or route around it."),
    r("likelihood_boundary", "spec", "The endpoint's tokens of context + target have no boundary where the context ends (one token holds both): end the context with a space or newline, or start the target with one."),
    r("missing_output_field", "spec", "A field read from the policy's output is missing where only the dataset can supply it (a json_schema `schema`, tool_call `expected`): point the template at the item. Elsewhere this scores 0."),
    r("output_not_json", "spec", "The policy's output is not JSON where the spec takes a dataset value from it: point the template at the item. Elsewhere this scores 0."),
    r("wrong_type", "spec", "A list or object was found where the spec takes a dataset value from the policy's output: point the template at the item. Elsewhere this scores 0."),
    r("internal", "spec", "A state compile should have ruled out: a bug in Referee; please report it with the spec."),
    // sandbox
    r("sandbox_unavailable", "sandbox", "No sandbox was given or it cannot start (it needs Linux, root or user namespaces, cgroups): run where it can, the message says what is missing."),
    r("sandbox_error", "sandbox", "The sandbox failed to set up or run the program (not the program's fault): see the message; retry, or report it if it persists."),
    r("unsupported_language", "sandbox", "The sandbox does not run this language, or its toolchain is not installed: install it or choose another `language`."),
    r("python_error", "sandbox", "The `python` grader's `grade` raised, exited, or returned something that is not a finite number: fix the grader code."),
    r("python_timeout", "sandbox", "The `python` grader ran out of time: make it faster or raise its `limits`."),
    r("python_memory", "sandbox", "The `python` grader ran out of memory: make it leaner or raise its `limits`."),
    r("verifier_failed", "sandbox", "A `measure` verifier raised, exited non-zero, ran out of time or memory, or printed no usable report (not a number or object of numbers, NaN, no `metric`): fix the verifier; make it print `null` for an artefact it cannot measure."),
    // judge
    r("judge_config", "judge", "The spec names a judge endpoint that was not configured, or no judge is available here (`referee check` calls none): configure it under `judges:` or pass `--judge`."),
    r("judge_connection", "judge", "The judge could not be reached or the call was dropped (refused, reset, shutting down): check the endpoint is up; calls are retried first."),
    r("judge_timeout", "judge", "The judge did not reply within the endpoint's `timeout_ms`, after retries: raise it or reduce the load."),
    r("judge_deadline", "judge", "The sample's `deadline_ms` passed before the judge answered: raise it, or the endpoint's concurrency."),
    r("judge_rate_limited", "judge", "The judge kept answering HTTP 429 through every retry: lower the endpoint's rate limits or concurrency."),
    r("judge_http_4xx", "judge", "The judge rejected the request (HTTP 4xx: a wrong model name or key, a refused `response_format`): fix the endpoint's settings."),
    r("judge_http_5xx", "judge", "The judge's server failed (HTTP 5xx) through every retry: check the server."),
    r("judge_unparseable", "judge", "The judge answered, but not in the form asked for (no verdict, extra keys, cut off): use a model that follows the format, or a server with structured output."),
    r("invalid_generated_rubric", "judge", "The rubric writer answered, but not with a usable rubric (not the JSON asked for, cut off, too few or too many criteria, repeated, empty or over-long criteria, absurd weights): use a model that follows the format, adjust `min_criteria`/`max_criteria`, or give the rubric in the data."),
    // audit
    r("missing_gold", "audit", "An eval row has no gold score in the named field: add it or name the field."),
    r("invalid_gold", "audit", "An eval row's gold score is not a finite number: fix it."),
    r("missing_correct", "audit", "A best-of-N row does not say which responses are correct: add the field or name it."),
    r("invalid_correct", "audit", "A best-of-N row's correctness field does not fit its responses (wrong length, not booleans): fix it."),
    r("no_step_component", "audit", "A step-labelled eval row needs per-step scores, and the spec has no step component (each_step, prm, step_judge): use a step spec."),
    r("step_count_mismatch", "audit", "The spec cut a step-labelled eval row into another number of steps than the row lists: use `split: paragraphs` (the steps are joined with blank lines) or steps without blank lines."),
    r("invalid_ties_id", "audit", "A RewardBench 2 Ties row's id is not `ref:<n>` or `tied:<n>`: keep the dataset's ids."),
    r("missing_label", "audit", "A compare row has no label to compare with: add it or name the column."),
    r("invalid_label", "audit", "A compare row's label is neither true nor false (nor a number): fix it."),
    r("non_finite_reward", "audit", "The spec gave the row a NaN or infinite reward, so eval/compare leave it out: guard the formula."),
    r("not_applicable", "audit", "The spec did not apply to the row, so it has no reward to evaluate: expected for routed specs; otherwise check the routing."),
    r("no_reward", "audit", "The result has no reward, so eval/compare leave it out."),
];

/// The entry for `code`, if it is one.
pub fn find(code: &str) -> Option<&'static Reason> {
    REASONS.iter().find(|r| r.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_snake_case_and_in_a_known_group() {
        let mut seen = std::collections::BTreeSet::new();
        for r in REASONS {
            assert!(seen.insert(r.code), "{} is listed twice", r.code);
            assert!(
                r.code
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{} is not snake_case",
                r.code
            );
            assert!(
                GROUPS.iter().any(|(g, _)| *g == r.group),
                "{}: unknown group {}",
                r.code,
                r.group
            );
            assert!(!r.doc.contains('\n') && r.doc.ends_with('.'), "{}", r.code);
        }
        // Grouped: each group's entries are together, in the order of `GROUPS`.
        let order: Vec<usize> = REASONS
            .iter()
            .map(|r| GROUPS.iter().position(|(g, _)| *g == r.group).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "not grouped");
        assert_eq!(find("judge_unparseable").unwrap().group, "judge");
        assert!(find("nope").is_none());
    }
}
