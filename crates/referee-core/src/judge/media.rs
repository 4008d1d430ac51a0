//! Images and audio for judges: where they come from, what is checked, how they travel.
//!
//! A media part is a template (`{{item.image}}`) that renders to one of:
//! - a `data:` URI (`data:image/png;base64,...`): decoded, sniffed and re-encoded canonically,
//!   so equal bytes make equal requests and a mislabelled type is caught;
//! - an `http(s)` URL, passed to the judge as it is (the server fetches it);
//! - a local path (or `file://` URL), read under the media root and encoded;
//! - for audio, bare base64 (OpenAI's `input_audio.data`).
//!
//! What the **policy** wrote (a `sample.*` variable) is hostile: it may only be inline data. A
//! policy-chosen URL would make the judge fetch what the policy likes, and a path would read the
//! grader's disk; both, like a broken or oversized image, score 0 as the policy's miss. A broken
//! or oversized image in the **dataset** is an error with a reason (`media_invalid`,
//! `media_limit`, `media_unreadable`): nobody can score that row.
//!
//! The cache and in-flight dedup key a part by its [`Media::digest`] (SHA-256 of its bytes, or of
//! the URL for remote images), never by its base64, so keys stay small and equal content shares
//! one verdict.

use crate::template::{Miss, Template};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Images (`20 MiB`, OpenAI's per-image limit) and audio clips are refused above this by default.
pub const DEFAULT_MAX_BYTES: usize = 20 << 20;
/// Media parts per call by default.
pub const DEFAULT_MAX_COUNT: usize = 8;

/// What kind of part, with its wire options.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MediaKind {
    /// OpenAI's `detail`: `low`, `high` or `auto` (omitted when unset).
    Image { detail: Option<String> },
    /// `wav` or `mp3`.
    Audio { format: String },
}

/// One resolved part, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub kind: MediaKind,
    /// Images: a canonical `data:` URI, or the remote URL. Audio: the base64 payload.
    pub data: Arc<str>,
    /// `sha256:<hex>` of the bytes (`url:<hex>` of the URL for remote images).
    pub digest: String,
    /// Decoded size (0 for remote images).
    pub bytes: usize,
    /// The sniffed type (`image/png`, `audio/wav`, ...; `remote` for URLs).
    pub mime: &'static str,
    /// It came from the policy's output.
    pub policy: bool,
}

/// A part placed in a message: after the first `offset` bytes of message `message`'s text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaAt {
    pub message: usize,
    pub offset: usize,
    pub media: Arc<Media>,
}

/// The limits of a grader's media (`media:` in a model grader's spec).
#[derive(Debug, Clone)]
pub struct MediaLimits {
    pub max_bytes: usize,
    pub max_count: usize,
    /// Where dataset paths are read from (relative ones are joined to it); a path that leaves it,
    /// symlinks included, is refused. Default: the working directory.
    pub root: Option<PathBuf>,
}

impl Default for MediaLimits {
    fn default() -> Self {
        MediaLimits {
            max_bytes: DEFAULT_MAX_BYTES,
            max_count: DEFAULT_MAX_COUNT,
            root: None,
        }
    }
}

/// A compiled part: where its value comes from and what it is.
#[derive(Debug, Clone)]
pub struct MediaPart {
    pub source: Template,
    pub kind: MediaKind,
    /// The value is an artefact to render first (its text holds an SVG), not an image.
    pub render: Option<Render>,
}

/// What a render step draws ([`super::render`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Render {
    Svg,
}

impl MediaPart {
    /// Resolves the part for one sample: one [`Media`] per value (a template that is exactly a
    /// list variable, `{{item.images}}`, gives one per element).
    pub fn resolve(
        &self,
        s: &crate::sample::Sample,
        limits: &MediaLimits,
    ) -> Result<Vec<Media>, Miss> {
        let policy = self.source.reads_sample();
        let v = self.source.render_value(s)?;
        let values: Vec<&str> = match v.as_ref() {
            serde_json::Value::String(t) => vec![t.as_str()],
            serde_json::Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_str()
                        .ok_or_else(|| invalid(policy, "a media list holds something not a string"))
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(invalid(
                    policy,
                    &format!(
                        "`{}` is not a media string but {}",
                        self.source.source(),
                        kind_of(other)
                    ),
                ))
            }
        };
        values
            .into_iter()
            .map(|t| match self.render {
                None => resolve(t, &self.kind, policy, limits),
                Some(Render::Svg) => rendered(t, &self.kind, policy, limits),
            })
            .collect()
    }
}

