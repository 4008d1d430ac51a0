//! # tool_call
//! *What it scores:* the function calls a model made against the expected calls of the item, in
//! the way of the Berkeley Function Calling Leaderboard's AST checker: function name, required
//! parameters present, no unknown parameters, types, each value within its set of acceptable
//! values; parallel calls matched in any order (or in a strict order for multi-step sequences).
//! All-or-nothing (BFCL's verdict), or decomposed into format, schema, selection and parameter
//! sub-scores combined by a weighted sum or product, with a penalty for every extra call.
//!
//! *Spec:*
//! - `expected` (template, default `{{item.ground_truth}}`): the expected calls, as a value or a
//!   JSON string. Detected per entry: BFCL possible answers `[{"func": {"param": [acceptable,
//!   ...]}}]` (`""` in a list: the parameter may be omitted), plain calls `[{"name",
//!   "arguments"}]` (`parameters` also read; arguments may be a JSON string) whose values are the
//!   only acceptable ones, or OpenAI `[{"function": {"name", "arguments"}}]`. `[]` expects no
//!   call (BFCL's irrelevance: the model must not call anything).
//! - `tools` (template; default the item's `tools`, else `functions`, else `function`, else
//!   none): the tool definitions, OpenAI tools (`{"type": "function", "function": {...}}`),
//!   OpenAI functions or BFCL docs (`{name, parameters: {type: dict, properties, required}}`).
//!   Given, they supply the declared types and the schema sub-score.
//! - `source`: `auto` (default: `sample.output_tools` when it holds calls, else the text),
//!   `output_tools`, `text` (`sample.output_text`), `messages` (every assistant message of
//!   `sample.messages`, in order: its `tool_calls`, else calls written in its text).
//! - `formats` (default all): the text formats read: `hermes` (`<tool_call>{"name",
//!   "arguments"}</tool_call>`, one block per call, prose around them allowed), `llama3`
//!   (`{"name", "parameters"}` after an optional `<|python_tag|>`; several separated by `;` or in
//!   a list), `openai` (`{"tool_calls": [...]}` with `arguments` a JSON string, `{"function_call":
//!   {...}}`, or a list of tool calls). JSON calls must be the whole answer (one code fence
//!   around it allowed): JSON inside prose is not a call. `<tool_call>` blocks inside a code
//!   fence are examples, not calls.
//! - `order`: `any` (default; parallel calls, order-insensitive) or `strict` (the calls must
//!   come in the expected order: multi-step sequences).
//! - `reward`: `all_or_nothing` (default) or `decomposed`. For `decomposed`: `weights`
//!   (`format`, `schema`, `selection`, `params`; each default 1), `combine` (`sum`, default:
//!   Σ wᵢcᵢ / Σ wᵢ; `product`: Π cᵢ^wᵢ, the ToolRLA style where a wrong tool zeroes the
//!   parameters' worth), `extra_call_penalty` (default 0.25, subtracted per extra call).
//! - `string_match`: `bfcl` (default: BFCL's `standardize_string`, i.e. lowercase, drop spaces
//!   and `,./-_*^`, `'` as `"`) or `exact`.
//! - `reasoning`: `strip` (default: calls inside `<think>…</think>` are not calls; an unclosed
//!   thinking section holds no answer) or `keep`. Applies to text, not to `output_tools`.
//!
//! *Example:*
//! ```yaml
//! type: tool_call
//! expected: "{{item.ground_truth}}"
//! reward: decomposed
//! combine: sum
//! weights: {format: 1, schema: 1, selection: 1, params: 2}
//! extra_call_penalty: 0.25
//! ```
//!
//! *Score and failure modes:*
//!
//! Rules of one call against one expected call (BFCL's `simple_function_checker`): the names
//! are equal (or equal once the expected name's dots are underscores, BFCL's allowance for APIs
//! that forbid dots); every required parameter (declared in the tool's `required`, or expected
//! without `""`) is given; every given parameter is expected (and declared, when tools are
//! given); each value has the declared type (from the tool; without tools, the type of the
//! acceptable values) — an integer is accepted for a float, not the reverse, a boolean is not a
//! number, the string `"true"` is not a boolean, `"5"` is not an integer; arrays and objects are
//! checked through `items` and `properties`; `enum` and undeclared nested keys are left to the
//! acceptable values, as in BFCL (both count in the schema sub-score); BFCL's "variable"
//! rule holds: an acceptable value that itself lacks the declared type (a variable name where an
//! integer is declared, strings in a list declared as integers) accepts a value of exactly its
//! type, compared exactly; each value is one of its acceptable values: strings after
//! normalisation (`string_match`), numbers by value, lists element by element in order,
//! objects key by key against their own acceptable lists (a missing key must allow `""`). The
//! call's *parameter score* is the fraction of its parameters that are right, over the ones
//! given plus the ones that had to be: 1 exactly when BFCL accepts the call.
//!
//! Rules of the call lists: each expected call is matched to a distinct call of the same name
//! (a one-to-one assignment, never two expected calls on one actual call): with `order: any`
//! the assignment that matches the most calls with the highest total parameter score
//! (Kuhn-Munkres); with `order: strict`, the best order-preserving one. Every call left
//! unmatched is *extra*: a repeat of a matched call, a call to a tool not expected, one
//! beyond the expected count. Only the first 1024 calls of an output are candidates for
//! matching; any beyond are extra.
//!
//! `all_or_nothing`: 1 when the output is well formed, there are as many calls as expected, and
//! every expected call is matched to a call BFCL accepts (in order, with `strict`); else 0.
//! `decomposed`, each in [0, 1], shown in the trace detail:
//! - *format*: 1 when every call found parses (name, arguments an object), and some call was
//!   found or none was expected; text with no call when one was expected scores 0. A malformed
//!   call is still a call: it counts in the totals below and, never matched, as extra.
//! - *schema*: the fraction of calls that adhere to the tool definitions (a defined tool,
//!   required parameters present, declared types and enums, no undeclared parameter or nested
//!   key unless `additionalProperties` allows it); 0 with no call when one was expected.
//!   Without tools it is left out of the combination (and `null` in the detail).
//! - *selection*: matched / (expected + calls − matched), the Jaccard index of the two
//!   multisets of names (ToolRL's name reward): calling every tool, or the right one twice,
//!   lowers it.
//! - *params*: the sum of the matched calls' parameter scores / max(expected, calls).
//!
//! The reward is the combination minus `extra_call_penalty` × extra calls; it may go below 0.
//! Why 0.25 by default: with equal weights, hedging between k candidate tools (calling all of
//! them) and guessing one have the same expected sum without a penalty, because the Jaccard
//! selection already divides by k; one component's worth per extra call makes calling more
//! strictly worse than committing. Set it to 0 for a pure [0, 1] score.
//!
//! No call, a malformed call, wrong JSON, calls only inside the thinking section: wrong
//! answers, status ok, scored by these rules (format 0). Missing or malformed expected calls in
//! the item: error `bad_expected_calls`; malformed tool definitions: error `bad_tools`; never a
//! 0 (an item without the field at all: `missing_field`, as everywhere). Compile errors: `weights`, `combine` or `extra_call_penalty` without `reward:
//! decomposed`; a negative weight or penalty; all weights 0; empty `formats`.
//!
//! Deviations from BFCL (its checker agrees with this one on 21,038 of 21,039 outputs generated
//! from BFCL's own data, `benches/tool_call/bfcl_differential.py`): the assignment is optimal
//! where BFCL's is greedy (BFCL can reject a correct parallel answer when an earlier expected
//! call takes the wrong candidate: the one difference); types are checked at every depth and
//! integers pass for floats at every depth (BFCL: one level, so it rejects `[1, 3]` for a list of
//! floats); `any` accepts any value (BFCL requires a string); when the expected function is not
//! among the tools, types come from the acceptable values (BFCL fails).

