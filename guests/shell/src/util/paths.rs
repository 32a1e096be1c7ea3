//! Path names: `dirname`, `basename`, `realpath`, `readlink`, `mktemp`.

use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::Io;

/// The directory part of a path, as `dirname` prints it.
pub fn dir_of(p: &[u8]) -> Vec<u8> {
    let t = trim_slashes(p);
    if t.is_empty() {
        return if p.starts_with(b"/") {
            b"/".to_vec()
        } else {
            b".".to_vec()
        };
    }
    match t.iter().rposition(|&c| c == b'/') {
        None => b".".to_vec(),
        Some(i) => {
            let d = trim_slashes(&t[..i]);
            if d.is_empty() {
                b"/".to_vec()
            } else {
                d.to_vec()
            }
        }
    }
}

fn trim_slashes(p: &[u8]) -> &[u8] {
    let mut t = p;
    while t.len() > 1 && t.ends_with(b"/") {
        t = &t[..t.len() - 1];
    }
    if t == b"/" { &[] } else { t }
}

/// The last part of a path, as `basename` prints it.
pub fn base_of(p: &[u8]) -> Vec<u8> {
    let t = trim_slashes(p);
    if t.is_empty() {
        return if p.starts_with(b"/") {
            b"/".to_vec()
        } else {
            Vec::new()
        };
    }
    crate::fs::base_name(t).to_vec()
}

fn lines(items: impl IntoIterator<Item = Vec<u8>>, zero: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for i in items {
        out.extend(i);
        out.push(if zero { 0 } else { b'\n' });
    }
    out
}

/// `dirname [-z] NAME…`.
pub fn dirname(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "dirname");
    let (opts, names) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    if names.is_empty() {
        u.err("missing operand");
        return 1;
    }
    let zero = opts.iter().any(|o| matches!(o, Opt::Short(b'z', _)));
    let _ = u.out(&lines(names.iter().map(|n| dir_of(n)), zero));
    0
}

/// `basename NAME [SUFFIX]`, `basename -a [-s SUFFIX] NAME…`.
pub fn basename(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "basename");
    let (opts, names) = match getopt(&argv[1..], b"s", &["suffix"], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut all = false;
    let mut zero = false;
    let mut suffix: Option<Vec<u8>> = None;
    for o in opts {
        match o {
            Opt::Short(b'a', _) => all = true,
            Opt::Short(b'z', _) => zero = true,
            Opt::Short(b's', v) | Opt::Long(_, v) => {
                suffix = v;
                all = true;
            }
            _ => {}
        }
    }
    if names.is_empty() {
        u.err("missing operand");
        return 1;
    }
    let (names, suffix) = if !all && names.len() == 2 {
        (names[..1].to_vec(), Some(names[1].clone()))
    } else if !all && names.len() > 2 {
        u.err(format!("extra operand '{}'", lossy(&names[2])));
        return 1;
    } else {
        (names, suffix)
    };
    let items = names.iter().map(|n| {
        let mut b = base_of(n);
        if let Some(s) = &suffix
            && b.len() > s.len()
            && b.ends_with(s)
        {
            b.truncate(b.len() - s.len());
        }
        b
    });
    let _ = u.out(&lines(items, zero));
    0
}

/// Resolves `p` to an absolute path; with `must_exist`, every component
/// (`all`) or all but the last must exist.
fn resolve(u: &Ctx, p: &[u8], must_exist: bool, all: bool) -> Result<Vec<u8>, String> {
    let abs = u.sh.fs.absolute(&u.sh.cwd, p);
    let exists = |a: &[u8]| match u.sh.fs.target(a) {
        Some(Target::Path(h)) => h.exists(),
        Some(_) => true,
        None => false,
    };
    if must_exist {
        let check: &[u8] = if all { &abs } else { &dir_of(&abs) };
        if !exists(check) {
            return Err(format!("{}: No such file or directory", lossy(p)));
        }
    }
    Ok(crate::fs::Fs::logical(&abs))
}

/// `realpath [-e|-m|-s|-q] [--relative-to=DIR] PATH…`.
pub fn realpath(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "realpath");
    let (opts, paths) = match getopt(&argv[1..], b"", &["relative-to", "relative-base"], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut mode = b'd';
    let mut quiet = false;
    let mut relative: Option<Vec<u8>> = None;
    for o in opts {
        match o {
            Opt::Short(c @ (b'e' | b'm'), _) => mode = c,
            Opt::Short(b'q', _) => quiet = true,
            Opt::Long(n, v) if n == "relative-to" => relative = v,
            _ => {}
        }
    }
    if paths.is_empty() {
        u.err("missing operand");
        return 1;
    }
    let mut status = 0;
    let mut out = Vec::new();
    for p in &paths {
        match resolve(&u, p, mode != b'm', mode == b'e') {
            Ok(abs) => {
                let shown = match &relative {
                    Some(base) => relative_to(
                        &abs,
                        &crate::fs::Fs::logical(&u.sh.fs.absolute(&u.sh.cwd, base)),
                    ),
                    None => abs,
                };
                out.extend(shown);
                out.push(b'\n');
            }
            Err(e) => {
                if !quiet {
                    u.err(e);
                }
                status = 1;
            }
        }
    }
    let _ = u.out(&out);
    status
}

