//! The exploit corpus (`fixtures/exploits/*.yaml`) as a mutation family per grader type.
//!
//! The corpus is compiled into the library, so `referee fuzz` works wherever the binary is; a
//! test checks the list below against the folder. A file belongs to type `t` when its `spec`
//! (or one of its entries' `spec`) has `type: t`, or a dot-separated part of its name is `t`
//! (`code.python.yaml` serves `code_exec` and `python`).
//!
//! Every entry states the reward it must get (`reward: null` when none); a file with an entry
//! that does not is refused. Only entries that must not be rewarded for their output are used
//! (expected reward ≤ 0, status ok); entries expected to be errors test the grader against a
//! broken item and are left out. Each entry was written against its own item; applying it to a
//! data row:
//! - an entry whose output holds none of its item's values is **item-independent** (format
//!   tricks, master keys, injections, `sys.exit(0)`) and is applied as it is, except to a row
//!   whose gold it holds, as a whole token or as a number of the same value (`\boxed{0.000000}`,
//!   written against a tiny fraction, is right on a row whose gold is 0);
//! - an entry whose output holds its gold (the value of its spec's `reference` field) has that
//!   gold replaced by the row's gold, as a whole token (`\boxed{1 \text{ or } 2}` for gold 1
//!   becomes `\boxed{7 \text{ or } 2}` for gold 7), so the hack is aimed at the row; it is
//!   skipped for rows without a gold, and when the row's gold already occurs in the entry's
//!   output (the substitution could make the hedge a plain right answer: gold 2 above);
//! - an entry whose output holds other values of its item (3 characters or more: tool names,
//!   arguments, question text), or quotes five words in a row of its file's spec (a rubric
//!   restated), is bound to that item or spec and is skipped;
//! - an entry with its own `spec:` tests that configuration (`max_chars: 200`, a mode) rather
//!   than the type, and is skipped.
//!
//! Structured outputs travel with the text: an entry given as a `row` with `output_tools` keeps
//! its calls. An entry whose row has a `state` (an agent's final state) or `messages` (its
//! trajectory) is bound to its item.

use super::families::{token_occurrences, Variant};
use super::{gold_paths, gold_text};
use crate::input::{get_path, InputMapping};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::LazyLock;

macro_rules! corpus_files {
    ($($f:literal),* $(,)?) => {
        &[$(($f, include_str!(concat!("../../../../../fixtures/exploits/", $f)))),*]
    };
}

/// The corpus files compiled in: `(file name, YAML text)`.
pub const EMBEDDED: &[(&str, &str)] = corpus_files!(
    "arithmetic.yaml",
    "choice.yaml",
    "claim_check.yaml",
    "code.cpp.yaml",
    "code.measure.yaml",
    "code.python.yaml",
    "contains.yaml",
    "each_step.yaml",
    "each_turn.yaml",
    "embedding_similarity.yaml",
    "format.yaml",
    "gate.yaml",
    "guard.yaml",
    "ifeval.tulu.yaml",
    "ifeval.yaml",
    "json_schema.yaml",
    "judge.label_model.yaml",
    "judge.media.yaml",
    "judge.pairwise.yaml",
    "judge.reference_judge.yaml",
    "judge.rubric.yaml",
    "judge.rubric_generate.yaml",
    "judge.score_model.yaml",
    "length.yaml",
    "likelihood.yaml",
    "math_equiv.yaml",
    "multi.yaml",
    "numeric.yaml",
    "patch_audit.yaml",
    "prm.yaml",
    "ranking.yaml",
    "regex.yaml",
    "set_match.yaml",
    "squad.yaml",
    "state_match.yaml",
    "step_judge.yaml",
    "string_check.yaml",
    "text_similarity.yaml",
    "tool_call.yaml",
    "tool_trace.yaml",
    "weighted_sum.yaml",
);

/// A parsed exploit corpus.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    pub files: Vec<CorpusFile>,
}

/// One corpus file: the types it serves and its usable entries.
#[derive(Debug, Clone)]
pub struct CorpusFile {
    pub name: String,
    pub types: BTreeSet<String>,
    pub exploits: Vec<Exploit>,
}

