//! Where snapshots are kept: a directory of archives, content-addressed
//! per owner, with per-owner and host-wide quotas and an expiry.
//!
//! Guarantees:
//! - **Owned.** A snapshot belongs to the caller that made (or imported)
//!   it; its id is the SHA-256 of the owner's fingerprint and the
//!   archive's manifest digest, so two callers never share one, and
//!   another caller's id answers exactly like an unknown one
//!   ([`UNKNOWN`]). Only fingerprints are written to disk, never a caller
//!   id.
//! - **Bounded.** A caller holds at most `per_caller` snapshots and
//!   `per_caller_bytes`; the host at most `total_bytes`. Places are
//!   reserved under one lock before anything is written, so a burst
//!   cannot pass a quota ([`QUOTA`]); a snapshot past its expiry is gone.
//! - **Atomic.** An archive is written aside, synced and renamed into
//!   place, and only then its metadata; a crash leaves at most a file
//!   that no listing names, which the next [`SnapshotStore::open`]
//!   removes. Nothing half-written is ever served.
//! - **Private.** The directory is created 0700.

use super::archive::Archive;
use super::{QUOTA, UNKNOWN};
use crate::run::ErrorInfo;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The quotas and expiry of a store.
#[derive(Debug, Clone, Copy)]
pub struct StoreLimits {
    pub per_caller: usize,
    pub per_caller_bytes: u64,
    pub total_bytes: u64,
    pub ttl: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            per_caller: 64,
            per_caller_bytes: 2 << 30,
            total_bytes: 16 << 30,
            ttl: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// What the store knows of one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub id: String,
    /// The owner's fingerprint (never the caller's id).
    pub owner: String,
    pub bytes: u64,
    pub created_unix_ms: u64,
    pub expires_unix_ms: u64,
    /// The session's guests, in its order.
    pub identities: Vec<String>,
    /// The tier the session ran at when it was taken.
    pub taken_at: String,
}

/// A directory of snapshots.
pub struct SnapshotStore {
    dir: PathBuf,
    limits: StoreLimits,
    /// Every snapshot, by id; `ready` false while its files are written.
    index: Mutex<HashMap<String, (Meta, bool)>>,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn err(code: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        code: code.into(),
        message: message.into(),
    }
}

fn unknown() -> ErrorInfo {
    err(UNKNOWN, "no snapshot with that id for this caller")
}

/// A caller's fingerprint as the store keeps it.
pub fn owner_of(caller: &str) -> String {
    hex::encode(Sha256::digest(format!("plimsoll-snapshot-owner\n{caller}")))
}

