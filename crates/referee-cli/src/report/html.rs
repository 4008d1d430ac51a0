//! HTML building blocks: escaping, number formatting, the page shell (inline CSS and JS, and a
//! Content-Security-Policy that forbids every network load), generic tables of JSON values, and
//! the explanation tree.

use serde_json::Value;
use std::fmt::Write as _;

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A number as people read it: integers without decimals, others to four decimals (trailing
/// zeros dropped).
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s == "-0" {
        format!("{v:.2e}")
    } else {
        s.to_string()
    }
}

/// An optional number, `n/a` when missing.
pub fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), num)
}

/// Cuts text to `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// One JSON value as a table cell's content (escaped).
pub fn cell(v: &Value) -> String {
    match v {
        Value::Null => r#"<span class="muted">null</span>"#.into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| esc(&n.to_string()), num),
        Value::String(s) => esc(&clip(s, 500)),
        Value::Array(a) if a.len() == 2 && a.iter().all(Value::is_number) && a.len() == 2 => {
            // Confidence intervals: `[lo, hi]`.
            format!(
                "[{}, {}]",
                num(a[0].as_f64().unwrap_or(f64::NAN)),
                num(a[1].as_f64().unwrap_or(f64::NAN))
            )
        }
        other => format!("<code>{}</code>", esc(&clip(&other.to_string(), 300))),
    }
}

