//! Cost order with a real sandbox: an `all_of` of a judge and code tests runs the tests first,
//! and never calls the judge for code that fails them.

use referee_core::exec::Env;
use referee_core::judge::script::ScriptJudge;
use referee_core::{Program, Sample};
use referee_sandbox::{Config, Pool};
use serde_json::json;
use std::sync::Arc;

#[test]
fn all_of_runs_the_tests_before_the_judge_and_skips_it_for_failing_code() {
    let pool = Pool::start(&Config::default())
        .unwrap_or_else(|e| panic!("the sandbox cannot start on this machine: {e}"));
    let judge = Arc::new(
        ScriptJudge::from_value(&json!([{"content": r#"{"steps": [], "result": 1}"#}])).unwrap(),
    );
    let env = Env {
        sandbox: Some(Arc::new(pool)),
        judge: Some(judge.clone()),
        ..Env::default()
    };
    // The judge is listed first; cost order still starts the cheaper sandbox first.
    let spec = json!({"type": "all_of", "inputs": [
        {"type": "score_model", "name": "style", "model": "m",
         "input": [{"role": "user", "content": "Rate: {{sample.output_text}}"}]},
        {"type": "code_exec", "name": "tests", "tests": "{{item.tests}}", "reward": "all_pass"}]});
    let program = Program::compile_with(&spec, env).unwrap();
    let tests = json!([{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12\n"}]);
    let wrong = Sample::new("```python\nprint(0)\n```", json!({ "tests": tests }));
    let r = program.explain(&wrong);
    assert_eq!(r.reward, Some(0.0), "{r:?}");
    assert!(
        judge.calls().is_empty(),
        "the judge was called for failing code"
    );
    let t = serde_json::to_value(r.trace.unwrap()).unwrap();
    assert_eq!(t["children"][0]["status"], "skipped", "{t}");
    let right = Sample::new(
        "```python\na, b = map(int, input().split())\nprint(a + b)\n```",
        json!({ "tests": tests }),
    );
    assert_eq!(program.score(&right).reward, Some(1.0));
    assert_eq!(judge.calls().len(), 1);
}
