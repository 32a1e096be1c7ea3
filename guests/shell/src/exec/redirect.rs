//! Redirections: opening files under `/work`, `/dev/null`, here-documents,
//! here-strings and descriptor duplication.

use super::Shell;
use crate::fs::{Target, error_text};
use crate::io::{Fd, Input, Io, Out, Sink};
use crate::parse::ast::{Redir, RedirOp};
use std::cell::RefCell;
use std::fs::OpenOptions;
use std::io::BufWriter;
use std::rc::Rc;

impl Shell {
    /// Applies `redirs` on top of `io`. Returns the new descriptors and the
    /// files opened (to flush and close afterwards), or the status of a
    /// failed redirection (its message already printed).
    pub fn redirect(&mut self, redirs: &[Redir], io: &Io) -> Result<(Io, Vec<Out>), i32> {
        let mut out = io.clone();
        let mut opened = Vec::new();
        for r in redirs {
            if let Err(msg) = self.one_redirect(r, &mut out, &mut opened, io) {
                if !msg.is_empty() {
                    self.error(io, &msg);
                }
                self.close_files(opened, io);
                return Err(1);
            }
        }
        Ok((out, opened))
    }

    /// Flushes the files a redirection opened, reporting write errors.
    pub fn close_files(&mut self, opened: Vec<Out>, io: &Io) {
        for o in opened {
            let err = o.borrow_mut().flush();
            if let Some(e) = err {
                self.error(io, &format!("write error: {}", error_text(&e)));
            }
            *o.borrow_mut() = Sink::Null;
        }
    }

    fn one_redirect(
        &mut self,
        r: &Redir,
        out: &mut Io,
        opened: &mut Vec<Out>,
        io: &Io,
    ) -> Result<(), String> {
        let default_fd = match r.op {
            RedirOp::In
            | RedirOp::ReadWrite
            | RedirOp::DupIn
            | RedirOp::HereDoc
            | RedirOp::HereString => 0,
            _ => 1,
        };
        let fd = r.fd.unwrap_or(default_fd) as usize;
        if fd >= out.fds.len() {
            return Err(format!("{fd}: bad file descriptor"));
        }
        let expand = |sh: &mut Shell, w| sh.expand_scalar(w, io).map_err(|_| String::new());
        match r.op {
            RedirOp::HereDoc => {
                let body = match r.heredoc.as_ref().and_then(|h| h.body.get()) {
                    Some(w) => expand(self, w)?,
                    None => Vec::new(),
                };
                out.fds[fd] = Some(Fd::In(Input::bytes(body)));
            }
            RedirOp::HereString => {
                let mut body = expand(self, &r.target)?;
                body.push(b'\n');
                out.fds[fd] = Some(Fd::In(Input::bytes(body)));
            }
            RedirOp::DupIn | RedirOp::DupOut => {
                let t = expand(self, &r.target)?;
                if t == b"-" {
                    out.fds[fd] = None;
                } else if let Some(n) = std::str::from_utf8(&t)
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                {
                    let src = out.fds.get(n).cloned().flatten();
                    if src.is_none() {
                        return Err(format!("{n}: bad file descriptor"));
                    }
                    out.fds[fd] = src;
                } else if r.op == RedirOp::DupOut && r.fd.is_none() {
                    // `>&file`: stdout and stderr to the file.
                    let sink = self.open_out(&t, false, out)?;
                    opened.push(sink.clone());
                    out.fds[1] = Some(Fd::Out(sink.clone()));
                    out.fds[2] = Some(Fd::Out(sink));
                } else {
                    return Err(format!(
                        "{}: ambiguous redirect",
                        String::from_utf8_lossy(&t)
                    ));
                }
            }
            RedirOp::In | RedirOp::ReadWrite => {
                let t = expand(self, &r.target)?;
                let input = self.open_in(&t, r.op == RedirOp::ReadWrite, out)?;
                out.fds[fd] = Some(input);
            }
            RedirOp::Out | RedirOp::Append => {
                let t = expand(self, &r.target)?;
                let sink = self.open_out(&t, r.op == RedirOp::Append, out)?;
                opened.push(sink.clone());
                out.fds[fd] = Some(Fd::Out(sink));
            }
            RedirOp::OutErr | RedirOp::AppendErr => {
                let t = expand(self, &r.target)?;
                let sink = self.open_out(&t, r.op == RedirOp::AppendErr, out)?;
                opened.push(sink.clone());
                out.fds[1] = Some(Fd::Out(sink.clone()));
                out.fds[2] = Some(Fd::Out(sink));
            }
        }
        Ok(())
    }

    fn open_in(&mut self, t: &[u8], create: bool, cur: &Io) -> Result<Fd, String> {
        let name = String::from_utf8_lossy(t).into_owned();
        match self.fs.target(&self.fs.absolute(&self.cwd, t)) {
            Some(Target::Null) => Ok(Fd::In(Input::empty())),
            Some(Target::Std(n)) => cur
                .fds
                .get(n)
                .cloned()
                .flatten()
                .ok_or_else(|| format!("{name}: bad file descriptor")),
            Some(Target::Path(p)) => {
                if create && !p.exists() {
                    std::fs::File::create(&p).map_err(|e| format!("{name}: {}", error_text(&e)))?;
                }
                if p.is_dir() {
                    return Err(format!("{name}: Is a directory"));
                }
                let data = crate::util::read_file_capped(&p)
                    .map_err(|e| format!("{name}: {}", error_text(&e)))?;
                Ok(Fd::In(Input::bytes(data)))
            }
            None => Err(format!("{name}: No such file or directory")),
        }
    }

    fn open_out(&mut self, t: &[u8], append: bool, cur: &Io) -> Result<Out, String> {
        let name = String::from_utf8_lossy(t).into_owned();
        if t.is_empty() {
            return Err(": No such file or directory".to_string());
        }
        match self.fs.target(&self.fs.absolute(&self.cwd, t)) {
            Some(Target::Null) => Ok(Sink::null()),
            Some(Target::Std(n)) => Ok(cur.out(n)),
            Some(Target::Path(p)) => {
                if p.is_dir() {
                    return Err(format!("{name}: Is a directory"));
                }
                if self.opts.noclobber && !append && p.is_file() {
                    return Err(format!("{name}: cannot overwrite existing file"));
                }
                let f = OpenOptions::new()
                    .write(true)
                    .create(true)
                    .append(append)
                    .truncate(!append)
                    .open(&p)
                    .map_err(|e| format!("{name}: {}", error_text(&e)))?;
                Ok(Rc::new(RefCell::new(Sink::File {
                    w: BufWriter::with_capacity(64 * 1024, f),
                    err: None,
                })))
            }
            None => Err(format!("{name}: No such file or directory")),
        }
    }
}
