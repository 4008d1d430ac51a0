//! One rule of a `tool_trace` spec, checked and compiled: exactly one check, only the
//! modifiers that check takes, usable tool names, expected arguments as templates, its penalty
//! and the label the trace names it by. Every problem is reported at the rule's own path.

use super::rules::{ArgValue, Check, Limit, Rule, Tools};
use super::{ToolNames, TraceReward, TraceRuleSpec};
use crate::compile::{did_you_mean, At, Compiler};
use crate::trajectory::canonical_json;
use serde_json::Value;
use std::fmt::Write as _;

/// The fields of a rule, for unknown-field errors (a test keeps it equal to `TraceRuleSpec`'s).
pub(super) const RULE_FIELDS: &[&str] = &[
    "require",
    "forbid",
    "before",
    "after",
    "arguments",
    "max_calls",
    "max_identical",
    "max_consecutive",
    "max_errors",
    "max_unanswered",
    "grounded",
    "tool",
    "from",
    "from_user",
    "penalty",
];

/// What a rule's compilation needs from the node around it.
pub(super) struct RulePlace {
    pub(super) i: usize,
    pub(super) reward: TraceReward,
    pub(super) default_penalty: Option<f64>,
}

/// Reports a rule's errors at its own path, remembering whether there were any.
struct RuleCx<'a> {
    cx: &'a mut Compiler,
    at: &'a At,
    here: String,
    ok: bool,
}

impl RuleCx<'_> {
    fn err(&mut self, field: Option<&str>, msg: impl Into<String>) {
        let sub = match field {
            Some(f) => format!("{}/{}", self.here, crate::compile::escape(f)),
            None => self.here.clone(),
        };
        self.cx.err_in(self.at, &sub, msg);
        self.ok = false;
    }

    /// The tools a field names; `None` (reported) when a name is not usable.
    fn tools(&mut self, field: &str, n: &ToolNames) -> Option<Tools> {
        let list: Vec<&String> = match n {
            ToolNames::One(s) => vec![s],
            ToolNames::Many(l) => l.iter().collect(),
        };
        if list.is_empty() {
            self.err(Some(field), "an empty list names no tool");
            return None;
        }
        let mut good = true;
        for name in &list {
            if name.is_empty() || name.trim() != name.as_str() {
                self.err(
                    Some(field),
                    format!(
                        "tool name `{name}` is empty or has surrounding spaces; names are \
                         matched exactly"
                    ),
                );
                good = false;
            }
        }
        good.then(|| {
            if list.iter().any(|n| n.as_str() == "*") {
                Tools::Any
            } else {
                Tools::Only(list.into_iter().cloned().collect())
            }
        })
    }

    /// [`RuleCx::tools`] for an optional field: `Err` when given and not usable.
    fn tools_opt(&mut self, field: &str, n: Option<&ToolNames>) -> Result<Option<Tools>, ()> {
        match n {
            None => Ok(None),
            Some(n) => self.tools(field, n).map(Some).ok_or(()),
        }
    }
}