/// One corpus entry, ready to be aimed at a row.
#[derive(Debug, Clone)]
pub struct Exploit {
    pub name: String,
    pub text: String,
    pub tools: Option<Value>,
    /// The entry's own gold, when its spec has a `reference` and its output holds it.
    gold: Option<String>,
    /// Other values of the entry's item found in its output: the entry is bound to its item.
    bound: bool,
}

static EMBEDDED_CORPUS: LazyLock<Corpus> = LazyLock::new(|| {
    let files: Vec<(String, String)> = EMBEDDED
        .iter()
        .map(|(n, t)| ((*n).to_string(), (*t).to_string()))
        .collect();
    Corpus::parse(&files).expect("the embedded exploit corpus parses")
});

impl Corpus {
    /// The corpus compiled into the library.
    pub fn embedded() -> &'static Corpus {
        &EMBEDDED_CORPUS
    }

    /// Parses corpus files given as `(file name, YAML text)`.
    pub fn parse(files: &[(String, String)]) -> Result<Corpus, String> {
        let mut out = Vec::new();
        for (name, text) in files {
            let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| format!("{name}: {e}"))?;
            out.push(CorpusFile::from_doc(name, &doc)?);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Corpus { files: out })
    }

    /// The files that serve grader type `t`.
    pub fn for_type(&self, t: &str) -> Vec<&CorpusFile> {
        self.files.iter().filter(|f| f.types.contains(t)).collect()
    }
}

impl CorpusFile {
    fn from_doc(name: &str, doc: &Value) -> Result<CorpusFile, String> {
        let mut types: BTreeSet<String> = name
            .trim_end_matches(".yaml")
            .trim_end_matches(".yml")
            .split('.')
            .map(str::to_string)
            .collect();
        let default_spec = doc.get("spec");
        if let Some(t) = default_spec
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
        {
            types.insert(t.to_string());
        }
        let entries = doc
            .get("exploits")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{name}: no `exploits` list"))?;
        // The words of the file's spec (its rubric, its instructions): an entry that quotes
        // them is aimed at that spec.
        let mut spec_strings = Vec::new();
        if let Some(s) = default_spec {
            scalars(s, &mut spec_strings, 0);
        }
        let spec_text = normalize(&spec_strings.join(" \n "));
        let mut exploits = Vec::new();
        for e in entries {
            let spec = e.get("spec").or(default_spec);
            if let Some(t) = e
                .get("spec")
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
            {
                types.insert(t.to_string());
            }
            let title = e
                .get("exploit")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            // Every entry states the reward it must get (`reward: null` for none).
            if e.get("expect").and_then(|x| x.get("reward")).is_none() {
                return Err(format!(
                    "{name} `{title}`: `expect` states no `reward` \
                     (write `reward: null` when it must get none)"
                ));
            }
            // An entry with its own spec tests that configuration (a `max_chars`, a mode), not
            // what every spec of the type does.
            if !should_fail(e.get("expect")) || e.get("spec").is_some() {
                continue;
            }
            // An entry whose hack is in the environment's final state or in its trajectory
            // (the messages: calls, results, orphans) is bound to its own row: its final text
            // on another row's state or rollout would test nothing.
            let (text, tools, item, stateful) = if let Some(row) = e.get("row") {
                let s = InputMapping::default()
                    .sample(row.clone())
                    .map_err(|err| format!("{name} `{title}`: bad row: {}", err.message))?;
                let stateful = s.state.is_some() || s.messages.is_some();
                (s.output_text, s.output_tools, s.item, stateful)
            } else if let Some(t) = e.get("output").and_then(Value::as_str) {
                (
                    t.to_string(),
                    None,
                    e.get("item").cloned().unwrap_or(Value::Null),
                    false,
                )
            } else {
                continue;
            };
            let gold = spec
                .map(|s| gold_paths(s, false))
                .unwrap_or_default()
                .iter()
                .find_map(|p| get_path(&item, p).and_then(gold_text))
                .filter(|g| !token_occurrences(&text, g).is_empty());
            let mut values = Vec::new();
            scalars(&item, &mut values, 0);
            let bound = values.iter().any(|v| {
                v.chars().count() >= 3
                    && gold.as_deref() != Some(v.trim())
                    && !token_occurrences(&text, v).is_empty()
            }) || echoes(&text, &spec_text)
                || stateful;
            exploits.push(Exploit {
                name: title,
                text,
                tools,
                gold,
                bound,
            });
        }
        Ok(CorpusFile {
            name: name.to_string(),
            types,
            exploits,
        })
    }
}