mod ast;
mod parse;

use crate::compile::{sync, At, Compiler, Number};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::text::reasoning::Reasoning;
use ast::{Call, Expected, Strings, Tools};
use parse::Format;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The expected calls (default `{{item.ground_truth}}`).
    #[serde(default)]
    pub expected: Option<String>,
    /// The tool definitions (default the item's `tools`, `functions` or `function`).
    #[serde(default)]
    pub tools: Option<String>,
    /// Where the calls are read from.
    #[serde(default)]
    pub source: Source,
    /// Text formats read (default all).
    #[serde(default)]
    pub formats: Option<Vec<Format>>,
    /// `any` (parallel) or `strict` (ordered sequence).
    #[serde(default)]
    pub order: Order,
    /// `all_or_nothing` (BFCL's verdict) or `decomposed`.
    #[serde(default)]
    pub reward: RewardMode,
    /// `decomposed` only: the weight of each sub-score (default 1 each).
    #[serde(default)]
    pub weights: Option<Weights>,
    /// `decomposed` only: `sum` (weighted mean) or `product` (weights as exponents).
    #[serde(default)]
    pub combine: Option<Combine>,
    /// `decomposed` only: subtracted per extra or repeated call (default 0.25).
    #[serde(default)]
    pub extra_call_penalty: Option<Number>,
    /// `bfcl` (normalised strings, default) or `exact`.
    #[serde(default)]
    pub string_match: StringMatch,
    /// `strip` (default): calls inside the thinking section do not count.
    #[serde(default)]
    pub reasoning: Reasoning,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    #[default]
    Auto,
    OutputTools,
    Text,
    Messages,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    #[default]
    Any,
    Strict,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewardMode {
    #[default]
    AllOrNothing,
    Decomposed,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    #[default]
    Sum,
    Product,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StringMatch {
    #[default]
    Bfcl,
    Exact,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    #[serde(default)]
    pub format: Option<Number>,
    #[serde(default)]
    pub schema: Option<Number>,
    #[serde(default)]
    pub selection: Option<Number>,
    #[serde(default)]
    pub params: Option<Number>,
}

/// Default penalty per extra call; see the module doc for why.
const DEFAULT_PENALTY: f64 = 0.25;

/// Calls beyond this many are never matched (they count as extra calls).
const MAX_MATCHED: usize = 1024;

pub struct ToolCall {
    expected: Template,
    /// `None`: the item's `tools`/`functions`/`function` when present.
    tools: Option<Template>,
    source: Source,
    formats: Vec<Format>,
    order: Order,
    reward: RewardMode,
    /// format, schema, selection, params.
    weights: [f64; 4],
    combine: Combine,
    penalty: f64,
    strings: Strings,
    reasoning: Reasoning,
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ToolCallSpec = cx.spec(v, at)?;
    let mut ok = true;
    let expected = cx.template(
        spec.expected.as_deref().unwrap_or("{{item.ground_truth}}"),
        at,
        "expected",
    );
    let tools = match &spec.tools {
        Some(t) => cx.template(t, at, "tools").map(Some),
        None => Some(None),
    };
    let decomposed = spec.reward == RewardMode::Decomposed;
    for (field, given) in [
        ("weights", spec.weights.is_some()),
        ("combine", spec.combine.is_some()),
        ("extra_call_penalty", spec.extra_call_penalty.is_some()),
    ] {
        if given && !decomposed {
            cx.err(
                at,
                Some(field),
                format!("`{field}` is only used with `reward: decomposed`"),
            );
            ok = false;
        }
    }
    let w = spec.weights.clone().unwrap_or(Weights {
        format: None,
        schema: None,
        selection: None,
        params: None,
    });
    let weights = [w.format, w.schema, w.selection, w.params].map(|x| x.map_or(1.0, |n| n.0));
    if weights.iter().any(|x| *x < 0.0) {
        cx.err(at, Some("weights"), "weights must not be negative");
        ok = false;
    } else if weights.iter().all(|x| *x == 0.0) {
        cx.err(at, Some("weights"), "at least one weight must be positive");
        ok = false;
    }
    let penalty = spec.extra_call_penalty.map_or(DEFAULT_PENALTY, |n| n.0);
    if penalty < 0.0 {
        cx.err(
            at,
            Some("extra_call_penalty"),
            "`extra_call_penalty` must not be negative (it is subtracted per extra call)",
        );
        ok = false;
    }
    let formats = match spec.formats {
        Some(f) if f.is_empty() => {
            cx.err(
                at,
                Some("formats"),
                "`formats` must list at least one format",
            );
            ok = false;
            Vec::new()
        }
        Some(f) => f,
        None => parse::ALL.to_vec(),
    };
    let (expected, tools) = (expected?, tools?);
    ok.then(|| {
        sync(ToolCall {
            expected,
            tools,
            source: spec.source,
            formats,
            order: spec.order,
            reward: spec.reward,
            weights,
            combine: spec.combine.unwrap_or_default(),
            penalty,
            strings: match spec.string_match {
                StringMatch::Bfcl => Strings::Bfcl,
                StringMatch::Exact => Strings::Exact,
            },
            reasoning: spec.reasoning,
        })
    })
}

impl ToolCall {
    fn load_tools(&self, s: &Sample) -> Result<Option<Tools>, Outcome> {
        let v = match &self.tools {
            Some(t) => match t.render_value(s) {
                Ok(v) => Some(v),
                Err(m) => return Err(Outcome::error("bad_tools", m.message)),
            },
            None => ["tools", "functions", "function"]
                .iter()
                .find_map(|k| s.item.get(*k).filter(|v| !v.is_null()))
                .map(std::borrow::Cow::Borrowed),
        };
        match v {
            None => Ok(None),
            Some(v) => Tools::load(&v)
                .map(Some)
                .map_err(|e| Outcome::error("bad_tools", e)),
        }
    }

    fn calls(&self, s: &Sample) -> parse::Found {
        let text = || {
            let answer = self.reasoning.apply(&s.output_text);
            let mut f = parse::from_text(answer.text, &self.formats);
            f.stripped = answer.stripped;
            f
        };
        match self.source {
            Source::OutputTools => s
                .output_tools
                .as_ref()
                .map(parse::from_tools)
                .unwrap_or_default(),
            Source::Text => text(),
            Source::Messages => s
                .messages
                .as_ref()
                .map(|m| parse::from_messages(m, &self.formats, self.reasoning))
                .unwrap_or_default(),
            Source::Auto => match &s.output_tools {
                Some(t) if t.as_array().is_none_or(|a| !a.is_empty()) => parse::from_tools(t),
                _ => text(),
            },
        }
    }
}

impl SyncComponent for ToolCall {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        // The dataset's side first: a broken row cannot be scored whatever the policy wrote.
        let expected = match self.expected.render_value(s) {
            Ok(v) => match ast::load_expected(&v) {
                Ok(e) => e,
                Err(e) => return Outcome::error("bad_expected_calls", e),
            },
            Err(m) => return Outcome::error(m.reason, m.message),
        };
        let tools = match self.load_tools(s) {
            Ok(t) => t,
            Err(o) => return o,
        };
        let found = self.calls(s);
        let malformed: Vec<&String> = found
            .calls
            .iter()
            .filter_map(|c| c.as_ref().err())
            .collect();
        let actual: Vec<Option<&Call>> = found.calls.iter().map(|c| c.as_ref().ok()).collect();
        let (n, m) = (expected.len(), actual.len());

        let decl = |e: &Expected| tools.as_ref().and_then(|t| t.get(&e.name));
        let score = |i: usize, j: usize| {
            let a = actual[j].expect("matched calls parsed");
            ast::pair_score(&expected[i], a, decl(&expected[i]), self.strings, None)
        };
        // Only the first MAX_MATCHED calls are candidates for matching (the rest count as calls,
        // hence as extra): bounds the strict alignment's table for any output.
        let candidates = &actual[..m.min(MAX_MATCHED)];
        let matching = match self.order {
            Order::Any => ast::match_any(&expected, candidates, &score),
            Order::Strict => ast::match_strict(&expected, candidates, &score),
        };
        let matched = matching.pairs.len();
        let extra = m - matched;

        let format_ok = malformed.is_empty() && (m > 0 || n == 0);
        let format = f64::from(u8::from(format_ok));
        let schema = tools.as_ref().map(|t| {
            if m == 0 {
                f64::from(u8::from(n == 0))
            } else {
                let good = actual
                    .iter()
                    .flatten()
                    .filter(|c| ast::adheres(c, t).is_ok())
                    .count();
                good as f64 / m as f64
            }
        });
        let union = n + m - matched;
        let selection = if union == 0 {
            1.0
        } else {
            matched as f64 / union as f64
        };
        let params = if n.max(m) == 0 {
            1.0
        } else {
            matching.pairs.iter().map(|p| p.2).sum::<f64>() / n.max(m) as f64
        };
        let all_right =
            format_ok && n == m && matched == n && matching.pairs.iter().all(|p| p.2 == 1.0);

        let (reward, penalty) = match self.reward {
            RewardMode::AllOrNothing => (f64::from(u8::from(all_right)), 0.0),
            RewardMode::Decomposed => {
                let parts = [Some(format), schema, Some(selection), Some(params)];
                let combined = match self.combine {
                    Combine::Sum => {
                        let (mut num, mut den) = (0.0, 0.0);
                        for (c, w) in parts.iter().zip(self.weights) {
                            if let Some(c) = c {
                                num += w * c;
                                den += w;
                            }
                        }
                        if den > 0.0 {
                            num / den
                        } else {
                            0.0
                        }
                    }
                    Combine::Product => parts
                        .iter()
                        .zip(self.weights)
                        .filter(|(_, w)| *w > 0.0)
                        .filter_map(|(c, w)| c.map(|c| c.powf(w)))
                        .product(),
                };
                let penalty = self.penalty * extra as f64;
                (combined - penalty, penalty)
            }
        };

        if cx.explaining() {
            let mut problems = Vec::new();
            for &(i, j, s) in &matching.pairs {
                if s < 1.0 {
                    let mut p = Vec::new();
                    let a = actual[j].expect("matched calls parsed");
                    ast::pair_score(
                        &expected[i],
                        a,
                        decl(&expected[i]),
                        self.strings,
                        Some(&mut p),
                    );
                    problems.push(format!(
                        "`{}` (expected #{i}, call #{j}): {}",
                        expected[i].name,
                        p.join("; ")
                    ));
                }
            }
            let paired: Vec<usize> = matching.pairs.iter().map(|p| p.0).collect();
            for (i, e) in expected.iter().enumerate() {
                if !paired.contains(&i) {
                    problems.push(format!("expected `{}` (#{i}) was not called", e.name));
                }
            }
            let used: Vec<usize> = matching.pairs.iter().map(|p| p.1).collect();
            for (j, c) in actual.iter().enumerate() {
                if let (Some(c), false) = (c, used.contains(&j)) {
                    problems.push(format!("extra call `{}` (#{j})", c.name));
                }
            }
            for e in &malformed {
                problems.push(format!("malformed call: {e}"));
            }
            if let Some(t) = &tools {
                for c in actual.iter().flatten() {
                    if let Err(e) = ast::adheres(c, t) {
                        problems.push(format!("schema: {e}"));
                    }
                }
            }
            let via = match (found.via, found.stripped) {
                (Some(v), _) => v,
                (None, true) => "none after the thinking section",
                (None, false) => "none",
            };
            cx.note(|| {
                let head = format!(
                    "{n} expected, {m} call{} ({via}), {matched} matched, {extra} extra",
                    if m == 1 { "" } else { "s" }
                );
                if problems.is_empty() {
                    head
                } else {
                    format!("{head}; {}", problems.join("; "))
                }
            });
            cx.detail(|| {
                json!({
                    "format": format, "schema": schema, "selection": selection, "params": params,
                    "all_or_nothing": f64::from(u8::from(all_right)),
                    "expected": n, "calls": m, "matched": matched, "extra": extra,
                    "penalty": penalty, "via": via,
                    "calls_found": actual.iter().map(|c| c.as_ref().map(|c| json!({"name": c.name, "arguments": c.args}))).collect::<Vec<_>>(),
                })
            });
        }
        Outcome::ok(reward)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;

    fn run(spec: &Value, out: &str, item: Value) -> crate::ScoreResult {
        Program::compile(spec)
            .unwrap()
            .explain(&Sample::new(out, item))
    }

    #[test]
    fn weather_all_or_nothing() {
        let item = json!({"ground_truth": [{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["", "celsius"]}}]});
        let ok = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"paris, france\"}}</tool_call>";
        let r = run(&json!({"type": "tool_call"}), ok, item.clone());
        assert_eq!(r.reward, Some(1.0));
        let wrong = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}</tool_call>";
        assert_eq!(
            run(&json!({"type": "tool_call"}), wrong, item).reward,
            Some(0.0)
        );
    }

    #[test]
    fn decomposed_detail_has_sub_scores() {
        let item = json!({"ground_truth": [{"name": "f", "arguments": {"x": 1}}]});
        let out = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call><tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>";
        let r = run(
            &json!({"type": "tool_call", "reward": "decomposed"}),
            out,
            item,
        );
        // format 1, selection 1/2, params 1/2 (no tools: schema left out) → 2/3, minus 0.25.
        assert!((r.reward.unwrap() - (2.0 / 3.0 - 0.25)).abs() < 1e-9);
        let t = serde_json::to_value(&r.trace).unwrap().to_string();
        assert!(t.contains("\"selection\":0.5"), "{t}");
    }

    #[test]
    fn a_flood_of_calls_is_cheap_and_costly() {
        // 20,000 copies of the right call: matching is per name, so this is one 1 x 20,000
        // assignment, not a 20,000-square one.
        let one = "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>";
        let out = one.repeat(20_000);
        let item = json!({"ground_truth": [{"f": {"x": [1]}}, {"g": {"y": [2]}}]});
        for order in ["any", "strict"] {
            let t = std::time::Instant::now();
            let spec = json!({"type": "tool_call", "reward": "decomposed", "order": order});
            let r = run(&spec, &out, item.clone());
            assert!(t.elapsed().as_secs_f64() < 5.0, "took {:?}", t.elapsed());
            assert!(r.reward.unwrap() < -4000.0);
        }
    }

    #[test]
    fn bad_expected_is_an_error() {
        let r = run(&json!({"type": "tool_call"}), "x", json!({}));
        assert_eq!(r.reason(), Some("missing_field"));
        let r = run(
            &json!({"type": "tool_call"}),
            "x",
            json!({"ground_truth": 7}),
        );
        assert_eq!(r.reason(), Some("bad_expected_calls"));
    }
}