/// Whether `id` has the shape of a snapshot id (64 lowercase hex).
pub fn valid_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl SnapshotStore {
    /// Opens (creating, 0700) the store in `dir`: the snapshots whose
    /// archive and metadata are both there and that have not expired;
    /// everything else in it is removed.
    pub fn open(dir: &Path, limits: StoreLimits) -> std::io::Result<SnapshotStore> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let mut index = HashMap::new();
        let now = now_ms();
        let mut keep = std::collections::HashSet::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            let meta = std::fs::read(&path)
                .ok()
                .filter(|b| b.len() < 1 << 20)
                .and_then(|b| serde_json::from_slice::<Meta>(&b).ok());
            let archive = dir.join(format!("{id}.snap"));
            match meta {
                Some(m)
                    if valid_id(id)
                        && m.id == id
                        && m.expires_unix_ms > now
                        && std::fs::metadata(&archive).is_ok_and(|md| md.len() == m.bytes) =>
                {
                    keep.insert(format!("{id}.json"));
                    keep.insert(format!("{id}.snap"));
                    index.insert(id.to_owned(), (m, true));
                }
                _ => {}
            }
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            if !keep.contains(&name) && path.is_file() {
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(SnapshotStore {
            dir: dir.to_path_buf(),
            limits,
            index: Mutex::new(index),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Meta, bool)>> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets and removes the snapshots past their expiry.
    pub fn sweep(&self) {
        let now = now_ms();
        let gone: Vec<String> = {
            let mut index = self.lock();
            let ids: Vec<String> = index
                .iter()
                .filter(|(_, (m, ready))| *ready && m.expires_unix_ms <= now)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                index.remove(id);
            }
            ids
        };
        for id in gone {
            self.remove_files(&id);
        }
    }

    fn remove_files(&self, id: &str) {
        let _ = std::fs::remove_file(self.dir.join(format!("{id}.json")));
        let _ = std::fs::remove_file(self.dir.join(format!("{id}.snap")));
    }

    /// Keeps `archive` for `caller`; returns its metadata. The same
    /// archive kept twice by one caller is one snapshot.
    pub fn put(
        &self,
        caller: &str,
        archive: &Archive,
        identities: Vec<String>,
        taken_at: &str,
    ) -> Result<Meta, ErrorInfo> {
        self.sweep();
        let owner = owner_of(caller);
        let id = hex::encode(Sha256::digest(format!("{owner}\n{}", archive.id)));
        let now = now_ms();
        let ttl = u64::try_from(self.limits.ttl.as_millis()).unwrap_or(u64::MAX);
        let meta = Meta {
            id: id.clone(),
            owner: owner.clone(),
            bytes: archive.bytes.len() as u64,
            created_unix_ms: now,
            expires_unix_ms: now.saturating_add(ttl),
            identities,
            taken_at: taken_at.to_owned(),
        };
        {
            let mut index = self.lock();
            if let Some((m, _)) = index.get(&id) {
                return Ok(m.clone());
            }
            let (mine, mine_bytes) = index
                .values()
                .filter(|(m, _)| m.owner == owner)
                .fold((0usize, 0u64), |(n, b), (m, _)| (n + 1, b + m.bytes));
            let total: u64 = index.values().map(|(m, _)| m.bytes).sum();
            if mine >= self.limits.per_caller {
                return Err(err(
                    QUOTA,
                    format!(
                        "this caller holds {} snapshots, its most; delete one first",
                        self.limits.per_caller
                    ),
                ));
            }
            if mine_bytes.saturating_add(meta.bytes) > self.limits.per_caller_bytes {
                return Err(err(
                    QUOTA,
                    "this caller's snapshots would pass its byte quota; delete one first",
                ));
            }
            if total.saturating_add(meta.bytes) > self.limits.total_bytes {
                return Err(err(
                    QUOTA,
                    "the host holds as many snapshot bytes as it keeps",
                ));
            }
            index.insert(id.clone(), (meta.clone(), false));
        }
        let written = self.write(&id, &archive.bytes, &meta);
        let mut index = self.lock();
        match written {
            Ok(()) => {
                index.insert(id, (meta.clone(), true));
                Ok(meta)
            }
            Err(e) => {
                index.remove(&id);
                drop(index);
                self.remove_files(&id);
                Err(err(
                    "snapshot_unavailable",
                    format!("the snapshot could not be written: {}", e.kind()),
                ))
            }
        }
    }

    fn write(&self, id: &str, bytes: &[u8], meta: &Meta) -> std::io::Result<()> {
        let place = |name: String, data: &[u8]| -> std::io::Result<()> {
            let mut tmp = tempfile::Builder::new()
                .prefix(".tmp-")
                .tempfile_in(&self.dir)?;
            tmp.write_all(data)?;
            tmp.as_file().sync_all()?;
            tmp.persist(self.dir.join(name)).map_err(|e| e.error)?;
            Ok(())
        };
        place(format!("{id}.snap"), bytes)?;
        let json = serde_json::to_vec(meta).map_err(std::io::Error::other)?;
        place(format!("{id}.json"), &json)?;
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// `caller`'s snapshot `id`.
    pub fn meta(&self, caller: &str, id: &str) -> Result<Meta, ErrorInfo> {
        self.sweep();
        let owner = owner_of(caller);
        match self.lock().get(id) {
            Some((m, true)) if m.owner == owner => Ok(m.clone()),
            _ => Err(unknown()),
        }
    }

    /// `caller`'s snapshot `id`, and its archive.
    pub fn get(&self, caller: &str, id: &str) -> Result<(Meta, Vec<u8>), ErrorInfo> {
        let meta = self.meta(caller, id)?;
        let bytes = std::fs::read(self.dir.join(format!("{id}.snap"))).map_err(|_| unknown())?;
        if bytes.len() as u64 != meta.bytes {
            return Err(unknown());
        }
        Ok((meta, bytes))
    }

    /// Deletes `caller`'s snapshot `id`.
    pub fn delete(&self, caller: &str, id: &str) -> Result<Meta, ErrorInfo> {
        let owner = owner_of(caller);
        let meta = {
            let mut index = self.lock();
            match index.get(id) {
                Some((m, true)) if m.owner == owner => {
                    let m = m.clone();
                    index.remove(id);
                    m
                }
                _ => return Err(unknown()),
            }
        };
        self.remove_files(id);
        Ok(meta)
    }

    /// How many snapshots `caller` holds, and their bytes.
    pub fn usage(&self, caller: &str) -> (usize, u64) {
        let owner = owner_of(caller);
        self.lock()
            .values()
            .filter(|(m, _)| m.owner == owner)
            .fold((0, 0), |(n, b), (m, _)| (n + 1, b + m.bytes))
    }

    /// The store's limits.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(n: u8) -> Archive {
        Archive {
            id: format!("{n:064x}"),
            bytes: vec![n; 100],
        }
    }

    #[test]
    fn a_snapshot_belongs_to_its_caller_and_quotas_hold() {
        let dir = tempfile::tempdir().expect("tmp");
        let s = SnapshotStore::open(
            dir.path(),
            StoreLimits {
                per_caller: 2,
                per_caller_bytes: 1000,
                total_bytes: 250,
                ttl: Duration::from_secs(60),
            },
        )
        .expect("open");
        let a = s
            .put("alice", &archive(1), vec!["x".into()], "process")
            .expect("put");
        assert!(valid_id(&a.id));
        assert_eq!(s.get("alice", &a.id).expect("get").1, vec![1; 100]);
        // Another caller's id is an unknown one.
        assert_eq!(s.meta("bob", &a.id).err(), Some(unknown()));
        assert_eq!(s.delete("bob", &a.id).err(), Some(unknown()));
        // The same archive twice is one snapshot.
        assert_eq!(
            s.put("alice", &archive(1), vec![], "process")
                .expect("again")
                .id,
            a.id
        );
        s.put("alice", &archive(2), vec![], "process")
            .expect("second");
        assert_eq!(
            s.put("alice", &archive(3), vec![], "process")
                .err()
                .map(|e| e.code),
            Some(QUOTA.to_owned())
        );
        // The host's total (250 bytes) holds for another caller too.
        assert_eq!(
            s.put("bob", &archive(4), vec![], "process")
                .err()
                .map(|e| e.code),
            Some(QUOTA.to_owned())
        );
        // Reopened, the store serves what it had; a stray file is swept.
        std::fs::write(dir.path().join(".tmp-half"), b"x").expect("write");
        drop(s);
        let s = SnapshotStore::open(dir.path(), StoreLimits::default()).expect("reopen");
        assert_eq!(s.usage("alice"), (2, 200));
        assert!(!dir.path().join(".tmp-half").exists());
        s.delete("alice", &a.id).expect("delete");
        assert_eq!(s.usage("alice"), (1, 100));
    }

    #[test]
    fn an_expired_snapshot_is_gone() {
        let dir = tempfile::tempdir().expect("tmp");
        let s = SnapshotStore::open(
            dir.path(),
            StoreLimits {
                ttl: Duration::ZERO,
                ..StoreLimits::default()
            },
        )
        .expect("open");
        let m = s.put("alice", &archive(1), vec![], "process").expect("put");
        assert_eq!(s.meta("alice", &m.id).err(), Some(unknown()));
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 0);
    }
}
