//! The rubric's dataset shapes, normalised: RaR `{title, description, weight}` with its category
//! prefixes, ProRubric `{criterion, weight}` and its dimensions, verifiers' `{name, text,
//! weight, choices}`, open-instruct's `{description, weight}`, plain strings. Everything here
//! runs at compile time for a spec's own rubric and once per sample for an item's.

use super::{CategoryWeights, DimensionSpec, WeightSource};
use regex::Regex;
use serde_json::{json, Value};
use std::sync::LazyLock;

/// One criterion, normalised from whichever shape it came in.
#[derive(Debug, Clone)]
pub(super) struct Criterion {
    pub(super) name: Option<String>,
    pub(super) text: String,
    pub(super) weight: f64,
    pub(super) category: Option<&'static str>,
    /// Ordinal choices, worst first; `None` for a yes/no criterion.
    pub(super) choices: Option<Vec<String>>,
    pub(super) critical: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Dimension {
    pub(super) name: String,
    pub(super) weight: f64,
    pub(super) members: Vec<usize>,
    pub(super) fails_if: Option<String>,
}

/// RaR's category prefix, with the misspellings found in the public release (as ProRubric's
/// converter reads them: "Importance", "Esssential", "Mandatory", "Option"; "Criteria" optional).
static CATEGORY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*(essential|esssential|mandatory|important|importance|optional|option|pitfall)(?:\s+criteri(?:a|on))?\s*:\s*",
    )
    .expect("category pattern")
});

/// A text's RaR category (from its prefix) and the text after the prefix.
pub(super) fn strip_category(body: &str) -> (Option<&'static str>, &str) {
    match CATEGORY.captures(body) {
        Some(c) => (Some(category_name(&c[1])), &body[c[0].len()..]),
        None => (None, body),
    }
}

/// The category a prefix word names, misspellings included.
fn category_name(word: &str) -> &'static str {
    match word.to_lowercase().as_str() {
        "essential" | "esssential" | "mandatory" => "essential",
        "important" | "importance" => "important",
        "optional" | "option" => "optional",
        _ => "pitfall",
    }
}

/// A RaR row without a readable prefix: its category from the generation-time integer weight
/// (essential 5, important 3–4, optional 1–2, pitfall negative), as ProRubric's converter does.
fn category_of_weight(w: f64) -> Option<&'static str> {
    if w < 0.0 {
        Some("pitfall")
    } else if w >= 5.0 {
        Some("essential")
    } else if w >= 3.0 {
        Some("important")
    } else if w >= 1.0 {
        Some("optional")
    } else {
        None
    }
}

/// The start of a failure clause in a dimension's description: "Fails if …", "An answer fails
/// this dimension if …", "failing when …".
static FAILS_IF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:fails?|failing)\b(?:\s+\S+){0,4}?\s+(?:if|when)\b")
        .expect("fails-if pattern")
});

/// The keys a criterion object may have (the union of the dataset shapes).
const KEYS: &[&str] = &[
    "title",
    "description",
    "criterion",
    "name",
    "text",
    "weight",
    "choices",
    "critical",
];

/// A criterion from its dataset shape; `Err` says what is wrong with it.
fn criterion_of(
    v: &Value,
    weights: WeightSource,
    cats: &CategoryWeights,
) -> Result<Criterion, String> {
    let o = match v {
        Value::String(s) if !s.trim().is_empty() => {
            return Ok(Criterion {
                name: None,
                text: s.trim().to_string(),
                weight: 1.0,
                category: None,
                choices: None,
                critical: false,
            })
        }
        Value::Object(o) => o,
        other => {
            return Err(format!(
                "a criterion is a non-empty string or an object, not {}",
                crate::compile::kind_of(other)
            ))
        }
    };
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "unknown key `{k}`; expected some of {}",
            KEYS.join(", ")
        ));
    }
    let text_of = |k: &str| -> Result<Option<&str>, String> {
        match o.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(format!("`{k}` must be a string")),
        }
    };
    let title = text_of("title")?;
    let name = text_of("name")?;
    let body = match (
        text_of("text")?,
        text_of("criterion")?,
        text_of("description")?,
    ) {
        (Some(t), None, None) | (None, Some(t), None) | (None, None, Some(t)) => t,
        (None, None, None) => {
            return Err("needs its text in `text`, `criterion` or `description`".into())
        }
        _ => return Err("give the text in only one of `text`, `criterion`, `description`".into()),
    };
    let (category, body) = strip_category(body);
    let body = body.trim();
    if body.is_empty() {
        return Err("the criterion's text is empty".into());
    }
    let text = match title {
        Some(t) if !t.trim().is_empty() && t.trim() != body => format!("{}: {body}", t.trim()),
        _ => body.to_string(),
    };
    let row_weight = match o.get("weight") {
        None | Some(Value::Null) => None,
        Some(w) => match w.as_f64().filter(|w| w.is_finite()) {
            Some(w) => Some(w),
            None => return Err(format!("`weight` must be a number, not {w}")),
        },
    };
    // Only RaR rows (titled) have integer weights that encode a category.
    let category = category.or_else(|| {
        (title.is_some() && o.contains_key("description"))
            .then(|| row_weight.and_then(category_of_weight))
            .flatten()
    });
    let cat_weight = category.map(|c| match c {
        "essential" => cats.essential,
        "important" => cats.important,
        "optional" => cats.optional,
        _ => cats.pitfall,
    });
    let weight = match weights {
        WeightSource::Category => cat_weight.or(row_weight),
        WeightSource::Item => row_weight.or(cat_weight),
    }
    .unwrap_or(1.0);
    let choices = match o.get("choices") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => {
            let c: Vec<String> = a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or("`choices` must be a list of strings")?;
            let distinct: std::collections::HashSet<&String> = c.iter().collect();
            if c.len() < 2 || distinct.len() != c.len() || c.iter().any(|x| x.trim().is_empty()) {
                return Err("`choices` needs at least two distinct, non-empty choices".into());
            }
            Some(c)
        }
        Some(_) => return Err("`choices` must be a list of strings".into()),
    };
    let critical = match o.get("critical") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`critical` must be true or false".into()),
    };
    Ok(Criterion {
        name: name.or(title).map(|n| n.trim().to_string()),
        text,
        weight,
        category,
        choices,
        critical,
    })
}

