//! Inline SVG plots: a histogram and a horizontal bar chart. Hand-drawn rectangles and text;
//! a page with a handful of plots does not need a plotting library, and inline SVG keeps the
//! report one self-contained file.

use super::html::{esc, num};
use referee_core::stats::Histogram;
use std::fmt::Write as _;

const W: f64 = 420.0;
const H: f64 = 160.0;
const PAD_L: f64 = 40.0;
const PAD_B: f64 = 22.0;
const PAD_T: f64 = 8.0;

/// A histogram with its count axis and the range of values under it.
pub fn histogram(h: &Histogram, label: &str) -> String {
    let mut o = String::new();
    let max = h.counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let plot_w = W - PAD_L - 8.0;
    let plot_h = H - PAD_B - PAD_T;
    let bw = plot_w / h.counts.len() as f64;
    let _ = write!(
        o,
        r#"<svg class="plot" role="img" viewBox="0 0 {W} {H}" width="{W}" height="{H}" aria-label="{}"><title>{}</title>"#,
        esc(label),
        esc(label)
    );
    let _ = write!(
        o,
        r#"<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{y0}" class="axis"/><line x1="{PAD_L}" y1="{y0}" x2="{x1}" y2="{y0}" class="axis"/>"#,
        y0 = PAD_T + plot_h,
        x1 = PAD_L + plot_w
    );
    for (i, &c) in h.counts.iter().enumerate() {
        let bh = c as f64 / max * plot_h;
        let (a, b) = h.edges(i);
        let _ = write!(
            o,
            r#"<rect class="bar" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}"><title>[{}, {}{}: {c}</title></rect>"#,
            PAD_L + bw * i as f64 + 0.5,
            PAD_T + plot_h - bh,
            (bw - 1.0).max(0.5),
            bh,
            num(a),
            num(b),
            if i + 1 == h.counts.len() { "]" } else { ")" },
        );
    }
    let _ = write!(
        o,
        r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">0</text>"#,
        PAD_L - 4.0,
        PAD_T + 9.0,
        max as usize,
        PAD_L - 4.0,
        PAD_T + plot_h
    );
    let _ = write!(
        o,
        r#"<text x="{PAD_L}" y="{:.1}" class="tick">{}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
        H - 6.0,
        num(h.lo),
        PAD_L + plot_w / 2.0,
        H - 6.0,
        num(f64::midpoint(h.lo, h.hi)),
        PAD_L + plot_w,
        H - 6.0,
        num(h.hi)
    );
    o.push_str("</svg>");
    o
}

/// Horizontal bars for values in `[0, max]`, one per label, the value printed at the bar's end.
pub fn bars(items: &[(String, f64)], max: f64, label: &str) -> String {
    let row = 20.0;
    let left = 170.0;
    let width = 560.0;
    let plot_w = width - left - 60.0;
    let height = row * items.len() as f64 + 10.0;
    let max = if max > 0.0 { max } else { 1.0 };
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="plot" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" aria-label="{}"><title>{}</title>"#,
        esc(label),
        esc(label)
    );
    for (i, (name, v)) in items.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let v = if v.is_finite() { *v } else { 0.0 };
        let bw = (v / max).clamp(0.0, 1.0) * plot_w;
        let short: String = name.chars().take(26).collect();
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><rect class="bar{}" x="{left}" y="{y:.1}" width="{bw:.1}" height="{:.1}"><title>{}: {}</title></rect><text x="{:.1}" y="{:.1}" class="tick">{}</text>"#,
            left - 6.0,
            y + 13.0,
            esc(&short),
            if v > 0.0 { " hot" } else { "" },
            row - 4.0,
            esc(name),
            num(v),
            left + bw + 4.0,
            y + 13.0,
            num(v)
        );
    }
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_svg_has_one_rect_per_bin_and_the_range() {
        let h = Histogram::of(&[0.0, 0.5, 1.0, 1.0], 4);
        let s = histogram(&h, "reward <all>");
        assert_eq!(s.matches("<rect").count(), 4);
        assert!(s.contains("reward &lt;all&gt;"));
        assert!(s.contains(">0.5<") && s.contains(">1<"), "{s}");
        assert!(s.contains("[0.75, 1]: 2"), "{s}");
    }

    #[test]
    fn bars_scale_to_the_maximum() {
        let s = bars(&[("a".into(), 0.5), ("b".into(), 0.0)], 1.0, "rates");
        assert_eq!(s.matches("<rect").count(), 2);
        assert!(s.contains(r#"class="bar hot""#));
        assert!(s.contains(r#"width="165.0""#), "{s}");
    }
}
