//! The run's workspace: a fresh directory, preopened in the guest as
//! `/work`, that holds the request's files on the way in and the guest's
//! artifacts (`/work/out`) on the way out.
//!
//! All access goes through a `cap_std::fs::Dir` rooted at the workspace, so
//! no name — the caller's or the guest's — can reach outside it, and every
//! name is also checked before use so that a bad one is a clear error rather
//! than a quiet sandboxed failure. The directory is removed when the
//! [`Workspace`] is dropped.

use crate::blob::Blob;
use crate::envelope::Envelope;
use crate::run::{Artifact, InputFile, RefusedArtifact};
use crate::tree_changes::TreeChanges;
use cap_std::fs::Dir;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Where artifacts are collected from, relative to the workspace.
pub const OUT_DIR: &str = "out";
/// Longest file path accepted from a request, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest single name, in bytes.
pub const MAX_NAME_BYTES: usize = 255;
/// Deepest directory nesting walked or created.
pub const MAX_DEPTH: usize = 16;

/// Why the workspace could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("file path {path:?} is not allowed: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("file path {0:?} appears twice")]
    Duplicate(String),
    #[error("the request has {count} files; at most {max} are allowed")]
    TooManyFiles { count: u64, max: u64 },
    #[error("the request's files hold {bytes} bytes; at most {max} are allowed")]
    TooManyBytes { bytes: u64, max: u64 },
    #[error("workspace I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Artifacts collected after a run.
#[derive(Debug, Default)]
pub struct Collected {
    pub artifacts: Vec<Artifact>,
    pub truncated: bool,
    pub refused: Vec<RefusedArtifact>,
}

pub use crate::workspace_usage::WorkspaceUsage;

/// One run's workspace directory.
#[derive(Debug)]
pub struct Workspace {
    // Declared first so that the handle closes before the directory goes.
    root: Dir,
    /// Set by [`Workspace::track_changes`]: lets [`Workspace::usage`] skip
    /// the walk while nothing changed.
    changes: Mutex<Option<TreeChanges>>,
    dir: tempfile::TempDir,
}