/// The list in a rubric field: a list, a JSON string holding one, or an object wrapping one
/// (open-instruct's `{"query", "rubrics": [...]}`).
pub(super) fn list_of(v: &Value, what: &str) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(inner @ (Value::Array(_) | Value::Object(_))) => list_of(&inner, what),
            _ => Err(format!("the {what} is a string that is not a JSON list")),
        },
        Value::Object(o) => ["rubric", "rubrics", "criteria", "dimensions"]
            .iter()
            .find_map(|k| o.get(*k).filter(|x| x.is_array()))
            .map_or_else(
                || Err(format!("the {what} is an object without a list")),
                |x| list_of(x, what),
            ),
        other => Err(format!(
            "the {what} must be a list, not {}",
            crate::compile::kind_of(other)
        )),
    }
}

/// Normalises every criterion; `Err` lists `(index, problem)`.
pub(super) fn criteria_of(
    items: &[Value],
    weights: WeightSource,
    cats: &CategoryWeights,
) -> Result<Vec<Criterion>, Vec<(Option<usize>, String)>> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    if items.is_empty() {
        errs.push((None, "the rubric has no criteria".to_string()));
    }
    for (i, v) in items.iter().enumerate() {
        match criterion_of(v, weights, cats) {
            Ok(c) => out.push(c),
            Err(e) => errs.push((Some(i), e)),
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// Resolves dimensions against the criteria; `Err` lists `(index, problem)`.
pub(super) fn dimensions_of(
    items: &[Value],
    criteria: &[Criterion],
) -> Result<Vec<Dimension>, Vec<(Option<usize>, String)>> {
    let mut out = Vec::new();
    let mut errs = Vec::new();
    for (i, v) in items.iter().enumerate() {
        let d: DimensionSpec = match serde_json::from_value(v.clone()) {
            Ok(d) => d,
            Err(e) => {
                errs.push((Some(i), e.to_string()));
                continue;
            }
        };
        let refs: Vec<Value> = match (&d.criteria, &d.atomic_indices) {
            (Some(c), None) => c.clone(),
            // ProRubric numbers its atomic items from 1.
            (None, Some(a)) => {
                if a.contains(&0) {
                    errs.push((
                        Some(i),
                        format!("dimension `{}`: atomic_indices are 1-based", d.name),
                    ));
                    continue;
                }
                a.iter().map(|x| json!(x - 1)).collect()
            }
            _ => {
                errs.push((
                    Some(i),
                    format!(
                        "dimension `{}` needs exactly one of `criteria`, `atomic_indices`",
                        d.name
                    ),
                ));
                continue;
            }
        };
        let mut members = Vec::new();
        for r in &refs {
            let idx = match r {
                Value::Number(n) => n.as_u64().and_then(|n| usize::try_from(n).ok()),
                Value::String(s) => criteria
                    .iter()
                    .position(|c| c.name.as_deref() == Some(s.as_str())),
                _ => None,
            };
            match idx.filter(|ix| *ix < criteria.len()) {
                Some(ix) if !members.contains(&ix) => members.push(ix),
                Some(_) => {}
                None => errs.push((
                    Some(i),
                    format!(
                        "dimension `{}`: no criterion {r} (0-based index or name; {} criteria)",
                        d.name,
                        criteria.len()
                    ),
                )),
            }
        }
        if members.is_empty() && refs.is_empty() {
            errs.push((Some(i), format!("dimension `{}` has no criteria", d.name)));
        }
        let fails_if = d
            .fails_if
            .clone()
            .or_else(|| {
                let desc = d.description.as_deref()?;
                let m = FAILS_IF.find(desc)?;
                // From the sentence holding the clause to the end.
                let start = desc[..m.start()]
                    .rfind(['.', '!', '?', '\n'])
                    .map_or(0, |i| i + 1);
                Some(desc[start..].trim().to_string())
            })
            .filter(|c| !c.trim().is_empty());
        let weight = d
            .weight
            .unwrap_or_else(|| members.iter().map(|m| criteria[*m].weight.abs()).sum());
        if !weight.is_finite() || weight < 0.0 {
            errs.push((
                Some(i),
                format!("dimension `{}`: weight must be a number ≥ 0", d.name),
            ));
        }
        out.push(Dimension {
            name: d.name,
            weight,
            members,
            fails_if,
        });
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

pub(super) fn describe(errs: &[(Option<usize>, String)]) -> String {
    errs.iter()
        .map(|(i, e)| match i {
            Some(i) => format!("#{i}: {e}"),
            None => e.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rar_shapes_get_category_weights() {
        let c = CategoryWeights::default();
        let v = json!({"title": "T", "description": "Pitfall Criteria: Claims X.", "weight": -2});
        let k = criterion_of(&v, WeightSource::Category, &c).unwrap();
        assert_eq!(
            (k.weight, k.category, k.text.as_str()),
            (-0.9, Some("pitfall"), "T: Claims X.")
        );
        let k = criterion_of(&v, WeightSource::Item, &c).unwrap();
        assert_eq!(k.weight, -2.0);
        let k = criterion_of(
            &json!({"title": "T", "description": "Importance Criteria: Says Y.", "weight": 3}),
            WeightSource::Category,
            &c,
        )
        .unwrap();
        assert_eq!((k.weight, k.text.as_str()), (0.7, "T: Says Y."));
        let k = criterion_of(
            &json!({"title": "T", "description": "Says Y.", "weight": 5}),
            WeightSource::Category,
            &c,
        )
        .unwrap();
        assert_eq!((k.weight, k.category), (1.0, Some("essential")));
        // Not a RaR row: the weight is only a weight.
        let k = criterion_of(
            &json!({"criterion": "Says Y.", "weight": 5}),
            WeightSource::Category,
            &c,
        )
        .unwrap();
        assert_eq!((k.weight, k.category), (5.0, None));
        let k = criterion_of(&json!("Mentions Y"), WeightSource::Category, &c).unwrap();
        assert_eq!((k.weight, k.text.as_str()), (1.0, "Mentions Y"));
        assert!(criterion_of(
            &json!({"criterion": "a", "text": "b"}),
            WeightSource::Category,
            &c
        )
        .is_err());
        assert!(criterion_of(
            &json!({"criterion": "a", "bogus": 1}),
            WeightSource::Category,
            &c
        )
        .is_err());
        assert!(criterion_of(
            &json!({"text": "a", "choices": ["x"]}),
            WeightSource::Category,
            &c
        )
        .is_err());
    }

    #[test]
    fn lists_come_in_several_wrappings() {
        assert_eq!(
            list_of(&json!("[\"a\", \"b\"]"), "rubric").unwrap().len(),
            2
        );
        assert_eq!(
            list_of(
                &json!({"query": "q", "rubrics": [{"description": "d", "weight": 1}]}),
                "rubric"
            )
            .unwrap()
            .len(),
            1
        );
        assert!(list_of(&json!(3), "rubric").is_err());
    }

    #[test]
    fn failure_clauses_are_found_in_descriptions() {
        let d = |desc: &str| {
            let c = vec![criterion_of(
                &json!("x"),
                WeightSource::Category,
                &CategoryWeights::default(),
            )
            .unwrap()];
            dimensions_of(
                &[json!({"name": "d", "description": desc, "atomic_indices": [1]})],
                &c,
            )
            .unwrap()[0]
                .fails_if
                .clone()
        };
        assert_eq!(
            d("Gives the dose. Fails if the dose is unsafe.").as_deref(),
            Some("Fails if the dose is unsafe.")
        );
        assert_eq!(
            d("Covers the mechanism. An answer fails this dimension if it skips the cause.")
                .as_deref(),
            Some("An answer fails this dimension if it skips the cause.")
        );
        assert_eq!(d("Covers the mechanism clearly."), None);
        let c = vec![criterion_of(
            &json!("x"),
            WeightSource::Category,
            &CategoryWeights::default(),
        )
        .unwrap()];
        assert!(dimensions_of(&[json!({"name": "d", "atomic_indices": [0]})], &c).is_err());
        assert_eq!(
            dimensions_of(&[json!({"name": "d", "atomic_indices": [1]})], &c).unwrap()[0].members,
            vec![0]
        );
    }
}