fn relative_to(path: &[u8], base: &[u8]) -> Vec<u8> {
    let ps: Vec<&[u8]> = path
        .split(|&c| c == b'/')
        .filter(|s| !s.is_empty())
        .collect();
    let bs: Vec<&[u8]> = base
        .split(|&c| c == b'/')
        .filter(|s| !s.is_empty())
        .collect();
    let common = ps.iter().zip(&bs).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&[u8]> = vec![b".."; bs.len() - common];
    parts.extend_from_slice(&ps[common..]);
    if parts.is_empty() {
        return b".".to_vec();
    }
    parts.join(&b'/')
}

/// `readlink [-f|-e|-m] PATH…`: without `-f`, nothing is a link here.
pub fn readlink(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "readlink");
    let (opts, paths) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mode = opts.iter().find_map(|o| match o {
        Opt::Short(c @ (b'f' | b'e' | b'm'), _) => Some(*c),
        Opt::Long(n, _) if n == "canonicalize" => Some(b'f'),
        _ => None,
    });
    let Some(mode) = mode else {
        return 1;
    };
    let mut status = 0;
    let mut out = Vec::new();
    for p in &paths {
        match resolve(&u, p, mode != b'm', mode == b'e') {
            Ok(abs) => {
                out.extend(abs);
                out.push(b'\n');
            }
            Err(_) => status = 1,
        }
    }
    let _ = u.out(&out);
    status
}

/// `mktemp [-d] [-p DIR] [-t] [TEMPLATE]`: creates the file (or directory)
/// under `/tmp` unless the template names a directory.
pub fn mktemp(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let (opts, ops) = match getopt(&argv[1..], b"p", &["tmpdir", "suffix"], true) {
        Ok(x) => x,
        Err(e) => {
            Ctx::new(sh, io, "mktemp").err(e);
            return 1;
        }
    };
    let dir = opts.iter().any(|o| matches!(o, Opt::Short(b'd', _)));
    let mut base: Option<Vec<u8>> = None;
    let mut suffix = Vec::new();
    for o in &opts {
        match o {
            Opt::Short(b'p', v) => base = v.clone(),
            Opt::Long(n, v) if n == "tmpdir" => base = v.clone().or(Some(b"/tmp".to_vec())),
            Opt::Long(n, Some(v)) if n == "suffix" => suffix = v.clone(),
            _ => {}
        }
    }
    let template = ops
        .first()
        .cloned()
        .unwrap_or_else(|| b"tmp.XXXXXXXXXX".to_vec());
    let prefix: Vec<u8> = if template.contains(&b'/') && base.is_none() {
        Vec::new()
    } else {
        let mut b = base.unwrap_or_else(|| b"/tmp".to_vec());
        b.push(b'/');
        b
    };
    for _ in 0..100 {
        let mut name = template.clone();
        let xs = name.iter().rev().take_while(|&&c| c == b'X').count();
        let start = name.len() - xs;
        for c in &mut name[start..] {
            let r = sh.param_scalar(b"RANDOM").unwrap_or_default();
            let n: usize = lossy(&r).parse().unwrap_or(7);
            *c = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[n % 62];
        }
        let full = [prefix.as_slice(), &name, &suffix].concat();
        let abs = sh.fs.absolute(&sh.cwd, &full);
        let Some(Target::Path(host)) = sh.fs.target(&abs) else {
            Ctx::new(sh, io, "mktemp").err(format!(
                "failed to create file via template '{}': No such file or directory",
                lossy(&template)
            ));
            return 1;
        };
        if host.exists() {
            continue;
        }
        let r = if dir {
            std::fs::create_dir(&host)
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&host)
                .map(|_| ())
        };
        return match r {
            Ok(()) => {
                let shown = crate::fs::Fs::logical(&abs);
                let _ = crate::io::put(&io.stdout(), &[shown.as_slice(), b"\n"].concat());
                0
            }
            Err(e) => {
                Ctx::new(sh, io, "mktemp").err(format!(
                    "failed to create {} via template '{}': {}",
                    if dir { "directory" } else { "file" },
                    lossy(&template),
                    crate::fs::error_text(&e)
                ));
                1
            }
        };
    }
    1
}
