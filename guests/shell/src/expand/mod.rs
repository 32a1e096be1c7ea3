//! Word expansion: braces, tildes, parameters, command substitution,
//! arithmetic, field splitting, pathname expansion and quote removal, in
//! bash's order. Every result is bytes; sizes are capped.

mod brace;
mod param;

use crate::exec::{Ctl, Shell};
use crate::io::{Fd, Io, Sink};
use crate::limits::{FIELD_OVERHEAD, MAX_EXPANSION, MAX_FIELDS, MAX_WORD};
use crate::parse::ast::{Part, Word};
use std::rc::Rc;

/// One field being built: its bytes and, per byte, whether it is an
/// unquoted (pattern-active) byte.
#[derive(Debug, Clone, Default)]
pub struct Field {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `true` where the byte came unquoted (globbing applies).
    pub active: Vec<bool>,
}

fn too_large_total() -> String {
    format!(
        "expansion too large: the words of one command exceed {} MiB",
        MAX_EXPANSION >> 20
    )
}

/// Builds the fields of one word.
pub(crate) struct Builder {
    fields: Vec<Field>,
    /// Bytes of the finished fields, each with [`FIELD_OVERHEAD`].
    total: usize,
    cur: Field,
    started: bool,
    /// Split unquoted expansions (false for assignments and other scalar
    /// contexts).
    split: bool,
    ifs: Vec<u8>,
}

impl Builder {
    fn new(split: bool, ifs: Vec<u8>) -> Self {
        Builder {
            fields: Vec::new(),
            total: 0,
            cur: Field::default(),
            started: false,
            split,
            ifs,
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.cur.bytes.len() > MAX_WORD {
            return Err(format!(
                "expansion too large: a word exceeds {} MiB",
                MAX_WORD >> 20
            ));
        }
        if self.fields.len() > MAX_FIELDS {
            return Err(format!("expansion makes more than {MAX_FIELDS} words"));
        }
        if self.total + self.cur.bytes.len() > MAX_EXPANSION {
            return Err(too_large_total());
        }
        Ok(())
    }

    /// Appends bytes; `active` marks them unquoted.
    pub(crate) fn push(&mut self, b: &[u8], active: bool) -> Result<(), String> {
        if !b.is_empty() {
            self.started = true;
            self.cur.bytes.extend_from_slice(b);
            self.cur.active.resize(self.cur.bytes.len(), active);
        }
        self.check()
    }

    /// Appends quoted bytes; even empty ones make the field exist.
    pub(crate) fn push_quoted(&mut self, b: &[u8]) -> Result<(), String> {
        self.started = true;
        self.push(b, false)
    }

    fn end_field(&mut self, force: bool) {
        if self.started || force {
            self.total += self.cur.bytes.len() + FIELD_OVERHEAD;
            self.fields.push(std::mem::take(&mut self.cur));
        }
        self.cur = Field::default();
        self.started = false;
    }

    /// Appends the value of an expansion: quoted, or split on IFS.
    pub(crate) fn push_value(&mut self, v: &[u8], quoted: bool) -> Result<(), String> {
        if quoted {
            return self.push_quoted(v);
        }
        if !self.split || self.ifs.is_empty() {
            return self.push(v, true);
        }
        let ifs = self.ifs.clone();
        let is_ws = |c: u8| ifs.contains(&c) && matches!(c, b' ' | b'\t' | b'\n');
        let is_other = |c: u8| ifs.contains(&c) && !matches!(c, b' ' | b'\t' | b'\n');
        let mut i = 0;
        let n = v.len();
        let lead = v.iter().take_while(|&&c| is_ws(c)).count();
        if lead > 0 {
            self.end_field(false);
            i = lead;
        }
        while i < n {
            let start = i;
            while i < n && !is_ws(v[i]) && !is_other(v[i]) {
                i += 1;
            }
            self.push(&v[start..i], true)?;
            if i >= n {
                break;
            }
            while i < n && is_ws(v[i]) {
                i += 1;
            }
            let mut hard = false;
            if i < n && is_other(v[i]) {
                hard = true;
                i += 1;
                while i < n && is_ws(v[i]) {
                    i += 1;
                }
            }
            self.end_field(hard);
        }
        Ok(())
    }

    /// Appends several values as separate fields (`"$@"`): the first joins
    /// the current field, the last stays open.
    pub(crate) fn push_list(&mut self, vals: &[Vec<u8>], quoted: bool) -> Result<(), String> {
        for (i, v) in vals.iter().enumerate() {
            if i > 0 {
                self.end_field(quoted);
            }
            self.push_value(v, quoted)?;
            // Also when every value is empty (`"${a[@]}"` of a million
            // empty elements).
            self.check()?;
        }
        Ok(())
    }

    fn finish(mut self) -> Vec<Field> {
        self.end_field(false);
        self.fields
    }
}

impl Shell {
    /// `$IFS` (the default when unset).
    pub fn ifs(&self) -> Vec<u8> {
        match self.vars.get(b"IFS") {
            Some(v) => v.value.as_deref().map(|x| x.scalar()).unwrap_or_default(),
            None => b" \t\n".to_vec(),
        }
        .into_iter()
        .collect()
    }