impl Workspace {
    /// Creates a fresh workspace (mode 0700) under `base`, which must
    /// exist, with an empty `out/`.
    pub fn create(base: &Path) -> Result<Self, WorkspaceError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("run-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(base)?;
        let opened = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority())
            .and_then(|root| root.create_dir(OUT_DIR).map(|()| root));
        let root = match opened {
            Ok(root) => root,
            Err(e) => {
                // `TempDir`'s own clean-up opens the directory, which fails
                // for the same reason this did when descriptors ran out
                // (EMFILE): remove the (empty) directories by path instead,
                // which needs no descriptor.
                let path = dir.keep();
                let _ = std::fs::remove_dir(path.join(OUT_DIR));
                let _ = std::fs::remove_dir(&path);
                return Err(e.into());
            }
        };
        Ok(Workspace {
            root,
            changes: Mutex::new(None),
            dir,
        })
    }

    /// From now on, [`Workspace::usage`] walks the workspace only when the
    /// kernel reported a change under it since the last walk (inotify; see
    /// `tree_changes`), and otherwise returns that walk's result. For
    /// sessions, which measure after every evaluation. Best effort: where
    /// the kernel gives no such feed, every measurement still walks.
    pub fn track_changes(&self) {
        let mut changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        if changes.is_none() {
            *changes = TreeChanges::new();
        }
    }

    /// Walks so far of a workspace that tracks changes (for tests).
    #[cfg(test)]
    fn walks(&self) -> Option<u64> {
        let changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        changes.as_ref().map(TreeChanges::walks)
    }

    /// The host path of the workspace (what is preopened as `/work`).
    pub fn host_path(&self) -> &Path {
        self.dir.path()
    }

    /// Checks every file of the request against the envelope, then writes
    /// them. Nothing is written unless all are acceptable.
    pub fn place_files(&self, files: &[InputFile], env: &Envelope) -> Result<(), WorkspaceError> {
        if files.len() as u64 > env.files {
            return Err(WorkspaceError::TooManyFiles {
                count: files.len() as u64,
                max: env.files,
            });
        }
        let bytes: u64 = files.iter().map(|f| f.content.len() as u64).sum();
        if bytes > env.file_bytes {
            return Err(WorkspaceError::TooManyBytes {
                bytes,
                max: env.file_bytes,
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut checked = Vec::with_capacity(files.len());
        for f in files {
            let rel = check_relative_path(&f.path)?;
            if !seen.insert(rel.clone()) {
                return Err(WorkspaceError::Duplicate(f.path.clone()));
            }
            checked.push((rel, &f.content));
        }
        for (rel, content) in checked {
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                self.root.create_dir_all(parent)?;
            }
            self.root.write(&rel, content.as_bytes())?;
        }
        Ok(())
    }

    /// Measures the workspace, stopping early once `max_entries` is passed.
    /// A workspace that [tracks changes](Workspace::track_changes) returns
    /// its last measurement instead while nothing changed.
    pub fn usage(&self, max_entries: u64) -> WorkspaceUsage {
        let mut changes = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let mut feed = changes.as_mut();
        if let Some(c) = feed.as_deref_mut() {
            // Drained before the walk: see `tree_changes` for why that
            // order makes the skip sound.
            if let Some(u) = c.unchanged_usage(max_entries) {
                return u;
            }
            c.begin_walk();
        }
        let mut u = WorkspaceUsage::default();
        let complete = measure(&self.root, 0, max_entries, &mut u, &mut feed);
        if let Some(c) = feed {
            c.end_walk(max_entries, u, complete);
        }
        u
    }

    /// Collects regular files under `/work/out`, within the envelope's
    /// artifact caps. Symlinks, devices, FIFOs, sockets, non-UTF-8 names and
    /// anything nested deeper than [`MAX_DEPTH`] are refused by name.
    pub fn collect_artifacts(&self, env: &Envelope) -> Collected {
        let mut c = Collected::default();
        // The guest has finished, so nothing changes `out` between this
        // check and the open: a symlink is refused, never followed.
        let is_dir = self
            .root
            .symlink_metadata(OUT_DIR)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        let out = match self.root.open_dir(OUT_DIR).ok().filter(|_| is_dir) {
            Some(d) => d,
            None => {
                // The guest removed `out/` or replaced it with something
                // else: nothing to collect, but say so.
                c.refused.push(RefusedArtifact {
                    path: String::new(),
                    reason: "out_not_a_directory".into(),
                });
                return c;
            }
        };
        let mut budget = (env.artifact_files, env.artifact_bytes);
        collect(&out, "", 0, &mut budget, &mut c);
        c.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
        c
    }
}

impl Workspace {
    /// Reads the files `paths` names (relative to `/work`), in that order,
    /// within the envelope's artifact caps: the project artifacts a caller
    /// asked for by name. A path that is not a plain relative path, names
    /// no regular file (a symlink, a directory, nothing) or cannot be read
    /// is refused by name with the reason; one past the caps sets
    /// `truncated`. Call only while no guest runs in the workspace.
    pub fn collect_named(&self, paths: &[String], env: &Envelope) -> Collected {
        let mut c = Collected::default();
        let mut budget = (env.artifact_files, env.artifact_bytes);
        for shown in paths {
            let refuse = |c: &mut Collected, reason: &str| {
                c.refused.push(RefusedArtifact {
                    path: shown.chars().take(256).collect(),
                    reason: reason.to_owned(),
                })
            };
            let Ok(rel) = check_relative_path(shown) else {
                refuse(&mut c, "name_not_allowed");
                continue;
            };
            // Within the root whatever the path holds (cap-std); the last
            // component must itself be a regular file, never a link.
            let md = match self.root.symlink_metadata(&rel) {
                Ok(md) => md,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    refuse(&mut c, "missing");
                    continue;
                }
                Err(_) => {
                    refuse(&mut c, "unreadable");
                    continue;
                }
            };
            if md.file_type().is_symlink() {
                refuse(&mut c, "symlink");
                continue;
            }
            if !md.is_file() {
                refuse(&mut c, "not_a_regular_file");
                continue;
            }
            if c.truncated || budget.0 == 0 || md.len() > budget.1 {
                c.truncated = true;
                continue;
            }
            if let Err(why) =
                take_artifact(self.root.open(&rel), shown.clone(), &mut budget, &mut c)
            {
                refuse(&mut c, why);
            }
        }
        c
    }
}

