//! `tar -x` and `tar -t`: the archive is read block by block from its file
//! (or from standard input), each member's data copied straight to its
//! file, so an archive larger than memory extracts.

use super::format::{Member, list_line, padding, parse_header, pax_path};
use super::{T, excluded};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::{Io, put};
use crate::util::Chunked;
use std::io::Read;

/// Largest GNU long name or pax header read into memory.
const MAX_META: u64 = 1 << 20;

fn eof() -> String {
    "Unexpected EOF in archive".to_string()
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` at a clean end.
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> Result<bool, String> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(eof()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(crate::fs::error_text(&e)),
        }
    }
    Ok(true)
}

/// Reads and drops `n` bytes.
fn skip(r: &mut dyn Read, n: u64) -> Result<(), String> {
    let copied = std::io::copy(&mut r.take(n), &mut std::io::sink())
        .map_err(|e| crate::fs::error_text(&e))?;
    if copied < n {
        return Err(eof());
    }
    Ok(())
}

/// Reads a small member's data (a long name or pax header).
fn small(r: &mut dyn Read, size: u64) -> Result<Vec<u8>, String> {
    if size > MAX_META {
        return Err("bad archive: an extended header is too large".into());
    }
    let mut data = vec![0u8; size as usize];
    if !data.is_empty() && !fill(r, &mut data)? {
        return Err(eof());
    }
    skip(r, padding(size) as u64)?;
    Ok(data)
}

/// What to do with each member.
pub(super) struct Extract<'a> {
    pub(super) sh: &'a Shell,
    pub(super) io: &'a Io,
    pub(super) t: &'a T,
    pub(super) base: Vec<u8>,
    pub(super) status: i32,
    pub(super) out: Chunked,
}

impl Extract<'_> {
    fn err(&self, m: &str) {
        let _ = put(&self.io.stderr(), format!("tar: {m}\n").as_bytes());
    }

    fn wanted(&self, name: &[u8]) -> bool {
        self.t.operands.is_empty()
            || self.t.operands.iter().any(|(o, _)| {
                let o = o.strip_suffix(b"/").unwrap_or(o);
                name == o || name.strip_prefix(o).is_some_and(|r| r.starts_with(b"/"))
            })
    }

    /// Reads the whole archive from `r`; `Err` is a fatal problem with it.
    pub(super) fn run(&mut self, r: &mut dyn Read) -> Result<(), String> {
        let mut block = [0u8; 512];
        let mut long_name: Option<Vec<u8>> = None;
        let mut first = true;
        loop {
            if !fill(r, &mut block)? {
                return Ok(());
            }
            if first
                && (block.starts_with(&[0x1f, 0x8b])
                    || block.starts_with(b"BZh")
                    || block.starts_with(&[0xfd, b'7', b'z', b'X']))
            {
                return Err(
                    "the archive is compressed; compression is not supported in this shell".into(),
                );
            }
            first = false;
            let Some(mut m) = parse_header(&block)? else {
                return Ok(());
            };
            match m.kind {
                b'L' => {
                    let data = small(r, m.size)?;
                    let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
                    long_name = Some(data[..end].to_vec());
                    continue;
                }
                b'x' => {
                    let data = small(r, m.size)?;
                    if let Some(p) = pax_path(&data)? {
                        long_name = Some(p);
                    }
                    continue;
                }
                b'g' => {
                    skip(r, m.size.saturating_add(padding(m.size) as u64))?;
                    continue;
                }
                _ => {}
            }
            if let Some(n) = long_name.take() {
                m.name = n;
            }
            // What the header says follows, whatever the member's kind.
            let size = m.size;
            let mut data = (&mut *r).take(size);
            self.member(&m, &mut data);
            let rest = data.limit();
            skip(r, rest.saturating_add(padding(size) as u64))?;
        }
    }

    /// Lists or extracts one member, reading its data from `data`.
    fn member(&mut self, m: &Member, data: &mut dyn Read) {
        if !self.wanted(&m.name) || excluded(self.t, &m.name) {
            return;
        }
        if self.t.mode == b't' {
            let line = if self.t.verbose {
                list_line(m)
            } else {
                [m.name.as_slice(), b"\n"].concat()
            };
            let _ = self.out.put(&line);
            return;
        }
        if let Some(why) = super::refused(&m.name, m.kind) {
            self.err(&format!("{}: {why}", lossy(&m.name)));
            self.status = 2;
            return;
        }
        let parts: Vec<&[u8]> = m
            .name
            .split(|&c| c == b'/')
            .filter(|s| !s.is_empty() && *s != b".")
            .collect();
        if parts.len() <= self.t.strip {
            return;
        }
        let rel = parts[self.t.strip..].join(&b'/');
        if self.t.verbose {
            let _ = self.out.put(&[m.name.as_slice(), b"\n"].concat());
        }
        let fs = &self.sh.fs;
        let Some(Target::Path(host)) = fs.target(&fs.absolute(&self.base, &rel)) else {
            self.err(&format!(
                "{}: Cannot open: No such file or directory",
                lossy(&m.name)
            ));
            self.status = 2;
            return;
        };
        let r = if m.kind == b'5' {
            std::fs::create_dir_all(&host)
        } else if matches!(m.kind, b'0' | 0 | b'7') {
            if self.t.keep_old && host.exists() {
                return;
            }
            if host.is_dir() {
                let _ = std::fs::remove_dir(&host);
            }
            host.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|_| std::fs::File::create(&host))
                .and_then(|mut f| std::io::copy(data, &mut f))
                .map(|_| ())
        } else {
            Ok(())
        };
        if let Err(e) = r {
            self.err(&format!(
                "{}: Cannot open: {}",
                lossy(&m.name),
                crate::fs::error_text(&e)
            ));
            self.status = 2;
        }
    }
}
