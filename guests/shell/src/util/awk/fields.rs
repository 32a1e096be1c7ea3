//! Records and fields: splitting by `FS`, `$n` reads and writes, `NF`,
//! rebuilding `$0` with `OFS`.

use super::interp::{Awk, Flow, Res};
use super::value::Val;
use crate::limits::{MAX_FIELDS, MAX_SPACE};

fn fmt_err(e: impl std::fmt::Display) -> Flow {
    Flow::Error(e.to_string())
}

impl Awk<'_> {
    /// Splits `$0` into fields (once).
    pub fn split(&mut self) -> Res<&Vec<Vec<u8>>> {
        if self.fields.is_none() {
            let fs = self.special("FS");
            let rs = self.special("RS");
            let f = self.split_with(&self.record.clone(), &fs, rs.is_empty())?;
            self.fields = Some(f);
        }
        Ok(self.fields.get_or_insert_with(Vec::new))
    }

    /// Splits text by a field separator as awk does.
    pub fn split_with(&mut self, text: &[u8], fs: &[u8], newline_too: bool) -> Res<Vec<Vec<u8>>> {
        if text.is_empty() {
            return Ok(Vec::new());
        }
        // Fields are counted as they are made: at most MAX_FIELDS.
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let push = |parts: &mut Vec<Vec<u8>>, f: &[u8]| -> Res<()> {
            if parts.len() >= MAX_FIELDS {
                return Err(fmt_err(format!("too many fields (more than {MAX_FIELDS})")));
            }
            parts.push(f.to_vec());
            Ok(())
        };
        if fs == b" " {
            for s in text.split(|c| matches!(c, b' ' | b'\t' | b'\n')) {
                if !s.is_empty() {
                    push(&mut parts, s)?;
                }
            }
            return Ok(parts);
        }
        if fs.is_empty() {
            match std::str::from_utf8(text) {
                Ok(s) => {
                    for (i, c) in s.char_indices() {
                        push(&mut parts, &text[i..i + c.len_utf8()])?;
                    }
                }
                Err(_) => {
                    for i in 0..text.len() {
                        push(&mut parts, &text[i..i + 1])?;
                    }
                }
            }
        } else if fs.len() == 1 && fs[0] != b'\\' {
            for s in text.split(|&c| c == fs[0] || (newline_too && c == b'\n')) {
                push(&mut parts, s)?;
            }
            return Ok(parts);
        } else {
            let re = self.regex(fs)?;
            let mut last = 0;
            for m in re.find_iter(text) {
                if m.start() == m.end() {
                    continue;
                }
                push(&mut parts, &text[last..m.start()])?;
                last = m.end();
            }
            push(&mut parts, &text[last..])?;
        }
        if newline_too {
            let whole = std::mem::take(&mut parts);
            for p in &whole {
                for s in p.split(|&c| c == b'\n') {
                    push(&mut parts, s)?;
                }
            }
        }
        Ok(parts)
    }

    /// Rebuilds `$0` from the fields with OFS (its size checked first).
    pub fn rebuild(&mut self) -> Res<()> {
        let ofs = self.special("OFS");
        if let Some(f) = &self.fields {
            let len = f
                .iter()
                .map(|x| x.len())
                .sum::<usize>()
                .saturating_add(ofs.len().saturating_mul(f.len().saturating_sub(1)));
            if len > MAX_SPACE {
                return Err(fmt_err(format!(
                    "record too large (more than {} MiB)",
                    MAX_SPACE >> 20
                )));
            }
            self.record = f.join(ofs.as_slice());
        }
        Ok(())
    }

    /// Sets `$0` (fields re-split lazily).
    pub fn set_record(&mut self, r: Vec<u8>) {
        self.record = r;
        self.fields = None;
    }

    /// `$i`.
    pub fn field(&mut self, i: usize) -> Res<Val> {
        if i == 0 {
            return Ok(Val::StrNum(self.record.clone()));
        }
        Ok(self
            .split()?
            .get(i - 1)
            .map_or(Val::Uninit, |f| Val::StrNum(f.clone())))
    }

    /// `$i = v`.
    pub fn set_field(&mut self, i: usize, v: Vec<u8>) -> Res<()> {
        if i == 0 {
            self.set_record(v);
            return Ok(());
        }
        if i > MAX_FIELDS {
            return Err(fmt_err("field index too large"));
        }
        let mut f = self.split()?.clone();
        if f.len() < i {
            f.resize(i, Vec::new());
        }
        f[i - 1] = v;
        self.fields = Some(f);
        self.rebuild()
    }
}
