//! The utilities built into the shell (what `/usr/bin` holds elsewhere):
//! the dispatch table and what they share (option parsing, messages,
//! reading operands, walking trees).

pub mod awk;
mod diff;
mod dump;
mod encode;
mod files;
mod find;
mod fsinfo;
mod grep;
mod headtail;
mod lines;
mod ls;
mod misc;
mod misc_expr;
mod paths;
pub mod printf;
pub mod re;
mod rg;
mod sed;
mod sort;
mod tar;
mod text;
pub mod time;
pub mod walk;
pub mod xargs;

use crate::exec::Shell;
use crate::fs::{Target, error_text};
use crate::io::{Broken, Io, put};
use crate::limits::MAX_FILE_READ;
use std::path::{Path, PathBuf};

/// A utility: the shell, the descriptors, `argv`; returns the exit status.
pub type Utility = fn(&mut Shell, &Io, &[Vec<u8>]) -> i32;

const TABLE: &[(&str, Utility)] = &[
    ("cat", text::cat),
    ("head", headtail::head),
    ("tail", headtail::tail),
    ("wc", text::wc),
    ("nl", text::nl),
    ("paste", text::paste),
    ("tac", text::tac),
    ("rev", text::rev),
    ("yes", text::yes),
    ("tee", text::tee),
    ("fold", text::fold),
    ("sort", sort::sort),
    ("uniq", lines::uniq),
    ("cut", lines::cut),
    ("tr", lines::tr),
    ("comm", lines::comm),
    ("grep", grep::grep),
    ("egrep", grep::grep),
    ("fgrep", grep::grep),
    ("rg", rg::rg),
    ("sed", sed::sed),
    ("awk", awk::awk),
    ("gawk", awk::awk),
    ("mawk", awk::awk),
    ("find", find::find),
    ("ls", ls::ls),
    ("mkdir", files::mkdir),
    ("rmdir", files::rmdir),
    ("rm", files::rm),
    ("mv", files::mv),
    ("cp", files::cp),
    ("touch", files::touch),
    ("chmod", files::chmod),
    ("chown", files::chmod),
    ("chgrp", files::chmod),
    ("ln", files::ln),
    ("dirname", paths::dirname),
    ("basename", paths::basename),
    ("realpath", paths::realpath),
    ("readlink", paths::readlink),
    ("mktemp", paths::mktemp),
    ("base64", encode::base64),
    ("md5sum", encode::md5sum),
    ("sha256sum", encode::sha256sum),
    ("tar", tar::tar),
    ("seq", misc::seq),
    ("date", misc::date),
    ("sleep", misc::sleep),
    ("stat", fsinfo::stat),
    ("du", fsinfo::du),
    ("tree", fsinfo::tree),
    ("uname", misc::uname),
    ("whoami", misc::whoami),
    ("id", misc::id),
    ("hostname", misc::hostname),
    ("nproc", misc::nproc),
    ("expr", misc::expr),
    ("diff", diff::diff),
    ("cmp", diff::cmp),
    ("od", dump::od),
    ("xxd", dump::xxd),
    ("hexdump", dump::hexdump),
];

/// The utility called `name`.
pub fn lookup(name: &[u8]) -> Option<Utility> {
    TABLE
        .iter()
        .find(|(n, _)| n.as_bytes() == name)
        .map(|(_, f)| *f)
}

/// Every utility name (for documentation tests).
pub fn names() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(n, _)| *n)
}

/// Reads a whole file, refusing files above [`MAX_FILE_READ`].
pub fn read_file_capped(p: &Path) -> std::io::Result<Vec<u8>> {
    read_file_at_most(p, MAX_FILE_READ)
}

/// Reads a whole file, refusing (before reading) files above `cap` bytes;
/// a file that grows while it is read is refused too.
pub fn read_file_at_most(p: &Path, cap: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(p)?;
    let m = f.metadata()?;
    if m.is_dir() {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    }
    let cap = cap as u64;
    if m.len() > cap {
        return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    f.take(cap + 1).read_to_end(&mut data)?;
    if data.len() as u64 > cap {
        return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
    }
    Ok(data)
}

/// Output written in pieces of about 64 KiB as it is made, so a utility
/// never holds more than that of it and stops when the reader is gone.
pub struct Chunked {
    out: crate::io::Out,
    buf: Vec<u8>,
}

impl Chunked {
    /// Output to `out`.
    pub fn new(out: crate::io::Out) -> Self {
        Chunked {
            out,
            buf: Vec::new(),
        }
    }

    /// Appends `b`; `Err` means stop (the reader is gone).
    pub fn put(&mut self, b: &[u8]) -> Result<(), Broken> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= 64 << 10 {
            return self.flush();
        }
        Ok(())
    }

    /// Writes what is pending.
    pub fn flush(&mut self) -> Result<(), Broken> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let r = put(&self.out, &self.buf);
        self.buf.clear();
        r
    }
}

/// One parsed option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opt {
    /// `-x` or `-x VALUE`.
    Short(u8, Option<Vec<u8>>),
    /// `--name` or `--name=VALUE` / `--name VALUE`.
    Long(String, Option<Vec<u8>>),
}

