//! A spec cut at its top level, for trainers that combine rewards themselves.
//!
//! TRL's `GRPOTrainer` takes a list of reward functions and a list of weights, logs each
//! function's mean under its name, and (with `multi_objective_aggregation="normalize_then_sum"`)
//! normalises each function before summing. So a spec whose root is a linear `weighted_sum` is
//! handed over as one part per input, each compiled on its own, with the weight that gives the
//! same reward when every part applies: `wᵢ` for `normalize: none`, `wᵢ/Σw` for `sum`,
//! `wᵢ/Σ|w|` for `abs_sum`. Any other root (including `positive_clamp`, whose clamp is not a
//! weighted sum, and OpenAI's `multi`, whose formula is not linear) is one part with weight 1.
//!
//! The file-level `judges:`/`judge_cache:` sections go with every part; the `group:` stage does
//! not (the trainer computes advantages, and it does not say which rollouts form a group).

use crate::node::Imp;
use crate::Program;
use serde_json::{Map, Value};

/// One top-level component: its name (the input's `name`, else its `type`, made unique), the
/// weight the trainer should give it, and a spec for it alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub weight: f64,
    pub spec: Value,
}

/// The top-level parts of a compiled spec (see the module doc): the compiled root says whether
/// it is a linear sum and with which weights; `spec` (the JSON it was compiled from) gives each
/// part's own spec, at the part's node path. A root that is not a splittable sum is one part.
pub fn top_level_parts(program: &Program, spec: &Value) -> Vec<Part> {
    let (node, file) = match spec {
        Value::Object(m) if !m.contains_key("type") && m.contains_key("grader") => {
            let mut file = Map::new();
            for k in ["judges", "judge_cache"] {
                if let Some(v) = m.get(k) {
                    file.insert(k.to_string(), v.clone());
                }
            }
            (&m["grader"], file)
        }
        other => (other, Map::new()),
    };
    let wrap = |grader: &Value| {
        if file.is_empty() {
            grader.clone()
        } else {
            let mut m = file.clone();
            m.insert("grader".into(), grader.clone());
            Value::Object(m)
        }
    };
    let root = &program.root;
    let label = |n: &crate::node::Node| {
        n.meta
            .name
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(n.meta.kind)
            .to_string()
    };
    // `on_error` on the root changes what a failed child gives: not expressible as a sum.
    let split = match (&root.imp, root.meta.on_error) {
        (Imp::Sync(c), None) => c.linear_weights().map(|w| (c.children(), w)),
        _ => None,
    };
    if let Some((children, weights)) = split {
        let mut parts: Vec<Part> = Vec::with_capacity(children.len());
        for (i, (child, weight)) in children.into_iter().zip(weights).enumerate() {
            let Some(child_spec) = spec.pointer(&child.meta.path) else {
                break;
            };
            let base = label(child);
            let name = if parts.iter().any(|p| p.name == base) {
                format!("{base}_{i}")
            } else {
                base
            };
            parts.push(Part {
                name,
                weight,
                spec: wrap(child_spec),
            });
        }
        // A later input may have been named like an earlier one's fallback: keep names unique.
        let mut seen = std::collections::HashSet::new();
        for (i, p) in parts.iter_mut().enumerate() {
            if !seen.insert(p.name.clone()) {
                p.name = format!("{}_{i}", p.name);
                seen.insert(p.name.clone());
            }
        }
        return parts;
    }
    vec![Part {
        name: label(root),
        weight: 1.0,
        spec: wrap(node),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn weighted_sum_splits_with_trainer_weights() {
        let spec = json!({"type": "weighted_sum", "normalize": "sum", "weights": [3, "1"],
            "inputs": [{"type": "math_equiv", "name": "correct", "reference": "{{item.answer}}"},
                       {"type": "format", "style": "r1"}]});
        let parts = top_level_parts(&crate::Program::compile(&spec).unwrap(), &spec);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "correct");
        assert_eq!(parts[0].weight, 0.75);
        assert_eq!(parts[1].name, "format");
        assert_eq!(parts[1].weight, 0.25);
        assert_eq!(parts[1].spec, json!({"type": "format", "style": "r1"}));
        for p in &parts {
            crate::Program::compile(&p.spec).unwrap();
        }
    }

    #[test]
    fn file_sections_follow_each_part_but_not_the_group_stage() {
        let spec = json!({"grader": {"type": "weighted_sum", "normalize": "none", "weights": [2, -1],
            "inputs": [{"type": "format"}, {"type": "format", "style": "think"}]},
            "judge_cache": {"backend": "off"}, "group": {"advantage": "grpo"}, "description": "x"});
        let parts = top_level_parts(&crate::Program::compile(&spec).unwrap(), &spec);
        assert_eq!(
            parts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["format", "format_1"]
        );
        assert_eq!(parts[1].weight, -1.0);
        assert_eq!(
            parts[0].spec,
            json!({"grader": {"type": "format"}, "judge_cache": {"backend": "off"}})
        );
    }

    #[test]
    fn other_roots_are_one_part() {
        for spec in [
            json!({"type": "format", "name": "fmt"}),
            json!({"type": "weighted_sum", "normalize": "positive_clamp", "weights": [1],
                   "inputs": [{"type": "format"}]}),
            json!({"type": "weighted_sum", "normalize": "none", "weights": [1],
                   "inputs": [{"type": "format"}], "on_error": 0}),
        ] {
            let parts = top_level_parts(&crate::Program::compile(&spec).unwrap(), &spec);
            assert_eq!(parts.len(), 1, "{spec}");
            assert_eq!(parts[0].weight, 1.0);
            assert_eq!(parts[0].spec, spec);
        }
        let one = |spec: Value| top_level_parts(&crate::Program::compile(&spec).unwrap(), &spec);
        assert_eq!(one(json!({"type": "format", "name": "fmt"}))[0].name, "fmt");
        assert_eq!(
            one(json!({"type": "weighted_sum", "normalize": "positive_clamp", "weights": [1], "inputs": [{"type": "format"}]}))[0].name,
            "weighted_sum"
        );
    }
}
