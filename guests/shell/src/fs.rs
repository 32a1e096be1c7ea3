//! Paths: every path the shell touches is resolved lexically against its
//! working directory to an absolute path, which must lie inside `/work`
//! (or `/tmp`, an alias of `/work/.plimsoll-shell/tmp`); anything else does
//! not exist. `/work` maps to a configurable root directory, so native
//! tests run on a temporary directory.

use std::io;
use std::path::{Path, PathBuf};

/// The workspace as the shell shows it.
pub const WORK: &[u8] = b"/work";
/// Where `/tmp` lives.
pub const TMP_DIR: &[u8] = b"/work/.plimsoll-shell/tmp";

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A file or directory under the root: the host path.
    Path(PathBuf),
    /// `/dev/null`.
    Null,
    /// `/dev/stdin`, `/dev/stdout`, `/dev/stderr` (descriptor 0, 1, 2).
    Std(usize),
}

/// The file system view: where `/work` is.
#[derive(Debug, Clone)]
pub struct Fs {
    root: PathBuf,
}

impl Fs {
    /// `/work` is `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Fs { root: root.into() }
    }

    /// The absolute, normalised form of `path` seen from `cwd` (`.`, `..`
    /// and repeated slashes resolved lexically; `/tmp…` mapped to
    /// [`TMP_DIR`], which is created on first use).
    pub fn absolute(&self, cwd: &[u8], path: &[u8]) -> Vec<u8> {
        let mut parts: Vec<&[u8]> = Vec::new();
        let joined: Vec<u8>;
        let full: &[u8] = if path.starts_with(b"/") {
            path
        } else {
            joined = [cwd, b"/", path].concat();
            &joined
        };
        for seg in full.split(|&c| c == b'/') {
            match seg {
                b"" | b"." => {}
                b".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        let mut out = Vec::with_capacity(full.len() + 1);
        for p in &parts {
            out.push(b'/');
            out.extend_from_slice(p);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        if out == b"/tmp" || out.starts_with(b"/tmp/") {
            let rest = out[4..].to_vec();
            out = [TMP_DIR, &rest].concat();
            if let Some(Target::Path(p)) = self.target(TMP_DIR) {
                let _ = std::fs::create_dir_all(p);
            }
        }
        out
    }

    /// How a path [`Fs::absolute`] returned is shown to the script: the
    /// inside of [`TMP_DIR`] as `/tmp…` again, so that `cd /tmp; pwd`
    /// prints `/tmp` (resolving it maps it back).
    pub fn logical(abs: &[u8]) -> Vec<u8> {
        match abs.strip_prefix(TMP_DIR) {
            Some(rest) if rest.is_empty() || rest.starts_with(b"/") => {
                [&b"/tmp"[..], rest].concat()
            }
            _ => abs.to_vec(),
        }
    }

    /// What the absolute path `abs` names; `None` outside `/work`.
    pub fn target(&self, abs: &[u8]) -> Option<Target> {
        match abs {
            b"/dev/null" => return Some(Target::Null),
            b"/dev/stdin" | b"/dev/fd/0" => return Some(Target::Std(0)),
            b"/dev/stdout" | b"/dev/fd/1" => return Some(Target::Std(1)),
            b"/dev/stderr" | b"/dev/fd/2" => return Some(Target::Std(2)),
            _ => {}
        }
        let rest = if abs == WORK {
            &b""[..]
        } else if abs.starts_with(b"/work/") {
            &abs[6..]
        } else {
            return None;
        };
        let mut p = self.root.clone();
        if !rest.is_empty() {
            p.push(bytes_to_path(rest));
        }
        Some(Target::Path(p))
    }

    /// The host path of `path` seen from `cwd`, or `ENOENT` when it is
    /// outside `/work` (or a device).
    pub fn host(&self, cwd: &[u8], path: &[u8]) -> io::Result<PathBuf> {
        match self.target(&self.absolute(cwd, path)) {
            Some(Target::Path(p)) => Ok(p),
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    /// The root directory standing for `/work`.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Bytes as a path (lossy where the platform needs UTF-8).
pub fn bytes_to_path(b: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(b))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(String::from_utf8_lossy(b).into_owned())
    }
}

/// A file name as bytes.
pub fn name_bytes(s: &std::ffi::OsStr) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        s.as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        s.to_string_lossy().into_owned().into_bytes()
    }
}

/// The coreutils wording of an I/O error (`No such file or directory`, …).
pub fn error_text(e: &io::Error) -> String {
    use io::ErrorKind::*;
    let known = match e.kind() {
        NotFound => "No such file or directory",
        PermissionDenied => "Permission denied",
        AlreadyExists => "File exists",
        IsADirectory => "Is a directory",
        NotADirectory => "Not a directory",
        DirectoryNotEmpty => "Directory not empty",
        StorageFull => "No space left on device",
        QuotaExceeded => "Disk quota exceeded",
        FileTooLarge => "File too large",
        ReadOnlyFilesystem => "Read-only file system",
        CrossesDevices => "Invalid cross-device link",
        InvalidFilename => "File name too long",
        Unsupported => "Operation not supported",
        OutOfMemory => "Cannot allocate memory",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// The last component of an absolute path (`/` for the root).
pub fn base_name(p: &[u8]) -> &[u8] {
    let t = p.strip_suffix(b"/").unwrap_or(p);
    match t.iter().rposition(|&c| c == b'/') {
        Some(i) => &t[i + 1..],
        None => t,
    }
}
