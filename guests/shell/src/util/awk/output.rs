//! awk's I/O: buffered standard output, redirected outputs (files and
//! commands), records by `RS`, and `getline` in its forms.

use super::ast::{Expr, Redirect};
use super::interp::{Awk, Flow, Output, Res, Source};
use super::value::Val;
use crate::io::{Fd, Input, Io, Sink, put};

impl Awk<'_> {
    /// Writes standard output's buffer; `Err(Stop)` when the reader is
    /// gone (as awk dies of SIGPIPE).
    pub fn flush_out(&mut self) -> Res<()> {
        if !self.out.is_empty() {
            let r = put(&self.io.stdout(), &self.out);
            self.out.clear();
            if r.is_err() {
                return Err(Flow::Stop);
            }
        }
        Ok(())
    }

    /// print/printf output, redirected or not.
    pub fn emit(&mut self, redir: Option<&Redirect>, text: &[u8]) -> Res<()> {
        let (target, kind) = match redir {
            None => {
                self.out.extend_from_slice(text);
                if self.out.len() > 1 << 16 {
                    self.flush_out()?;
                }
                return Ok(());
            }
            Some(Redirect::File(e)) => (e, b'>'),
            Some(Redirect::Append(e)) => (e, b'a'),
            Some(Redirect::Pipe(e)) => (e, b'|'),
        };
        let v = self.eval(target)?;
        let name = self.s(&v);
        match (name.as_slice(), kind) {
            (b"/dev/stdout" | b"-", b'>' | b'a') => {
                self.out.extend_from_slice(text);
                if self.out.len() > 1 << 16 {
                    self.flush_out()?;
                }
                return Ok(());
            }
            (b"/dev/stderr", b'>' | b'a') => {
                self.flush_out()?;
                let _ = put(&self.io.stderr(), text);
                return Ok(());
            }
            _ => {}
        }
        let i = match self.outputs.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                let o = self.open_output(&name, kind)?;
                self.outputs.push((name.clone(), o));
                self.outputs.len() - 1
            }
        };
        match &mut self.outputs[i].1 {
            Output::File(w) => {
                use std::io::Write;
                w.write_all(text).map_err(|e| {
                    Flow::Error(format!(
                        "can't write to `{}': {}",
                        String::from_utf8_lossy(&name),
                        crate::fs::error_text(&e)
                    ))
                })
            }
            Output::Pipe(buf) => put(buf, text).map_err(|_| {
                Flow::Error(format!(
                    "output to `{}' exceeds the pipe buffer limit ({} MiB)",
                    String::from_utf8_lossy(&name),
                    crate::limits::MAX_PIPE >> 20
                ))
            }),
        }
    }

    /// Opens a redirected output: `>` truncates the file once, `>>`
    /// appends, `|` collects what the command will read.
    fn open_output(&mut self, name: &[u8], kind: u8) -> Res<Output> {
        if kind == b'|' {
            return Ok(Output::Pipe(Sink::buffer(crate::limits::MAX_PIPE)));
        }
        self.sh
            .fs
            .host(&self.sh.cwd, name)
            .and_then(|h| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(kind == b'a')
                    .write(true)
                    .truncate(kind != b'a')
                    .open(h)
            })
            .map(|f| Output::File(std::io::BufWriter::with_capacity(64 << 10, f)))
            .map_err(|e| {
                Flow::Error(format!(
                    "can't redirect to `{}': {}",
                    String::from_utf8_lossy(name),
                    crate::fs::error_text(&e)
                ))
            })
    }

    /// Closes an output or input stream by name; returns its status.
    pub fn close(&mut self, name: &[u8]) -> Res<i32> {
        self.readers.remove(name);
        let Some(i) = self.outputs.iter().position(|(n, _)| n == name) else {
            return Ok(-1);
        };
        let (n, o) = self.outputs.remove(i);
        self.finish_output(&n, o)
    }

    /// Ends a redirected output: flushes a file, or runs the command on
    /// what was printed to it.
    pub fn finish_output(&mut self, name: &[u8], o: Output) -> Res<i32> {
        match o {
            Output::File(mut w) => {
                use std::io::Write;
                Ok(match w.flush() {
                    Ok(()) => 0,
                    Err(e) => {
                        let _ = put(
                            &self.io.stderr(),
                            format!(
                                "awk: can't write to `{}': {}\n",
                                String::from_utf8_lossy(name),
                                crate::fs::error_text(&e)
                            )
                            .as_bytes(),
                        );
                        1
                    }
                })
            }
            Output::Pipe(buf) => {
                self.flush_out()?;
                let (data, _) = buf.borrow_mut().take();
                let mut io: Io = self.io.clone();
                io.fds[0] = Some(Fd::In(Input::piped(data)));
                self.run_command(&io, name)
            }
        }
    }

    /// Runs `cmd` with `sh -c` (for `system`, `print | cmd`, `cmd |
    /// getline`); a limit that ends the shell's evaluation stops awk.
    pub fn run_command(&mut self, io: &Io, cmd: &[u8]) -> Res<i32> {
        let r = self
            .sh
            .run_child(io, cmd, "sh: -c", b"sh".to_vec(), Vec::new(), &[]);
        if self.sh.fatal().is_some() {
            return Err(Flow::Stop);
        }
        Ok(r.unwrap_or(1))
    }

    /// Reads the next record from `src` by RS.
    pub fn read_record(&mut self, src: &mut Source) -> Res<Option<Vec<u8>>> {
        let rs = self.special("RS");
        let data = &src.data;
        let mut pos = src.pos;
        if pos >= data.len() {
            return Ok(None);
        }
        let rec = if rs.is_empty() {
            while pos < data.len() && data[pos] == b'\n' {
                pos += 1;
            }
            if pos >= data.len() {
                src.pos = pos;
                return Ok(None);
            }
            let rest = &data[pos..];
            match crate::bytes::find(rest, b"\n\n") {
                Some(i) => {
                    let r = rest[..i].to_vec();
                    let mut p = pos + i;
                    while p < data.len() && data[p] == b'\n' {
                        p += 1;
                    }
                    pos = p;
                    r
                }
                None => {
                    pos = data.len();
                    rest.strip_suffix(b"\n").unwrap_or(rest).to_vec()
                }
            }
        } else if rs.len() == 1 {
            let rest = &data[pos..];
            match rest.iter().position(|&c| c == rs[0]) {
                Some(i) => {
                    pos += i + 1;
                    rest[..i].to_vec()
                }
                None => {
                    pos = data.len();
                    rest.to_vec()
                }
            }
        } else {
            let re = self.regex(&rs)?;
            let rest = &data[pos..];
            match re.find(rest).filter(|m| m.end() > m.start()) {
                Some(m) => {
                    pos += m.end();
                    rest[..m.start()].to_vec()
                }
                None => {
                    pos = data.len();
                    rest.to_vec()
                }
            }
        };
        src.pos = pos;
        Ok(Some(rec))
    }

    fn bump(&mut self, name: &str) -> Res<()> {
        let n = self.get(name)?.num();
        self.set(name, Val::Num(n + 1.0))
    }

    /// `getline` in its forms; returns 1, 0 at the end, -1 on error.
    pub fn getline(
        &mut self,
        var: Option<&Expr>,
        file: Option<&Expr>,
        cmd: Option<&Expr>,
    ) -> Res<Val> {
        let key = match (file, cmd) {
            (Some(f), _) => {
                let v = self.eval(f)?;
                Some((self.s(&v), false))
            }
            (None, Some(c)) => {
                let v = self.eval(c)?;
                Some((self.s(&v), true))
            }
            _ => None,
        };
        let rec = match key {
            None => {
                let Some(r) = self.next_main_record()? else {
                    return Ok(Val::Num(0.0));
                };
                self.bump("NR")?;
                self.bump("FNR")?;
                r
            }
            Some((name, is_cmd)) => {
                if !self.readers.contains_key(&name) {
                    let data = if is_cmd {
                        self.flush_out()?;
                        let buf = Sink::buffer(crate::limits::MAX_PIPE);
                        let mut io = self.io.clone();
                        io.fds[1] = Some(Fd::Out(buf.clone()));
                        self.run_command(&io, &name)?;
                        let (d, _) = buf.borrow_mut().take();
                        d
                    } else if name == b"-" || name == b"/dev/stdin" {
                        self.io.stdin().borrow_mut().take_all()
                    } else {
                        match self
                            .sh
                            .fs
                            .host(&self.sh.cwd, &name)
                            .and_then(|h| crate::util::read_file_capped(&h))
                        {
                            Ok(d) => d,
                            Err(_) => return Ok(Val::Num(-1.0)),
                        }
                    };
                    self.readers.insert(name.clone(), Source { data, pos: 0 });
                }
                let mut src = self.readers.remove(&name).unwrap_or_default();
                let r = self.read_record(&mut src)?;
                self.readers.insert(name, src);
                let Some(r) = r else {
                    return Ok(Val::Num(0.0));
                };
                if var.is_none() {
                    self.bump("NR")?;
                }
                r
            }
        };
        match var {
            Some(lv) => self.assign(lv, Val::StrNum(rec))?,
            None => self.set_record(rec),
        }
        Ok(Val::Num(1.0))
    }
}