/// GNU-style option parsing: clustered short flags, values attached or
/// separate for the letters in `valued`, long options (`--x=v`, or `--x v`
/// for the names in `long_valued`), `--`, and operands anywhere unless
/// `permute` is false.
pub fn getopt(
    args: &[Vec<u8>],
    valued: &[u8],
    long_valued: &[&str],
    permute: bool,
) -> Result<(Vec<Opt>, Vec<Vec<u8>>), String> {
    let mut opts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == b"--" {
            operands.extend_from_slice(&args[i + 1..]);
            break;
        }
        if let Some(long) = a.strip_prefix(b"--") {
            let text = String::from_utf8_lossy(long).into_owned();
            match text.split_once('=') {
                Some((k, v)) => opts.push(Opt::Long(k.to_string(), Some(v.as_bytes().to_vec()))),
                None if long_valued.contains(&text.as_str()) => {
                    i += 1;
                    let v = args
                        .get(i)
                        .cloned()
                        .ok_or_else(|| format!("option '--{text}' requires an argument"))?;
                    opts.push(Opt::Long(text, Some(v)));
                }
                None => opts.push(Opt::Long(text, None)),
            }
            i += 1;
            continue;
        }
        if a.len() > 1 && a[0] == b'-' {
            let mut j = 1;
            while j < a.len() {
                let c = a[j];
                if valued.contains(&c) {
                    let v = if j + 1 < a.len() {
                        a[j + 1..].to_vec()
                    } else {
                        i += 1;
                        args.get(i).cloned().ok_or_else(|| {
                            format!("option requires an argument -- '{}'", c as char)
                        })?
                    };
                    opts.push(Opt::Short(c, Some(v)));
                    break;
                }
                opts.push(Opt::Short(c, None));
                j += 1;
            }
            i += 1;
            continue;
        }
        if !permute {
            operands.extend_from_slice(&args[i..]);
            break;
        }
        operands.push(a.clone());
        i += 1;
    }
    Ok((opts, operands))
}

/// The context a utility runs in.
pub struct Ctx<'a> {
    /// The shell (working directory, file system, variables).
    pub sh: &'a mut Shell,
    /// The descriptors.
    pub io: &'a Io,
    /// The utility's name, for messages.
    pub name: &'a str,
}

impl<'a> Ctx<'a> {
    /// A context for `argv[0]`.
    pub fn new(sh: &'a mut Shell, io: &'a Io, name: &'a str) -> Self {
        Ctx { sh, io, name }
    }

    /// Writes `NAME: msg` to stderr.
    pub fn err(&self, msg: impl AsRef<str>) {
        let _ = put(
            &self.io.stderr(),
            format!("{}: {}\n", self.name, msg.as_ref()).as_bytes(),
        );
    }

    /// Writes `NAME: 'path': reason` style messages for a path.
    pub fn err_path(&self, path: &[u8], e: &std::io::Error) {
        self.err(format!(
            "{}: {}",
            String::from_utf8_lossy(path),
            error_text(e)
        ));
    }

    /// Writes to stdout; `Err` means stop (the reader is gone).
    pub fn out(&self, b: &[u8]) -> Result<(), Broken> {
        put(&self.io.stdout(), b)
    }

    /// The host path of an operand.
    pub fn host(&self, p: &[u8]) -> std::io::Result<PathBuf> {
        self.sh.fs.host(&self.sh.cwd, p)
    }

    /// What an operand names (`None` outside `/work`).
    pub fn target(&self, p: &[u8]) -> Option<Target> {
        self.sh.fs.target(&self.sh.fs.absolute(&self.sh.cwd, p))
    }

    /// All of standard input.
    pub fn stdin(&self) -> Vec<u8> {
        self.io.stdin().borrow_mut().take_all()
    }

    /// The contents of an input operand (`-` is stdin).
    pub fn read_input(&self, p: &[u8]) -> std::io::Result<Vec<u8>> {
        if p == b"-" {
            return Ok(self.stdin());
        }
        match self.target(p) {
            Some(Target::Path(h)) => read_file_capped(&h),
            Some(Target::Null) => Ok(Vec::new()),
            Some(Target::Std(0)) => Ok(self.stdin()),
            Some(Target::Std(_)) => Ok(Vec::new()),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        }
    }

    /// The inputs named by `files` (stdin when empty), each with its name;
    /// unreadable ones are reported and set `failed`.
    pub fn inputs(&self, files: &[Vec<u8>], failed: &mut bool) -> Vec<(Vec<u8>, Vec<u8>)> {
        if files.is_empty() {
            return vec![(b"-".to_vec(), self.stdin())];
        }
        // All operands are held at once (`sort f f f`): together they get
        // the cap of one file.
        let mut out = Vec::new();
        let mut total = 0usize;
        for f in files {
            let read = match self.target(f) {
                Some(Target::Path(h)) if f != b"-" => {
                    read_file_at_most(&h, MAX_FILE_READ.saturating_sub(total))
                }
                _ => self.read_input(f),
            };
            match read {
                Ok(d) => {
                    total += d.len();
                    out.push((f.clone(), d))
                }
                Err(e) => {
                    self.err_path(f, &e);
                    *failed = true;
                }
            }
        }
        out
    }
}

/// Parses a size like `10`, `10K`, `1M` (powers of 1024; `KB` = 1000).
pub fn parse_size(s: &[u8]) -> Option<u64> {
    let t = String::from_utf8_lossy(s).into_owned();
    let digits = t.trim_start_matches(['-', '+']);
    let n = digits.chars().take_while(|c| c.is_ascii_digit()).count();
    let num: u64 = digits[..n].parse().ok()?;
    let mult: u64 = match &digits[n..] {
        "" | "c" => 1,
        "b" => 512,
        "K" | "k" | "KiB" => 1 << 10,
        "KB" | "kB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        "G" | "GiB" => 1 << 30,
        "GB" => 1_000_000_000,
        _ => return None,
    };
    num.checked_mul(mult)
}