/// The SVG in `text` rendered to a PNG part. A failed render is the policy's miss when the text
/// is the policy's, else the row's `media_invalid`.
fn rendered(
    text: &str,
    kind: &MediaKind,
    policy: bool,
    limits: &MediaLimits,
) -> Result<Media, Miss> {
    let fail = |why: String| {
        let who = whose(policy);
        Miss {
            policy,
            reason: "media_invalid",
            message: format!("render: {who} {why}"),
        }
    };
    let svg = super::render::extract_svg(text)
        .ok_or_else(|| fail("text holds no <svg> drawing".into()))?;
    let png = super::render::svg_to_png(svg).map_err(|e| fail(format!("SVG: {e}")))?;
    finish(&png, kind, policy, limits)
}

fn kind_of(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::Object(_) => "an object",
        _ => "a value",
    }
}

/// Whose media a message is about.
fn whose(policy: bool) -> &'static str {
    if policy {
        "the candidate's"
    } else {
        "the row's"
    }
}

fn invalid(policy: bool, why: &str) -> Miss {
    let who = whose(policy);
    Miss {
        policy,
        reason: "media_invalid",
        message: format!("{who} media: {why}"),
    }
}

/// Resolves one media value (see the module doc). `policy`: the value comes from the sample.
pub fn resolve(
    value: &str,
    kind: &MediaKind,
    policy: bool,
    limits: &MediaLimits,
) -> Result<Media, Miss> {
    let value = value.trim();
    if value.is_empty() {
        return Err(if policy {
            invalid(true, "it is empty")
        } else {
            Miss {
                policy: false,
                reason: "missing_field",
                message: "the row's media field is empty".into(),
            }
        });
    }
    let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        if policy {
            return Err(invalid(
                true,
                "it is a URL; only inline data is accepted from the policy (a URL would make the judge fetch what the policy chose)",
            ));
        }
        if matches!(kind, MediaKind::Audio { .. }) {
            return Err(invalid(
                false,
                "audio must be inline data or a file, not a URL",
            ));
        }
        return Ok(Media {
            kind: kind.clone(),
            data: Arc::from(value),
            digest: format!("url:{}", hex(&Sha256::digest(value.as_bytes()))),
            bytes: 0,
            mime: "remote",
            policy,
        });
    }
    let bytes = if let Some(rest) = strip_prefix_ci(value, "data:") {
        decode_data_uri(rest, policy, limits)?
    } else if let (MediaKind::Audio { .. }, Some(b)) = (kind, bare_base64(value)) {
        b
    } else {
        if policy {
            return Err(invalid(
                true,
                "it is not inline data (a `data:` URI); the policy cannot name files",
            ));
        }
        read_path(strip_prefix_ci(value, "file://").unwrap_or(value), limits)?
    };
    finish(&bytes, kind, policy, limits)
}

/// Checks decoded bytes against the limits and the kind, and encodes them for the wire.
fn finish(
    bytes: &[u8],
    kind: &MediaKind,
    policy: bool,
    limits: &MediaLimits,
) -> Result<Media, Miss> {
    if bytes.len() > limits.max_bytes {
        return Err(too_large(policy, bytes.len(), limits.max_bytes));
    }
    let mime = sniff(bytes);
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let data: Arc<str> = match kind {
        MediaKind::Image { .. } => match mime {
            Some(m @ ("image/png" | "image/jpeg" | "image/gif" | "image/webp")) => {
                if policy {
                    decodes(bytes, m).map_err(|why| invalid(policy, &why))?;
                }
                Arc::from(format!("data:{m};base64,{b64}"))
            }
            other => {
                return Err(invalid(
                    policy,
                    &format!(
                        "not a PNG, JPEG, GIF or WebP image ({})",
                        other.unwrap_or("unknown bytes")
                    ),
                ))
            }
        },
        MediaKind::Audio { format } => {
            let want = if format == "mp3" {
                "audio/mpeg"
            } else {
                "audio/wav"
            };
            if mime != Some(want) {
                return Err(invalid(
                    policy,
                    &format!("not {} audio ({})", format, mime.unwrap_or("unknown bytes")),
                ));
            }
            Arc::from(b64)
        }
    };
    Ok(Media {
        kind: kind.clone(),
        data,
        digest: format!("sha256:{}", hex(&Sha256::digest(bytes))),
        bytes: bytes.len(),
        mime: mime.unwrap_or("application/octet-stream"),
        policy,
    })
}

/// Largest side and decoded size of a policy's image: a few kilobytes of PNG can claim a
/// gigapixel, and a vision judge downsizes far below this anyway.
const MAX_SIDE: u32 = 8192;
const MAX_DECODED_BYTES: u64 = 128 << 20;

