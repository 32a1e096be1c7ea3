//! File operations: `mkdir`, `rmdir`, `rm`, `mv`, `cp`, `touch`, `chmod`
//! (and `chown`/`chgrp`: accepted, the workspace keeps no modes), `ln`
//! (refused: the workspace has no links).

use super::walk::{Visit, walk};
use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::{Target, base_name, error_text};
use crate::io::Io;
use std::path::{Path, PathBuf};

fn flags(
    u: &Ctx,
    argv: &[Vec<u8>],
    valued: &[u8],
    long_valued: &[&str],
) -> Option<(Vec<Opt>, Vec<Vec<u8>>)> {
    match getopt(&argv[1..], valued, long_valued, true) {
        Ok(x) => Some(x),
        Err(e) => {
            u.err(e);
            None
        }
    }
}

fn has(opts: &[Opt], short: &[u8], long: &[&str]) -> bool {
    opts.iter().any(|o| match o {
        Opt::Short(c, _) => short.contains(c),
        Opt::Long(n, _) => long.contains(&n.as_str()),
    })
}

fn q(p: &[u8]) -> String {
    format!("'{}'", lossy(p))
}

/// `mkdir [-p] [-v] [-m MODE] DIR…`.
pub fn mkdir(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "mkdir");
    let Some((opts, dirs)) = flags(&u, argv, b"m", &["mode"]) else {
        return 1;
    };
    let parents = has(&opts, b"p", &["parents"]);
    let verbose = has(&opts, b"v", &["verbose"]);
    if dirs.is_empty() {
        u.err("missing operand");
        return 1;
    }
    let mut status = 0;
    for d in &dirs {
        let Ok(host) = u.host(d) else {
            u.err(format!(
                "cannot create directory {}: No such file or directory",
                q(d)
            ));
            status = 1;
            continue;
        };
        let r = if parents {
            match std::fs::metadata(&host) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists)),
                Err(_) => std::fs::create_dir_all(&host),
            }
        } else {
            std::fs::create_dir(&host)
        };
        match r {
            Ok(()) => {
                if verbose {
                    let _ = u.out(format!("mkdir: created directory {}\n", q(d)).as_bytes());
                }
            }
            Err(e) => {
                u.err(format!(
                    "cannot create directory {}: {}",
                    q(d),
                    error_text(&e)
                ));
                status = 1;
            }
        }
    }
    status
}

/// `rmdir [-p] DIR…`.
pub fn rmdir(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "rmdir");
    let Some((opts, dirs)) = flags(&u, argv, b"", &[]) else {
        return 1;
    };
    let parents = has(&opts, b"p", &["parents"]);
    let quiet = has(&opts, b"", &["ignore-fail-on-non-empty"]);
    let mut status = 0;
    for d in &dirs {
        let mut cur = d.clone();
        loop {
            let r = u.host(&cur).and_then(std::fs::remove_dir);
            if let Err(e) = r {
                let not_empty = e.kind() == std::io::ErrorKind::DirectoryNotEmpty;
                if !(quiet && not_empty) {
                    u.err(format!("failed to remove {}: {}", q(&cur), error_text(&e)));
                    status = 1;
                }
                break;
            }
            if !parents {
                break;
            }
            match cur.iter().rposition(|&c| c == b'/') {
                Some(i) if i > 0 => cur.truncate(i),
                _ => break,
            }
        }
    }
    status
}

fn is_root(u: &Ctx, p: &[u8]) -> bool {
    u.sh.fs.absolute(&u.sh.cwd, p) == crate::fs::WORK
}

