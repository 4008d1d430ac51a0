//! The report of a scored run: headline numbers, histograms, statuses, groups, timings, and the
//! per-sample table whose rows expand to their explanation trace.

use super::html::{cards, clip, esc, filter_box, kv_table, num, opt, page, trace_tree};
use super::svg;
use super::Input;
use anyhow::{Context, Result};
use referee_core::io::parquet::{result_row, RowReader};
use referee_core::stats::{group_spread, trace_timings, Histogram};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Rows listed in the per-sample table; a bigger run is summarised in full but listed in part.
const MAX_TABLE_ROWS: usize = 5000;
/// Groups listed by name (the most spread first); all of them are counted.
const MAX_GROUP_ROWS: usize = 50;
const BINS: usize = 20;

/// Parquet results back into the JSON rows `referee score` writes as JSONL: component columns
/// into `components`, the JSON-text `trace` and `usage` columns parsed.
pub fn load_parquet(path: &Path) -> Result<Input> {
    let mut r = RowReader::open(path, 8192)
        .with_context(|| format!("cannot read Parquet results {}", path.display()))?;
    let mut rows = Vec::new();
    while let Some(batch) = r.read_rows()? {
        rows.extend(batch.into_iter().filter_map(result_row));
    }
    Ok(Input::Results {
        rows,
        unreadable: 0,
    })
}

fn reward(r: &Value) -> Option<f64> {
    r.get("reward").and_then(Value::as_f64)
}

fn status(r: &Value) -> &str {
    r.get("status").and_then(Value::as_str).unwrap_or("missing")
}

