//! `tar` (create, extract, list): ustar headers, pax headers for names
//! that do not fit, GNU long names when reading. Extraction refuses
//! absolute names, `..` components and links (exit 2). No compression.
//! Archives are streamed (`create`, `extract`): a workspace larger than
//! the guest's memory can be archived and restored.

mod create;
mod extract;
mod format;

use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::{Io, put};
use crate::pattern::Pattern;
use crate::util::Chunked;

pub(super) struct T {
    mode: u8,
    file: Option<Vec<u8>>,
    verbose: bool,
    excludes: Vec<Pattern>,
    strip: usize,
    keep_old: bool,
    /// Operands with the `-C` directory in force for each.
    operands: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    dir: Option<Vec<u8>>,
}

fn usage(msg: &str) -> Result<T, String> {
    Err(msg.to_string())
}

fn parse(argv: &[Vec<u8>]) -> Result<T, String> {
    let mut t = T {
        mode: 0,
        file: None,
        verbose: false,
        excludes: Vec::new(),
        strip: 0,
        keep_old: false,
        operands: Vec::new(),
        dir: None,
    };
    let mut args: Vec<Vec<u8>> = argv[1..].to_vec();
    // Old style: `tar cvf F …` (first word without a dash).
    if let Some(first) = args.first()
        && !first.starts_with(b"-")
        && first.iter().all(|c| c.is_ascii_alphabetic())
    {
        let mut f = b"-".to_vec();
        f.extend_from_slice(first);
        args[0] = f;
    }
    let mut i = 0;
    let mut dashdash = false;
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        if dashdash || !a.starts_with(b"-") || a == b"-" {
            t.operands.push((a, t.dir.clone()));
            continue;
        }
        if a == b"--" {
            dashdash = true;
            continue;
        }
        if let Some(long) = a.strip_prefix(b"--") {
            let text = lossy(long);
            let (name, value) = match text.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.as_bytes().to_vec())),
                None => (text.clone(), None),
            };
            let mut take = |value: Option<Vec<u8>>| -> Result<Vec<u8>, String> {
                match value {
                    Some(v) => Ok(v),
                    None => {
                        i += 1;
                        args.get(i - 1)
                            .cloned()
                            .ok_or(format!("option '--{name}' requires an argument"))
                    }
                }
            };
            match name.as_str() {
                "create" => t.mode = b'c',
                "extract" | "get" => t.mode = b'x',
                "list" => t.mode = b't',
                "file" => t.file = Some(take(value)?),
                "directory" => t.dir = Some(take(value)?),
                "exclude" => t.excludes.push(Pattern::new(&take(value)?, None)),
                "strip-components" => {
                    t.strip = lossy(&take(value)?)
                        .parse()
                        .map_err(|_| "invalid strip-components".to_string())?
                }
                "verbose" => t.verbose = true,
                "keep-old-files" | "skip-old-files" => t.keep_old = true,
                "gzip" | "gunzip" | "bzip2" | "xz" | "zstd" | "lzma" | "auto-compress" => {
                    return usage(
                        "compression is not supported in this shell (use an uncompressed archive)",
                    );
                }
                _ => {}
            }
            continue;
        }
        let mut j = 1;
        while j < a.len() {
            let c = a[j];
            j += 1;
            let mut value = || -> Result<Vec<u8>, String> {
                if j < a.len() {
                    let v = a[j..].to_vec();
                    j = a.len();
                    Ok(v)
                } else {
                    i += 1;
                    args.get(i - 1)
                        .cloned()
                        .ok_or(format!("option requires an argument -- '{}'", c as char))
                }
            };
            match c {
                b'c' | b'x' | b't' => t.mode = c,
                b'f' => t.file = Some(value()?),
                b'C' => t.dir = Some(value()?),
                b'v' => t.verbose = true,
                b'k' => t.keep_old = true,
                b'z' | b'j' | b'J' | b'Z' | b'a' => {
                    return usage(
                        "compression is not supported in this shell (use an uncompressed archive)",
                    );
                }
                b'p' | b'o' | b'm' | b'P' | b'h' | b'O' | b'S' | b'w' | b'B' => {}
                b'r' | b'u' | b'A' | b'd' => return usage("only -c, -x and -t are supported"),
                _ => return usage(&format!("invalid option -- '{}'", c as char)),
            }
        }
    }
    if t.mode == 0 {
        return usage("You must specify one of the '-ctx' options");
    }
    Ok(t)
}

