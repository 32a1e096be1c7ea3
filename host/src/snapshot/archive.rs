//! The snapshot archive: a session's state as one portable, versioned,
//! integrity-checked object (docs/snapshots.md has the format).
//!
//! ```text
//! "PLSNAP\0\x01"            8 bytes
//! manifest length           u32, little-endian, at most MAX_MANIFEST
//! manifest                  JSON: what the session held, and every part's
//!                           name, raw length, stored length and the
//!                           SHA-256 of its stored (compressed) bytes
//! parts                     each zstd-compressed, in the manifest's order
//! ```
//!
//! The snapshot's id is the SHA-256 of the manifest, which names the
//! digest of every part: the id commits to every byte.
//!
//! Guarantees of [`decode`]: every size is checked against [`Caps`]
//! before anything is allocated for it; every part must hash to its
//! stated digest before it is decompressed, to at most its stated length; page lists
//! must be in order and inside their memory; nothing may follow the last
//! part. Any failure is an [`ArchiveError`] that names what is wrong
//! without quoting the archive, and nothing is returned.

use crate::memtree::{ImageEntry, TreeImage};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The first bytes of every archive: the name and format version 1.
pub const MAGIC: &[u8; 8] = b"PLSNAP\x00\x01";
/// The format this code writes and reads.
pub const FORMAT: u32 = 1;
/// The most bytes a manifest may have.
pub const MAX_MANIFEST: usize = 1 << 20;
/// The granule a memory is compared and stored in.
pub const PAGE: usize = 4096;

/// Limits an archive is read within (the resuming side's).
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// All parts together, decompressed.
    pub total_bytes: u64,
    /// One memory's size.
    pub memory_bytes: u64,
    /// The workspace part, decompressed.
    pub workspace_bytes: u64,
    /// Workspace entries.
    pub workspace_entries: u64,
}

impl Caps {
    /// The limits for a session of envelope `env`. A core-module guest's
    /// memory starts above the envelope's limit (its image is allowed on
    /// top): the limiter checks the exact figure when a memory grows; this
    /// bounds what is read.
    pub fn for_envelope(env: &crate::envelope::Envelope) -> Caps {
        let memory = env.memory_bytes.saturating_add(1 << 30).min(4 << 30);
        Caps {
            total_bytes: memory
                .saturating_mul(4)
                .saturating_add(env.workspace_bytes)
                .saturating_add(64 << 20),
            memory_bytes: memory,
            workspace_bytes: env.workspace_bytes,
            workspace_entries: env.workspace_entries,
        }
    }
}

/// Why an archive is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the snapshot archive is refused: {0}")]
pub struct ArchiveError(pub &'static str);

fn bad<T>(why: &'static str) -> Result<T, ArchiveError> {
    Err(ArchiveError(why))
}

/// One memory of an instance: its size and the pages that differ from the
/// guest's base image (the rest are the base's, or zero past its end).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryImage {
    /// The memory's size in bytes (a multiple of the wasm page).
    pub bytes: u64,
    /// Page indices ([`PAGE`] bytes each), strictly increasing.
    pub pages: Vec<u32>,
    /// The pages' bytes, `pages.len() * PAGE` of them.
    pub data: Vec<u8>,
}

/// One interpreter instance's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceImage {
    pub memories: Vec<MemoryImage>,
    /// Every mutable global, 8 bytes each.
    pub globals: Vec<u8>,
    /// Each table's size, in elements.
    pub tables: Vec<u32>,
    /// The host resources the instance held, as its prologue left them
    /// (`index:kind` each, see [`crate::snapshot::prologue`]): a resumed
    /// instance must hold the same.
    pub held: String,
}

/// One guest of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestImage {
    /// The guest's identity (`python-wasm:sha256:…`): only the same build
    /// resumes it.
    pub identity: String,
    /// The SHA-256 of the base image the pages are relative to.
    pub base_sha256: String,
    /// `None` when the interpreter had not started (or is one that starts
    /// fresh for every evaluation, as the shell).
    pub instance: Option<InstanceImage>,
}

