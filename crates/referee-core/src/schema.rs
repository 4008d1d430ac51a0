//! The JSON Schema of the spec language, generated from the spec types (committed at
//! `schema/referee-spec.schema.json`; a test fails when it is stale).

use crate::registry::COMPONENTS;
use schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

/// Builds the schema: a spec file is a grader node or `{grader, description}`; a node is one of
/// the registered types, each with the common fields `type`, `name` and `on_error`.
pub fn spec_schema() -> Value {
    let mut g = SchemaSettings::draft2020_12().into_generator();
    let mut defs = Map::new();
    let mut variants = Vec::new();
    for c in COMPONENTS {
        let mut s = (c.schema)(&mut g).to_value();
        let obj = s.as_object_mut().expect("object schema");
        if let Some(Value::Object(inner)) = obj.remove("$defs") {
            for (k, v) in inner {
                defs.insert(k, v);
            }
        }
        obj.remove("$schema");
        obj.insert("title".into(), json!(c.type_name));
        obj.insert("description".into(), json!(c.summary()));
        let props = obj
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("properties object");
        props.insert("type".into(), json!({"const": c.type_name}));
        props.insert(
            "name".into(),
            json!({"type": "string", "description": "Key of this node's value in `components`."}),
        );
        props.insert("on_error".into(), json!({"type": "number", "description": "Reward this node gets when it fails; its status still says failed."}));
        let req = obj
            .entry("required")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .expect("required list");
        req.insert(0, json!("type"));
        let def_name = c.type_name.to_string();
        defs.insert(def_name.clone(), s);
        variants.push(json!({"$ref": format!("#/$defs/{def_name}")}));
    }
    defs.insert("Node".into(), json!({"oneOf": variants}));
    for (name, mut s) in [
        (
            "EndpointConfig",
            g.root_schema_for::<crate::judge::EndpointConfig>()
                .to_value(),
        ),
        (
            "CacheConfig",
            g.root_schema_for::<crate::judge::CacheConfig>().to_value(),
        ),
        (
            "GroupStageSpec",
            g.root_schema_for::<crate::group::GroupStageSpec>()
                .to_value(),
        ),
    ] {
        let obj = s.as_object_mut().expect("object schema");
        if let Some(Value::Object(inner)) = obj.remove("$defs") {
            for (k, v) in inner {
                defs.insert(k, v);
            }
        }
        obj.remove("$schema");
        defs.insert(name.into(), s);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Referee grader spec",
        "description": "A grader node, or a file with `grader:` and optional `description`, `judges` (endpoints by name), `judge_cache` and `group` (the group stage: advantages and diagnostics, off by default).",
        "oneOf": [
            {"$ref": "#/$defs/Node"},
            {
                "type": "object",
                "properties": {
                    "grader": {"$ref": "#/$defs/Node"},
                    "description": {"type": "string"},
                    "judges": {
                        "type": "object",
                        "description": "OpenAI-compatible endpoints that model graders call, by name (`judge:` in a node picks one; `default` is used otherwise).",
                        "additionalProperties": {"$ref": "#/$defs/EndpointConfig"}
                    },
                    "judge_cache": {"$ref": "#/$defs/CacheConfig"},
                    "group": {"$ref": "#/$defs/GroupStageSpec"}
                },
                "required": ["grader"],
                "additionalProperties": false
            }
        ],
        "$defs": defs,
    })
}