/// `rm [-rRfdv] [--] PATH…`.
pub fn rm(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "rm");
    let Some((opts, paths)) = flags(&u, argv, b"", &[]) else {
        return 1;
    };
    let recursive = has(&opts, b"rR", &["recursive"]);
    let force = has(&opts, b"f", &["force"]);
    let dir_ok = has(&opts, b"d", &["dir"]);
    let verbose = has(&opts, b"v", &["verbose"]);
    if paths.is_empty() && !force {
        u.err("missing operand");
        return 1;
    }
    let mut status = 0;
    for p in &paths {
        let base = base_name(p);
        if base == b"." || base == b".." {
            u.err(format!(
                "refusing to remove '.' or '..' directory: skipping {}",
                q(p)
            ));
            status = 1;
            continue;
        }
        if is_root(&u, p) {
            u.err(format!(
                "it is dangerous to operate recursively on {} (the workspace root)",
                q(p)
            ));
            status = 1;
            continue;
        }
        let host = match u.target(p) {
            Some(Target::Path(h)) => h,
            _ => {
                if !force {
                    u.err(format!("cannot remove {}: No such file or directory", q(p)));
                    status = 1;
                }
                continue;
            }
        };
        let meta = match std::fs::symlink_metadata(&host) {
            Ok(m) => m,
            Err(e) => {
                if !(force && e.kind() == std::io::ErrorKind::NotFound) {
                    u.err(format!("cannot remove {}: {}", q(p), error_text(&e)));
                    status = 1;
                }
                continue;
            }
        };
        let r = if meta.is_dir() {
            if recursive {
                std::fs::remove_dir_all(&host)
            } else if dir_ok {
                std::fs::remove_dir(&host)
            } else {
                u.err(format!("cannot remove {}: Is a directory", q(p)));
                status = 1;
                continue;
            }
        } else {
            std::fs::remove_file(&host)
        };
        match r {
            Ok(()) => {
                if verbose {
                    let _ = u.out(format!("removed {}\n", q(p)).as_bytes());
                }
            }
            Err(e) => {
                u.err(format!("cannot remove {}: {}", q(p), error_text(&e)));
                status = 1;
            }
        }
    }
    status
}

/// Where `src` goes for `mv`/`cp` given `dest` (into it when it is a
/// directory, unless `-T`).
fn destination(dest_host: &Path, src: &[u8], no_target_dir: bool) -> PathBuf {
    if !no_target_dir && dest_host.is_dir() {
        dest_host.join(crate::fs::bytes_to_path(base_name(src)))
    } else {
        dest_host.to_path_buf()
    }
}

fn split_target(opts: &[Opt], mut ops: Vec<Vec<u8>>) -> Option<(Vec<Vec<u8>>, Vec<u8>, bool)> {
    for o in opts {
        if let Opt::Short(b't', Some(d)) | Opt::Long(_, Some(d)) = o {
            return Some((ops, d.clone(), true));
        }
    }
    let dest = ops.pop()?;
    Some((ops, dest, false))
}

/// `mv [-fnivT] [-t DIR] SRC… DEST`.
pub fn mv(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "mv");
    let Some((opts, ops)) = flags(&u, argv, b"tS", &["target-directory", "suffix"]) else {
        return 1;
    };
    let no_target = has(&opts, b"T", &["no-target-directory"]);
    let no_clobber = has(&opts, b"n", &["no-clobber"]);
    let verbose = has(&opts, b"v", &["verbose"]);
    let Some((srcs, dest, _)) = split_target(&opts, ops) else {
        u.err("missing file operand");
        return 1;
    };
    if srcs.is_empty() {
        u.err(format!(
            "missing destination file operand after {}",
            q(&dest)
        ));
        return 1;
    }
    let Ok(dest_host) = u.host(&dest) else {
        u.err(format!(
            "cannot move to {}: No such file or directory",
            q(&dest)
        ));
        return 1;
    };
    if srcs.len() > 1 && !dest_host.is_dir() {
        u.err(format!("target {}: Not a directory", q(&dest)));
        return 1;
    }
    let mut status = 0;
    for s in &srcs {
        let Ok(src_host) = u.host(s) else {
            u.err(format!("cannot stat {}: No such file or directory", q(s)));
            status = 1;
            continue;
        };
        let src_meta = match std::fs::symlink_metadata(&src_host) {
            Ok(m) => m,
            Err(e) => {
                u.err(format!("cannot stat {}: {}", q(s), error_text(&e)));
                status = 1;
                continue;
            }
        };
        let to = destination(&dest_host, s, no_target);
        if to == src_host {
            continue;
        }
        if src_meta.is_dir() && to.starts_with(&src_host) {
            u.err(format!(
                "cannot move {} to a subdirectory of itself, {}",
                q(s),
                q(&dest)
            ));
            status = 1;
            continue;
        }
        if let Ok(tm) = std::fs::symlink_metadata(&to) {
            if no_clobber {
                continue;
            }
            if tm.is_dir() && !src_meta.is_dir() {
                u.err(format!(
                    "cannot overwrite directory {} with non-directory",
                    q(&dest)
                ));
                status = 1;
                continue;
            }
            if !tm.is_dir() && src_meta.is_dir() {
                u.err(format!(
                    "cannot overwrite non-directory {} with directory {}",
                    q(&dest),
                    q(s)
                ));
                status = 1;
                continue;
            }
        }
        match std::fs::rename(&src_host, &to) {
            Ok(()) => {
                if verbose {
                    let _ = u.out(format!("renamed {} -> {}\n", q(s), q(&dest)).as_bytes());
                }
            }
            Err(e) => {
                u.err(format!(
                    "cannot move {} to {}: {}",
                    q(s),
                    q(&dest),
                    error_text(&e)
                ));
                status = 1;
            }
        }
    }
    status
}