    fn fail(&self, io: &Io, msg: &str) -> Ctl {
        self.error(io, msg);
        Ctl::Abort(1)
    }

    /// Expands words as command arguments: every step, then globbing.
    pub fn expand_words(&mut self, words: &[Word], io: &Io) -> Result<Vec<Vec<u8>>, Ctl> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut total = 0usize;
        for w in words {
            let braced;
            let list: &[Word] = if brace::has_brace(w) {
                braced = brace::expand(w).map_err(|e| self.fail(io, &e))?;
                &braced
            } else {
                std::slice::from_ref(w)
            };
            for w in list {
                let fields = self.expand_fields(w, true, io)?;
                for f in fields {
                    let before = out.len();
                    self.glob_field(f, &mut out);
                    if out.len() > MAX_FIELDS {
                        return Err(
                            self.fail(io, &format!("expansion makes more than {MAX_FIELDS} words"))
                        );
                    }
                    total += out[before..]
                        .iter()
                        .map(|f| f.len() + FIELD_OVERHEAD)
                        .sum::<usize>();
                    if total > MAX_EXPANSION {
                        return Err(self.fail(io, &too_large_total()));
                    }
                }
            }
        }
        Ok(out)
    }

    fn glob_field(&self, f: Field, out: &mut Vec<Vec<u8>>) {
        if !self.opts.noglob && crate::pattern::has_magic(&f.bytes, Some(&f.active)) {
            let found = crate::glob::glob(&self.fs, &self.cwd, &f.bytes, &f.active);
            if !found.is_empty() {
                out.extend(found);
                return;
            }
        }
        out.push(f.bytes);
    }