/// Whether `bytes` decode in full as the `mime` image. A policy's image is decoded before a
/// judge sees it: a valid header over garbage is refused by the server (HTTP 400), which would
/// make the row an error a trainer drops instead of the policy's miss. The dataset's images
/// are left to the judge (decoding each one on every call costs more than it tells).
fn decodes(bytes: &[u8], mime: &str) -> Result<(), String> {
    let format = match mime {
        "image/png" => image::ImageFormat::Png,
        "image/jpeg" => image::ImageFormat::Jpeg,
        "image/gif" => image::ImageFormat::Gif,
        _ => image::ImageFormat::WebP,
    };
    let mut reader = image::ImageReader::with_format(std::io::Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    match reader.decode() {
        Ok(_) => Ok(()),
        Err(image::ImageError::Limits(_)) => Err(format!(
            "the image is larger than {MAX_SIDE}x{MAX_SIDE} pixels or {} MiB decoded",
            MAX_DECODED_BYTES >> 20
        )),
        Err(e) => Err(format!("the image does not decode: {e}")),
    }
}

fn too_large(policy: bool, n: usize, max: usize) -> Miss {
    let who = whose(policy);
    Miss {
        policy,
        reason: "media_limit",
        message: format!(
            "{who} media is {n} bytes, over the limit of {max} (`media: {{max_bytes}}`)"
        ),
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

/// `<mime>[;params];base64,<payload>`: the payload decoded (base64 only: raster media is binary).
fn decode_data_uri(rest: &str, policy: bool, limits: &MediaLimits) -> Result<Vec<u8>, Miss> {
    let Some((head, payload)) = rest.split_once(',') else {
        return Err(invalid(policy, "a `data:` URI without a `,`"));
    };
    if !head
        .rsplit(';')
        .next()
        .is_some_and(|p| p.eq_ignore_ascii_case("base64"))
    {
        return Err(invalid(policy, "a `data:` URI that is not base64"));
    }
    // Refuse before decoding what could not fit anyway (base64 is 4 chars per 3 bytes).
    if payload.len() / 4 * 3 > limits.max_bytes + 3 {
        return Err(too_large(policy, payload.len() / 4 * 3, limits.max_bytes));
    }
    decode_b64(payload).ok_or_else(|| invalid(policy, "its base64 does not decode"))
}

fn decode_b64(payload: &str) -> Option<Vec<u8>> {
    // Line-wrapped base64 is cleaned first; the common unwrapped payload is decoded as it is.
    let clean: std::borrow::Cow<str> = if payload.bytes().any(|b| b.is_ascii_whitespace()) {
        payload
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect::<String>()
            .into()
    } else {
        payload.into()
    };
    let e = &base64::engine::general_purpose::STANDARD;
    e.decode(clean.as_bytes())
        .ok()
        .or_else(|| {
            base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(clean.trim_end_matches('='))
                .ok()
        })
        .filter(|b| !b.is_empty())
}

/// Audio data given as bare base64 (OpenAI's shape); a value with a path's characters is not.
fn bare_base64(value: &str) -> Option<Vec<u8>> {
    if value.len() < 16 || value.contains(['.', '\\', ':']) {
        return None;
    }
    decode_b64(value)
}

fn read_path(path: &str, limits: &MediaLimits) -> Result<Vec<u8>, Miss> {
    // Messages name the path and root as written, never where they resolve on this machine.
    let shown_root = limits.root.as_ref().map_or_else(
        || "the working directory".to_string(),
        |r| format!("`{}`", r.display()),
    );
    let unreadable = |why: String| Miss {
        policy: false,
        reason: "media_unreadable",
        message: why,
    };
    let root = match &limits.root {
        Some(r) => r.clone(),
        None => std::env::current_dir()
            .map_err(|e| unreadable(format!("no working directory to read media from: {e}")))?,
    };
    let root = root
        .canonicalize()
        .map_err(|e| unreadable(format!("the media root {shown_root}: {e}")))?;
    let p = Path::new(path);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    };
    let real = full
        .canonicalize()
        .map_err(|e| unreadable(format!("media file `{path}` under {shown_root}: {e}")))?;
    if !real.starts_with(&root) {
        return Err(unreadable(format!(
            "media file `{path}` is outside the media root {shown_root} (`media: {{root}}`)"
        )));
    }
    let meta =
        std::fs::metadata(&real).map_err(|e| unreadable(format!("media file `{path}`: {e}")))?;
    if !meta.is_file() {
        return Err(unreadable(format!("media path `{path}` is not a file")));
    }
    if meta.len() > limits.max_bytes as u64 {
        return Err(too_large(false, meta.len() as usize, limits.max_bytes));
    }
    std::fs::read(&real).map_err(|e| unreadable(format!("media file `{path}`: {e}")))
}

/// The type the bytes are, by their magic numbers.
pub fn sniff(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WAVE" {
        Some("audio/wav")
    } else if b.starts_with(b"ID3") || (b.len() >= 2 && b[0] == 0xFF && b[1] & 0xE0 == 0xE0) {
        Some("audio/mpeg")
    } else if b.starts_with(b"<svg") || b.starts_with(b"<?xml") {
        Some("image/svg+xml")
    } else {
        None
    }
}

fn hex(digest: &[u8]) -> String {
    use std::fmt::Write as _;
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest valid PNG (1×1, transparent).
    pub const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44,
        0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F,
        0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00,
        0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    fn image() -> MediaKind {
        MediaKind::Image { detail: None }
    }

    fn uri(mime: &str, b: &[u8]) -> String {
        format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b)
        )
    }

    #[test]
    fn data_uris_are_checked_and_made_canonical() {
        let l = MediaLimits::default();
        // A PNG labelled as JPEG is sent as what it is.
        let m = resolve(&uri("image/jpeg", PNG_1X1), &image(), true, &l).unwrap();
        assert_eq!(m.mime, "image/png");
        assert!(m.data.starts_with("data:image/png;base64,iVBOR"));
        assert!(m.digest.starts_with("sha256:"));
        let again = resolve(&uri("image/png", PNG_1X1), &image(), false, &l).unwrap();
        assert_eq!(m.digest, again.digest);
        assert_eq!(m.data, again.data);
    }

    #[test]
    fn what_the_policy_cannot_send() {
        let l = MediaLimits::default();
        for bad in [
            "https://evil.example/x.png",
            "/etc/passwd",
            "file:///etc/passwd",
            "data:image/png;base64,@@@",
            "data:image/png,not-base64",
            "",
        ] {
            let e = resolve(bad, &image(), true, &l).unwrap_err();
            assert!(e.policy, "{bad}: {e:?}");
        }
        let svg = uri("image/png", b"<svg xmlns='http://www.w3.org/2000/svg'/>");
        let e = resolve(&svg, &image(), true, &l).unwrap_err();
        assert!(e.message.contains("image/svg+xml"), "{e:?}");
    }

    #[test]
    fn a_policy_image_must_decode_in_full() {
        let l = MediaLimits::default();
        let mut broken = PNG_1X1[..33].to_vec();
        broken.extend_from_slice(b"garbage where the pixels should be");
        let e = resolve(&uri("image/png", &broken), &image(), true, &l).unwrap_err();
        assert!(e.policy && e.message.contains("does not decode"), "{e:?}");
        // The dataset's images are left to the judge.
        assert!(resolve(&uri("image/png", &broken), &image(), false, &l).is_ok());
        // A real image over the side limit is refused before it is decoded into memory.
        let mut wide = Vec::new();
        image::RgbImage::new(MAX_SIDE + 1, 1)
            .write_to(
                &mut std::io::Cursor::new(&mut wide),
                image::ImageFormat::Png,
            )
            .unwrap();
        let e = resolve(&uri("image/png", &wide), &image(), true, &l).unwrap_err();
        assert!(e.policy && e.message.contains("larger than"), "{e:?}");
        assert!(resolve(&uri("image/png", PNG_1X1), &image(), true, &l).is_ok());
    }

    #[test]
    fn the_row_may_name_urls_and_files_under_the_root() {
        let dir = std::env::temp_dir().join(format!("referee-media-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("imgs")).unwrap();
        std::fs::write(dir.join("imgs/a.png"), PNG_1X1).unwrap();
        let l = MediaLimits {
            root: Some(dir.clone()),
            ..MediaLimits::default()
        };
        let m = resolve("imgs/a.png", &image(), false, &l).unwrap();
        assert_eq!(m.bytes, PNG_1X1.len());
        let out = resolve("../../../../etc/passwd", &image(), false, &l).unwrap_err();
        assert_eq!(out.reason, "media_unreadable");
        assert!(!out.policy);
        let gone = resolve("imgs/none.png", &image(), false, &l).unwrap_err();
        assert_eq!(gone.reason, "media_unreadable");
        let url = resolve("https://example.com/a.png", &image(), false, &l).unwrap();
        assert_eq!(url.mime, "remote");
        let small = MediaLimits {
            max_bytes: 10,
            ..l.clone()
        };
        let big = resolve("imgs/a.png", &image(), false, &small).unwrap_err();
        assert_eq!(big.reason, "media_limit");
        let big = resolve(&uri("image/png", PNG_1X1), &image(), true, &small).unwrap_err();
        assert!(big.policy && big.reason == "media_limit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn audio_is_base64_of_its_format() {
        let l = MediaLimits::default();
        let mut wav = b"RIFF\x24\x00\x00\x00WAVEfmt ".to_vec();
        wav.extend_from_slice(&[0; 24]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&wav);
        let k = MediaKind::Audio {
            format: "wav".into(),
        };
        let m = resolve(&b64, &k, true, &l).unwrap();
        assert_eq!(&*m.data, b64.as_str());
        let mp3 = MediaKind::Audio {
            format: "mp3".into(),
        };
        assert_eq!(
            resolve(&b64, &mp3, false, &l).unwrap_err().reason,
            "media_invalid"
        );
    }
}
