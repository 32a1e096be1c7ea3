//! A [`RunResult`] as an MCP tool result: text a model reads, structured
//! content a program reads, images as image content, small text artifacts
//! inline and the rest as resource links served by [`Artifacts`].
//!
//! Everything here is metadata the run's own result already holds; no
//! credential is ever in a [`RunResult`] (the broker withholds reflected
//! ones), and nothing is added.

use crate::run::{RunResult, Status};
use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde_json::{Value, json};
use std::collections::VecDeque;

/// Most bytes of stdout, and of stderr, a tool result carries (the run's
/// own caps apply first); past it the text is cut at a character boundary
/// and flagged.
pub const MAX_STREAM_BYTES: usize = 64 << 10;
/// Largest text artifact shown inline.
pub const MAX_INLINE_TEXT: usize = 16 << 10;
/// Largest image artifact sent as image content.
pub const MAX_INLINE_IMAGE: usize = 4 << 20;

/// The URI scheme of artifacts kept for `resources/read`.
pub const ARTIFACT_SCHEME: &str = "plimsoll-artifact";

/// Artifacts of this connection's recent runs, for `resources/read`:
/// at most [`Artifacts::MAX_BYTES`] and [`Artifacts::MAX_ENTRIES`], the
/// oldest dropped first. Per connection, so one client never reads
/// another's.
#[derive(Default)]
pub struct Artifacts {
    entries: VecDeque<(String, String, bytes::Bytes)>,
    bytes: usize,
}

/// Artifact bytes kept across every connection of this process: a client
/// that opens many connections cannot make the server hold more.
static KEPT_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Artifacts {
    /// Bytes kept per connection.
    pub const MAX_BYTES: usize = 64 << 20;
    /// Artifacts kept per connection.
    pub const MAX_ENTRIES: usize = 256;
    /// Bytes kept across all connections; past it a run's other artifacts
    /// are listed (path, size, hash) but not kept for `resources/read`.
    pub const MAX_PROCESS_BYTES: usize = 256 << 20;

    /// Keeps `data` under `uri`; whether it was kept.
    fn keep(&mut self, uri: String, mime: String, data: bytes::Bytes) -> bool {
        use std::sync::atomic::Ordering;
        if data.len() > Self::MAX_BYTES {
            return false;
        }
        // Room in this connection first (the oldest go), then in the process.
        while self.bytes + data.len() > Self::MAX_BYTES || self.entries.len() >= Self::MAX_ENTRIES {
            match self.entries.pop_front() {
                Some((_, _, d)) => {
                    self.bytes -= d.len();
                    KEPT_BYTES.fetch_sub(d.len(), Ordering::AcqRel);
                }
                None => break,
            }
        }
        let reserved = KEPT_BYTES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |kept| {
                kept.checked_add(data.len())
                    .filter(|&n| n <= Self::MAX_PROCESS_BYTES)
            })
            .is_ok();
        if !reserved {
            return false;
        }
        self.bytes += data.len();
        self.entries.push_back((uri, mime, data));
        true
    }

    /// The artifact at `uri`, with its MIME type, if still kept.
    #[must_use]
    pub fn get(&self, uri: &str) -> Option<(String, bytes::Bytes)> {
        self.entries
            .iter()
            .rev()
            .find(|(u, _, _)| u == uri)
            .map(|(_, m, d)| (m.clone(), d.clone()))
    }
}

impl Drop for Artifacts {
    fn drop(&mut self) {
        KEPT_BYTES.fetch_sub(self.bytes, std::sync::atomic::Ordering::AcqRel);
    }
}