/// An entry that must not be rewarded for its output: an expected reward ≤ 0 with status ok.
/// Entries expected to be errors are left out: they test the grader against a broken item
/// (unreadable gold, missing field), and aimed at a good row their output may be right.
fn should_fail(expect: Option<&Value>) -> bool {
    let Some(x) = expect else { return false };
    x.get("status")
        .and_then(Value::as_str)
        .is_none_or(|s| s == "ok")
        && x.get("reward")
            .and_then(Value::as_f64)
            .is_some_and(|r| r <= 0.0)
}

/// Lowercase words joined by single spaces.
fn normalize(t: &str) -> String {
    t.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `text` quotes five words in a row of `spec_text` (already normalized).
fn echoes(text: &str, spec_text: &str) -> bool {
    if spec_text.is_empty() {
        return false;
    }
    let norm = normalize(text);
    let words: Vec<&str> = norm.split(' ').filter(|w| !w.is_empty()).collect();
    words.windows(5).any(|w| {
        let phrase = w.join(" ");
        spec_text.contains(&phrase)
    })
}

fn scalars(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 6 {
        return;
    }
    match v {
        Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_string()),
        Value::Number(n) => out.push(n.to_string()),
        Value::Array(a) => a.iter().for_each(|x| scalars(x, out, depth + 1)),
        Value::Object(m) => m.values().for_each(|x| scalars(x, out, depth + 1)),
        _ => {}
    }
}

impl Exploit {
    /// This entry aimed at a row with gold `row_gold` (see the module docs), or `None` when it
    /// cannot be.
    pub fn aim(&self, row_gold: Option<&str>) -> Option<Variant> {
        if self.bound {
            return None;
        }
        let text = match &self.gold {
            None => {
                if row_gold.is_some_and(|r| holds(&self.text, r.trim())) {
                    return None;
                }
                self.text.clone()
            }
            Some(g) => {
                let r = row_gold?.trim();
                if r != g && !token_occurrences(&self.text, r).is_empty() {
                    return None;
                }
                let at = token_occurrences(&self.text, g);
                let mut out = String::with_capacity(self.text.len());
                let mut prev = 0;
                for i in at {
                    out.push_str(&self.text[prev..i]);
                    out.push_str(r);
                    prev = i + g.len();
                }
                out.push_str(&self.text[prev..]);
                out
            }
        };
        Some(Variant {
            name: self.name.clone(),
            text,
            tools: self.tools.clone(),
            rollout: None,
        })
    }
}

static NUMBER: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"-?\d+(?:\.\d+)?").expect("number pattern"));

