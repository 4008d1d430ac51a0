//! The render step: an SVG the policy wrote, turned into a PNG a vision judge can look at.
//!
//! SVG is hostile input like any other output. The renderer is resvg (pure Rust, memory-safe),
//! built without raster-image or svgz support and run with every `href` resolver refusing, so an
//! SVG can read no file, fetch nothing and decompress no bomb; the source, the canvas and the
//! time are bounded. A render that fails (no SVG in the text, a parse error, an empty or
//! oversized drawing, a timeout) is the policy's miss: it scores 0 with the reason in the trace.

use resvg::{tiny_skia, usvg};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// The largest SVG source accepted.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// The longer side of the PNG, in pixels: drawings are scaled to fit (up or down).
pub const MAX_SIDE: u32 = 768;
/// The most one render may take.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// The machine's fonts, loaded once, so `<text>` renders.
static FONTS: LazyLock<Arc<usvg::fontdb::Database>> = LazyLock::new(|| {
    let mut db = usvg::fontdb::Database::new();
    db.load_system_fonts();
    Arc::new(db)
});

/// The SVG in a text: a fenced `svg`/`xml` block, else the first `<svg ...>...</svg>` span.
pub fn extract_svg(text: &str) -> Option<&str> {
    for fence in ["```svg", "```xml", "```html"] {
        if let Some(i) = text.find(fence) {
            let body = &text[i + fence.len()..];
            if let Some(end) = body.find("```") {
                let inner = body[..end].trim();
                if inner.contains("<svg") {
                    return svg_span(inner);
                }
            }
        }
    }
    svg_span(text)
}

fn svg_span(text: &str) -> Option<&str> {
    let start = text.find("<svg")?;
    let end = text.rfind("</svg>")? + "</svg>".len();
    (end > start).then(|| &text[start..end])
}

/// Renders an SVG to PNG bytes on a thread of its own, within [`TIMEOUT`]. `Err` says why not.
pub fn svg_to_png(src: &str) -> Result<Vec<u8>, String> {
    if src.len() > MAX_SOURCE_BYTES {
        return Err(format!(
            "the SVG is {} bytes, over the render limit of {MAX_SOURCE_BYTES}",
            src.len()
        ));
    }
    let src = src.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("referee-render".into())
        .spawn(move || {
            let _ = tx.send(render(&src));
        })
        .map_err(|e| format!("no render thread: {e}"))?;
    // A render past its time is abandoned: its thread finishes on its own, bounded by the canvas.
    rx.recv_timeout(TIMEOUT)
        .map_err(|_| format!("the render took more than {} s", TIMEOUT.as_secs()))?
}

fn render(src: &str) -> Result<Vec<u8>, String> {
    let opt = usvg::Options {
        resources_dir: None,
        fontdb: FONTS.clone(),
        image_href_resolver: usvg::ImageHrefResolver {
            resolve_data: Box::new(|_, _, _| None),
            resolve_string: Box::new(|_, _| None),
        },
        ..usvg::Options::default()
    };
    let tree =
        usvg::Tree::from_str(src, &opt).map_err(|e| format!("the SVG does not parse: {e}"))?;
    let size = tree.size();
    let (w, h) = (size.width(), size.height());
    if !(w.is_finite() && h.is_finite() && w > 0.0 && h > 0.0) {
        return Err("the SVG has no size".into());
    }
    let scale = MAX_SIDE as f32 / w.max(h);
    let (pw, ph) = (
        ((w * scale).round() as u32).max(1),
        ((h * scale).round() as u32).max(1),
    );
    let mut pixmap =
        tiny_skia::Pixmap::new(pw, ph).ok_or_else(|| "the SVG's canvas is empty".to_string())?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap
        .encode_png()
        .map_err(|e| format!("the PNG could not be written: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_svg_in_a_reply_renders_to_a_png_of_its_colour() {
        let reply = "Here is the chart:\n```svg\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"5\"><rect width=\"10\" height=\"5\" fill=\"#ff0000\"/></svg>\n```";
        let svg = extract_svg(reply).unwrap();
        let png = svg_to_png(svg).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        let p = tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((p.width(), p.height()), (MAX_SIDE, MAX_SIDE / 2));
        let px = p.pixel(3, 3).unwrap();
        assert_eq!((px.red(), px.green(), px.blue()), (255, 0, 0));
    }

    #[test]
    fn an_svg_cannot_read_files_or_fail_silently() {
        // An <image> pointing at a local file or a URL draws nothing (the resolvers refuse).
        let file = "<svg xmlns='http://www.w3.org/2000/svg' xmlns:xlink='http://www.w3.org/1999/xlink' width='4' height='4'><image width='4' height='4' xlink:href='/etc/passwd'/><image width='4' height='4' href='file:///work'/></svg>";
        let png = svg_to_png(file).unwrap();
        let p = tiny_skia::Pixmap::decode_png(&png).unwrap();
        let px = p.pixel(1, 1).unwrap();
        assert_eq!((px.red(), px.green(), px.blue()), (255, 255, 255));
        assert!(extract_svg("no drawing here").is_none());
        assert!(svg_to_png("<svg").is_err());
        assert!(
            svg_to_png("<svg xmlns='http://www.w3.org/2000/svg' width='0' height='0'/>").is_err()
        );
        assert!(svg_to_png(&"x".repeat(MAX_SOURCE_BYTES + 1)).is_err());
    }
}