/// `s` cut to at most `max` bytes at a character boundary, and whether it
/// was cut.
fn capped(s: &str, max: usize) -> (&str, bool) {
    if s.len() <= max {
        return (s, false);
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

/// The MIME type of an image artifact, by its first bytes.
fn image_mime(data: &[u8]) -> Option<&'static str> {
    if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if data.starts_with(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if data.len() > 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A run id or path made safe for a URI path segment (percent-encoded
/// outside `A-Za-z0-9-._~/`).
fn uri_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The tool result for `r`. A run that did not end `ok` is a tool error
/// (`isError`), so that a model sees it failed; its status says how.
pub fn tool_result(r: &RunResult, store: &mut Artifacts) -> CallToolResult {
    let status = status_name(r.status);
    let (stdout, stdout_cut) = capped(&r.stdout, MAX_STREAM_BYTES);
    let (stderr, stderr_cut) = capped(&r.stderr, MAX_STREAM_BYTES);
    let mut text = format!(
        "status: {status}{} · isolation: {} ({}) · run {}\n",
        r.exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default(),
        r.isolation.tier,
        r.isolation.provider,
        r.run_id
    );
    if let Some(e) = &r.error {
        text.push_str(&format!("error: {}: {}\n", e.code, e.message));
    }
    if let Some(v) = r.result.as_ref().filter(|v| !v.is_empty()) {
        let (v, cut) = capped(v, MAX_STREAM_BYTES);
        text.push_str(&format!(
            "result{}: {v}\n",
            if cut || r.result_truncated {
                " (truncated)"
            } else {
                ""
            }
        ));
    }
    for (name, s, cut) in [
        ("stdout", stdout, stdout_cut || r.stdout_truncated),
        ("stderr", stderr, stderr_cut || r.stderr_truncated),
    ] {
        if !s.is_empty() {
            text.push_str(&format!(
                "--- {name}{}\n{s}",
                if cut { " (truncated)" } else { "" }
            ));
            if !s.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    let mut content = Vec::new();
    let mut artifacts = Vec::new();
    // Inline images of one answer together stay within one image's cap;
    // the rest go out as links (counted in the kept budget).
    let mut inline_images = 0usize;
    let b64 = base64::engine::general_purpose::STANDARD;
    for a in &r.artifacts {
        let data = a.content.as_bytes();
        let uri = format!(
            "{ARTIFACT_SCHEME}://{}/{}",
            uri_part(&r.run_id),
            uri_part(&a.path)
        );
        let image = image_mime(data);
        let inline_text = image.is_none() && data.len() <= MAX_INLINE_TEXT;
        let text_form = if inline_text {
            std::str::from_utf8(data).ok()
        } else {
            None
        };
        let how = match (image, text_form) {
            (Some(mime), _) if inline_images + data.len() <= MAX_INLINE_IMAGE => {
                inline_images += data.len();
                content.push(ContentBlock::image(b64.encode(data), mime));
                "image"
            }
            (None, Some(t)) => {
                text.push_str(&format!("--- artifact {}\n{t}", a.path));
                if !t.ends_with('\n') {
                    text.push('\n');
                }
                "inline"
            }
            _ => {
                let mime = image.unwrap_or("application/octet-stream");
                if store.keep(
                    uri.clone(),
                    mime.to_owned(),
                    bytes::Bytes::copy_from_slice(data),
                ) {
                    content.push(ContentBlock::resource_link(
                        Resource::new(uri.clone(), a.path.clone())
                            .with_mime_type(mime)
                            .with_size(a.size),
                    ));
                    "resource"
                } else {
                    "listed"
                }
            }
        };
        artifacts.push(json!({
            "path": a.path,
            "size": a.size,
            "sha256": a.sha256,
            "uri": uri,
            "shown_as": how,
        }));
    }
    if r.artifacts_truncated {
        text.push_str("(more artifacts were left out: the run's artifact cap)\n");
    }
    let structured = json!({
        "run_id": r.run_id,
        "status": status,
        "exit_code": r.exit_code,
        "result": r.result,
        "result_truncated": r.result_truncated,
        "stdout": stdout,
        "stdout_truncated": stdout_cut || r.stdout_truncated,
        "stderr": stderr,
        "stderr_truncated": stderr_cut || r.stderr_truncated,
        "artifacts": artifacts,
        "artifacts_truncated": r.artifacts_truncated,
        "isolation": {"tier": r.isolation.tier.as_str(), "provider": r.isolation.provider},
        "guest": r.guest,
        "error": r.error.as_ref().map(|e| json!({"code": e.code, "message": e.message})),
        "calls": r.calls.rows.len(),
        "wall_ms": r.usage.wall_ms,
    });
    let mut blocks = vec![ContentBlock::text(text)];
    blocks.extend(content);
    let mut out = if r.status == Status::Ok {
        CallToolResult::success(blocks)
    } else {
        CallToolResult::error(blocks)
    };
    out.structured_content = Some(structured);
    out
}

/// A status as its JSON name (`ok`, `timeout`, …).
pub fn status_name(s: Status) -> &'static str {
    s.as_str()
}

/// A small structured answer with a text copy.
pub fn structured(v: Value, text: String) -> CallToolResult {
    let mut out = CallToolResult::success(vec![ContentBlock::text(text)]);
    out.structured_content = Some(v);
    out
}

/// A tool error the model reads (`isError`), with the code in structured
/// content.
pub fn refusal(code: &str, message: &str) -> CallToolResult {
    let mut out = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))]);
    out.structured_content =
        Some(json!({"status": "refused", "error": {"code": code, "message": message}}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_cut_at_a_character_boundary() {
        let s = "é".repeat(10);
        let (c, cut) = capped(&s, 5);
        assert!(cut);
        assert_eq!(c, "éé");
        assert_eq!(capped("abc", 5), ("abc", false));
    }

    #[test]
    fn the_artifact_store_is_bounded_and_keeps_the_newest() {
        let mut a = Artifacts::default();
        for i in 0..(Artifacts::MAX_ENTRIES + 10) {
            a.keep(format!("u{i}"), "m".into(), bytes::Bytes::from_static(b"x"));
        }
        assert_eq!(a.entries.len(), Artifacts::MAX_ENTRIES);
        assert!(a.get("u0").is_none());
        assert!(a.get(&format!("u{}", Artifacts::MAX_ENTRIES + 9)).is_some());
        a.keep(
            "big".into(),
            "m".into(),
            bytes::Bytes::from(vec![0u8; Artifacts::MAX_BYTES]),
        );
        assert!(a.bytes <= Artifacts::MAX_BYTES);
    }

    #[test]
    fn uri_parts_are_escaped() {
        assert_eq!(uri_part("a b/c?.png"), "a%20b/c%3F.png");
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_mime(b"plain"), None);
    }
}
