//! A minimal writer of the kernel's initramfs format: an uncompressed
//! `newc` cpio archive (see the kernel's
//! `Documentation/driver-api/early-userspace/buffer-format.rst`).
//!
//! It is written by the host from files the host chose (the static worker,
//! the kernel modules, the precompiled guest images); nothing guest-made
//! goes in. Uncompressed on purpose: under software emulation the kernel
//! would spend longer inflating it than copying it.

use std::io::{self, Read, Write};

/// Builds one archive.
pub struct Archive<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> Archive<W> {
    /// Starts an archive written to `out`.
    pub fn new(out: W) -> Self {
        Archive {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn pad4(&mut self) -> io::Result<()> {
        let pad = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..pad])
    }

    fn header(&mut self, name: &str, mode: u32, size: u64) -> io::Result<()> {
        let name = name.trim_start_matches('/');
        if name.is_empty() || name.contains('\0') {
            return Err(io::Error::other("an archive entry needs a name"));
        }
        let size = u32::try_from(size)
            .map_err(|_| io::Error::other(format!("{name} is too large for cpio (4 GiB)")))?;
        let ino = self.ino;
        self.ino += 1;
        let fields = [
            ino,
            mode,
            0, // uid: root
            0, // gid
            1, // nlink
            0, // mtime: fixed, so that the archive is reproducible
            size,
            0,
            0,
            0,
            0,
            name.len() as u32 + 1,
            0, // check
        ];
        let mut h = String::from("070701");
        for f in fields {
            h.push_str(&format!("{f:08x}"));
        }
        self.put(h.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad4()
    }

    /// Adds a directory (mode e.g. `0o755`).
    pub fn dir(&mut self, name: &str, mode: u32) -> io::Result<()> {
        self.header(name, 0o040000 | (mode & 0o7777), 0)
    }

    /// Adds a regular file with `data`.
    pub fn file(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        self.header(name, 0o100000 | (mode & 0o7777), data.len() as u64)?;
        self.put(data)?;
        self.pad4()
    }

    /// Adds a regular file copied from `src` on the host.
    pub fn file_from(&mut self, name: &str, mode: u32, src: &std::path::Path) -> io::Result<()> {
        let mut f = std::fs::File::open(src)?;
        let len = f.metadata()?.len();
        self.header(name, 0o100000 | (mode & 0o7777), len)?;
        let copied = io::copy(&mut (&mut f).take(len), &mut self.out)?;
        if copied != len {
            return Err(io::Error::other(format!(
                "{} changed while it was archived",
                src.display()
            )));
        }
        self.written += copied;
        self.pad4()
    }

    /// Writes the trailer and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.header("TRAILER!!!", 0, 0)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::Archive;

    #[test]
    fn entries_are_aligned_and_terminated() {
        let mut a = Archive::new(Vec::new());
        a.dir("proc", 0o755).expect("test");
        a.file("init", 0o755, b"hello").expect("test");
        let bytes = a.finish().expect("test");
        assert_eq!(bytes.len() % 4, 0);
        assert!(bytes.starts_with(b"070701"));
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("init\0"));
        assert!(text.contains("hello"));
        assert!(text.contains("TRAILER!!!\0"));
        // Three headers of 110 bytes each.
        assert_eq!(text.matches("070701").count(), 3);
    }

    #[test]
    fn cpio_reads_it_back() {
        // The system's own cpio is the reference reader where it exists.
        let Ok(out) = std::process::Command::new("cpio").arg("--version").output() else {
            eprintln!("SKIP cpio_reads_it_back: no cpio on this machine");
            return;
        };
        if !out.status.success() {
            return;
        }
        let mut a = Archive::new(Vec::new());
        a.dir("guests", 0o755).expect("test");
        a.file("guests/x.cwasm", 0o444, &[7u8; 1001]).expect("test");
        let bytes = a.finish().expect("test");
        let dir = tempfile::tempdir().expect("test");
        let mut child = std::process::Command::new("cpio")
            .args(["-idm", "--quiet"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .expect("test");
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("test")
            .write_all(&bytes)
            .expect("test");
        assert!(child.wait().expect("test").success());
        assert_eq!(
            std::fs::read(dir.path().join("guests/x.cwasm")).expect("test"),
            vec![7u8; 1001]
        );
    }
}