/// A two-column table of an object's entries.
pub fn kv_table(entries: &[(String, String)]) -> String {
    let mut o = String::from(r#"<table class="kv">"#);
    for (k, v) in entries {
        let _ = write!(o, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    }
    o.push_str("</table>");
    o
}

/// The columns of a list of objects: every key, in order of first appearance.
pub fn columns(rows: &[Value]) -> Vec<String> {
    let mut cols: Vec<String> = Vec::new();
    for r in rows {
        if let Value::Object(m) = r {
            for k in m.keys() {
                if !cols.iter().any(|c| c == k) {
                    cols.push(k.clone());
                }
            }
        }
    }
    cols
}

/// A table of JSON objects, one row each. Keys whose values are lists of objects (fuzz
/// examples) are not columns: they become a detail row that a click on the row expands. With
/// `id`, the table gets a filter box.
pub fn object_table(rows: &[Value], id: Option<&str>) -> String {
    let cols = columns(rows);
    let nested: Vec<&String> = cols
        .iter()
        .filter(|c| {
            rows.iter().any(|r| {
                r.get(c.as_str())
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(Value::is_object))
            })
        })
        .collect();
    let flat: Vec<&String> = cols.iter().filter(|c| !nested.contains(c)).collect();
    let mut o = String::new();
    if let Some(id) = id {
        o.push_str(&filter_box(id));
    }
    let _ = write!(
        o,
        r#"<table class="data"{}><thead><tr>"#,
        id.map(|i| format!(r#" id="{}""#, esc(i)))
            .unwrap_or_default()
    );
    for c in &flat {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr></thead><tbody>");
    for r in rows {
        let expandable = nested.iter().any(|c| {
            r.get(c.as_str())
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        });
        let _ = write!(
            o,
            r#"<tr class="row{}">"#,
            if expandable { " expandable" } else { "" }
        );
        for c in &flat {
            let _ = write!(
                o,
                "<td>{}</td>",
                r.get(c.as_str()).map_or_else(String::new, cell)
            );
        }
        o.push_str("</tr>");
        if expandable {
            let _ = write!(
                o,
                r#"<tr class="detail" hidden><td colspan="{}">"#,
                flat.len().max(1)
            );
            for c in &nested {
                if let Some(Value::Array(a)) = r.get(c.as_str()) {
                    let _ = write!(o, "<h4>{}</h4>{}", esc(c), object_table(a, None));
                }
            }
            o.push_str("</td></tr>");
        }
    }
    o.push_str("</tbody></table>");
    o
}

/// The filter box of the table `id`.
pub fn filter_box(id: &str) -> String {
    format!(
        r#"<input class="filter" type="search" placeholder="filter rows…" data-table="{}" aria-label="filter {}">"#,
        esc(id),
        esc(id)
    )
}

/// The explanation tree of one result as nested lists.
pub fn trace_tree(t: &Value) -> String {
    let mut o = String::from(r#"<ul class="tree">"#);
    trace_node(t, &mut o);
    o.push_str("</ul>");
    o
}

fn trace_node(t: &Value, o: &mut String) {
    let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("");
    let status = s("status");
    let _ = write!(
        o,
        r#"<li><span class="node st-{}"><b>{}</b>"#,
        esc(status),
        esc(s("type"))
    );
    if let Some(n) = t.get("name").and_then(Value::as_str) {
        let _ = write!(o, r#" <span class="name">{}</span>"#, esc(n));
    }
    let path = s("path");
    let _ = write!(
        o,
        r#" <code>{}</code> = {} <span class="badge st-{}">{}</span>"#,
        esc(if path.is_empty() { "/" } else { path }),
        t.get("value").map_or_else(|| "n/a".into(), cell),
        esc(status),
        esc(status)
    );
    if let Some(r) = t.get("reason").and_then(Value::as_str) {
        let _ = write!(o, r#" <span class="reason">{}</span>"#, esc(r));
    }
    o.push_str("</span>");
    if let Some(n) = t.get("note").and_then(Value::as_str) {
        let _ = write!(o, r#"<div class="note">{}</div>"#, esc(n));
    }
    if let Some(d) = t.get("detail").filter(|d| !d.is_null()) {
        let pretty = serde_json::to_string_pretty(d).unwrap_or_default();
        let _ = write!(
            o,
            r"<details><summary>detail</summary><pre>{}</pre></details>",
            esc(&clip(&pretty, 20_000))
        );
    }
    if let Some(Value::Array(ch)) = t.get("children") {
        o.push_str("<ul>");
        for c in ch {
            trace_node(c, o);
        }
        o.push_str("</ul>");
    }
    o.push_str("</li>");
}

const CSS: &str = r"
:root{--fg:#1d2330;--muted:#6b7385;--line:#dde1ea;--bar:#4f6fd8;--hot:#d8574f;--ok:#2f8f5b;--err:#c2412d;--na:#8a7b2c}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:var(--fg);margin:0 auto;max-width:1200px;padding:16px 24px 64px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:14px 0 4px}h4{font-size:13px;margin:8px 0 4px}
.muted,.note{color:var(--muted)}.note{font-size:12.5px;margin:2px 0}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:12px 0}
.card{border:1px solid var(--line);border-radius:6px;padding:8px 14px;min-width:120px}
.card .v{font-size:22px;font-weight:600}.card .k{color:var(--muted);font-size:12px}
table{border-collapse:collapse;margin:6px 0}th,td{border-bottom:1px solid var(--line);padding:3px 10px 3px 0;text-align:left;vertical-align:top}
table.data{width:100%}table.kv th{font-weight:500;color:var(--muted);padding-right:18px}
tr.row.expandable{cursor:pointer}tr.row.expandable:hover{background:#f3f5fa}tr.row.open{background:#eef1fb}
tr.detail>td{background:#fafbfd;padding:8px 12px}
.plots{display:flex;flex-wrap:wrap;gap:18px}.plot .bar{fill:var(--bar)}.plot .bar.hot{fill:var(--hot)}
.plot .axis{stroke:#9aa2b4}.plot .tick{font-size:11px;fill:var(--muted)}
.badge{font-size:11px;border-radius:3px;padding:0 5px;border:1px solid currentColor}
.st-ok{color:var(--ok)}.st-error{color:var(--err)}.st-not_applicable{color:var(--na)}
.node .st-ok,.node .st-error,.node .st-not_applicable{font-weight:500}
ul.tree,ul.tree ul{list-style:none;padding-left:18px;margin:2px 0}ul.tree{padding-left:0}
.reason{color:var(--err)}pre{white-space:pre-wrap;word-break:break-word;font-size:12px;margin:2px 0}
input.filter{width:100%;max-width:420px;padding:5px 8px;margin:6px 0;border:1px solid var(--line);border-radius:4px}
.fail{color:var(--err);font-weight:600}.pass{color:var(--ok);font-weight:600}
";

/// Clicks on an expandable row show its detail row; a filter box hides rows without its text.
const JS: &str = r"
document.addEventListener('click', function (e) {
  var tr = e.target.closest('tr.row.expandable');
  if (!tr) return;
  var d = tr.nextElementSibling;
  if (d && d.classList.contains('detail')) { d.hidden = !d.hidden; tr.classList.toggle('open', !d.hidden); }
});
document.querySelectorAll('input.filter').forEach(function (box) {
  box.addEventListener('input', function () {
    var q = box.value.toLowerCase();
    var table = document.getElementById(box.dataset.table);
    if (!table) return;
    table.querySelectorAll('tr.row').forEach(function (tr) {
      var d = tr.nextElementSibling;
      var hasDetail = d && d.classList.contains('detail');
      var text = tr.textContent + (hasDetail ? d.textContent : '');
      var show = !q || text.toLowerCase().indexOf(q) >= 0;
      tr.hidden = !show;
      if (hasDetail && !show) { d.hidden = true; tr.classList.remove('open'); }
    });
  });
});
";

/// The whole page. The CSP forbids every load from anywhere (no network, no external assets);
/// only the inline style and script run.
pub fn page(title: &str, subtitle: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t}</title><style>{CSS}</style></head>
<body><h1>{t}</h1><div class="muted">{sub}</div>
{body}
<script>{JS}</script></body></html>
"#,
        t = esc(title),
        sub = esc(subtitle),
    )
}

/// Headline numbers as cards.
pub fn cards(items: &[(&str, String)]) -> String {
    let mut o = String::from(r#"<div class="cards">"#);
    for (k, v) in items {
        let _ = write!(
            o,
            r#"<div class="card"><div class="v">{v}</div><div class="k">{}</div></div>"#,
            esc(k)
        );
    }
    o.push_str("</div>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaping_and_numbers() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(2.0 / 3.0), "0.6667");
        assert_eq!(num(0.00001), "1.00e-5");
        assert_eq!(num(f64::NAN), "NaN");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(cell(&json!([0.1, 0.9])), "[0.1, 0.9]");
    }

    #[test]
    fn object_tables_expand_nested_lists() {
        let rows = vec![
            json!({"family": "empty", "rate": 0.0, "examples": []}),
            json!({"family": "listing", "rate": 0.5, "examples": [{"id": "a", "output": "<b>x</b>"}]}),
        ];
        let t = object_table(&rows, Some("fam"));
        assert!(t.contains(r"<th>family</th><th>rate</th></tr>"), "{t}");
        assert_eq!(t.matches(r#"class="row expandable""#).count(), 1);
        assert_eq!(t.matches(r#"class="detail" hidden"#).count(), 1);
        assert!(t.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert!(t.contains(r#"data-table="fam""#));
    }

    #[test]
    fn trace_tree_nests_children() {
        let t = json!({"type": "weighted_sum", "path": "", "value": 0.5, "status": "ok",
            "children": [{"type": "regex", "name": "format", "path": "/inputs/0", "value": 0.0,
                          "status": "ok", "note": "no match for <think>"}]});
        let h = trace_tree(&t);
        assert_eq!(h.matches("<li>").count(), 2);
        assert!(h.contains("no match for &lt;think&gt;"));
        assert!(h.contains(r#"<span class="name">format</span>"#));
    }
}
