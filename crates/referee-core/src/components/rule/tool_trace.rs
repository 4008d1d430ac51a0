//! # tool_trace
//! *What it scores:* the path of an agent's rollout, the tool calls it made in order, against
//! rules like the ones "penalize the path, reward the outcome" training, TIER/ToolRLA's
//! decomposed tool rewards and τ-bench's policies check: calls that had to succeed, calls that
//! are forbidden (always, or after another), an order (authenticate before any write, read
//! before write), limits (calls in all or per tool, identical repeats, repeats in a row, errors,
//! unanswered calls), and arguments that must come from an earlier tool result instead of being
//! made up. Or it scores the path's efficiency against the item's minimal number of calls
//! (PROVE). It scores the path, not the outcome: pair it with `state_match`, in a `weighted_sum`
//! (a penalty) or a `product` (efficiency).
//!
//! What counts as a call and a result is decided once for every component, in the trajectory
//! (`crate::trajectory`): a call is an assistant turn's `tool_calls` entry, and a result is a
//! `tool` turn answering an earlier call. A `tool` turn that answers no call (a result the
//! policy wrote itself), tool-result markup in the assistant's text and calls written in a user
//! turn are not calls or results. A call *succeeded* when its result came back and the
//! environment did not flag it as an error. Tool names match exactly: `Book`, `b00k` and
//! `book ` are not `book`. `"*"` (quoted in YAML) stands for every tool.
//!
//! *Spec:*
//! - `rules`: a list of rules. Each rule holds one check and that check's modifiers:
//!   - `require: book` (or a list, each one required): at least one successful call.
//!     `arguments: {table_id: "{{item.table}}"}` counts only calls whose arguments include these
//!     (compared as JSON, so numbers compare by value and `"7"` is not `7`; string values may be
//!     templates). With `before: [update_order, refund]`, every call to those tools must instead
//!     come after a successful call, that is, after a turn holding its result. Calls to a tool
//!     the rule names as required are not gated by it; `"*"` names none, so `{require: "*",
//!     before: book}` wants some successful call before each `book`. Each call that does not
//!     come after one is a violation.
//!   - `forbid: delete_account` (or a list, or `"*"`): every call is a violation. `arguments`
//!     narrows it to calls with those arguments. With `after: transfer_to_human`, only the calls
//!     made after the first call to one of those tools are violations.
//!   - `max_calls: 20`, `max_identical: 1` (the same tool with the same arguments, compared as
//!     JSON: key order and whitespace make no difference), `max_consecutive: 3` (calls to one
//!     tool in a row), `max_errors: 0` (results flagged as errors), `max_unanswered: 0` (calls
//!     that never got a result). `tool:` restricts a limit to some tools (by default, every
//!     tool). Each call beyond the limit is one violation.
//!   - `grounded: table_id` with `tool: book` (required): the argument (a dotted path into the
//!     arguments; for a list or an object, every string and number in it) must occur, as a whole
//!     token, in an earlier successful result of a tool in `from` (default `"*"`). With
//!     `from_user: true` (default false, because user messages are full of small numbers), a
//!     user message before the call also counts. A result never grounds a value its own call was
//!     given, because a search that echoes its query proves nothing. Error results are not
//!     sources either. Each call with an ungrounded value, or with arguments that are not a JSON
//!     object, is one violation.
//!   - `penalty` (with `reward: penalty`): what one violation of this rule costs.
//! - `reward`: `all` (the default: 1 when no rule is broken, else 0), `fraction` (the share of
//!   rules kept), `penalty` (−Σ penalty × violations, at most 0, meant to be added to an
//!   outcome), or `efficiency` (min(1, `min_calls` / calls), as in PROVE; takes no rules).
//! - `penalty` (required with `reward: penalty` unless every rule has its own): what one
//!   violation costs for rules without their own. `floor`: the lowest value a `penalty` reward
//!   can reach (for example −1).
//! - `min_calls` (required with `reward: efficiency`): the item's minimal number of calls, as a
//!   template (`"{{item.min_calls}}"`) or a number.
//!
//! *Example:*
//! ```yaml
//! type: tool_trace
//! name: path
//! reward: penalty
//! penalty: 0.1
//! floor: -1
//! rules:
//!   - {require: book}
//!   - {require: authenticate, before: [book, cancel]}
//!   - {forbid: delete_account, penalty: 0.5}
//!   - {forbid: "*", after: transfer_to_human}
//!   - {max_identical: 1}
//!   - {grounded: table_id, tool: book, from: [search_tables]}
//! ```
//!
//! *Score and failure modes:* `all` gives 1 or 0, `fraction` a value in [0, 1], `penalty` a
//! value in [`floor`, 0], and `efficiency` a value in [0, 1]. Efficiency is 1 whenever there are
//! no more calls than `min_calls`, so on its own it pays for doing nothing: multiply it by the
//! outcome. For "penalize the path, reward the outcome", use `{type: weighted_sum, normalize:
//! none, weights: [1, 1], inputs: [{type: state_match, name: outcome, ...}, {type: tool_trace,
//! name: path, reward: penalty, ...}]}`. For efficiency, use a `product` of the outcome and a
//! `reward: efficiency` node. To require the rules before anything else is scored, use a `gate`
//! whose `if` is a `reward: all` node. `components` keeps each named part apart.
//!
//! Whatever the policy did is scored, with status `ok`: no call at all, arguments that are not
//! JSON, invented ids, a fake result, an error followed by a claim of success. A row with
//! neither messages nor output tools has no calls, so its required calls are missing and each
//! is a violation. Only the dataset can make this grader fail: a template in `arguments` or
//! `min_calls` that reads a missing item field is a `missing_field` error, and a `min_calls`
//! that is not a non-negative number is a `bad_min_calls` error. The trace's note summarizes the
//! result. Its detail lists every rule (kept, number of violations) and the first 100
//! violations of each rule, each with the rule, call index, tool, message index and reason.
//! Grounding looks values up in an index of the sources' words, so its cost grows with the
//! rollout, not with values × text. A rule checks at most 2^20 candidate occurrences per
//! sample; a rollout built to exceed that (a value whose first word is in every result,
//! thousands of times) has its remaining values counted as violations.
//!
//! Compile errors: a rule with no check or with two; a modifier its check does not take
//! (`before` without `require`, `after` without `forbid`, `tool` with `require`/`forbid`,
//! `from` without `grounded`); `grounded` without `tool`; a tool name that is empty or has
//! surrounding spaces; `max_identical`/`max_consecutive` below 1; no rules, or rules with
//! `reward: efficiency`; `min_calls` without `reward: efficiency`, or missing with it;
//! `penalty`/`floor` without `reward: penalty`, or no penalty for some rule with it; a
//! negative penalty; a positive floor.

