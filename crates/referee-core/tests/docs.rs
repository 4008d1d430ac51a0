//! Every spec snippet in the README (```yaml and ```json blocks with a `type` or `grader`) must
//! compile: documentation that shows a broken spec is a bug.

use referee_core::judge::{script::ScriptJudge, CacheConfig, EndpointConfig, Judge, JudgeConnect};
use referee_core::Program;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Compiles judge specs without a network: a scripted judge serving the spec's endpoint names.
struct Offline;

impl JudgeConnect for Offline {
    fn connect(
        &self,
        endpoints: &BTreeMap<String, EndpointConfig>,
        _cache: &CacheConfig,
    ) -> Result<Arc<dyn Judge>, String> {
        let rules: Vec<_> = endpoints
            .keys()
            .map(|e| serde_json::json!({"endpoint": e}))
            .collect();
        Ok(Arc::new(ScriptJudge::from_value(
            &serde_json::Value::Array(rules),
        )?))
    }
}

#[test]
fn readme_specs_compile() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut n = 0;
    let mut rest = readme.as_str();
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let lang_end = after.find('\n').unwrap();
        let lang = &after[..lang_end];
        let body_start = lang_end + 1;
        let end = after[body_start..].find("```").unwrap();
        let body = &after[body_start..body_start + end];
        rest = &after[body_start + end + 3..];
        if (lang == "yaml" || lang == "json")
            && (body.contains("type:") || body.contains("\"type\""))
        {
            n += 1;
            let env = referee_core::exec::Env {
                connect: Some(Arc::new(Offline)),
                ..Default::default()
            };
            if let Err(e) = Program::compile_str_with(body, env) {
                panic!("README spec does not compile:\n{body}\n{e}");
            }
        }
    }
    assert!(n >= 8, "found only {n} spec snippets in the README");
}
