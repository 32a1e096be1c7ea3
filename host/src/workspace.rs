//! The run's workspace: a tree in host memory ([`crate::memtree`]), served
//! to the guest as `/work` (`memfs`), that holds the request's files on the
//! way in and the guest's artifacts (`/work/out`) on the way out.
//!
//! Nothing here touches the host's filesystem: no directory, no file
//! descriptor, no system call per guest file. Every byte and entry is
//! charged to the run's `workspace_bytes` and `workspace_entries` when it
//! is written, and a guest's handles are capped by `open_files`. Names are
//! checked before use so that a bad one is a clear error. The tree goes
//! when the last [`Workspace`] reference does.

use crate::blob::Blob;
use crate::envelope::Envelope;
use crate::memtree::{Budget, OpenFlags, ROOT, Tree, TreeError};
use crate::run::{Artifact, InputFile, RefusedArtifact};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    /// The position of the file, never its path: no error quotes a value
    /// the caller sent.
    #[error("files[{index}].path is not allowed: {why}")]
    BadPath { index: usize, why: &'static str },
    #[error("files[{0}].path names the same file as files[{1}].path")]
    Duplicate(usize, usize),
    #[error("the request has {count} files; at most {max} are allowed")]
    TooManyFiles { count: u64, max: u64 },
    #[error("the request's files hold {bytes} bytes; at most {max} are allowed")]
    TooManyBytes { bytes: u64, max: u64 },
    #[error("the request's files do not fit in the workspace ({0})")]
    Tree(#[from] TreeError),
}

/// Artifacts collected after a run.
#[derive(Debug, Default)]
pub struct Collected {
    pub artifacts: Vec<Artifact>,
    pub truncated: bool,
    pub refused: Vec<RefusedArtifact>,
}

pub use crate::workspace_usage::WorkspaceUsage;

/// One run's (or one session's) workspace.
#[derive(Debug)]
pub struct Workspace {
    tree: Mutex<Tree>,
}

fn budget(env: &Envelope) -> Budget {
    Budget {
        bytes: env.workspace_bytes,
        entries: env.workspace_entries,
        handles: u32::try_from(env.open_files).unwrap_or(u32::MAX),
    }
}

/// The host's clock in nanoseconds since the epoch: what the host's own
/// writes (`out/`, placed files) are stamped with.
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl Workspace {
    /// A fresh workspace within `env`'s caps, with an empty `out/` (whose
    /// name and entry count against them).
    pub fn new(env: &Envelope) -> Workspace {
        let mut tree = Tree::new(budget(env));
        tree.set_now(wall_ns());
        // A workspace too small for `out/` has none; collection says so.
        let _ = tree.mkdir(ROOT, OUT_DIR);
        let _ = tree.take_refused_space();
        Workspace {
            tree: Mutex::new(tree),
        }
    }

    /// The tree, for the filesystem the guest sees.
    pub fn tree(&self) -> MutexGuard<'_, Tree> {
        self.tree.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `env`'s caps from now on (a session's next evaluation).
    pub fn set_budget(&self, env: &Envelope) {
        self.tree().set_budget(budget(env));
    }

    /// Whether a write was refused for space since the last call.
    pub fn take_refused_space(&self) -> bool {
        self.tree().take_refused_space()
    }

    /// Checks every file of the request against the envelope, then writes
    /// them (replacing a file of the same name). A file that does not fit
    /// the workspace's caps is an error; the files before it stay.
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
        let mut seen = std::collections::BTreeMap::new();
        for (i, f) in files.iter().enumerate() {
            check_relative_path(&f.path)
                .map_err(|why| WorkspaceError::BadPath { index: i, why })?;
            if let Some(first) = seen.insert(f.path.as_str(), i) {
                return Err(WorkspaceError::Duplicate(i, first));
            }
        }
        let mut tree = self.tree();
        // Placed files are written now, as far as `stat` and `ls -l` go.
        tree.set_now(wall_ns());
        // Placing files is the host's doing, not the guest's: the handles
        // it takes are its own, so the guest's cap does not apply here.
        let guest = tree.budget();
        tree.set_budget(Budget {
            handles: u32::MAX,
            ..guest
        });
        let placed = place(&mut tree, files);
        tree.set_budget(guest);
        let _ = tree.take_refused_space();
        placed
    }

    /// What the workspace holds now.
    pub fn usage(&self) -> WorkspaceUsage {
        let tree = self.tree();
        let out_empty = tree
            .resolve(ROOT, OUT_DIR)
            .and_then(|id| tree.list(id))
            .is_ok_and(|l| l.is_empty());
        WorkspaceUsage {
            bytes: tree.bytes(),
            entries: tree.entries(),
            out_empty,
        }
    }

    /// Collects regular files under `/work/out`, within the envelope's
    /// artifact caps, in name order. Anything nested deeper than
    /// [`MAX_DEPTH`] is refused by name.
    pub fn collect_artifacts(&self, env: &Envelope) -> Collected {
        let tree = self.tree();
        let mut c = Collected::default();
        let out = match tree.resolve(ROOT, OUT_DIR) {
            Ok(id) if tree.stat(id).is_ok_and(|s| s.is_dir) => id,
            _ => {
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
        collect(&tree, out, "", 0, &mut budget, &mut c);
        c
    }

    /// Reads the files `paths` names (relative to `/work`), in that order,
    /// within the envelope's artifact caps: the project artifacts a caller
    /// asked for by name. A path that is not a plain relative path or names
    /// no regular file is refused by name with the reason; one past the
    /// caps sets `truncated`. Call only while no guest runs in the
    /// workspace.
    pub fn collect_named(&self, paths: &[String], env: &Envelope) -> Collected {
        let tree = self.tree();
        let mut c = Collected::default();
        let mut budget = (env.artifact_files, env.artifact_bytes);
        for shown in paths {
            let refuse = |c: &mut Collected, reason: &str| {
                c.refused.push(RefusedArtifact {
                    path: shown.chars().take(256).collect(),
                    reason: reason.to_owned(),
                })
            };
            if check_relative_path(shown).is_err() {
                refuse(&mut c, "name_not_allowed");
                continue;
            }
            match tree.resolve(ROOT, shown) {
                Ok(id) if tree.stat(id).is_ok_and(|s| !s.is_dir) => {
                    take_artifact(&tree, id, shown.clone(), &mut budget, &mut c);
                }
                Ok(_) => refuse(&mut c, "not_a_regular_file"),
                Err(_) => refuse(&mut c, "missing"),
            }
        }
        c
    }
}

fn place(tree: &mut Tree, files: &[InputFile]) -> Result<(), WorkspaceError> {
    for f in files {
        if let Some((parent, _)) = f.path.rsplit_once('/') {
            let mut at = String::new();
            for seg in parent.split('/') {
                if !at.is_empty() {
                    at.push('/');
                }
                at.push_str(seg);
                match tree.mkdir(ROOT, &at) {
                    Ok(_) | Err(TreeError::Exists) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let h = tree.open(
            crate::memtree::HOST,
            ROOT,
            &f.path,
            OpenFlags {
                create: true,
                truncate: true,
                ..OpenFlags::default()
            },
        )?;
        let wrote = tree
            .node_of(h)
            .and_then(|id| tree.write(id, 0, f.content.as_bytes()));
        tree.close(crate::memtree::HOST, h)?;
        wrote?;
    }
    Ok(())
}

/// Whether `p` is a path this module would accept inside the workspace:
/// relative, plain segments only (no `..`, `.`, empty segments, backslashes
/// or control characters), within the length and depth caps.
pub fn is_plain_relative_path(p: &str) -> bool {
    check_relative_path(p).is_ok()
}

/// Validates a request path and returns it as a relative `PathBuf`, or
/// says why not.
fn check_relative_path(p: &str) -> Result<PathBuf, &'static str> {
    if p.is_empty() {
        return Err("empty");
    }
    if p.len() > MAX_PATH_BYTES {
        return Err("longer than 1024 bytes");
    }
    if p.starts_with('/') {
        return Err("absolute");
    }
    if p.contains('\\') {
        return Err("contains a backslash");
    }
    if p.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    let mut out = PathBuf::new();
    let mut depth = 0;
    for seg in p.split('/') {
        match seg {
            "" => return Err("has an empty segment"),
            "." | ".." => return Err("has a `.` or `..` segment"),
            s if s.len() > MAX_NAME_BYTES => return Err("has a name longer than 255 bytes"),
            s => out.push(s),
        }
        depth += 1;
        if depth > MAX_DEPTH {
            return Err("nested too deep");
        }
    }
    Ok(out)
}

/// Reads the file `id` into `c` as the artifact `path`, within `budget`
/// (files, bytes); past the budget it sets `truncated` instead.
fn take_artifact(
    tree: &Tree,
    id: crate::memtree::NodeId,
    path: String,
    budget: &mut (u64, u64),
    c: &mut Collected,
) {
    let size = tree.stat(id).map(|s| s.size).unwrap_or(0);
    if c.truncated || budget.0 == 0 || size > budget.1 {
        c.truncated = true;
        return;
    }
    let content = tree
        .read(id, 0, usize::try_from(size).unwrap_or(usize::MAX))
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    budget.0 -= 1;
    budget.1 -= content.len() as u64;
    c.artifacts.push(Artifact {
        path,
        size: content.len() as u64,
        sha256: hex::encode(Sha256::digest(&content)),
        content: Blob(content),
    });
}

fn collect(
    tree: &Tree,
    dir: crate::memtree::NodeId,
    prefix: &str,
    depth: usize,
    budget: &mut (u64, u64),
    c: &mut Collected,
) {
    let Ok(entries) = tree.list(dir) else { return };
    for (name, is_dir) in entries {
        let shown = format!("{prefix}{name}");
        let refuse = |c: &mut Collected, reason: &str| {
            c.refused.push(RefusedArtifact {
                path: shown.chars().take(256).collect(),
                reason: reason.to_owned(),
            })
        };
        if name.chars().any(char::is_control) {
            refuse(c, "name_not_allowed");
            continue;
        }
        let Ok(id) = tree.resolve(dir, &name) else {
            refuse(c, "unreadable");
            continue;
        };
        if is_dir {
            if depth + 1 >= MAX_DEPTH {
                refuse(c, "too_deep");
                continue;
            }
            collect(tree, id, &format!("{shown}/"), depth + 1, budget, c);
        } else {
            take_artifact(tree, id, shown.clone(), budget, c);
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
        let ws = Workspace::new(&Envelope::default());
        assert!(ws.usage().out_empty, "a new workspace's out/ is empty");
        ws.place_files(&[file("a.txt", "x")], &Envelope::default())
            .expect("placed");
        assert!(ws.usage().out_empty, "a file outside out/ is no artifact");
        ws.place_files(&[file("out/deep/b.txt", "y")], &Envelope::default())
            .expect("placed");
        assert!(!ws.usage().out_empty);
        let c = ws.collect_artifacts(&Envelope::default());
        assert_eq!(c.artifacts.len(), 1);
        assert_eq!(c.artifacts[0].path, "deep/b.txt");
        // A replaced out/ is not reported empty: collection says why.
        let ws = Workspace::new(&Envelope::default());
        ws.tree().rmdir(ROOT, OUT_DIR).expect("remove out/");
        ws.place_files(&[file(OUT_DIR, "not a dir")], &Envelope::default())
            .expect("placed");
        assert!(!ws.usage().out_empty);
        assert_eq!(ws.collect_artifacts(&Envelope::default()).refused.len(), 1);
    }

    #[test]
    fn named_files_are_read_in_order() {
        let ws = Workspace::new(&Envelope::default());
        ws.place_files(
            &[file("b.txt", "bee"), file("d/a.txt", "a")],
            &Envelope::default(),
        )
        .expect("placed");
        let names: Vec<String> = ["d/a.txt", "b.txt", "nope", "../x", "d"]
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
            ["missing", "name_not_allowed", "not_a_regular_file"]
        );
        let env = Envelope {
            artifact_bytes: 2,
            ..Envelope::default()
        };
        let c = ws.collect_named(&names[..2], &env);
        assert!(c.truncated && c.artifacts.len() == 1, "{c:?}");
    }

    #[test]
    fn request_files_are_charged_to_the_workspace() {
        let env = Envelope {
            workspace_bytes: 10,
            ..Envelope::default()
        };
        let ws = Workspace::new(&env);
        let e = ws
            .place_files(&[file("big", "0123456789ab")], &env)
            .expect_err("over the cap");
        assert!(matches!(e, WorkspaceError::Tree(TreeError::NoSpace)), "{e}");
        assert!(
            !ws.take_refused_space(),
            "the host's refusal is not the guest's"
        );
    }

    #[test]
    fn rejects_escaping_and_odd_names() {
        for p in ["../x", "/abs", "a//b", "a/./b", "", "a\\b", "a\u{1}b"] {
            assert!(!is_plain_relative_path(p), "{p:?} should be refused");
        }
        assert!(is_plain_relative_path("data/input.csv"));
        let ws = Workspace::new(&Envelope::default());
        assert!(
            ws.place_files(&[file("../x", "")], &Envelope::default())
                .is_err()
        );
        assert!(
            ws.place_files(&[file("a", ""), file("a", "")], &Envelope::default())
                .is_err()
        );
    }
}
