//! The compiled rules of `tool_trace`, and how each one is checked against a trajectory.

use super::ground::Sources;
use crate::template::Template;
use crate::trajectory::{canonical_json, Call, Trajectory};
use serde_json::Value;
use std::collections::HashMap;

/// Violations kept per rule for the trace (every violation is counted).
const SHOWN: usize = 100;

/// How deep a grounded argument may nest before it cannot be traced.
const MAX_DEPTH: usize = 32;

/// Tool names, matched exactly, or every tool (`"*"`).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tools {
    Any,
    Only(Vec<String>),
}

impl Tools {
    pub(super) fn has(&self, name: &str) -> bool {
        match self {
            Tools::Any => true,
            Tools::Only(names) => names.iter().any(|n| n == name),
        }
    }

    /// `book`, `[get_order, refund]`, `*`: as the spec wrote it.
    pub(super) fn label(&self) -> String {
        match self {
            Tools::Any => "*".into(),
            Tools::Only(n) if n.len() == 1 => n[0].clone(),
            Tools::Only(n) => format!("[{}]", n.join(", ")),
        }
    }

    /// `` `book` `` or `any tool`, for sentences.
    fn prose(&self) -> String {
        match self {
            Tools::Any => "any tool".into(),
            Tools::Only(n) => n
                .iter()
                .map(|x| format!("`{x}`"))
                .collect::<Vec<_>>()
                .join(" or "),
        }
    }
}

