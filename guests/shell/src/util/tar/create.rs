//! `tar -c`: the archive is written as the tree is walked, each file
//! copied in pieces, so neither the archive nor a member is ever held in
//! memory whole.

use super::format::{member_headers, padding};
use super::{T, excluded};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::{Io, put};
use crate::util::Chunked;
use crate::util::walk::{Visit, walk};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Where the archive goes: a file or standard output.
pub(super) enum Dest {
    File(std::io::BufWriter<std::fs::File>, PathBuf),
    Out(Chunked),
}

/// The archive being written and how many bytes it has.
pub(super) struct Writer {
    pub(super) dest: Dest,
    written: u64,
}

impl Writer {
    pub(super) fn new(dest: Dest) -> Self {
        Writer { dest, written: 0 }
    }

    fn write(&mut self, b: &[u8]) -> std::io::Result<()> {
        match &mut self.dest {
            Dest::File(w, _) => w.write_all(b)?,
            Dest::Out(c) => c
                .put(b)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?,
        }
        self.written += b.len() as u64;
        Ok(())
    }

    fn zeros(&mut self, n: usize) -> std::io::Result<()> {
        let block = [0u8; 512];
        let mut left = n;
        while left > 0 {
            let k = left.min(512);
            self.write(&block[..k])?;
            left -= k;
        }
        Ok(())
    }

    /// Ends the archive: two zero blocks, padded to a 10 KiB record.
    pub(super) fn finish(mut self) -> std::io::Result<()> {
        self.zeros(1024)?;
        let rec = 10240;
        let r = (self.written % rec) as usize;
        if r != 0 {
            self.zeros(rec as usize - r)?;
        }
        match &mut self.dest {
            Dest::File(w, _) => w.flush(),
            Dest::Out(c) => c
                .flush()
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe)),
        }
    }

    /// Adds a directory member.
    fn dir(&mut self, name: &[u8], mtime: u64) -> std::io::Result<()> {
        self.write(&member_headers(name, 0, mtime, true))
    }

    /// Adds a file member, copying exactly the size its header says (a
    /// file that shrank meanwhile is padded with zeros).
    fn file(
        &mut self,
        name: &[u8],
        mut f: std::fs::File,
        size: u64,
        mtime: u64,
    ) -> std::io::Result<()> {
        self.write(&member_headers(name, size, mtime, false))?;
        let mut buf = vec![0u8; 64 << 10];
        let mut left = size;
        while left > 0 {
            let want = (left.min(buf.len() as u64)) as usize;
            let n = match f.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            self.write(&buf[..n])?;
            left -= n as u64;
        }
        self.zeros(left as usize)?;
        self.zeros(padding(size))
    }
}

/// Writes the members for `t`'s operands. Problems with single files are
/// reported and make the status 2; a failed write of the archive ends it.
pub(super) fn create(sh: &Shell, io: &Io, t: &T, w: &mut Writer) -> std::io::Result<bool> {
    let err = |m: &str| {
        let _ = put(&io.stderr(), format!("tar: {m}\n").as_bytes());
    };
    // The workspace has no links: the same path is the same file.
    let archive: Option<PathBuf> = match &w.dest {
        Dest::File(_, p) => Some(p.clone()),
        Dest::Out(_) => None,
    };
    let ok = std::cell::Cell::new(true);
    for (op, dir) in &t.operands {
        let base = match dir {
            Some(d) => sh.fs.absolute(&sh.cwd, d),
            None => sh.cwd.clone(),
        };
        let host = match sh.fs.target(&sh.fs.absolute(&base, op)) {
            Some(Target::Path(h)) if h.exists() => h,
            _ => {
                err(&format!(
                    "{}: Cannot stat: No such file or directory",
                    lossy(op)
                ));
                ok.set(false);
                continue;
            }
        };
        let mut failure: Option<std::io::Error> = None;
        let r = walk(
            op,
            host,
            None,
            |e| {
                let mut name = e.path.clone();
                if e.is_dir() && !name.ends_with(b"/") {
                    name.push(b'/');
                }
                if excluded(t, &e.path) {
                    return Visit::Skip;
                }
                if is_archive(&e.host, archive.as_deref()) {
                    err(&format!(
                        "{}: file is the archive; not dumped",
                        lossy(&e.path)
                    ));
                    return Visit::Skip;
                }
                let mtime = e
                    .meta
                    .modified()
                    .map(|m| crate::util::time::epoch(m).0.max(0) as u64)
                    .unwrap_or(0);
                let r = if e.is_dir() {
                    w.dir(&name, mtime)
                } else if e.meta.is_file() {
                    match std::fs::File::open(&e.host).and_then(|f| {
                        let size = f.metadata()?.len();
                        Ok((f, size))
                    }) {
                        Ok((f, size)) => w.file(&name, f, size, mtime),
                        Err(x) => {
                            err(&format!(
                                "{}: Cannot open: {}",
                                lossy(&e.path),
                                crate::fs::error_text(&x)
                            ));
                            ok.set(false);
                            return Visit::Skip;
                        }
                    }
                } else {
                    return Visit::Skip;
                };
                if let Err(x) = r {
                    failure = Some(x);
                    return Visit::Stop;
                }
                if t.verbose {
                    let _ = put(&io.stdout(), &[name.as_slice(), b"\n"].concat());
                }
                Visit::Continue
            },
            |p, x| {
                err(&format!("{}: {}", lossy(p), crate::fs::error_text(x)));
                ok.set(false);
            },
        );
        if let Some(x) = failure {
            return Err(x);
        }
        if let Err(x) = r {
            err(&crate::fs::error_text(&x));
            ok.set(false);
        }
    }
    Ok(ok.get())
}

fn is_archive(p: &Path, archive: Option<&Path>) -> bool {
    archive.is_some_and(|a| a == p)
}
