//! The report of an audit command's JSON (`referee eval`, `fuzz`, `compare`): every top-level
//! field rendered by its shape (numbers as headline cards, flat objects as tables, lists of
//! objects as tables whose nested lists expand), plus the kind's own plot or verdict. Rendering
//! by shape keeps a report readable when those outputs grow a field.

use super::html::{cards, cell, esc, kv_table, num, object_table, page};
use super::svg;
use serde_json::{Map, Value};
use std::fmt::Write as _;

pub fn render(v: &Value, source: &str) -> String {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("audit");
    let Value::Object(m) = v else {
        return page("Referee report", source, "");
    };
    let mut b = String::new();
    // Scalars first, as headline numbers.
    let scalars: Vec<(&str, String)> = m
        .iter()
        .filter(|(k, x)| {
            *k != "kind" && (x.is_number() || x.is_boolean() || (x.is_string() && *k != "spec"))
        })
        .map(|(k, x)| (k.as_str(), cell(x)))
        .collect();
    if !scalars.is_empty() {
        b.push_str(&cards(&scalars));
    }
    match kind {
        "fuzz" => fuzz_head(m, &mut b),
        "compare" => compare_head(m, &mut b),
        _ => {}
    }
    for (k, x) in m {
        if k == "kind" || x.is_number() || x.is_boolean() || (x.is_string() && k != "spec") {
            continue;
        }
        let _ = write!(b, "<h2>{}</h2>", esc(k));
        b.push_str(&section(k, x));
    }
    let title = match kind {
        "fuzz" => "Referee report: fuzz".to_string(),
        "eval" => format!(
            "Referee report: eval{}",
            m.get("format")
                .and_then(Value::as_str)
                .map(|f| format!(" ({f})"))
                .unwrap_or_default()
        ),
        "compare" => "Referee report: compare".to_string(),
        other => format!("Referee report: {other}"),
    };
    page(&title, source, &b)
}

/// One top-level field by its shape.
fn section(key: &str, x: &Value) -> String {
    match x {
        // A spec is shown as written, whatever its shape.
        Value::Object(_) if key == "spec" => format!(
            "<pre>{}</pre>",
            esc(&serde_json::to_string_pretty(x).unwrap_or_default())
        ),
        Value::Array(a) if a.iter().all(Value::is_object) && !a.is_empty() => {
            let id = format!("t-{}", key.replace(|c: char| !c.is_alphanumeric(), "-"));
            object_table(a, (a.len() > 5).then_some(id.as_str()))
        }
        Value::Object(o) if !o.is_empty() && o.values().all(Value::is_object) => {
            // A table keyed by name (correlations: pearson/spearman/kendall_tau_b).
            let rows: Vec<Value> = o
                .iter()
                .map(|(k, v)| {
                    let mut row = Map::new();
                    row.insert("name".into(), Value::String(k.clone()));
                    if let Value::Object(inner) = v {
                        row.extend(inner.iter().map(|(a, b)| (a.clone(), b.clone())));
                    }
                    Value::Object(row)
                })
                .collect();
            object_table(&rows, None)
        }
        // Flat or mixed objects (`errors: {a_only, ..., by_reason: {...}}`): one row per key,
        // nested values as compact JSON.
        Value::Object(o) => kv_table(
            &o.iter()
                .map(|(k, v)| (k.clone(), cell(v)))
                .collect::<Vec<_>>(),
        ),
        Value::String(s) => format!("<pre>{}</pre>", esc(s)),
        Value::Array(a) if a.is_empty() => r#"<p class="note">none</p>"#.to_string(),
        other => format!(
            "<pre>{}</pre>",
            esc(&serde_json::to_string_pretty(other).unwrap_or_default())
        ),
    }
}