mod ground;
mod rule_spec;
mod rules;

use crate::compile::{sync, At, Compiler, Number};
use crate::node::{ScoreCtx, SyncComponent};
use crate::outcome::Outcome;
use crate::sample::Sample;
use crate::template::Template;
use crate::trajectory::canonical_json;
use rule_spec::{compile_rule, RulePlace};
use rules::{ArgValue, Rule, Tally};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolTraceSpec {
    /// The rules the rollout's calls must keep (not with `reward: efficiency`).
    #[serde(default)]
    #[schemars(with = "Vec<TraceRuleSpec>")]
    pub rules: Vec<Value>,
    /// `all` (default), `fraction`, `penalty` or `efficiency`.
    #[serde(default)]
    pub reward: TraceReward,
    /// `reward: penalty`: the cost of one violation, for rules without their own.
    #[serde(default)]
    pub penalty: Option<Number>,
    /// `reward: penalty`: the lowest value (e.g. -1).
    #[serde(default)]
    pub floor: Option<Number>,
    /// `reward: efficiency`: the item's minimal number of calls (a template or a number).
    #[serde(default)]
    pub min_calls: Option<MinCalls>,
}

/// One rule: one check (`require`, `forbid`, a `max_*` limit, `grounded`) and its modifiers.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceRuleSpec {
    /// At least one successful call to each of these tools (`"*"`: any tool).
    #[serde(default)]
    pub require: Option<ToolNames>,
    /// No call to these tools (`"*"`: any tool).
    #[serde(default)]
    pub forbid: Option<ToolNames>,
    /// With `require`: the required calls must succeed before every call to these tools.
    #[serde(default)]
    pub before: Option<ToolNames>,
    /// With `forbid`: only calls after the first call to one of these tools are forbidden.
    #[serde(default)]
    pub after: Option<ToolNames>,
    /// With `require`/`forbid`: only calls whose arguments include these count (string values
    /// may be templates).
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, Value>>,
    /// At most this many calls.
    #[serde(default)]
    pub max_calls: Option<Number>,
    /// At most this many calls with the same name and arguments (≥ 1).
    #[serde(default)]
    pub max_identical: Option<Number>,
    /// At most this many calls to one tool in a row (≥ 1).
    #[serde(default)]
    pub max_consecutive: Option<Number>,
    /// At most this many results flagged as errors.
    #[serde(default)]
    pub max_errors: Option<Number>,
    /// At most this many calls without a result.
    #[serde(default)]
    pub max_unanswered: Option<Number>,
    /// An argument of `tool`'s calls (a dotted path) whose value must come from an earlier
    /// result.
    #[serde(default)]
    pub grounded: Option<String>,
    /// With a limit (default every tool) or `grounded` (required): the tools it applies to.
    #[serde(default)]
    pub tool: Option<ToolNames>,
    /// With `grounded`: the tools whose results may show the value (default `"*"`).
    #[serde(default)]
    pub from: Option<ToolNames>,
    /// With `grounded`: user messages may show the value too (default false).
    #[serde(default)]
    pub from_user: Option<bool>,
    /// With `reward: penalty`: the cost of one violation of this rule.
    #[serde(default)]
    pub penalty: Option<Number>,
}