/// A whole session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionImage {
    pub created_unix_ms: u64,
    /// The tier it was taken at.
    pub taken_at: String,
    /// The provider it was taken under.
    pub provider: String,
    /// A failed evaluation ends only its interpreter.
    pub keep_on_failure: bool,
    pub guests: Vec<GuestImage>,
    pub workspace: TreeImage,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    created_unix_ms: u64,
    taken_at: String,
    provider: String,
    keep_on_failure: bool,
    guests: Vec<ManifestGuest>,
    parts: Vec<Part>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestGuest {
    identity: String,
    base_sha256: String,
    instance: Option<ManifestInstance>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestInstance {
    /// Each memory's size in bytes.
    memories: Vec<u64>,
    tables: Vec<u32>,
    held: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Part {
    name: String,
    raw_len: u64,
    stored_len: u64,
    sha256: String,
}

/// An archive, and its id.
#[derive(Debug, Clone)]
pub struct Archive {
    /// The SHA-256 of the manifest, hex.
    pub id: String,
    pub bytes: Vec<u8>,
}

fn sha256_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// Encodes `image` (zstd at `level`).
pub fn encode(image: &SessionImage, level: i32) -> Result<Archive, ArchiveError> {
    let mut parts: Vec<(String, Vec<u8>)> = Vec::new();
    parts.push(("workspace".into(), encode_tree(&image.workspace)));
    let mut guests = Vec::new();
    for (g, guest) in image.guests.iter().enumerate() {
        let instance = guest.instance.as_ref().map(|inst| {
            for (m, mem) in inst.memories.iter().enumerate() {
                let mut raw = Vec::with_capacity(mem.pages.len() * 4 + mem.data.len());
                for p in &mem.pages {
                    raw.extend_from_slice(&p.to_le_bytes());
                }
                raw.extend_from_slice(&mem.data);
                parts.push((format!("g{g}.m{m}"), raw));
            }
            parts.push((format!("g{g}.globals"), inst.globals.clone()));
            ManifestInstance {
                memories: inst.memories.iter().map(|m| m.bytes).collect(),
                tables: inst.tables.clone(),
                held: inst.held.clone(),
            }
        });
        guests.push(ManifestGuest {
            identity: guest.identity.clone(),
            base_sha256: guest.base_sha256.clone(),
            instance,
        });
    }
    let mut stored: Vec<Vec<u8>> = Vec::new();
    let mut manifest_parts = Vec::new();
    for (name, raw) in &parts {
        let z = zstd::bulk::compress(raw, level)
            .map_err(|_| ArchiveError("a part could not be compressed"))?;
        manifest_parts.push(Part {
            name: name.clone(),
            raw_len: raw.len() as u64,
            stored_len: z.len() as u64,
            sha256: sha256_hex(&z),
        });
        stored.push(z);
    }
    let manifest = Manifest {
        format: FORMAT,
        created_unix_ms: image.created_unix_ms,
        taken_at: image.taken_at.clone(),
        provider: image.provider.clone(),
        keep_on_failure: image.keep_on_failure,
        guests,
        parts: manifest_parts,
    };
    let m = serde_json::to_vec(&manifest).map_err(|_| ArchiveError("no manifest"))?;
    if m.len() > MAX_MANIFEST {
        return bad("the manifest is too large");
    }
    let mut bytes = Vec::with_capacity(12 + m.len() + stored.iter().map(Vec::len).sum::<usize>());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&(m.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&m);
    for s in &stored {
        bytes.extend_from_slice(s);
    }
    Ok(Archive {
        id: sha256_hex(&m),
        bytes,
    })
}

/// What an archive says of itself, without its parts: enough to refuse
/// it early (its guests, its sizes) and to list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub id: String,
    pub created_unix_ms: u64,
    pub taken_at: String,
    pub provider: String,
    pub identities: Vec<String>,
    /// All parts, decompressed.
    pub raw_bytes: u64,
}

/// Reads the manifest of `bytes` (checked against `caps`) without
/// decompressing a part.
pub fn summary(bytes: &[u8], caps: &Caps) -> Result<Summary, ArchiveError> {
    let (m, id, _) = manifest(bytes, caps)?;
    Ok(Summary {
        id,
        created_unix_ms: m.created_unix_ms,
        taken_at: m.taken_at.clone(),
        provider: m.provider.clone(),
        identities: m.guests.iter().map(|g| g.identity.clone()).collect(),
        raw_bytes: m.parts.iter().map(|p| p.raw_len).sum(),
    })
}

/// The manifest, its id, and where the parts start; every size checked.
fn manifest(bytes: &[u8], caps: &Caps) -> Result<(Manifest, String, usize), ArchiveError> {
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return bad("not a plimsoll snapshot (format 1)");
    }
    let len = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    if len > MAX_MANIFEST {
        return bad("the manifest is too large");
    }
    let Some(m) = bytes.get(12..12 + len) else {
        return bad("the archive is truncated");
    };
    let manifest: Manifest =
        serde_json::from_slice(m).map_err(|_| ArchiveError("the manifest is not valid"))?;
    if manifest.format != FORMAT {
        return bad("the archive's format is not one this daemon reads");
    }
    let mut total = 0u64;
    for p in &manifest.parts {
        total = total
            .checked_add(p.raw_len)
            .ok_or(ArchiveError("the parts are too large"))?;
    }
    if total > caps.total_bytes {
        return bad("the snapshot is larger than this daemon accepts");
    }
    for g in &manifest.guests {
        if g.identity.len() > 256 || g.base_sha256.len() > 64 {
            return bad("the manifest is not valid");
        }
        if let Some(i) = &g.instance
            && i.memories
                .iter()
                .any(|&b| b > caps.memory_bytes || b % 65536 != 0)
        {
            return bad("a memory of the snapshot is larger than this daemon accepts");
        }
    }
    let stored: u64 = manifest.parts.iter().try_fold(0u64, |a, p| {
        a.checked_add(p.stored_len)
            .ok_or(ArchiveError("the parts are too large"))
    })?;
    let start = 12 + len;
    match (bytes.len() as u64).checked_sub(start as u64) {
        Some(rest) if rest == stored => {}
        Some(rest) if rest < stored => return bad("the archive is truncated"),
        _ => return bad("the archive has bytes after its last part"),
    }
    Ok((manifest, sha256_hex(m), start))
}