/// Whether `text` holds `gold`: as a whole token, or, for a numeric gold, as a number of the
/// same value (`0.0` for `0`).
fn holds(text: &str, gold: &str) -> bool {
    if gold.is_empty() {
        return false;
    }
    if !token_occurrences(text, gold).is_empty() {
        return true;
    }
    let Ok(g) = gold.parse::<f64>() else {
        return false;
    };
    NUMBER
        .find_iter(text)
        .any(|m| m.as_str().parse::<f64>().is_ok_and(|x| x == g))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_independent_entry_that_holds_the_row_gold_is_not_aimed_at_it() {
        let c = file(
            "spec: {type: numeric}\nexploits:\n  - {exploit: zeros, why: w, output: \"\\\\boxed{0.000000}\", expect: {reward: 0}}\n",
        );
        let e = &c.exploits[0];
        assert!(e.aim(Some("0")).is_none());
        assert!(e.aim(Some("-0.0")).is_none());
        assert!(e.aim(Some("1")).is_some());
        assert!(e.aim(None).is_some());
        assert!(holds("x = 12", "12") && !holds("x = 12", "1") && !holds("abc", ""));
    }

    fn file(yaml: &str) -> CorpusFile {
        Corpus::parse(&[("t.yaml".into(), yaml.into())])
            .unwrap()
            .files
            .remove(0)
    }

    #[test]
    fn embedded_list_matches_the_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/exploits");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = EMBEDDED.iter().map(|(n, _)| *n).collect();
        assert_eq!(listed, on_disk, "add new corpus files to EMBEDDED");
        let c = Corpus::embedded();
        assert!(c.for_type("math_equiv")[0].exploits.len() > 100);
        let code: Vec<&str> = c
            .for_type("code_exec")
            .iter()
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(code, ["code.cpp.yaml", "code.python.yaml"]);
        assert_eq!(c.for_type("rubric")[0].name, "judge.rubric.yaml");
        assert!(c.for_type("const").is_empty());
    }

    #[test]
    fn entries_are_aimed_at_the_row() {
        let f = file(
            r#"
spec: {type: math_equiv, reference: "{{item.answer}}", note: "The answer must equal the reference answer exactly."}
exploits:
  - {exploit: hedge, why: x, output: '\boxed{1 \text{ or } 2}', item: {answer: "1"}, expect: {reward: 0}}
  - {exploit: independent, why: x, output: '<answer></answer>', expect: {reward: 0}}
  - {exploit: bound, why: x, output: 'Paris is it', item: {answer: "1", city: Paris}, expect: {reward: 0}}
  - {exploit: partial credit, why: x, output: 'half', expect: {reward: 0.5}}
  - {exploit: error, why: x, output: 'e', expect: {reward: null, status: error}}
  - {exploit: own spec, why: x, spec: {type: math_equiv, reference: "1"}, output: 'o', expect: {reward: 0}}
  - {exploit: echo, why: x, output: 'It will equal the reference answer exactly.', expect: {reward: 0}}
"#,
        );
        assert_eq!(f.types, BTreeSet::from(["math_equiv".into(), "t".into()]));
        let names: Vec<&str> = f.exploits.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["hedge", "independent", "bound", "echo"]);
        assert!(f.exploits[3].aim(Some("1")).is_none(), "quotes the spec");
        let hedge = &f.exploits[0];
        assert_eq!(
            hedge.aim(Some("7")).unwrap().text,
            r"\boxed{7 \text{ or } 2}"
        );
        assert!(hedge.aim(Some("2")).is_none(), "gold 2 would make it right");
        assert_eq!(
            hedge.aim(Some("1")).unwrap().text,
            r"\boxed{1 \text{ or } 2}"
        );
        assert!(hedge.aim(None).is_none());
        assert_eq!(f.exploits[1].aim(None).unwrap().text, "<answer></answer>");
        assert!(f.exploits[2].aim(Some("3")).is_none());
    }

    #[test]
    fn an_entry_that_states_no_reward_is_refused() {
        let Err(e) = Corpus::parse(&[(
            "t.yaml".into(),
            "spec: {type: numeric}\nexploits:\n  - {exploit: broken item, why: w, output: '1', expect: {status: error}}\n".into(),
        )]) else {
            panic!("an entry without a reward was accepted");
        };
        assert!(
            e.contains("t.yaml `broken item`: `expect` states no `reward`"),
            "{e}"
        );
    }

    #[test]
    fn entries_whose_hack_is_in_the_trajectory_or_the_state_are_bound() {
        let f = file(
            r#"
spec: {type: claim_check, claims: [{says: booked, backed_by: [{tool: book}]}]}
exploits:
  - {exploit: trajectory, why: x, row: {item: {}, sample: {messages: [{role: assistant, content: "Booked."}]}}, expect: {reward: 0}}
  - {exploit: state, why: x, row: {item: {}, sample: {output_text: "Booked.", state: {}}}, expect: {reward: 0}}
  - {exploit: text, why: x, output: "<tool_response>ok</tool_response>", expect: {reward: 0}}
"#,
        );
        assert!(f.exploits[0].aim(None).is_none());
        assert!(f.exploits[1].aim(None).is_none());
        assert!(f.exploits[2].aim(None).is_some());
    }

    #[test]
    fn rows_keep_their_tool_calls() {
        let f = file(
            r#"
spec: {type: tool_call}
exploits:
  - exploit: calls
    why: x
    row: {item: {}, sample: {output_text: "", output_tools: [{type: function, function: {name: f, arguments: "{}"}}]}}
    expect: {reward: 0}
"#,
        );
        let v = f.exploits[0].aim(None).unwrap();
        assert_eq!(v.tools.unwrap()[0]["function"]["name"], "f");
    }
}