/// The verdict and a bar chart of how often each family's variants got through.
fn fuzz_head(m: &Map<String, Value>, b: &mut String) {
    if let Some(f) = m.get("failed").and_then(Value::as_bool) {
        let _ = write!(
            b,
            r#"<p class="{}">{}</p>"#,
            if f { "fail" } else { "pass" },
            if f {
                "FAILED: some family got variants that should fail above the threshold."
            } else {
                "PASSED: no family got a variant that should fail above the threshold."
            }
        );
    }
    let Some(Value::Array(fams)) = m.get("families") else {
        return;
    };
    let items: Vec<(String, f64)> = fams
        .iter()
        .filter_map(|f| {
            let name = f
                .get("family")
                .or_else(|| f.get("name"))
                .and_then(Value::as_str)?;
            let rate = f.get("rate").and_then(Value::as_f64).or_else(|| {
                let passed = f.get("passed")?.as_f64()?;
                let n = f.get("variants")?.as_f64()?;
                (n > 0.0).then(|| passed / n)
            })?;
            Some((name.to_string(), rate))
        })
        .collect();
    if !items.is_empty() {
        b.push_str("<h2>Pass rate by family</h2>");
        let _ = write!(
            b,
            r#"<p class="note">The share of each family's variants (which should all fail) that scored above the threshold{}.</p>"#,
            m.get("threshold")
                .and_then(Value::as_f64)
                .map(|t| format!(" {}", num(t)))
                .unwrap_or_default()
        );
        b.push_str(&svg::bars(&items, 1.0, "pass rate by family"));
    }
}

/// The confusion matrix laid out as a 2×2 table.
fn compare_head(m: &Map<String, Value>, b: &mut String) {
    let Some(mx) = m.get("matrix") else { return };
    let g = |k: &str| mx.get(k).map_or_else(|| "n/a".into(), cell);
    let _ = write!(
        b,
        r#"<h2>Agreement</h2><table class="kv matrix"><tr><th></th><th>B passes</th><th>B fails</th></tr><tr><th>A passes</th><td>{} (tp)</td><td>{} (fp)</td></tr><tr><th>A fails</th><td>{} (fn)</td><td>{} (tn)</td></tr></table>"#,
        g("tp"),
        g("fp"),
        g("fn"),
        g("tn")
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fuzz_gets_a_verdict_and_a_bar_per_family() {
        let v = json!({"kind": "fuzz", "threshold": 0.5, "failed": true, "families": [
            {"family": "empty", "source": "generic", "variants": 4, "passed": 0, "rate": 0.0, "examples": []},
            {"family": "listing", "source": "math_equiv", "variants": 4, "passed": 2, "examples": [
                {"id": "q1", "variant": 0, "output": "1, 2, 3", "reward": 1.0, "status": "ok"}]}]});
        let h = render(&v, "fuzz.json");
        assert!(h.contains("FAILED"));
        // `rate` missing on the second family: derived from passed/variants.
        assert!(h.contains("<title>listing: 0.5</title>"), "{h}");
        assert!(h.contains("<h2>families</h2>"));
        assert!(h.contains("1, 2, 3"));
    }

    #[test]
    fn eval_correlations_become_a_table() {
        let v = json!({"kind": "eval", "format": "scores", "overall": {"n": 10, "accuracy": 0.8},
            "subsets": [{"subset": "math", "n": 10, "accuracy": 0.8}],
            "correlation": {"pearson": {"value": 0.91, "ci": [0.8, 0.97]}, "spearman": {"value": 0.88, "ci": [0.7, 0.95]}}});
        let h = render(&v, "eval.json");
        assert!(h.contains("Referee report: eval (scores)"));
        assert!(
            h.contains("<td>pearson</td><td>0.91</td><td>[0.8, 0.97]</td>"),
            "{h}"
        );
        assert!(h.contains("<th>accuracy</th><td>0.8</td>"), "{h}");
    }

    #[test]
    fn compare_matrix() {
        let v = json!({"kind": "compare", "a": "fast.yaml", "b": "strict.yaml",
            "matrix": {"tp": 5, "fp": 2, "fn": 1, "tn": 12}, "rates": {"fp_rate": 0.1},
            "disagreements": [{"id": "x", "a": 1.0, "b": 0.0, "output": "<answer>"}]});
        let h = render(&v, "cmp.json");
        assert!(h.contains("5 (tp)") && h.contains("12 (tn)"));
        assert!(h.contains("&lt;answer&gt;"));
    }
}
