//! The one registry: every component `type`, its docs, its schema and its compile function.
//! Adding a component is one entry here (DESIGN.md §5); there are no registration macros.

use crate::compile::{At, Compiler};
use crate::components::{combinator as c, exec as x, judge as j, openai as o, rule as r};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::Value;

pub type CompileFn = fn(&Value, &mut Compiler, &At) -> Option<crate::node::Imp>;

pub struct ComponentInfo {
    pub type_name: &'static str,
    /// `openai`, `rule`, `exec`, `judge` or `combinator`.
    pub group: &'static str,
    /// The component's source file; its `//!` lines are its documentation.
    source: &'static str,
    pub schema: fn(&mut SchemaGenerator) -> Schema,
    pub compile: CompileFn,
}

impl ComponentInfo {
    /// The component's documentation (the `//!` header of its file), as Markdown.
    pub fn doc(&self) -> String {
        self.source
            .lines()
            .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
            .filter_map(|l| l.strip_prefix("//!"))
            .map(|l| l.strip_prefix(' ').unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The first sentence after *What it scores:*, for listings.
    pub fn summary(&self) -> String {
        let doc = self.doc();
        let text = doc.split("*What it scores:*").nth(1).unwrap_or(&doc);
        let para = text.split("\n\n").next().unwrap_or("").replace('\n', " ");
        let end = para.find(". ").map_or(para.len(), |i| i + 1);
        para[..end].trim().to_string()
    }

    /// The YAML example in the doc (compiled by a test).
    pub fn example(&self) -> Option<String> {
        let doc = self.doc();
        let start = doc.find("```yaml\n")? + 8;
        let end = start + doc[start..].find("```")?;
        Some(doc[start..end].to_string())
    }
}

fn schema_of<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.root_schema_for::<T>()
}

/// The schema of a node read with `Compiler::spec_pair`: `T`'s fields and `U`'s, as one object.
fn schema_pair<T: JsonSchema, U: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    let mut t = g.root_schema_for::<T>().to_value();
    let u = g.root_schema_for::<U>().to_value();
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(from)) = u.get(key) {
            let into = t
                .as_object_mut()
                .expect("object schema")
                .entry(key)
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(into) = into {
                for (k, v) in from {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
    }
    Schema::try_from(t).expect("an object schema")
}

macro_rules! src {
    ($p:literal) => {
        include_str!(concat!("components/", $p))
    };
}

/// Types that run code in the sandbox: their suites and exploit files run where a sandbox is
/// (`crates/referee-sandbox/tests`), not in the core's sandbox-free tests.
pub const SANDBOXED: &[&str] = &["code_exec", "measure", "python"];

/// Types that call a judge: their suites run against a scripted judge (`judge::script`) and,
/// end to end, against a real llama-server (`crates/referee-judge/tests`).
pub const JUDGED: &[&str] = &[
    "score_model",
    "label_model",
    "reward_model",
    "prm",
    "rubric",
    "pairwise",
    "reference_judge",
    "step_judge",
    "likelihood",
    "embedding_similarity",
];

pub const COMPONENTS: &[ComponentInfo] = &[
    ComponentInfo {
        type_name: "string_check",
        group: "openai",
        source: src!("openai/string_check.rs"),
        schema: schema_of::<o::string_check::StringCheckSpec>,
        compile: o::string_check::compile,
    },
    ComponentInfo {
        type_name: "text_similarity",
        group: "openai",
        source: src!("openai/text_similarity.rs"),
        schema: schema_of::<o::text_similarity::TextSimilaritySpec>,
        compile: o::text_similarity::compile,
    },
    ComponentInfo {
        type_name: "python",
        group: "openai",
        source: src!("openai/python.rs"),
        schema: schema_of::<o::python::PythonSpec>,
        compile: o::python::compile,
    },
    ComponentInfo {
        type_name: "score_model",
        group: "openai",
        source: src!("openai/score_model.rs"),
        schema: schema_pair::<o::score_model::ScoreModelSpec, j::JudgeFields>,
        compile: o::score_model::compile,
    },
    ComponentInfo {
        type_name: "label_model",
        group: "openai",
        source: src!("openai/label_model.rs"),
        schema: schema_pair::<o::label_model::LabelModelSpec, j::JudgeFields>,
        compile: o::label_model::compile,
    },
    ComponentInfo {
        type_name: "reward_model",
        group: "judge",
        source: src!("judge/reward_model.rs"),
        schema: schema_of::<j::reward_model::RewardModelSpec>,
        compile: j::reward_model::compile,
    },
    ComponentInfo {
        type_name: "likelihood",
        group: "judge",
        source: src!("judge/likelihood.rs"),
        schema: schema_of::<j::likelihood::LikelihoodSpec>,
        compile: j::likelihood::compile,
    },
    ComponentInfo {
        type_name: "embedding_similarity",
        group: "judge",
        source: src!("judge/embedding_similarity.rs"),
        schema: schema_of::<j::embedding_similarity::EmbeddingSimilaritySpec>,
        compile: j::embedding_similarity::compile,
    },
    ComponentInfo {
        type_name: "prm",
        group: "judge",
        source: src!("judge/prm.rs"),
        schema: schema_of::<j::prm::PrmSpec>,
        compile: j::prm::compile,
    },
    ComponentInfo {
        type_name: "rubric",
        group: "judge",
        source: src!("judge/rubric.rs"),
        schema: schema_pair::<j::rubric::RubricSpec, j::JudgeFields>,
        compile: j::rubric::compile,
    },
    ComponentInfo {
        type_name: "pairwise",
        group: "judge",
        source: src!("judge/pairwise.rs"),
        schema: schema_pair::<j::pairwise::PairwiseSpec, j::JudgeFields>,
        compile: j::pairwise::compile,
    },
    ComponentInfo {
        type_name: "reference_judge",
        group: "judge",
        source: src!("judge/reference_judge.rs"),
        schema: schema_pair::<j::reference_judge::ReferenceJudgeSpec, j::JudgeFields>,
        compile: j::reference_judge::compile,
    },
    ComponentInfo {
        type_name: "step_judge",
        group: "judge",
        source: src!("judge/step_judge.rs"),
        schema: schema_pair::<j::step_judge::StepJudgeSpec, j::JudgeFields>,
        compile: j::step_judge::compile,
    },
    ComponentInfo {
        type_name: "code_exec",
        group: "exec",
        source: src!("exec/code_exec.rs"),
        schema: schema_of::<x::code_exec::CodeExecSpec>,
        compile: x::code_exec::compile,
    },
    ComponentInfo {
        type_name: "measure",
        group: "exec",
        source: src!("exec/measure.rs"),
        schema: schema_of::<x::measure::MeasureSpec>,
        compile: x::measure::compile,
    },
    ComponentInfo {
        type_name: "multi",
        group: "openai",
        source: src!("openai/multi.rs"),
        schema: schema_of::<o::multi::MultiSpec>,
        compile: o::multi::compile,
    },
    ComponentInfo {
        type_name: "regex",
        group: "rule",
        source: src!("rule/regex.rs"),
        schema: schema_of::<r::regex::RegexSpec>,
        compile: r::regex::compile,
    },
    ComponentInfo {
        type_name: "contains",
        group: "rule",
        source: src!("rule/contains.rs"),
        schema: schema_of::<r::contains::ContainsSpec>,
        compile: r::contains::compile,
    },
    ComponentInfo {
        type_name: "math_equiv",
        group: "rule",
        source: src!("rule/math_equiv.rs"),
        schema: schema_of::<r::math_equiv::MathEquivSpec>,
        compile: r::math_equiv::compile,
    },
    ComponentInfo {
        type_name: "arithmetic",
        group: "rule",
        source: src!("rule/arithmetic.rs"),
        schema: schema_of::<r::arithmetic::ArithmeticSpec>,
        compile: r::arithmetic::compile,
    },
    ComponentInfo {
        type_name: "numeric",
        group: "rule",
        source: src!("rule/numeric.rs"),
        schema: schema_of::<r::numeric::NumericSpec>,
        compile: r::numeric::compile,
    },
    ComponentInfo {
        type_name: "set_match",
        group: "rule",
        source: src!("rule/set_match.rs"),
        schema: schema_of::<r::set_match::SetMatchSpec>,
        compile: r::set_match::compile,
    },
    ComponentInfo {
        type_name: "ranking",
        group: "rule",
        source: src!("rule/ranking.rs"),
        schema: schema_of::<r::ranking::RankingSpec>,
        compile: r::ranking::compile,
    },
    ComponentInfo {
        type_name: "squad",
        group: "rule",
        source: src!("rule/squad.rs"),
        schema: schema_of::<r::squad::SquadSpec>,
        compile: r::squad::compile,
    },
    ComponentInfo {
        type_name: "choice",
        group: "rule",
        source: src!("rule/choice.rs"),
        schema: schema_of::<r::choice::ChoiceSpec>,
        compile: r::choice::compile,
    },
    ComponentInfo {
        type_name: "format",
        group: "rule",
        source: src!("rule/format.rs"),
        schema: schema_of::<r::format::FormatSpec>,
        compile: r::format::compile,
    },
    ComponentInfo {
        type_name: "guard",
        group: "rule",
        source: src!("rule/guard.rs"),
        schema: schema_of::<r::guard::GuardSpec>,
        compile: r::guard::compile,
    },
    ComponentInfo {
        type_name: "ifeval",
        group: "rule",
        source: src!("rule/ifeval.rs"),
        schema: schema_of::<r::ifeval::IfevalSpec>,
        compile: r::ifeval::compile,
    },
    ComponentInfo {
        type_name: "length",
        group: "rule",
        source: src!("rule/length.rs"),
        schema: schema_of::<r::length::LengthSpec>,
        compile: r::length::compile,
    },
    ComponentInfo {
        type_name: "json_schema",
        group: "rule",
        source: src!("rule/json_schema.rs"),
        schema: schema_of::<r::json_schema::JsonSchemaSpec>,
        compile: r::json_schema::compile,
    },
    ComponentInfo {
        type_name: "claim_check",
        group: "rule",
        source: src!("rule/claim_check.rs"),
        schema: schema_of::<r::claim_check::ClaimCheckSpec>,
        compile: r::claim_check::compile,
    },
    ComponentInfo {
        type_name: "state_match",
        group: "rule",
        source: src!("rule/state_match.rs"),
        schema: schema_of::<r::state_match::StateMatchSpec>,
        compile: r::state_match::compile,
    },
    ComponentInfo {
        type_name: "patch_audit",
        group: "rule",
        source: src!("rule/patch_audit.rs"),
        schema: schema_of::<r::patch_audit::PatchAuditSpec>,
        compile: r::patch_audit::compile,
    },
    ComponentInfo {
        type_name: "tool_call",
        group: "rule",
        source: src!("rule/tool_call.rs"),
        schema: schema_of::<r::tool_call::ToolCallSpec>,
        compile: r::tool_call::compile,
    },
    ComponentInfo {
        type_name: "tool_trace",
        group: "rule",
        source: src!("rule/tool_trace.rs"),
        schema: schema_of::<r::tool_trace::ToolTraceSpec>,
        compile: r::tool_trace::compile,
    },
    ComponentInfo {
        type_name: "weighted_sum",
        group: "combinator",
        source: src!("combinator/weighted_sum.rs"),
        schema: schema_of::<c::weighted_sum::WeightedSumSpec>,
        compile: c::weighted_sum::compile,
    },
    ComponentInfo {
        type_name: "ensemble",
        group: "combinator",
        source: src!("combinator/ensemble.rs"),
        schema: schema_of::<c::ensemble::EnsembleSpec>,
        compile: c::ensemble::compile,
    },
    ComponentInfo {
        type_name: "gate",
        group: "combinator",
        source: src!("combinator/gate.rs"),
        schema: schema_of::<c::gate::GateSpec>,
        compile: c::gate::compile,
    },
    ComponentInfo {
        type_name: "all_of",
        group: "combinator",
        source: src!("combinator/all_of.rs"),
        schema: schema_of::<c::HoldSpec>,
        compile: c::all_of::compile,
    },
    ComponentInfo {
        type_name: "any_of",
        group: "combinator",
        source: src!("combinator/any_of.rs"),
        schema: schema_of::<c::HoldSpec>,
        compile: c::any_of::compile,
    },
    ComponentInfo {
        type_name: "group",
        group: "combinator",
        source: src!("combinator/group.rs"),
        schema: schema_of::<c::group::GroupSpec>,
        compile: c::group::compile,
    },
    ComponentInfo {
        type_name: "min",
        group: "combinator",
        source: src!("combinator/min.rs"),
        schema: schema_of::<c::ListSpec>,
        compile: c::min::compile,
    },
    ComponentInfo {
        type_name: "max",
        group: "combinator",
        source: src!("combinator/max.rs"),
        schema: schema_of::<c::ListSpec>,
        compile: c::max::compile,
    },
    ComponentInfo {
        type_name: "product",
        group: "combinator",
        source: src!("combinator/product.rs"),
        schema: schema_of::<c::ListSpec>,
        compile: c::product::compile,
    },
    ComponentInfo {
        type_name: "clamp",
        group: "combinator",
        source: src!("combinator/clamp.rs"),
        schema: schema_of::<c::clamp::ClampSpec>,
        compile: c::clamp::compile,
    },
    ComponentInfo {
        type_name: "each_step",
        group: "combinator",
        source: src!("combinator/each_step.rs"),
        schema: schema_of::<c::each_step::EachStepSpec>,
        compile: c::each_step::compile,
    },
    ComponentInfo {
        type_name: "each_turn",
        group: "combinator",
        source: src!("combinator/each_turn.rs"),
        schema: schema_of::<c::each_turn::EachTurnSpec>,
        compile: c::each_turn::compile,
    },
    ComponentInfo {
        type_name: "scale",
        group: "combinator",
        source: src!("combinator/scale.rs"),
        schema: schema_of::<c::scale::ScaleSpec>,
        compile: c::scale::compile,
    },
    ComponentInfo {
        type_name: "const",
        group: "combinator",
        source: src!("combinator/const.rs"),
        schema: schema_of::<c::r#const::ConstSpec>,
        compile: c::r#const::compile,
    },
];

pub fn find(type_name: &str) -> Option<&'static ComponentInfo> {
    COMPONENTS.iter().find(|c| c.type_name == type_name)
}