fn copy_tree(u: &Ctx, src: &[u8], from: PathBuf, to: &Path) -> Result<(), String> {
    let mut err: Option<String> = None;
    let base_len = from.as_os_str().len();
    let r = walk(
        src,
        from.clone(),
        None,
        |e| {
            let rel = &e.host.as_os_str().as_encoded_bytes()[base_len..];
            let rel = String::from_utf8_lossy(rel)
                .trim_start_matches('/')
                .to_string();
            let target = if rel.is_empty() {
                to.to_path_buf()
            } else {
                to.join(rel)
            };
            let r = if e.is_dir() {
                match std::fs::metadata(&target) {
                    Ok(m) if m.is_dir() => Ok(()),
                    _ => std::fs::create_dir(&target),
                }
            } else {
                std::fs::copy(&e.host, &target).map(|_| ())
            };
            if let Err(x) = r {
                err = Some(format!(
                    "cannot create {}: {}",
                    target.display(),
                    error_text(&x)
                ));
                return Visit::Stop;
            }
            Visit::Continue
        },
        |p, x| u.err(format!("cannot access {}: {}", q(p), error_text(x))),
    );
    if let Err(e) = r {
        return Err(error_text(&e));
    }
    err.map_or(Ok(()), Err)
}

/// `cp [-rRafpnvT] [-t DIR] SRC… DEST`.
pub fn cp(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "cp");
    let Some((opts, ops)) = flags(&u, argv, b"tS", &["target-directory", "suffix"]) else {
        return 1;
    };
    let recursive = has(&opts, b"rRa", &["recursive", "archive"]);
    let no_target = has(&opts, b"T", &["no-target-directory"]);
    let no_clobber = has(&opts, b"n", &["no-clobber"]);
    let verbose = has(&opts, b"v", &["verbose"]);
    let Some((srcs, dest, _)) = split_target(&opts, ops) else {
        u.err("missing file operand");
        return 1;
    };
    if srcs.is_empty() {
        u.err(format!(
            "missing destination file operand after {}",
            q(&dest)
        ));
        return 1;
    }
    let Ok(dest_host) = u.host(&dest) else {
        u.err(format!(
            "cannot create regular file {}: No such file or directory",
            q(&dest)
        ));
        return 1;
    };
    if srcs.len() > 1 && !dest_host.is_dir() {
        u.err(format!("target {}: Not a directory", q(&dest)));
        return 1;
    }
    let mut status = 0;
    for s in &srcs {
        let src_host = match u.target(s) {
            Some(Target::Path(h)) => h,
            Some(Target::Null) => {
                let to = destination(&dest_host, b"null", no_target);
                if let Err(e) = std::fs::write(&to, b"") {
                    u.err_path(&dest, &e);
                    status = 1;
                }
                continue;
            }
            _ => {
                u.err(format!("cannot stat {}: No such file or directory", q(s)));
                status = 1;
                continue;
            }
        };
        let meta = match std::fs::metadata(&src_host) {
            Ok(m) => m,
            Err(e) => {
                u.err(format!("cannot stat {}: {}", q(s), error_text(&e)));
                status = 1;
                continue;
            }
        };
        let to = destination(&dest_host, s, no_target);
        if meta.is_dir() {
            if !recursive {
                u.err(format!("-r not specified; omitting directory {}", q(s)));
                status = 1;
                continue;
            }
            if to.starts_with(&src_host) {
                u.err(format!(
                    "cannot copy a directory, {}, into itself, {}",
                    q(s),
                    q(&dest)
                ));
                status = 1;
                continue;
            }
            if let Err(e) = copy_tree(&u, s, src_host, &to) {
                u.err(e);
                status = 1;
            }
            continue;
        }
        if to == src_host {
            u.err(format!("{} and {} are the same file", q(s), q(&dest)));
            status = 1;
            continue;
        }
        if no_clobber && to.exists() {
            continue;
        }
        match std::fs::copy(&src_host, &to) {
            Ok(_) => {
                if verbose {
                    let _ = u.out(format!("{} -> {}\n", q(s), q(&dest)).as_bytes());
                }
            }
            Err(e) => {
                u.err(format!(
                    "cannot create regular file {}: {}",
                    q(&dest),
                    error_text(&e)
                ));
                status = 1;
            }
        }
    }
    status
}

