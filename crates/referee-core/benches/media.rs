//! What a media part costs before its call: resolving a `data:` URI (decode, sniff, SHA-256 for
//! the cache key, canonical re-encode) against the least any client does (base64-encode the
//! bytes once), at three image sizes; and the render step on a 20-bar SVG chart.
//!
//! Run: `cargo bench -p referee-core --bench media`.

use base64::Engine as _;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use referee_core::judge::media::{resolve, MediaKind, MediaLimits};
use referee_core::judge::render::svg_to_png;
use std::fmt::Write as _;
use std::hint::black_box;

/// A PNG signature followed by fixed pseudo-random bytes (only the signature is sniffed).
fn image(len: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut x = 0x9E37_79B9_u32;
    while b.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b.push(x as u8);
    }
    b
}

fn chart() -> String {
    let mut s = String::from(
        "<svg xmlns='http://www.w3.org/2000/svg' width='400' height='200'><rect width='400' height='200' fill='white'/>",
    );
    for i in 0..20 {
        let h = 20 + (i * 37) % 160;
        let _ = write!(
            s,
            "<rect x='{}' y='{}' width='15' height='{h}' fill='steelblue'/>",
            10 + i * 19,
            190 - h
        );
    }
    s.push_str("<text x='10' y='15' font-size='12'>Monthly rainfall</text></svg>");
    s
}

fn bench(c: &mut Criterion) {
    let b64 = base64::engine::general_purpose::STANDARD;
    let limits = MediaLimits::default();
    let kind = MediaKind::Image { detail: None };
    let mut g = c.benchmark_group("media");
    for len in [100 << 10, 1 << 20, 4 << 20] {
        let bytes = image(len);
        let uri = format!("data:image/png;base64,{}", b64.encode(&bytes));
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::new("b64_encode", len), &bytes, |b, bytes| {
            b.iter(|| black_box(b64.encode(black_box(bytes))));
        });
        g.bench_with_input(BenchmarkId::new("resolve", len), &uri, |b, uri| {
            b.iter(|| black_box(resolve(black_box(uri), &kind, true, &limits).unwrap()));
        });
    }
    g.finish();
    let svg = chart();
    c.bench_function("media/render_svg/20_bars", |b| {
        b.iter(|| black_box(svg_to_png(black_box(&svg)).unwrap()));
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