/// Decodes and verifies an archive.
pub fn decode(bytes: &[u8], caps: &Caps) -> Result<(String, SessionImage), ArchiveError> {
    let (m, id, mut at) = manifest(bytes, caps)?;
    let mut parts: std::collections::HashMap<String, Vec<u8>> = std::collections::HashMap::new();
    for p in &m.parts {
        let end = at + p.stored_len as usize;
        let stored = bytes
            .get(at..end)
            .ok_or(ArchiveError("the archive is truncated"))?;
        at = end;
        // The digest is of the bytes as stored: checked before anything
        // is decompressed (decompression is deterministic).
        if sha256_hex(stored) != p.sha256 {
            return bad("a part does not match its digest");
        }
        let raw = decompress(stored, p.raw_len)?;
        if parts.insert(p.name.clone(), raw).is_some() {
            return bad("a part is named twice");
        }
    }
    let take = |parts: &mut std::collections::HashMap<String, Vec<u8>>, name: &str| {
        parts
            .remove(name)
            .ok_or(ArchiveError("a part the manifest needs is missing"))
    };
    let ws = take(&mut parts, "workspace")?;
    if ws.len() as u64 > caps.workspace_bytes.saturating_add(64 << 20) {
        return bad("the snapshot's files are larger than this daemon accepts");
    }
    let workspace = decode_tree(&ws, caps.workspace_entries)?;
    let mut guests = Vec::new();
    for (g, mg) in m.guests.iter().enumerate() {
        let instance = match &mg.instance {
            None => None,
            Some(mi) => {
                let mut memories = Vec::new();
                for (j, &size) in mi.memories.iter().enumerate() {
                    let raw = take(&mut parts, &format!("g{g}.m{j}"))?;
                    memories.push(decode_pages(raw, size)?);
                }
                let globals = take(&mut parts, &format!("g{g}.globals"))?;
                if globals.len() % 8 != 0 {
                    return bad("the globals part is not valid");
                }
                if mi.held.len() > 4096 {
                    return bad("the manifest is not valid");
                }
                Some(InstanceImage {
                    memories,
                    globals,
                    tables: mi.tables.clone(),
                    held: mi.held.clone(),
                })
            }
        };
        guests.push(GuestImage {
            identity: mg.identity.clone(),
            base_sha256: mg.base_sha256.clone(),
            instance,
        });
    }
    if !parts.is_empty() {
        return bad("the archive has a part the manifest does not use");
    }
    Ok((
        id,
        SessionImage {
            created_unix_ms: m.created_unix_ms,
            taken_at: m.taken_at,
            provider: m.provider,
            keep_on_failure: m.keep_on_failure,
            guests,
            workspace,
        },
    ))
}