    /// Expands one word to a single string: no splitting, no globbing.
    pub fn expand_scalar(&mut self, w: &Word, io: &Io) -> Result<Vec<u8>, Ctl> {
        let fields = self.expand_fields(w, false, io)?;
        let len: usize = fields.iter().map(|f| f.bytes.len() + 1).sum();
        if len > MAX_WORD + 1 {
            return Err(self.fail(
                io,
                &format!("expansion too large: a word exceeds {} MiB", MAX_WORD >> 20),
            ));
        }
        let mut out = Vec::with_capacity(len);
        for (i, f) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.extend(f.bytes);
        }
        Ok(out)
    }

    /// Expands a pattern word: the bytes and which of them are active.
    pub fn expand_pattern(&mut self, w: &Word, io: &Io) -> Result<(Vec<u8>, Vec<bool>), Ctl> {
        let fields = self.expand_fields(w, false, io)?;
        let mut bytes = Vec::new();
        let mut active = Vec::new();
        for (i, f) in fields.into_iter().enumerate() {
            if i > 0 {
                bytes.push(b' ');
                active.push(false);
            }
            bytes.extend(f.bytes);
            active.extend(f.active);
        }
        Ok((bytes, active))
    }

    /// Expands a word into fields (before globbing).
    pub(crate) fn expand_fields(
        &mut self,
        w: &Word,
        split: bool,
        io: &Io,
    ) -> Result<Vec<Field>, Ctl> {
        let mut b = Builder::new(split, self.ifs());
        self.expand_parts(w, false, &mut b, io)?;
        Ok(b.finish())
    }

    /// Expands `parts` into the builder; `dq` when inside double quotes.
    pub(crate) fn expand_parts(
        &mut self,
        parts: &[Part],
        dq: bool,
        b: &mut Builder,
        io: &Io,
    ) -> Result<(), Ctl> {
        // `${x:-${y:-…}}` recurses here (bounded by the parser, but maybe
        // deep inside calls).
        self.check_stack(io)?;
        for p in parts {
            let r = match p {
                Part::Lit(t) => {
                    if dq {
                        b.push_quoted(t)
                    } else {
                        b.push(t, true)
                    }
                }
                Part::Quoted(t) => b.push_quoted(t),
                Part::Double(inner) => {
                    if inner.is_empty() {
                        b.push_quoted(b"")
                    } else {
                        self.expand_parts(inner, true, b, io)?;
                        Ok(())
                    }
                }
                Part::Tilde(name) => {
                    let home = match name.as_slice() {
                        b"" => self.vars.value(b"HOME").unwrap_or_default(),
                        b"root" => b"/work".to_vec(),
                        b"+" => self.cwd.clone(),
                        b"-" => self.vars.value(b"OLDPWD").unwrap_or_else(|| b"~-".to_vec()),
                        other => [b"~", other].concat(),
                    };
                    b.push_quoted(&home)
                }
                Part::Param(param) => {
                    self.expand_param(param, dq, b, io)?;
                    Ok(())
                }
                Part::Command(list) => {
                    let out = self.command_subst(list, io)?;
                    b.push_value(&out, dq)
                }
                Part::Arith(w) => {
                    let v = self.arith_word(w, io)?;
                    b.push_value(v.to_string().as_bytes(), dq)
                }
                Part::ProcSubst(list, output) => {
                    let path = self.process_subst(list, *output, io)?;
                    b.push_quoted(&path)
                }
            };
            r.map_err(|e| self.fail(io, &e))?;
        }
        Ok(())
    }

    /// Runs `$(…)` in a subshell and returns its output without trailing
    /// newlines (NUL bytes dropped, as bash does).
    pub fn command_subst(
        &mut self,
        list: &crate::parse::ast::List,
        io: &Io,
    ) -> Result<Vec<u8>, Ctl> {
        if let Some(file) = lone_input_redirect(list) {
            // `$(<file)`: the file's contents.
            let name = self.expand_scalar(file, io)?;
            let data = match self
                .fs
                .host(&self.cwd, &name)
                .and_then(|h| crate::util::read_file_at_most(&h, MAX_WORD))
            {
                Ok(d) => d,
                Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                    return Err(self.fail(
                        io,
                        &format!(
                            "command substitution: output exceeds the limit of {} MiB",
                            MAX_WORD >> 20
                        ),
                    ));
                }
                Err(e) => {
                    self.error(
                        io,
                        &format!(
                            "{}: {}",
                            crate::bytes::lossy(&name),
                            crate::fs::error_text(&e)
                        ),
                    );
                    self.subst_status = Some(1);
                    return Ok(Vec::new());
                }
            };
            let mut out = data;
            while out.last() == Some(&b'\n') {
                out.pop();
            }
            self.subst_status = Some(0);
            return Ok(out);
        }
        let buf = Sink::buffer(MAX_WORD);
        let mut sub_io = io.clone();
        sub_io.fds[1] = Some(Fd::Out(buf.clone()));
        let status = self.subshell(&sub_io, |sh| sh.exec_list(list, &sub_io))?;
        self.subst_status = Some(status);
        self.status = status;
        let (mut out, full) = buf.borrow_mut().take();
        if full {
            return Err(self.fail(
                io,
                &format!(
                    "command substitution: output exceeds the limit of {} MiB",
                    MAX_WORD >> 20
                ),
            ));
        }
        while out.last() == Some(&b'\n') {
            out.pop();
        }
        out.retain(|&c| c != 0);
        Ok(out)
    }

    /// `<(…)`/`>(…)`: a file under `/tmp`. For `<(…)` the commands run now
    /// and the file holds their output; for `>(…)` they run on the file's
    /// contents once the command that named it has ended.
    fn process_subst(
        &mut self,
        list: &Rc<crate::parse::ast::List>,
        output: bool,
        io: &Io,
    ) -> Result<Vec<u8>, Ctl> {
        self.psub_count += 1;
        let name = format!("/tmp/plimsoll-psub-{}-{}", self.depth, self.psub_count).into_bytes();
        let abs = self.fs.absolute(&self.cwd, &name);
        let Some(crate::fs::Target::Path(host)) = self.fs.target(&abs) else {
            return Err(self.fail(io, "process substitution: /tmp is not available"));
        };
        let data = if output {
            Vec::new()
        } else {
            let buf = Sink::buffer(crate::limits::MAX_PIPE);
            let mut sub_io = io.clone();
            sub_io.fds[1] = Some(Fd::Out(buf.clone()));
            self.subshell(&sub_io, |sh| sh.exec_list(list, &sub_io))?;
            let (d, _) = buf.borrow_mut().take();
            d
        };
        if let Err(e) = std::fs::write(&host, &data) {
            return Err(self.fail(
                io,
                &format!("process substitution: {}", crate::fs::error_text(&e)),
            ));
        }
        self.psubs
            .push((host, if output { Some(list.clone()) } else { None }));
        Ok(abs)
    }

    /// Ends the process substitutions made since `mark`.
    pub fn finish_psubs(&mut self, mark: usize, io: &Io) {
        while self.psubs.len() > mark {
            let Some((host, list)) = self.psubs.pop() else {
                break;
            };
            if let Some(list) = list {
                match crate::util::read_file_at_most(&host, crate::limits::MAX_PIPE) {
                    Ok(data) => {
                        let mut sub_io = io.clone();
                        sub_io.fds[0] = Some(Fd::In(crate::io::Input::bytes(data)));
                        let _ = self.subshell(&sub_io, |sh| sh.exec_list(&list, &sub_io));
                    }
                    Err(e) => self.error(
                        io,
                        &format!(
                            "process substitution: {} (its input is at most {} MiB)",
                            crate::fs::error_text(&e),
                            crate::limits::MAX_PIPE >> 20
                        ),
                    ),
                }
            }
            let _ = std::fs::remove_file(&host);
        }
    }
}

/// The file of `$(<file)`: a lone simple command with one `<` redirection.
fn lone_input_redirect(list: &crate::parse::ast::List) -> Option<&Word> {
    use crate::parse::ast::{Command, RedirOp};
    let [item] = list.as_slice() else { return None };
    if !item.and_or.rest.is_empty() || item.and_or.first.cmds.len() != 1 || item.and_or.first.bang {
        return None;
    }
    let Command::Simple(s) = &item.and_or.first.cmds[0] else {
        return None;
    };
    match (
        s.words.is_empty(),
        s.assigns.is_empty(),
        s.redirs.as_slice(),
    ) {
        (true, true, [r]) if r.op == RedirOp::In && r.fd.is_none() => Some(&r.target),
        _ => None,
    }
}