pub(super) fn excluded(t: &T, name: &[u8]) -> bool {
    let trimmed = name.strip_suffix(b"/").unwrap_or(name);
    t.excludes.iter().any(|p| {
        p.matches(trimmed)
            || trimmed
                .iter()
                .enumerate()
                .filter(|(_, c)| **c == b'/')
                .any(|(i, _)| p.matches(&trimmed[i + 1..]))
    })
}

/// Why a member may not be extracted.
pub(super) fn refused(name: &[u8], kind: u8) -> Option<&'static str> {
    if name.starts_with(b"/") {
        return Some("Refusing to extract a member with an absolute name");
    }
    if name.split(|&c| c == b'/').any(|s| s == b"..") {
        return Some("Refusing to extract a member containing '..'");
    }
    match kind {
        b'1' | b'2' => Some("Refusing to extract a link (the workspace has no links)"),
        b'3' | b'4' | b'6' | b'7' => Some("Refusing to extract a device or FIFO"),
        _ => None,
    }
}

/// `tar -c|-x|-t [-v] [-f ARCHIVE] [-C DIR] [--exclude=PAT]
/// [--strip-components=N] [MEMBER…]`.
pub fn tar(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let err = |m: &str| {
        let _ = put(&io.stderr(), format!("tar: {m}\n").as_bytes());
    };
    let t = match parse(argv) {
        Ok(t) => t,
        Err(e) => {
            err(&e);
            return 2;
        }
    };
    let archive = t.file.clone().unwrap_or_else(|| b"-".to_vec());
    if t.mode == b'c' {
        if let Some(d) = &t.dir
            && !matches!(sh.fs.target(&sh.fs.absolute(&sh.cwd, d)), Some(Target::Path(h)) if h.is_dir())
        {
            err(&format!(
                "{}: Cannot open: No such file or directory",
                lossy(d)
            ));
            return 2;
        }
        if t.operands.is_empty() {
            err("Cowardly refusing to create an empty archive");
            return 2;
        }
        let dest = if archive == b"-" {
            create::Dest::Out(Chunked::new(io.stdout()))
        } else {
            match sh.fs.host(&sh.cwd, &archive).and_then(|h| {
                let f = std::fs::File::create(&h)?;
                Ok(create::Dest::File(
                    std::io::BufWriter::with_capacity(64 << 10, f),
                    h,
                ))
            }) {
                Ok(d) => d,
                Err(e) => {
                    err(&format!(
                        "{}: Cannot open: {}",
                        lossy(&archive),
                        crate::fs::error_text(&e)
                    ));
                    return 2;
                }
            }
        };
        let mut w = create::Writer::new(dest);
        let r = create::create(sh, io, &t, &mut w).and_then(|ok| w.finish().map(|_| ok));
        return match r {
            Ok(true) => 0,
            Ok(false) => {
                err("Exiting with failure status due to previous errors");
                2
            }
            // The reader of standard output went away: stop quietly.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 2,
            Err(e) => {
                err(&format!(
                    "{}: Cannot write: {}",
                    lossy(&archive),
                    crate::fs::error_text(&e)
                ));
                2
            }
        };
    }
    let mut reader: Box<dyn std::io::Read> = if archive == b"-" {
        Box::new(std::io::Cursor::new(io.stdin().borrow_mut().take_all()))
    } else {
        match sh.fs.host(&sh.cwd, &archive).and_then(|h| {
            if h.is_dir() {
                return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
            }
            std::fs::File::open(h)
        }) {
            Ok(f) => Box::new(std::io::BufReader::with_capacity(64 << 10, f)),
            Err(e) => {
                err(&format!(
                    "{}: Cannot open: {}",
                    lossy(&archive),
                    crate::fs::error_text(&e)
                ));
                return 2;
            }
        }
    };
    let base = match &t.dir {
        Some(d) => sh.fs.absolute(&sh.cwd, d),
        None => sh.cwd.clone(),
    };
    if t.mode == b'x' && !matches!(sh.fs.target(&base), Some(Target::Path(h)) if h.is_dir()) {
        err(&format!(
            "{}: Cannot open: No such file or directory",
            lossy(t.dir.as_deref().unwrap_or(b"."))
        ));
        return 2;
    }
    let mut x = extract::Extract {
        sh,
        io,
        t: &t,
        base,
        status: 0,
        out: Chunked::new(io.stdout()),
    };
    let r = x.run(&mut *reader);
    let _ = x.out.flush();
    if let Err(e) = r {
        err(&e);
        x.status = 2;
    }
    if x.status != 0 {
        err("Exiting with failure status due to previous errors");
    }
    x.status
}