/// Decompresses `stored` to exactly `raw_len` bytes.
fn decompress(stored: &[u8], raw_len: u64) -> Result<Vec<u8>, ArchiveError> {
    let cap = usize::try_from(raw_len).map_err(|_| ArchiveError("a part is too large"))?;
    let mut d = zstd::stream::read::Decoder::new(stored)
        .map_err(|_| ArchiveError("a part is not valid zstd"))?;
    let _ = d.window_log_max(27);
    let mut out = Vec::with_capacity(cap);
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = std::io::Read::read(&mut d, &mut buf)
            .map_err(|_| ArchiveError("a part is not valid zstd"))?;
        if n == 0 {
            break;
        }
        if out.len() + n > cap {
            return bad("a part is longer than the manifest says");
        }
        out.extend_from_slice(&buf[..n]);
    }
    if out.len() != cap {
        return bad("a part is shorter than the manifest says");
    }
    Ok(out)
}

fn decode_pages(raw: Vec<u8>, bytes: u64) -> Result<MemoryImage, ArchiveError> {
    let unit = 4 + PAGE;
    if !raw.len().is_multiple_of(unit) {
        return bad("a memory part is not valid");
    }
    let n = raw.len() / unit;
    let limit = bytes / PAGE as u64;
    let mut pages = Vec::with_capacity(n);
    let mut last: Option<u32> = None;
    for c in raw[..n * 4].chunks_exact(4) {
        let p = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if u64::from(p) >= limit || last.is_some_and(|l| p <= l) {
            return bad("a memory part's pages are out of order or outside the memory");
        }
        last = Some(p);
        pages.push(p);
    }
    let data = raw[n * 4..].to_vec();
    Ok(MemoryImage { bytes, pages, data })
}

fn encode_tree(t: &TreeImage) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(t.entries.len() as u32).to_le_bytes());
    for e in &t.entries {
        out.extend_from_slice(&e.parent.unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        out.extend_from_slice(e.name.as_bytes());
        out.push(u8::from(e.data.is_some()));
        out.extend_from_slice(&e.mtime_ns.to_le_bytes());
        out.extend_from_slice(&e.ino.to_le_bytes());
        if let Some(d) = &e.data {
            out.extend_from_slice(&(d.len() as u64).to_le_bytes());
            out.extend_from_slice(d);
        }
    }
    out.extend_from_slice(&t.root_mtime_ns.to_le_bytes());
    out.extend_from_slice(&t.next_ino.to_le_bytes());
    out
}

