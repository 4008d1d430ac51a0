//! Every suite and exploit case, explained, as one snapshot: what a person reads in a trace
//! (values, statuses, notes) is behaviour, so the graders' fast paths must leave it unchanged.
//! Plus the corner cases of the rule graders' hand-written scanners (Unicode whitespace, case
//! folding, escapes) that the suites do not spell out.

// `check` is for the suites; this file only reads the cases.
#[allow(dead_code)]
mod common;

use common::{compile, compile_case, sample_of, yaml_docs};
use referee_core::node::Trace;
use referee_core::{Program, Sample};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

fn render(out: &mut String, t: &Trace, depth: usize) {
    let _ = writeln!(
        out,
        "{:indent$}{} {:?} {} {} {}",
        "",
        t.kind,
        t.value,
        t.status,
        t.reason.as_deref().unwrap_or("-"),
        t.note.as_deref().unwrap_or("-"),
        indent = depth * 2
    );
    for c in &t.children {
        render(out, c, depth + 1);
    }
}

fn explain(out: &mut String, title: &str, program: &Program, sample: &Sample) {
    let r = program.explain(sample);
    let _ = writeln!(
        out,
        "## {title}: reward {:?}, {}",
        r.reward,
        r.status.as_str()
    );
    if let Some(t) = &r.trace {
        render(out, t, 1);
    }
}

#[test]
fn traces_are_unchanged() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = String::new();
    for (dir, key) in [
        (root.join("tests/suite"), "cases"),
        (root.join("../../fixtures/exploits"), "exploits"),
    ] {
        for (file, doc) in yaml_docs(&dir) {
            let default_spec = doc.get("spec");
            // Code graders need a sandbox; their cases run in crates/referee-sandbox/tests.
            if default_spec.is_some_and(|s| {
                s["type"]
                    .as_str()
                    .is_some_and(|t| referee_core::registry::SANDBOXED.contains(&t))
            }) {
                continue;
            }
            for (i, case) in doc
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let name = case
                    .get("name")
                    .or_else(|| case.get("exploit"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let spec = case.get("spec").or(default_spec).expect("spec");
                explain(
                    &mut out,
                    &format!("{file} #{i} {name}"),
                    &compile_case(spec, case.get("judge").or(doc.get("judge"))),
                    &sample_of(case),
                );
            }
        }
    }
    let extra: &[(Value, &str)] = &[
        (
            json!({"type": "format"}),
            "<think>a</think>\n<answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think>a</think>\n<Answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<thin\u{212a}>a</think><answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think>a</think><an\u{17f}wer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think\u{a0}x>a</think><answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<\u{3000}think>a</think><answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "< /think>a</think><answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think>a</think>x<answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think>a</think><answer>4</answer>tail",
        ),
        (
            json!({"type": "format"}),
            "<answer>4</answer><think>a</think>",
        ),
        (
            json!({"type": "format"}),
            "<think>a<answer>4</think></answer>",
        ),
        (
            json!({"type": "format"}),
            "<think></think><answer>4</answer>",
        ),
        (
            json!({"type": "format"}),
            "<think>a</think><answer>4</answer></answer>",
        ),
        (json!({"type": "format"}), "<think>a</think><answer>4"),
        (
            json!({"type": "format", "strict_newlines": true}),
            "x<think>\na\n</think>\n<answer>\n4\n</answer>",
        ),
        (
            json!({"type": "format", "strict_newlines": true}),
            "<think>\na\n</think>\n\n<answer>\n4\n</answer>",
        ),
        (
            json!({"type": "format", "strict_newlines": true}),
            "<think>a</think>\n<answer>\n4\n</answer>",
        ),
        (
            json!({"type": "format", "strict_newlines": true}),
            "<think>\na\n</think>\n<answer>\n4\n</answer>\nx",
        ),
        (
            json!({"type": "format", "style": "think"}),
            "<think>a</think>",
        ),
        (
            json!({"type": "format", "style": "think"}),
            "<think>a</think>   \n",
        ),
        (
            json!({"type": "format", "style": "think", "strict_newlines": true}),
            "<think>\na\n</think>4",
        ),
        (
            json!({"type": "format", "style": "think"}),
            "pre <think>a</think>4",
        ),
        (
            json!({"type": "format", "tags": ["a", "ab", "b-c"]}),
            "<a>1</a><ab>2</ab><b-c>3</b-c>",
        ),
        (
            json!({"type": "format", "tags": ["a", "ab", "b-c"]}),
            "<a>1</a><ab x=1>2</ab><b-c>3</b-c>",
        ),
        (
            json!({"type": "format", "scoring": "per_tag"}),
            "<think>a</think><answer>4</answer><think>",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "So the answer is 72.\n#### 72",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "So the an\u{17f}wer is 72.",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "So the answer\u{a0}is 72.",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "So the\u{3000}answer is 72.",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "éanswer is 72",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "the answer i\u{17f} 72",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "The Final ANSWER **: 72",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "the final answer is 72; the answer is 73",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "answer isn't 72. Answer: 72",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "########\n#### 72\n##### 7",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "\\boxed{72} \\fbox {72} \\\\boxed{7} \\{ \\boxed{72}",
        ),
        (
            json!({"type": "numeric", "reference": "72"}),
            "\\boxed{7\\}2}",
        ),
        (
            json!({"type": "numeric", "reference": "1234.5"}),
            "#### $1{,}234.50",
        ),
        (
            json!({"type": "numeric", "reference": "-1500"}),
            "#### −1.5 × 10^3",
        ),
        (
            json!({"type": "numeric", "reference": "{{item.a}}"}),
            "#### 72",
        ),
        (
            json!({"type": "numeric", "reference": "72", "extract": "last"}),
            "7 then 72 apples",
        ),
        (
            json!({"type": "numeric", "reference": "72", "extract": "only"}),
            " 72 apples ",
        ),
        (
            json!({"type": "numeric", "reference": "72", "pattern": "#### (?P<answer>[^\n]*)"}),
            "#### 72\n#### 73",
        ),
        (
            json!({"type": "numeric", "reference": "72", "pattern": "#### (?P<answer>[^\n]*)"}),
            "no marker",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "The answer is B.",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "The an\u{17f}wer is B.",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "The best option\u{a0}is B.",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "The correct choice: B",
        ),
        (json!({"type": "choice", "reference": "B"}), "答案是B"),
        (
            json!({"type": "choice", "reference": "B"}),
            "答案\u{3000}是 B",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "My final answer would be (B)",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "answer is A. Answer： B",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "so \\boxed{B} and answer: C",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "nothing here\nB",
        ),
        (
            json!({"type": "choice", "reference": "B"}),
            "the answer: is the answer is B",
        ),
        (
            json!({"type": "length", "unit": "tokens", "max": 5}),
            "Hello, world! It's 3.5",
        ),
        (
            json!({"type": "length", "unit": "words", "max": 5}),
            "a\u{200b}b c",
        ),
        (
            json!({"type": "length", "unit": "chars", "max": 5}),
            "héllo",
        ),
    ];
    for (spec, output) in extra {
        explain(
            &mut out,
            &format!("{spec} {output:?}"),
            &compile(spec),
            &Sample::new(*output, json!({"a": "x"})),
        );
    }
    insta::assert_snapshot!(out);
}