/// What a rule checks.
pub(super) enum Check {
    /// Each entry needs a successful call; with `before`, ahead of every call to those tools.
    Require {
        tools: Vec<Tools>,
        before: Option<Tools>,
    },
    /// Every call to these (after the first call to `after`, when given) is a violation.
    Forbid { tools: Tools, after: Option<Tools> },
    Limit {
        what: Limit,
        max: usize,
        tool: Tools,
    },
    /// The argument at `path` of each call to `tool` must have been shown to the agent.
    Grounded {
        tool: Tools,
        path: Vec<String>,
        from: Tools,
        from_user: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Limit {
    Calls,
    Identical,
    Consecutive,
    Errors,
    Unanswered,
}

/// An expected argument value of `require`/`forbid`: fixed at compile time (in canonical JSON)
/// or a template rendered per sample.
pub(super) enum ArgValue {
    Fixed(String),
    Template(Template),
}

pub(super) struct Rule {
    pub(super) check: Check,
    /// `require`/`forbid`: a call counts only when its arguments include these.
    pub(super) arguments: Vec<(String, ArgValue)>,
    /// The cost of one violation (`reward: penalty`).
    pub(super) penalty: f64,
    /// The rule as the trace names it (`require book before update_order`).
    pub(super) label: String,
}

/// The violations of one rule for one sample: all counted, the first [`SHOWN`] described
/// (only when explaining, so the fast path formats nothing).
pub(super) struct Tally {
    pub(super) count: usize,
    pub(super) shown: Vec<Violation>,
    explain: bool,
}

pub(super) struct Violation {
    /// The call (index into the trajectory's calls), when the violation is one call.
    pub(super) call: Option<usize>,
    pub(super) why: String,
}

impl Tally {
    fn new(explain: bool) -> Tally {
        Tally {
            count: 0,
            shown: Vec::new(),
            explain,
        }
    }

    fn add(&mut self, call: Option<usize>, why: impl FnOnce() -> String) {
        self.count += 1;
        if self.explain && self.shown.len() < SHOWN {
            self.shown.push(Violation { call, why: why() });
        }
    }
}

impl Rule {
    /// The rule's violations in `t`; `want` are its expected arguments rendered for this
    /// sample, as `(key, canonical JSON)`.
    pub(super) fn check(&self, t: &Trajectory, want: &[(&str, String)], explain: bool) -> Tally {
        let mut v = Tally::new(explain);
        let fits = |c: &Call| {
            want.is_empty()
                || c.arguments.as_ref().is_some_and(|m| {
                    want.iter()
                        .all(|(k, w)| m.get(*k).is_some_and(|g| canonical_json(g) == *w))
                })
        };
        match &self.check {
            Check::Require {
                tools,
                before: None,
            } => {
                for tool in tools {
                    if !t
                        .calls
                        .iter()
                        .any(|c| tool.has(&c.name) && fits(c) && c.succeeded(t))
                    {
                        v.add(None, || missing(t, tool, want, &fits));
                    }
                }
            }
            Check::Require {
                tools,
                before: Some(gated),
            } => {
                // The first turn holding a successful result of each required tool.
                let known: Vec<Option<usize>> = tools
                    .iter()
                    .map(|tool| {
                        t.calls
                            .iter()
                            .filter(|c| tool.has(&c.name) && fits(c) && c.succeeded(t))
                            .filter_map(|c| c.result)
                            .min()
                    })
                    .collect();
                for (i, c) in t.calls.iter().enumerate() {
                    // A call to a tool the rule names as required is never gated by it (`"*"`
                    // names none: `{require: "*", before: book}` wants some success first).
                    let named = tools
                        .iter()
                        .any(|x| matches!(x, Tools::Only(_)) && x.has(&c.name));
                    if !gated.has(&c.name) || named {
                        continue;
                    }
                    // Known before this call: the result came in a turn before the call's.
                    let absent: Vec<&Tools> = tools
                        .iter()
                        .zip(&known)
                        .filter(|(_, k)| k.is_none_or(|r| r >= c.turn))
                        .map(|(x, _)| x)
                        .collect();
                    if !absent.is_empty() {
                        v.add(Some(i), || {
                            format!(
                                "`{}` called before any successful call to {}",
                                c.name,
                                absent
                                    .iter()
                                    .map(|x| x.prose())
                                    .collect::<Vec<_>>()
                                    .join(" and ")
                            )
                        });
                    }
                }
            }
            Check::Forbid { tools, after } => {
                let (from, trigger) = match after {
                    None => (0, None),
                    Some(a) => match t.calls.iter().position(|c| a.has(&c.name)) {
                        Some(p) => (p + 1, Some(p)),
                        None => (t.calls.len(), None),
                    },
                };
                for (i, c) in t.calls.iter().enumerate().skip(from) {
                    if tools.has(&c.name) && fits(c) {
                        v.add(Some(i), || match trigger {
                            None => format!("`{}` is forbidden", c.name),
                            Some(p) => format!(
                                "`{}` called after `{}` at call {p}",
                                c.name, t.calls[p].name
                            ),
                        });
                    }
                }
            }
            Check::Limit { what, max, tool } => limit(t, *what, *max, tool, &mut v),
            Check::Grounded {
                tool,
                path,
                from,
                from_user,
            } => {
                let mut sources = Sources::new(from, *from_user);
                let dotted = path.join(".");
                for (i, c) in t.calls.iter().enumerate() {
                    if !tool.has(&c.name) {
                        continue;
                    }
                    let Some(args) = &c.arguments else {
                        v.add(Some(i), || {
                            "its arguments are not a JSON object, so none can be traced".into()
                        });
                        continue;
                    };
                    let Some(value) = at_path(args, path) else {
                        // Nothing to trace: a missing argument is the tool's to refuse.
                        continue;
                    };
                    let mut leaves = Vec::new();
                    if !leaves_of(value, &mut leaves, 0) {
                        v.add(Some(i), || {
                            format!("`{dotted}` is nested too deep to trace")
                        });
                        continue;
                    }
                    for leaf in leaves {
                        let why = match sources.shown_before(t, &leaf, c.turn) {
                            Ok(true) => continue,
                            Ok(false) if leaf.trim().is_empty() => {
                                format!("`{dotted}` is empty")
                            }
                            Ok(false) => format!(
                                "`{dotted}` = {} was never shown to it: in no earlier result of {}{}",
                                crate::node::shorten(&leaf),
                                from.prose(),
                                if *from_user { " nor user message" } else { "" }
                            ),
                            Err(budget) => format!(
                                "`{dotted}` not traced: the rollout holds more than {budget} \
                                 candidate occurrences to check"
                            ),
                        };
                        v.add(Some(i), || why);
                        break;
                    }
                }
            }
        }
        v
    }
}

/// Why a required tool has no successful call: what calls to it there were.
fn missing(
    t: &Trajectory,
    tool: &Tools,
    want: &[(&str, String)],
    fits: &dyn Fn(&Call) -> bool,
) -> String {
    let with = if want.is_empty() {
        String::new()
    } else {
        format!(
            " with {}",
            want.iter()
                .map(|(k, w)| format!("{k}={w}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let calls: Vec<&Call> = t.calls.iter().filter(|c| tool.has(&c.name)).collect();
    if calls.is_empty() {
        return format!("no call to {}", tool.prose());
    }
    let other = calls.iter().filter(|c| !fits(c)).count();
    let errors = calls.iter().filter(|c| fits(c) && c.failed(t)).count();
    let unanswered = calls
        .iter()
        .filter(|c| fits(c) && c.result.is_none())
        .count();
    let mut parts = Vec::new();
    for (n, what) in [
        (errors, "answered with an error"),
        (unanswered, "never answered"),
        (other, "with other arguments"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!(
        "no successful call to {}{with} ({} call{}: {})",
        tool.prose(),
        calls.len(),
        if calls.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

fn limit(t: &Trajectory, what: Limit, max: usize, tool: &Tools, v: &mut Tally) {
    let scope = tool.prose();
    match what {
        Limit::Calls => {
            let mut n = 0;
            for (i, _) in t
                .calls
                .iter()
                .enumerate()
                .filter(|(_, c)| tool.has(&c.name))
            {
                n += 1;
                if n > max {
                    v.add(Some(i), || {
                        format!("call number {n} to {scope}, over the limit of {max}")
                    });
                }
            }
        }
        Limit::Identical => {
            // (name, canonical arguments) → (times seen, first call).
            let mut seen: HashMap<(&str, String), (usize, usize)> = HashMap::new();
            for (i, c) in t
                .calls
                .iter()
                .enumerate()
                .filter(|(_, c)| tool.has(&c.name))
            {
                let e = seen
                    .entry((c.name.as_str(), c.canonical_arguments()))
                    .or_insert((0, i));
                e.0 += 1;
                let (n, first) = *e;
                if n > max {
                    v.add(Some(i), || {
                        format!("repeats call {first} ({n} identical calls, at most {max})")
                    });
                }
            }
        }
        Limit::Consecutive => {
            let mut run = 0;
            let mut prev: Option<&str> = None;
            for (i, c) in t.calls.iter().enumerate() {
                run = if prev == Some(c.name.as_str()) {
                    run + 1
                } else {
                    1
                };
                prev = Some(&c.name);
                if run > max && tool.has(&c.name) {
                    v.add(Some(i), || {
                        format!("`{}` called {run} times in a row (at most {max})", c.name)
                    });
                }
            }
        }
        Limit::Errors | Limit::Unanswered => {
            let mut n = 0;
            for (i, c) in t
                .calls
                .iter()
                .enumerate()
                .filter(|(_, c)| tool.has(&c.name))
            {
                let hit = if what == Limit::Errors {
                    c.failed(t)
                } else {
                    c.result.is_none()
                };
                if hit {
                    n += 1;
                    if n > max {
                        v.add(Some(i), || match what {
                            Limit::Errors => format!(
                                "its result was an error: {} ({n} errors, at most {max})",
                                crate::node::shorten(t.result_text(c).unwrap_or(""))
                            ),
                            _ => format!("never answered ({n} unanswered, at most {max})"),
                        });
                    }
                }
            }
        }
    }
}

/// The value at a dotted path in a call's arguments.
fn at_path<'a>(args: &'a serde_json::Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = args.get(first)?;
    for k in rest {
        v = v.get(k.as_str())?;
    }
    Some(v)
}

/// The strings and numbers in a value, as text: what must have been shown. Booleans and
/// nulls carry no provenance and are left out. `false` when the value nests deeper than
/// [`MAX_DEPTH`] (hostile input): its leaves cannot all be traced.
fn leaves_of(v: &Value, out: &mut Vec<String>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match v {
        Value::String(s) => out.push(s.trim().to_string()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => return a.iter().all(|x| leaves_of(x, out, depth + 1)),
        Value::Object(m) => return m.values().all(|x| leaves_of(x, out, depth + 1)),
        Value::Bool(_) | Value::Null => {}
    }
    true
}