/// One tool name or a list of them; `"*"` is every tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolNames {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MinCalls {
    Number(Number),
    Template(String),
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceReward {
    #[default]
    All,
    Fraction,
    Penalty,
    Efficiency,
}

pub struct ToolTrace {
    rules: Vec<Rule>,
    reward: TraceReward,
    /// `penalty`: the lowest value.
    floor: f64,
    /// `efficiency`: the minimal number of calls.
    min_calls: Option<Minimum>,
}

enum Minimum {
    Fixed(f64),
    Template(Template),
}

pub fn compile(v: &Value, cx: &mut Compiler, at: &At) -> Option<crate::node::Imp> {
    let spec: ToolTraceSpec = cx.spec(v, at)?;
    let mut ok = true;
    let reward = spec.reward;
    let efficiency = reward == TraceReward::Efficiency;
    let penalty_mode = reward == TraceReward::Penalty;
    if efficiency && !spec.rules.is_empty() {
        cx.err(
            at,
            Some("rules"),
            "`reward: efficiency` scores the number of calls only; put the rules in another \
             tool_trace node",
        );
        ok = false;
    }
    if !efficiency && spec.rules.is_empty() {
        cx.err(
            at,
            Some("rules"),
            "no rules: every rollout would keep them all",
        );
        ok = false;
    }
    let min_calls = match (&spec.min_calls, efficiency) {
        (None, true) => {
            cx.err(
                at,
                Some("min_calls"),
                "`reward: efficiency` needs `min_calls`, the item's minimal number of calls \
                 (e.g. \"{{item.min_calls}}\")",
            );
            ok = false;
            None
        }
        (Some(_), false) => {
            cx.err(
                at,
                Some("min_calls"),
                "`min_calls` is only used with `reward: efficiency`",
            );
            ok = false;
            None
        }
        (None, false) => None,
        (Some(MinCalls::Number(n)), true) => {
            if n.0 < 0.0 {
                cx.err(
                    at,
                    Some("min_calls"),
                    format!("`min_calls` must be ≥ 0, found {}", n.0),
                );
                ok = false;
            }
            Some(Minimum::Fixed(n.0))
        }
        (Some(MinCalls::Template(t)), true) => {
            let t = cx.template(t, at, "min_calls");
            ok &= t.is_some();
            t.map(Minimum::Template)
        }
    };
    for (field, given) in [
        ("penalty", spec.penalty.is_some()),
        ("floor", spec.floor.is_some()),
    ] {
        if given && !penalty_mode {
            cx.err(
                at,
                Some(field),
                format!("`{field}` is only used with `reward: penalty`"),
            );
            ok = false;
        }
    }
    let default_penalty = spec.penalty.map(|n| n.0);
    if default_penalty.is_some_and(|p| p < 0.0) {
        cx.err(
            at,
            Some("penalty"),
            "`penalty` must not be negative (it is subtracted per violation)",
        );
        ok = false;
    }
    let floor = spec.floor.map_or(f64::MIN, |n| n.0);
    if floor > 0.0 {
        cx.err(
            at,
            Some("floor"),
            format!("`floor` must be ≤ 0 (a penalty is never positive), found {floor}"),
        );
        ok = false;
    }
    let mut rules = Vec::new();
    for (i, r) in spec.rules.iter().enumerate() {
        let p = RulePlace {
            i,
            reward,
            default_penalty,
        };
        match compile_rule(r, &p, cx, at) {
            Some(rule) => rules.push(rule),
            None => ok = false,
        }
    }
    ok.then(|| {
        sync(ToolTrace {
            rules,
            reward,
            floor,
            min_calls,
        })
    })
}