/// `touch [-c] [-amd …] FILE…`.
pub fn touch(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "touch");
    let Some((opts, files)) = flags(&u, argv, b"dtr", &["date", "reference"]) else {
        return 1;
    };
    let no_create = has(&opts, b"c", &["no-create"]);
    if files.is_empty() {
        u.err("missing file operand");
        return 1;
    }
    let mut status = 0;
    for f in &files {
        let host = match u.target(f) {
            Some(Target::Path(h)) => h,
            Some(_) => continue,
            None => {
                u.err(format!("cannot touch {}: No such file or directory", q(f)));
                status = 1;
                continue;
            }
        };
        if host.exists() {
            if let Ok(file) = std::fs::File::options().write(true).open(&host) {
                let _ = file.set_modified(std::time::SystemTime::now());
            }
            continue;
        }
        if no_create {
            continue;
        }
        if let Err(e) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&host)
        {
            u.err(format!("cannot touch {}: {}", q(f), error_text(&e)));
            status = 1;
        }
    }
    status
}

/// `chmod`/`chown`/`chgrp`: checks that the files exist; the workspace
/// keeps no modes or owners.
pub fn chmod(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let name = if argv[0] == b"chmod" {
        "chmod"
    } else if argv[0] == b"chown" {
        "chown"
    } else {
        "chgrp"
    };
    let u = Ctx::new(sh, io, name);
    let args: Vec<&Vec<u8>> = argv[1..]
        .iter()
        .filter(|a| {
            !(a.starts_with(b"-") && a.len() > 1 && a[1..].iter().all(|c| b"RvcfH-".contains(c)))
        })
        .collect();
    if args.len() < 2 {
        u.err("missing operand");
        return 1;
    }
    let mut status = 0;
    for f in &args[1..] {
        let ok = match u.target(f) {
            Some(Target::Path(h)) => h.exists(),
            Some(_) => true,
            None => false,
        };
        if !ok {
            u.err(format!("cannot access {}: No such file or directory", q(f)));
            status = 1;
        }
    }
    status
}

/// `ln`: refused, the workspace has no links.
pub fn ln(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "ln");
    let symbolic = argv[1..]
        .iter()
        .any(|a| a.starts_with(b"-") && a.contains(&b's'));
    let target = argv[1..]
        .iter()
        .rfind(|a| !a.starts_with(b"-"))
        .cloned()
        .unwrap_or_default();
    let kind = if symbolic {
        "symbolic link"
    } else {
        "hard link"
    };
    u.err(format!(
        "failed to create {kind} {}: Operation not permitted (the workspace has no links)",
        q(&target)
    ));
    1
}