/// Whether `p` is a path this module would accept inside the workspace:
/// relative, plain segments only (no `..`, `.`, empty segments, backslashes
/// or control characters), within the length and depth caps.
pub fn is_plain_relative_path(p: &str) -> bool {
    check_relative_path(p).is_ok()
}

/// Validates a request path and returns it as a relative `PathBuf`.
fn check_relative_path(p: &str) -> Result<PathBuf, WorkspaceError> {
    let bad = |why| WorkspaceError::BadPath {
        path: p.chars().take(128).collect(),
        why,
    };
    if p.is_empty() {
        return Err(bad("empty"));
    }
    if p.len() > MAX_PATH_BYTES {
        return Err(bad("longer than 1024 bytes"));
    }
    if p.starts_with('/') {
        return Err(bad("absolute"));
    }
    if p.contains('\\') {
        return Err(bad("contains a backslash"));
    }
    if p.chars().any(char::is_control) {
        return Err(bad("contains a control character"));
    }
    let mut out = PathBuf::new();
    let mut depth = 0;
    for seg in p.split('/') {
        match seg {
            "" => return Err(bad("has an empty segment")),
            "." | ".." => return Err(bad("has a `.` or `..` segment")),
            s if s.len() > MAX_NAME_BYTES => return Err(bad("has a name longer than 255 bytes")),
            s => out.push(s),
        }
        depth += 1;
        if depth > MAX_DEPTH {
            return Err(bad("nested too deep"));
        }
    }
    Ok(out)
}

/// Adds what is under `dir` to `u`, watching every directory it enters
/// when the workspace tracks changes. False if it stopped early (past the
/// entry cap, too deep, or a directory it could not read or enter).
fn measure(
    dir: &Dir,
    depth: usize,
    max_entries: u64,
    u: &mut WorkspaceUsage,
    changes: &mut Option<&mut TreeChanges>,
) -> bool {
    if let Some(c) = changes.as_deref_mut() {
        // Before reading it: an entry added after this is an event.
        c.watch(dir);
    }
    let Ok(entries) = dir.entries() else {
        return false;
    };
    let mut complete = true;
    for entry in entries {
        let Ok(entry) = entry else {
            complete = false;
            continue;
        };
        u.entries += 1;
        if u.entries > max_entries {
            return false;
        }
        let Ok(ft) = entry.file_type() else {
            complete = false;
            continue;
        };
        if ft.is_dir() {
            if depth < 64 {
                if let Ok(sub) = entry.open_dir() {
                    let before = u.entries;
                    complete &= measure(&sub, depth + 1, max_entries, u, changes);
                    if depth == 0 && entry.file_name() == OUT_DIR && u.entries == before {
                        u.out_empty = true;
                    }
                } else {
                    complete = false;
                }
            } else {
                // Deeper than any legitimate tree: count it as over the cap
                // rather than recurse without bound.
                u.entries = max_entries.saturating_add(1);
                return false;
            }
        } else if let Ok(md) = entry.metadata() {
            u.bytes = u.bytes.saturating_add(md.len());
        } else {
            complete = false;
        }
    }
    complete
}

/// Reads the file `opened` into `c` as the artifact `path`, within
/// `budget` (files, bytes); one that grew past the budget since it was
/// measured sets `truncated`. `Err` names why it could not be read.
fn take_artifact(
    opened: std::io::Result<cap_std::fs::File>,
    path: String,
    budget: &mut (u64, u64),
    c: &mut Collected,
) -> Result<(), &'static str> {
    let mut content = Vec::new();
    opened
        .and_then(|f| f.take(budget.1.saturating_add(1)).read_to_end(&mut content))
        .map_err(|_| "unreadable")?;
    if content.len() as u64 > budget.1 {
        c.truncated = true;
        return Ok(());
    }
    budget.0 -= 1;
    budget.1 -= content.len() as u64;
    c.artifacts.push(Artifact {
        path,
        size: content.len() as u64,
        sha256: hex::encode(Sha256::digest(&content)),
        content: Blob(content),
    });
    Ok(())
}