pub fn render(
    rows: &[Value],
    unreadable: usize,
    source: &str,
    groups: Option<&[Option<String>]>,
) -> String {
    let mut b = String::new();
    let n = rows.len();
    let rewards: Vec<f64> = rows.iter().filter_map(reward).collect();
    let mean = (!rewards.is_empty()).then(|| rewards.iter().sum::<f64>() / rewards.len() as f64);
    let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reasons: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in rows {
        let s = status(r);
        *statuses.entry(s).or_default() += 1;
        let reason = r.get("reason").and_then(Value::as_str).unwrap_or("");
        *reasons.entry((s, reason)).or_default() += 1;
    }
    let count = |s: &str| statuses.get(s).copied().unwrap_or(0);

    // Headline.
    b.push_str(&cards(&[
        ("rows", n.to_string()),
        ("mean reward", opt(mean)),
        ("ok", count("ok").to_string()),
        ("not_applicable", count("not_applicable").to_string()),
        ("error", count("error").to_string()),
    ]));
    if unreadable > 0 {
        let _ = write!(
            b,
            r#"<p class="note">{unreadable} line(s) of the file are not result objects and are left out.</p>"#
        );
    }
    if n == 0 {
        b.push_str(r#"<p class="note">No results in this file.</p>"#);
    }

    // Histograms.
    b.push_str("<h2>Rewards</h2>");
    let h = Histogram::of(&rewards, BINS);
    let _ = write!(
        b,
        r#"<div class="plots"><figure><figcaption>reward ({} rows with a reward)</figcaption>{}</figure></div>"#,
        h.n,
        svg::histogram(&h, "reward")
    );
    let names = component_names(rows);
    if !names.is_empty() {
        b.push_str(r#"<h3>Components</h3><div class="plots">"#);
        for c in &names {
            let vals: Vec<f64> = rows
                .iter()
                .filter_map(|r| r.get("components")?.get(c)?.as_f64())
                .collect();
            let h = Histogram::of(&vals, BINS);
            let m = (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64);
            let _ = write!(
                b,
                r"<figure><figcaption>{} (mean {}, {} values)</figcaption>{}</figure>",
                esc(c),
                opt(m),
                vals.len(),
                svg::histogram(&h, c)
            );
        }
        b.push_str("</div>");
    }

    // Statuses and reasons.
    b.push_str(r#"<h2>Statuses</h2><table class="data" id="statuses"><thead><tr><th>status</th><th>reason</th><th>rows</th><th>share</th></tr></thead><tbody>"#);
    let mut by_count: Vec<_> = reasons.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for ((s, reason), c) in by_count {
        let _ = write!(
            b,
            r#"<tr><td class="st-{s}">{s}</td><td>{}</td><td>{c}</td><td>{:.1}%</td></tr>"#,
            esc(reason),
            *c as f64 * 100.0 / n.max(1) as f64,
            s = esc(s)
        );
    }
    b.push_str("</tbody></table>");

    // Groups.
    b.push_str("<h2>Groups</h2>");
    let row_groups: Vec<Option<String>> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.get("group")
                .and_then(|g| match g {
                    Value::String(s) => Some(s.clone()),
                    Value::Null => None,
                    other => Some(other.to_string()),
                })
                .or_else(|| groups.and_then(|g| g.get(i).cloned().flatten()))
        })
        .collect();
    if row_groups.iter().all(Option::is_none) {
        b.push_str(r#"<p class="note">No groups: the results carry no <code>group</code>. Pass the scored input with <code>--data</code> (and the same <code>--format</code>/<code>--group-field</code> as <code>referee score</code>) to see per-group spread.</p>"#);
    } else {
        let spread = group_spread(
            rows.iter()
                .zip(&row_groups)
                .filter_map(|(r, g)| Some((g.as_deref()?, reward(r)))),
            1e-9,
        );
        let ungrouped = row_groups.iter().filter(|g| g.is_none()).count();
        b.push_str(&cards(&[
            ("groups", spread.groups.to_string()),
            ("flat-group fraction", opt(spread.frac_flat)),
            ("flat groups", spread.flat.to_string()),
            ("mean within-group variance", opt(spread.mean_variance)),
        ]));
        let _ = write!(
            b,
            r#"<p class="note">A group is flat when it has two or more rewards, all equal: it carries no learning signal for GRPO. {} group(s) have two or more rewards{}.</p>"#,
            spread.comparable,
            if ungrouped > 0 {
                format!("; {ungrouped} row(s) have no group")
            } else {
                String::new()
            }
        );
        let variances: Vec<f64> = spread
            .per_group
            .iter()
            .filter(|g| g.rewarded >= 2)
            .filter_map(|g| g.variance)
            .collect();
        let h = Histogram::of(&variances, BINS);
        let _ = write!(
            b,
            r#"<div class="plots"><figure><figcaption>within-group reward variance ({} groups)</figcaption>{}</figure></div>"#,
            h.n,
            svg::histogram(&h, "within-group variance")
        );
        let mut listed: Vec<_> = spread.per_group.iter().collect();
        listed.sort_by(|a, b| {
            b.variance
                .unwrap_or(-1.0)
                .total_cmp(&a.variance.unwrap_or(-1.0))
        });
        let _ = write!(
            b,
            r#"<details><summary>per-group table ({} of {} groups, most spread first)</summary><table class="data"><thead><tr><th>group</th><th>rows</th><th>rewarded</th><th>mean</th><th>variance</th><th>flat</th></tr></thead><tbody>"#,
            listed.len().min(MAX_GROUP_ROWS),
            listed.len()
        );
        for g in listed.iter().take(MAX_GROUP_ROWS) {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&clip(&g.group, 80)),
                g.rows,
                g.rewarded,
                opt(g.mean),
                opt(g.variance),
                if g.flat { "yes" } else { "" }
            );
        }
        b.push_str("</tbody></table></details>");
    }

    // Slowest components.
    b.push_str("<h2>Slowest components</h2>");
    let traces: Vec<&Value> = rows.iter().filter_map(|r| r.get("trace")).collect();
    let timings = trace_timings(traces.iter().copied());
    if timings.is_empty() {
        b.push_str(if traces.is_empty() {
            r#"<p class="note">Omitted: the results have no traces (score with <code>--explain</code>), and so no timings.</p>"#
        } else {
            r#"<p class="note">Omitted: no trace node carries a timing (judges record their <code>latency_ms</code>, code_exec its tests' <code>wall_ms</code>; rule graders are not timed).</p>"#
        });
    } else {
        b.push_str(r#"<table class="data"><thead><tr><th>path</th><th>type</th><th>calls</th><th>total ms</th><th>mean ms</th><th>max ms</th></tr></thead><tbody>"#);
        for t in timings.iter().take(20) {
            let _ = write!(
                b,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(if t.path.is_empty() { "/" } else { &t.path }),
                esc(&t.kind),
                t.calls,
                num(t.total_ms),
                num(t.mean_ms),
                num(t.max_ms)
            );
        }
        b.push_str("</tbody></table>");
    }

    // Samples.
    let _ = write!(
        b,
        r#"<h2>Samples</h2><p class="note">{} Click a row to see its explanation.</p>"#,
        if n > MAX_TABLE_ROWS {
            format!("The first {MAX_TABLE_ROWS} of {n} rows.")
        } else {
            format!("{n} rows.")
        }
    );
    b.push_str(&filter_box("samples"));
    b.push_str(r#"<table class="data" id="samples"><thead><tr><th>#</th><th>id</th><th>reward</th><th>status</th><th>reason</th>"#);
    for c in &names {
        let _ = write!(b, "<th>{}</th>", esc(c));
    }
    let has_adv = rows.iter().any(|r| r.get("advantage").is_some());
    if has_adv {
        b.push_str("<th>advantage</th>");
    }
    b.push_str("</tr></thead><tbody>");
    let cols = 5 + names.len() + usize::from(has_adv);
    for (i, r) in rows.iter().take(MAX_TABLE_ROWS).enumerate() {
        let s = status(r);
        let _ = write!(
            b,
            r#"<tr class="row expandable"><td>{}</td><td>{}</td><td>{}</td><td class="st-{s}">{s}</td><td>{}</td>"#,
            i + 1,
            r.get("id")
                .filter(|v| !v.is_null())
                .map_or_else(String::new, |v| esc(&clip(
                    &v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    80
                ))),
            opt(reward(r)),
            esc(r.get("reason").and_then(Value::as_str).unwrap_or("")),
            s = esc(s)
        );
        for c in &names {
            let v = r.get("components").and_then(|m| m.get(c));
            let _ = write!(b, "<td>{}</td>", opt(v.and_then(Value::as_f64)));
        }
        if has_adv {
            let _ = write!(
                b,
                "<td>{}</td>",
                opt(r.get("advantage").and_then(Value::as_f64))
            );
        }
        let _ = write!(b, r#"</tr><tr class="detail" hidden><td colspan="{cols}">"#);
        if let Some(m) = r.get("message").and_then(Value::as_str) {
            let _ = write!(b, r#"<div class="reason">{}</div>"#, esc(m));
        }
        match r.get("trace") {
            Some(t) if !t.is_null() => b.push_str(&trace_tree(t)),
            _ => b.push_str(
                r#"<p class="note">No trace: score with <code>--explain</code> to record one.</p>"#,
            ),
        }
        if let Some(u) = r.get("usage").filter(|u| !u.is_null()) {
            let _ = write!(
                b,
                r#"<div class="note">usage: <code>{}</code></div>"#,
                esc(&u.to_string())
            );
        }
        b.push_str("</td></tr>");
    }
    b.push_str("</tbody></table>");

    let mut meta = vec![("source".to_string(), esc(source))];
    if let Some(m) = mean {
        meta.push(("mean reward (full precision)".into(), m.to_string()));
    }
    b.push_str("<h2>About</h2>");
    b.push_str(&kv_table(&meta));
    page(
        "Referee report: scored run",
        &format!("{source} · {n} rows"),
        &b,
    )
}

/// Component names in order of first appearance (every result of one spec has the same keys).
fn component_names(rows: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for r in rows {
        if let Some(Value::Object(m)) = r.get("components") {
            for k in m.keys() {
                if !names.iter().any(|n| n == k) {
                    names.push(k.clone());
                }
            }
        }
    }
    names
}