pub(super) fn compile_rule(v: &Value, p: &RulePlace, cx: &mut Compiler, at: &At) -> Option<Rule> {
    let mut rc = RuleCx {
        cx,
        at,
        here: format!("rules/{}", p.i),
        ok: true,
    };
    let Some(obj) = v.as_object() else {
        rc.err(
            None,
            format!(
                "a rule is an object such as {{require: book}}, found {}",
                crate::compile::kind_of(v)
            ),
        );
        return None;
    };
    let mut clean = serde_json::Map::new();
    for (k, val) in obj {
        if RULE_FIELDS.contains(&k.as_str()) {
            clean.insert(k.clone(), val.clone());
        } else {
            rc.err(
                Some(k),
                format!(
                    "unknown rule field `{k}`{}; expected one of {}",
                    did_you_mean(k, RULE_FIELDS),
                    RULE_FIELDS
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    let spec: TraceRuleSpec = match serde_path_to_error::deserialize(Value::Object(clean)) {
        Ok(s) => s,
        Err(e) => {
            let inner = e.path().to_string();
            let field = (inner != "." && !inner.is_empty())
                .then(|| inner.replace(['.', '['], "/").replace(']', ""));
            rc.err(field.as_deref(), e.into_inner().to_string());
            return None;
        }
    };

    // The check: exactly one.
    let limits = [
        ("max_calls", spec.max_calls, Limit::Calls),
        ("max_identical", spec.max_identical, Limit::Identical),
        ("max_consecutive", spec.max_consecutive, Limit::Consecutive),
        ("max_errors", spec.max_errors, Limit::Errors),
        ("max_unanswered", spec.max_unanswered, Limit::Unanswered),
    ];
    let mut kinds: Vec<&str> = Vec::new();
    if spec.require.is_some() {
        kinds.push("require");
    }
    if spec.forbid.is_some() {
        kinds.push("forbid");
    }
    kinds.extend(limits.iter().filter(|l| l.1.is_some()).map(|l| l.0));
    if spec.grounded.is_some() {
        kinds.push("grounded");
    }
    let kind = match kinds.as_slice() {
        [k] => *k,
        [] => {
            rc.err(
                None,
                "a rule needs a check: `require`, `forbid`, `max_calls`, `max_identical`, \
                 `max_consecutive`, `max_errors`, `max_unanswered` or `grounded`",
            );
            return None;
        }
        many => {
            let many = many
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            rc.err(
                None,
                format!("one check per rule, found {many}: write one rule for each"),
            );
            return None;
        }
    };

    // Modifiers that this check does not take.
    let takes: &[&str] = match kind {
        "require" => &["before", "arguments"],
        "forbid" => &["after", "arguments"],
        "grounded" => &["tool", "from", "from_user"],
        _ => &["tool"],
    };
    for (field, given) in [
        ("before", spec.before.is_some()),
        ("after", spec.after.is_some()),
        ("arguments", spec.arguments.is_some()),
        ("tool", spec.tool.is_some()),
        ("from", spec.from.is_some()),
        ("from_user", spec.from_user.is_some()),
    ] {
        if given && !takes.contains(&field) {
            let hint = match field {
                "before" => {
                    "; `before` goes with `require` (`{require: get_order, before: update_order}`)"
                }
                "after" => {
                    "; `after` goes with `forbid` (`{forbid: \"*\", after: transfer_to_human}`)"
                }
                "tool" => "; `require` and `forbid` name their tools themselves",
                _ => "",
            };
            rc.err(
                Some(field),
                format!("`{field}` does not apply to a `{kind}` rule{hint}"),
            );
        }
    }

    let penalty = match (spec.penalty.map(|n| n.0), p.reward) {
        (Some(_), r) if r != TraceReward::Penalty => {
            rc.err(
                Some("penalty"),
                "a rule's `penalty` is only used with `reward: penalty`",
            );
            0.0
        }
        (Some(x), _) if x < 0.0 => {
            rc.err(
                Some("penalty"),
                "`penalty` must not be negative (it is subtracted per violation)",
            );
            0.0
        }
        (Some(x), _) => x,
        (None, TraceReward::Penalty) => p.default_penalty.unwrap_or_else(|| {
            rc.err(
                None,
                "`reward: penalty` needs a `penalty`: give one at the top (per violation) or on \
                 this rule",
            );
            0.0
        }),
        (None, _) => 0.0,
    };

    let mut arguments = Vec::new();
    for (k, val) in spec.arguments.iter().flatten() {
        let a = match val {
            Value::String(src) => {
                let sub = format!("{}/arguments/{}", rc.here, crate::compile::escape(k));
                match rc.cx.template_in(src, at, &sub) {
                    Some(t) if t.is_literal() => ArgValue::Fixed(canonical_json(val)),
                    Some(t) => ArgValue::Template(t),
                    None => {
                        rc.ok = false;
                        continue;
                    }
                }
            }
            other => ArgValue::Fixed(canonical_json(other)),
        };
        arguments.push((k.clone(), a));
    }

    let (check, mut label) = match kind {
        "require" => {
            let tools = rc.tools("require", spec.require.as_ref().expect("the check"));
            let before = rc.tools_opt("before", spec.before.as_ref());
            let (Some(all), Ok(before)) = (tools, before) else {
                return None;
            };
            // Each listed tool is required on its own.
            let tools: Vec<Tools> = match all {
                Tools::Any => vec![Tools::Any],
                Tools::Only(n) => n.into_iter().map(|x| Tools::Only(vec![x])).collect(),
            };
            let mut label = format!("require {}", tools_label(&tools));
            if let Some(b) = &before {
                let _ = write!(label, " before {}", b.label());
            }
            (Check::Require { tools, before }, label)
        }
        "forbid" => {
            let tools = rc.tools("forbid", spec.forbid.as_ref().expect("the check"));
            let after = rc.tools_opt("after", spec.after.as_ref());
            let (Some(tools), Ok(after)) = (tools, after) else {
                return None;
            };
            let mut label = format!("forbid {}", tools.label());
            if let Some(a) = &after {
                let _ = write!(label, " after {}", a.label());
            }
            (Check::Forbid { tools, after }, label)
        }
        "grounded" => {
            let path_src = spec.grounded.as_deref().expect("the check");
            let path: Vec<String> = path_src.split('.').map(str::to_string).collect();
            if path.iter().any(|s| s.trim().is_empty()) {
                rc.err(
                    Some("grounded"),
                    format!("`{path_src}` is not an argument path (`table_id`, `address.zip`)"),
                );
            }
            let tool = if let Some(n) = &spec.tool {
                rc.tools("tool", n)
            } else {
                rc.err(
                    Some("tool"),
                    "`grounded` needs `tool`: the tool whose argument it is",
                );
                None
            };
            let from = rc.tools_opt("from", spec.from.as_ref());
            let (Some(tool), Ok(from)) = (tool, from) else {
                return None;
            };
            let from = from.unwrap_or(Tools::Any);
            let from_user = spec.from_user.unwrap_or(false);
            let label = format!(
                "grounded {}.{path_src} from {}{}",
                tool.label(),
                from.label(),
                if from_user { " or the user" } else { "" }
            );
            (
                Check::Grounded {
                    tool,
                    path,
                    from,
                    from_user,
                },
                label,
            )
        }
        limit_name => {
            let (name, max, what) = limits
                .iter()
                .find(|l| l.0 == limit_name)
                .map(|l| (l.0, l.1.expect("the check").0, l.2))
                .expect("a limit");
            let least = u8::from(matches!(what, Limit::Identical | Limit::Consecutive));
            if max.fract() != 0.0 || max < f64::from(least) {
                rc.err(
                    Some(name),
                    if least == 1 {
                        format!(
                            "`{name}` must be a whole number, at least 1 (a call is always \
                             identical to itself), found {max}"
                        )
                    } else {
                        format!("`{name}` must be a whole number ≥ 0, found {max}")
                    },
                );
            }
            let Ok(tool) = rc.tools_opt("tool", spec.tool.as_ref()) else {
                return None;
            };
            let mut label = format!("{name} {max}");
            if let Some(t) = &tool {
                let _ = write!(label, " ({})", t.label());
            }
            // Whole and ≥ 0 (checked above); `as` saturates past usize::MAX.
            let max = max as usize;
            (
                Check::Limit {
                    what,
                    max,
                    tool: tool.unwrap_or(Tools::Any),
                },
                label,
            )
        }
    };
    if !arguments.is_empty() {
        let shown: Vec<String> = arguments
            .iter()
            .map(|(k, a)| match a {
                ArgValue::Fixed(v) => format!("{k}={v}"),
                ArgValue::Template(t) => format!("{k}={}", t.source()),
            })
            .collect();
        let _ = write!(label, " with {}", shown.join(", "));
    }
    rc.ok.then_some(Rule {
        check,
        arguments,
        penalty,
        label,
    })
}

fn tools_label(tools: &[Tools]) -> String {
    if tools.len() == 1 {
        tools[0].label()
    } else {
        format!(
            "[{}]",
            tools
                .iter()
                .map(Tools::label)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