fn collect(dir: &Dir, prefix: &str, depth: usize, budget: &mut (u64, u64), c: &mut Collected) {
    let Ok(entries) = dir.entries() else { return };
    let mut names: Vec<_> = entries.flatten().collect();
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let raw = entry.file_name();
        let shown = format!("{prefix}{}", raw.to_string_lossy());
        let refuse = |c: &mut Collected, reason: &str| {
            c.refused.push(RefusedArtifact {
                path: shown.chars().take(256).collect(),
                reason: reason.to_owned(),
            })
        };
        let Some(name) = raw.to_str() else {
            refuse(c, "name_not_utf8");
            continue;
        };
        if name.chars().any(char::is_control) || name.contains('\\') {
            refuse(c, "name_not_allowed");
            continue;
        }
        let Ok(ft) = entry.file_type() else {
            refuse(c, "unreadable");
            continue;
        };
        if ft.is_symlink() {
            refuse(c, "symlink");
        } else if ft.is_dir() {
            if depth + 1 >= MAX_DEPTH {
                refuse(c, "too_deep");
                continue;
            }
            match dir.open_dir(name) {
                Ok(sub) => collect(&sub, &format!("{prefix}{name}/"), depth + 1, budget, c),
                Err(_) => refuse(c, "unreadable"),
            }
        } else if ft.is_file() {
            if c.truncated {
                continue;
            }
            let Ok(md) = entry.metadata() else {
                refuse(c, "unreadable");
                continue;
            };
            if budget.0 == 0 || md.len() > budget.1 {
                c.truncated = true;
                continue;
            }
            if let Err(why) = take_artifact(entry.open(), format!("{prefix}{name}"), budget, c) {
                refuse(c, why);
            }
        } else {
            refuse(c, "not_a_regular_file");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, content: &str) -> InputFile {
        InputFile {
            path: path.into(),
            content: content.into(),
        }
    }

    #[test]
    fn usage_says_when_out_is_empty() {
        let base = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::create(base.path()).expect("workspace");
        assert!(ws.usage(100).out_empty, "a new workspace's out/ is empty");
        ws.place_files(&[file("a.txt", "x")], &Envelope::default())
            .expect("placed");
        assert!(
            ws.usage(100).out_empty,
            "a file outside out/ is no artifact"
        );
        ws.place_files(&[file("out/deep/b.txt", "y")], &Envelope::default())
            .expect("placed");
        assert!(!ws.usage(100).out_empty);
        // A replaced out/ is not reported empty: collection says why.
        let ws = Workspace::create(base.path()).expect("workspace");
        ws.root.remove_dir(OUT_DIR).expect("remove out/");
        ws.root.write(OUT_DIR, b"not a dir").expect("write out");
        assert!(!ws.usage(100).out_empty);
        assert_eq!(ws.collect_artifacts(&Envelope::default()).refused.len(), 1);
    }

    #[test]
    fn named_files_are_read_in_order_and_links_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::create(base.path()).expect("workspace");
        ws.place_files(
            &[file("b.txt", "bee"), file("d/a.txt", "a")],
            &Envelope::default(),
        )
        .expect("placed");
        std::os::unix::fs::symlink("/etc/passwd", ws.host_path().join("link")).expect("link");
        let names: Vec<String> = ["d/a.txt", "b.txt", "link", "nope", "../x", "d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = ws.collect_named(&names, &Envelope::default());
        let got: Vec<_> = c.artifacts.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(got, ["d/a.txt", "b.txt"]);
        assert_eq!(c.artifacts[1].content.as_bytes(), b"bee");
        let reasons: Vec<_> = c.refused.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "symlink",
                "missing",
                "name_not_allowed",
                "not_a_regular_file"
            ]
        );
        let env = Envelope {
            artifact_bytes: 2,
            ..Envelope::default()
        };
        let c = ws.collect_named(&names[..2], &env);
        assert!(c.truncated && c.artifacts.len() == 1, "{c:?}");
    }

    #[test]
    fn rejects_escaping_and_odd_names() {
        for p in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a\\b",
            "a\nb",
            "a/.",
        ] {
            assert!(check_relative_path(p).is_err(), "{p:?} accepted");
        }
        assert!(check_relative_path(&"a/".repeat(20)).is_err());
        assert!(check_relative_path(&"x".repeat(300)).is_err());
        assert!(check_relative_path("data/in.csv").is_ok());
    }

    #[test]
    fn files_round_trip_as_artifacts_and_the_directory_goes_away() {
        let base = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::create(base.path()).expect("workspace");
        let path = ws.host_path().to_path_buf();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(
                &std::fs::metadata(&path).expect("md").permissions()
            ) & 0o777,
            0o700
        );
        let env = Envelope::default();
        ws.place_files(
            &[file("out/a.txt", "alpha"), file("out/d/b.txt", "beta")],
            &env,
        )
        .expect("placed");
        std::os::unix::fs::symlink("/etc/passwd", path.join("out/link")).expect("symlink");
        let c = ws.collect_artifacts(&env);
        let names: Vec<_> = c.artifacts.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(names, ["a.txt", "d/b.txt"]);
        assert_eq!(c.refused.len(), 1);
        assert_eq!(c.refused[0].reason, "symlink");
        drop(ws);
        assert!(!path.exists());
    }

    #[test]
    fn caps_are_checked_before_anything_is_written() {
        let base = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::create(base.path()).expect("workspace");
        let env = Envelope {
            files: 1,
            ..Envelope::default()
        };
        let err = ws.place_files(&[file("a", "1"), file("b", "2")], &env);
        assert!(matches!(err, Err(WorkspaceError::TooManyFiles { .. })));
        let err = ws.place_files(&[file("a", "1"), file("../b", "2")], &Envelope::default());
        assert!(matches!(err, Err(WorkspaceError::BadPath { .. })));
        assert!(!ws.host_path().join("a").exists());
    }

    #[test]
    fn artifact_caps_truncate() {
        let base = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::create(base.path()).expect("workspace");
        let env = Envelope {
            artifact_bytes: 4,
            ..Envelope::default()
        };
        ws.place_files(
            &[file("out/a", "12"), file("out/b", "345")],
            &Envelope::default(),
        )
        .expect("placed");
        let c = ws.collect_artifacts(&env);
        assert_eq!(c.artifacts.len(), 1);
        assert!(c.truncated);
    }

    /// An untracked walk of `ws`: the truth to compare with.
    fn walked(ws: &Workspace, max_entries: u64) -> WorkspaceUsage {
        let mut u = WorkspaceUsage::default();
        measure(&ws.root, 0, max_entries, &mut u, &mut None);
        u
    }

    /// A tracked workspace, or `None` (said loudly) where this kernel gives
    /// no inotify feed.
    fn tracked(base: &Path) -> Option<Workspace> {
        let ws = Workspace::create(base).expect("workspace");
        ws.track_changes();
        if ws.walks().is_none() {
            eprintln!("SKIPPED: no inotify here; tracked workspaces walk every time");
            return None;
        }
        Some(ws)
    }

    #[test]
    fn a_tracked_workspace_is_walked_again_only_after_a_change() {
        let base = tempfile::tempdir().expect("tempdir");
        let Some(ws) = tracked(base.path()) else {
            return;
        };
        let first = ws.usage(100);
        for _ in 0..5 {
            assert_eq!(ws.usage(100), first);
        }
        assert_eq!(ws.walks(), Some(1), "nothing changed: one walk");
        // Another entry cap is another measurement.
        ws.usage(50);
        assert_eq!(ws.walks(), Some(2));
        ws.usage(100);
        assert_eq!(ws.walks(), Some(3));
        std::fs::write(ws.host_path().join("a"), b"xyz").expect("write");
        assert_eq!(ws.usage(100).bytes, 3);
        assert_eq!(ws.walks(), Some(4));
        assert_eq!(ws.usage(100).bytes, 3);
        assert_eq!(ws.walks(), Some(4));
        // A walk that stops early (past the cap) is not kept.
        ws.usage(1);
        ws.usage(1);
        assert_eq!(ws.walks(), Some(6));
    }

    #[test]
    fn a_workspace_with_too_many_directories_to_watch_is_walked_every_time() {
        let base = tempfile::tempdir().expect("tempdir");
        let Some(ws) = tracked(base.path()) else {
            return;
        };
        // With `out/` and the root itself, one directory over the limit.
        for i in 0..crate::tree_changes::MAX_WATCHED_DIRS - 1 {
            std::fs::create_dir(ws.host_path().join(format!("d{i}"))).expect("mkdir");
        }
        ws.usage(100_000);
        let walks = ws.walks().unwrap_or(0);
        ws.usage(100_000);
        assert_eq!(ws.walks(), Some(walks + 1), "not kept: walked again");
        // Back under the limit, it is kept again.
        std::fs::remove_dir(ws.host_path().join("d0")).expect("rmdir");
        ws.usage(100_000);
        ws.usage(100_000);
        assert_eq!(ws.walks(), Some(walks + 2));
    }

    /// A long random run of every kind of change a guest can make, some
    /// through handles opened before earlier measurements and in
    /// directories created since: after each, the tracked measurement is
    /// the fresh walk's.
    #[test]
    fn a_tracked_workspace_sees_every_kind_of_change() {
        use std::io::{Seek, Write};
        let base = tempfile::tempdir().expect("tempdir");
        let Some(ws) = tracked(base.path()) else {
            return;
        };
        let root = ws.host_path().to_path_buf();
        let mut dirs = vec![root.clone(), root.join(OUT_DIR)];
        let mut files: Vec<(PathBuf, std::fs::File)> = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        for step in 0..600 {
            let what = match next(9) {
                0 | 1 => {
                    let d = dirs[next(dirs.len())].clone();
                    let p = d.join(format!("f{step}"));
                    let mut f = std::fs::File::create(&p).expect("create");
                    f.write_all(&vec![b'x'; next(300)]).expect("write");
                    files.push((p, f));
                    "create a file"
                }
                2 if !files.is_empty() => {
                    // Through a handle opened steps ago.
                    let i = next(files.len());
                    let f = &mut files[i].1;
                    f.seek(std::io::SeekFrom::End(0)).expect("seek");
                    f.write_all(&vec![b'y'; 1 + next(5000)]).expect("append");
                    "append through an old handle"
                }
                3 if !files.is_empty() => {
                    let i = next(files.len());
                    files[i].1.set_len(next(100) as u64).expect("truncate");
                    "truncate through an old handle"
                }
                4 => {
                    let d = dirs[next(dirs.len())].clone();
                    if d.components().count() < root.components().count() + 4 {
                        let p = d.join(format!("d{step}"));
                        std::fs::create_dir(&p).expect("mkdir");
                        dirs.push(p);
                    }
                    "make a directory"
                }
                5 if !files.is_empty() => {
                    let i = next(files.len());
                    let to = dirs[next(dirs.len())].join(format!("m{step}"));
                    std::fs::rename(&files[i].0, &to).expect("rename");
                    files[i].0 = to;
                    "move a file"
                }
                6 if !files.is_empty() => {
                    let (p, _) = files.swap_remove(next(files.len()));
                    std::fs::remove_file(p).expect("remove");
                    "remove a file"
                }
                7 if dirs.len() > 2 => {
                    let i = 2 + next(dirs.len() - 2);
                    if std::fs::remove_dir(&dirs[i]).is_ok() {
                        dirs.swap_remove(i);
                    }
                    "remove an empty directory"
                }
                _ => "nothing",
            };
            assert_eq!(ws.usage(10_000), walked(&ws, 10_000), "step {step}: {what}");
        }
        let walks = ws.walks().unwrap_or(0);
        assert!(walks < 600, "some steps changed nothing: {walks} walks");
    }
}