/// Reads a tree part; every length is checked against what is left.
fn decode_tree(b: &[u8], max_entries: u64) -> Result<TreeImage, ArchiveError> {
    struct R<'a>(&'a [u8]);
    impl<'a> R<'a> {
        fn take(&mut self, n: usize) -> Result<&'a [u8], ArchiveError> {
            if self.0.len() < n {
                return bad("the workspace part is truncated");
            }
            let (a, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(a)
        }
        fn u16(&mut self) -> Result<u16, ArchiveError> {
            let a = self.take(2)?;
            Ok(u16::from_le_bytes([a[0], a[1]]))
        }
        fn u32(&mut self) -> Result<u32, ArchiveError> {
            let a = self.take(4)?;
            Ok(u32::from_le_bytes([a[0], a[1], a[2], a[3]]))
        }
        fn u64(&mut self) -> Result<u64, ArchiveError> {
            let a = self.take(8)?;
            let mut x = [0u8; 8];
            x.copy_from_slice(a);
            Ok(u64::from_le_bytes(x))
        }
    }
    let mut r = R(b);
    let n = r.u32()?;
    if u64::from(n) > max_entries {
        return bad("the snapshot holds more files than this daemon accepts");
    }
    let mut entries = Vec::with_capacity((n as usize).min(1 << 16));
    for _ in 0..n {
        let parent = r.u32()?;
        let len = r.u16()? as usize;
        let name = std::str::from_utf8(r.take(len)?)
            .map_err(|_| ArchiveError("a file name is not valid"))?
            .to_owned();
        let is_file = match r.take(1)?[0] {
            0 => false,
            1 => true,
            _ => return bad("the workspace part is not valid"),
        };
        let mtime_ns = r.u64()?;
        let ino = r.u64()?;
        let data = if is_file {
            let len = usize::try_from(r.u64()?).map_err(|_| ArchiveError("a file is too large"))?;
            Some(r.take(len)?.to_vec())
        } else {
            None
        };
        entries.push(ImageEntry {
            parent: (parent != u32::MAX).then_some(parent),
            name,
            data,
            mtime_ns,
            ino,
        });
    }
    let root_mtime_ns = r.u64()?;
    let next_ino = r.u64()?;
    if !r.0.is_empty() {
        return bad("the workspace part is not valid");
    }
    Ok(TreeImage {
        entries,
        root_mtime_ns,
        next_ino,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Caps {
        Caps {
            total_bytes: 1 << 30,
            memory_bytes: 1 << 30,
            workspace_bytes: 1 << 26,
            workspace_entries: 1000,
        }
    }

    fn image() -> SessionImage {
        SessionImage {
            created_unix_ms: 7,
            taken_at: "process".into(),
            provider: "wasm".into(),
            keep_on_failure: true,
            guests: vec![
                GuestImage {
                    identity: "python-wasm:sha256:ab".into(),
                    base_sha256: "cd".into(),
                    instance: Some(InstanceImage {
                        memories: vec![MemoryImage {
                            bytes: 131072,
                            pages: vec![0, 5, 31],
                            data: (0..3 * PAGE).map(|i| (i % 251) as u8).collect(),
                        }],
                        globals: vec![1, 0, 0, 0, 0, 0, 0, 0],
                        tables: vec![10, 2],
                        held: "0:d0,1:i,2:o,3:o".into(),
                    }),
                },
                GuestImage {
                    identity: "shell-wasm:sha256:ef".into(),
                    base_sha256: String::new(),
                    instance: None,
                },
            ],
            workspace: TreeImage {
                entries: vec![
                    ImageEntry {
                        parent: None,
                        name: "d".into(),
                        data: None,
                        mtime_ns: 3,
                        ino: 2,
                    },
                    ImageEntry {
                        parent: Some(0),
                        name: "f.bin".into(),
                        data: Some(vec![0, 255, 7]),
                        mtime_ns: 4,
                        ino: 3,
                    },
                ],
                root_mtime_ns: 1,
                next_ino: 4,
            },
        }
    }

    #[test]
    fn an_archive_round_trips_and_its_id_is_its_manifests_digest() {
        let a = encode(&image(), 3).expect("encode");
        let (id, back) = decode(&a.bytes, &caps()).expect("decode");
        assert_eq!(id, a.id);
        assert_eq!(back, image());
        assert_eq!(encode(&back, 3).expect("again").id, a.id);
        let s = summary(&a.bytes, &caps()).expect("summary");
        assert_eq!(s.identities.len(), 2);
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_refused() {
        let a = encode(&image(), 3).expect("encode");
        for i in 0..a.bytes.len() {
            let mut b = a.bytes.clone();
            b[i] ^= 0x40;
            // A flip inside the manifest's JSON may leave it valid JSON
            // with another meaning; then the id differs.
            match decode(&b, &caps()) {
                Err(_) => {}
                Ok((id, _)) => assert_ne!(id, a.id, "byte {i} flipped unnoticed"),
            }
        }
        for cut in [0, 7, 11, 12, a.bytes.len() / 2, a.bytes.len() - 1] {
            assert!(decode(&a.bytes[..cut], &caps()).is_err(), "cut at {cut}");
        }
        let mut longer = a.bytes.clone();
        longer.push(0);
        assert!(decode(&longer, &caps()).is_err());
    }

    #[test]
    fn sizes_are_checked_before_anything_is_allocated() {
        let mut huge = image();
        if let Some(i) = huge.guests[0].instance.as_mut() {
            i.memories[0].bytes = 1 << 40;
        }
        let a = encode(&huge, 3).expect("encode");
        assert_eq!(
            decode(&a.bytes, &caps()).err(),
            Some(ArchiveError(
                "a memory of the snapshot is larger than this daemon accepts"
            ))
        );
        let small = Caps {
            total_bytes: 100,
            ..caps()
        };
        assert!(decode(&encode(&image(), 3).expect("e").bytes, &small).is_err());
    }
}