/// `1 call`, `2 calls`.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// The `efficiency` reward: min(1, minimal calls / calls).
fn efficiency(m: &Minimum, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
    let min = match m {
        Minimum::Fixed(x) => *x,
        Minimum::Template(t) => {
            let v = match t.render_value(s) {
                Ok(v) => v,
                Err(miss) => return miss.outcome(cx),
            };
            let x = match &*v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse::<f64>().ok(),
                _ => None,
            };
            match x {
                Some(x) if x.is_finite() && x >= 0.0 => x,
                _ => {
                    return Outcome::error(
                        "bad_min_calls",
                        format!(
                            "`min_calls` ({}) is {}, not a non-negative number",
                            t.source(),
                            crate::node::shorten(&v.to_string())
                        ),
                    )
                }
            }
        }
    };
    let calls = s.trajectory().calls.len();
    let value = if calls as f64 <= min {
        1.0
    } else {
        min / calls as f64
    };
    cx.note(|| {
        format!(
            "{}, at least {min} needed: efficiency {value:.3}",
            plural(calls, "call")
        )
    });
    cx.detail(|| json!({"calls": calls, "min_calls": min, "efficiency": value}));
    Outcome::ok(value)
}

impl SyncComponent for ToolTrace {
    fn score(&self, s: &Sample, cx: &mut ScoreCtx) -> Outcome {
        if let Some(m) = &self.min_calls {
            return efficiency(m, s, cx);
        }
        // The dataset's side first: expected arguments rendered for this row.
        let mut wants: Vec<Vec<(&str, String)>> = Vec::with_capacity(self.rules.len());
        for r in &self.rules {
            let mut w = Vec::with_capacity(r.arguments.len());
            for (k, a) in &r.arguments {
                let v = match a {
                    ArgValue::Fixed(c) => c.clone(),
                    ArgValue::Template(t) => match t.render_value(s) {
                        Ok(v) => canonical_json(&v),
                        Err(miss) => return miss.outcome(cx),
                    },
                };
                w.push((k.as_str(), v));
            }
            wants.push(w);
        }
        let t = s.trajectory();
        let explain = cx.explaining();
        let tallies: Vec<Tally> = self
            .rules
            .iter()
            .zip(&wants)
            .map(|(r, w)| r.check(t, w, explain))
            .collect();
        let broken = tallies.iter().filter(|x| x.count > 0).count();
        let violations: usize = tallies.iter().map(|x| x.count).sum();
        let cost: f64 = self
            .rules
            .iter()
            .zip(&tallies)
            .map(|(r, x)| r.penalty * x.count as f64)
            .sum();
        let n = self.rules.len();
        let value = match self.reward {
            TraceReward::All => f64::from(u8::from(broken == 0)),
            TraceReward::Fraction => (n - broken) as f64 / n as f64,
            // No violation is 0, not -0.
            TraceReward::Penalty if cost == 0.0 => 0.0,
            TraceReward::Penalty => (-cost).max(self.floor),
            TraceReward::Efficiency => unreachable!("efficiency has min_calls"),
        };
        if explain {
            let calls = t.calls.len();
            let at = |call: Option<usize>| match call {
                Some(i) => {
                    let c = &t.calls[i];
                    format!(" (call {i}, message {})", t.turns[c.turn].index)
                }
                None => String::new(),
            };
            cx.note(|| {
                let rules = if n == 1 {
                    "the rule".to_string()
                } else {
                    format!("{n} rules")
                };
                if broken == 0 {
                    let all = if n == 1 { "" } else { "all " };
                    return format!("{all}{rules} kept ({})", plural(calls, "call"));
                }
                let mut parts = Vec::new();
                for (r, x) in self
                    .rules
                    .iter()
                    .zip(&tallies)
                    .filter(|(_, x)| x.count > 0)
                    .take(3)
                {
                    let first = &x.shown[0];
                    let more = if x.count > 1 {
                        format!(", {} more", x.count - 1)
                    } else {
                        String::new()
                    };
                    parts.push(format!(
                        "{}: {}{}{more}",
                        r.label,
                        first.why,
                        at(first.call)
                    ));
                }
                let of = if n == 1 {
                    String::new()
                } else {
                    format!("{broken} of ")
                };
                format!(
                    "{of}{rules} broken, {} in {}; {}",
                    plural(violations, "violation"),
                    plural(calls, "call"),
                    parts.join("; ")
                )
            });
            cx.detail(|| {
                let mut list = Vec::new();
                for (i, (r, x)) in self.rules.iter().zip(&tallies).enumerate() {
                    for v in &x.shown {
                        let call = v.call.map(|c| &t.calls[c]);
                        list.push(json!({
                            "rule": i, "check": r.label, "call": v.call,
                            "tool": call.map(|c| c.name.as_str()),
                            "message": call.map(|c| t.turns[c.turn].index),
                            "why": v.why,
                        }));
                    }
                }
                json!({
                    "calls": calls,
                    "rules": self.rules.iter().zip(&tallies).map(|(r, x)| json!({
                        "check": r.label, "kept": x.count == 0, "violations": x.count,
                    })).collect::<Vec<_>>(),
                    "violations": list,
                    "penalty": (self.reward == TraceReward::Penalty).then_some(cost),
                })
            });
        }
        Outcome::ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Program;

    fn run(spec: &Value, messages: Value) -> crate::ScoreResult {
        let mut s = Sample::new("", json!({"min_calls": 2, "table": 7}));
        s.messages = Some(messages);
        Program::compile(spec).unwrap().explain(&s)
    }

    fn call(id: &str, name: &str, args: &str) -> Value {
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]})
    }

    fn result(id: &str, text: &str) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": text})
    }

    #[test]
    fn rule_fields_are_the_spec_fields() {
        let schema = schemars::SchemaGenerator::default().into_root_schema_for::<TraceRuleSpec>();
        let mut from_schema: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut listed = rule_spec::RULE_FIELDS.to_vec();
        from_schema.sort_unstable();
        listed.sort_unstable();
        assert_eq!(from_schema, listed);
    }

    #[test]
    fn penalty_counts_every_violation_and_stops_at_the_floor() {
        let mut msgs = vec![json!({"role": "user", "content": "find a table"})];
        for i in 0..50 {
            msgs.push(call(&format!("c{i}"), "search", "{\"q\": \"x\"}"));
            msgs.push(result(&format!("c{i}"), "T-1"));
        }
        let spec = |floor: Option<f64>| {
            let mut s = json!({"type": "tool_trace", "reward": "penalty", "penalty": 0.01,
                "rules": [{"max_identical": 1}]});
            if let Some(f) = floor {
                s["floor"] = json!(f);
            }
            s
        };
        let r = run(&spec(None), Value::Array(msgs.clone()));
        assert!((r.reward.unwrap() + 0.49).abs() < 1e-9, "{:?}", r.reward);
        let r = run(&spec(Some(-0.25)), Value::Array(msgs));
        assert_eq!(r.reward, Some(-0.25));
    }

    #[test]
    fn efficiency_is_the_minimum_over_the_calls() {
        let spec = json!({"type": "tool_trace", "reward": "efficiency", "min_calls": "{{item.min_calls}}"});
        let four = json!([
            call("a", "f", "{}"),
            result("a", "x"),
            call("b", "f", "{}"),
            result("b", "x"),
            call("c", "f", "{}"),
            result("c", "x"),
            call("d", "f", "{}"),
            result("d", "x")
        ]);
        assert_eq!(run(&spec, four).reward, Some(0.5));
        assert_eq!(run(&spec, json!([call("a", "f", "{}")])).reward, Some(1.0));
    }

    #[test]
    fn the_trace_names_each_violation() {
        let spec = json!({"type": "tool_trace", "rules": [{"forbid": "delete_account"}, {"require": "book"}, {"max_calls": 5}]});
        let msgs = json!([{"role": "user", "content": "close it"}, call("a", "delete_account", "{}"),
            result("a", "ok"), {"role": "assistant", "content": "done"}]);
        let r = run(&spec, msgs);
        assert_eq!(r.reward, Some(0.0));
        let d = r.trace.unwrap().detail.unwrap();
        assert_eq!(
            d["violations"],
            json!([
                {"rule": 0, "check": "forbid delete_account", "call": 0, "tool": "delete_account",
                 "message": 1, "why": "`delete_account` is forbidden"},
                {"rule": 1, "check": "require book", "call": null, "tool": null, "message": null,
                 "why": "no call to `book`"}
            ])
        );
        assert_eq!(
            d["rules"],
            json!([
                {"check": "forbid delete_account", "kept": false, "violations": 1},
                {"check": "require book", "kept": false, "violations": 1},
                {"check": "max_calls 5", "kept": true, "violations": 0}
            ])
        );
        assert_eq!(d["calls"], 1);
    }

    #[test]
    fn hostile_rollouts_are_scored_not_crashed() {
        let mut deep = json!("T-1");
        for _ in 0..40 {
            deep = json!([deep]);
        }
        let spec = json!({"type": "tool_trace", "reward": "fraction", "rules": [
            {"require": "book", "arguments": {"table_id": "T-1"}}, {"require": "a", "before": "*"},
            {"forbid": "*", "after": "x"}, {"max_identical": 1}, {"max_consecutive": 1},
            {"max_errors": 0}, {"max_unanswered": 0},
            {"grounded": "table_id", "tool": "*", "from_user": true},
            {"grounded": "a.b.c", "tool": "*"}]});
        let msgs = json!([1, "text", null, [], {"role": 5}, {"role": "assistant", "tool_calls": "nope"},
            {"role": "assistant", "content": {"x": 1}, "tool_calls": [{"function": 5}, {"name": null, "arguments": [1, 2]},
                {"name": "book", "arguments": {"table_id": deep}}, {"function": {"name": "book", "arguments": "{\"a\": {\"b\": 3}}"}},
                {"id": 7, "name": "", "arguments": "\\u0000 \u{0}"}]},
            {"role": "tool", "content": {"x": 1}, "is_error": "yes"}, {"role": "tool", "tool_call_id": 5},
            {"role": "user", "content": [{"text": "T-1"}, 3]}]);
        let r = run(&spec, msgs);
        assert_eq!(r.status.as_str(), "ok");
        let v = r.reward.unwrap();
        assert!((0.0..=1.0).contains(&v), "{v}");
    }

    #[test]
    fn a_flood_of_calls_with_invented_ids_is_cheap() {
        // 2,000 turns, each booking a different invented id against a 2 KB search result.
        let mut msgs = Vec::new();
        let filler = "table free ".repeat(180);
        for i in 0..2000 {
            msgs.push(call(
                &format!("s{i}"),
                "search",
                &format!("{{\"page\": {i}}}"),
            ));
            msgs.push(result(&format!("s{i}"), &format!("{filler} T-{i}")));
            msgs.push(call(
                &format!("b{i}"),
                "book",
                &format!("{{\"table_id\": \"X-{i}\"}}"),
            ));
            msgs.push(result(&format!("b{i}"), "booked"));
        }
        let spec = json!({"type": "tool_trace", "reward": "penalty", "penalty": 0.001, "rules": [
            {"grounded": "table_id", "tool": "book"}, {"max_identical": 1}, {"require": "search", "before": "book"}]});
        let t = std::time::Instant::now();
        let r = run(&spec, Value::Array(msgs));
        assert!(t.elapsed().as_secs() < 20, "took {:?}", t.elapsed());
        assert!((r.reward.unwrap() + 2.0).abs() < 1e-9, "{:?}", r.reward);
    }

    #[test]
    fn a_template_argument_is_rendered_per_row() {
        let spec = json!({"type": "tool_trace", "rules": [{"require": "book", "arguments": {"table": "{{item.table}}"}}]});
        let ok = json!([call("a", "book", "{\"table\": 7.0}"), result("a", "booked")]);
        assert_eq!(run(&spec, ok).reward, Some(1.0));
        let wrong = json!([
            call("a", "book", "{\"table\": \"7\"}"),
            result("a", "booked")
        ]);
        assert_eq!(run(&spec, wrong).reward, Some(0.0));
    }
}
