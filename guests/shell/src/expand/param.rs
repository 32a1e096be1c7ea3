//! Parameter expansion: `$name`, special parameters, arrays and every
//! `${…}` operator.

use super::Builder;
use crate::exec::state::Value;
use crate::exec::{Ctl, Shell};
use crate::io::Io;
use crate::limits::MAX_WORD;
use crate::parse::ast::{Param, ParamOp, Part, Word};
use crate::pattern::Pattern;

/// A parameter's value before the operator applies.
enum Val {
    Unset,
    One(Vec<u8>),
    /// `$@`, `$*`, `${a[@]}`; `star` for the `*` forms.
    Many(Vec<Vec<u8>>, bool),
}

impl Shell {
    /// A positional or special parameter, or a variable's scalar value.
    pub fn param_scalar(&mut self, name: &[u8]) -> Option<Vec<u8>> {
        match name {
            b"?" => Some(self.status.to_string().into_bytes()),
            b"#" => Some(self.params.len().to_string().into_bytes()),
            b"$" | b"!" | b"BASHPID" => Some(b"1".to_vec()),
            b"-" => {
                let mut f = String::from("h");
                for (on, c) in [
                    (self.opts.errexit, 'e'),
                    (self.opts.noglob, 'f'),
                    (self.opts.nounset, 'u'),
                    (self.opts.xtrace, 'x'),
                    (self.opts.noclobber, 'C'),
                ] {
                    if on {
                        f.push(c);
                    }
                }
                Some(f.into_bytes())
            }
            b"0" => Some(self.arg0.clone()),
            b"@" | b"*" => Some(self.params.join(&b' ')),
            b"RANDOM" => {
                self.random ^= self.random << 13;
                self.random ^= self.random >> 7;
                self.random ^= self.random << 17;
                Some(((self.random >> 16) % 32768).to_string().into_bytes())
            }
            b"SECONDS" => Some(self.started.elapsed().as_secs().to_string().into_bytes()),
            b"LINENO" => Some(b"0".to_vec()),
            n if n.first().is_some_and(u8::is_ascii_digit) => {
                let i: usize = std::str::from_utf8(n).ok()?.parse().ok()?;
                self.params.get(i.checked_sub(1)?).cloned()
            }
            _ => self.vars.value(name),
        }
    }

    fn index_of(&mut self, idx: &Word, len: usize, io: &Io) -> Result<Option<usize>, Ctl> {
        let text = self.expand_scalar(idx, io)?;
        let i = self.arith_text(&text, io)?;
        if i < 0 {
            let back = i.unsigned_abs() as usize;
            return Ok(len.checked_sub(back));
        }
        Ok(Some(i as usize))
    }

    fn lookup(&mut self, p: &Param, io: &Io) -> Result<Val, Ctl> {
        let name = p.name.as_slice();
        if let Some(idx) = &p.index {
            let all = matches!(idx.as_slice(), [Part::Lit(t)] if t == b"@" || t == b"*");
            let star = matches!(idx.as_slice(), [Part::Lit(t)] if t == b"*");
            let value = self.vars.get(name).and_then(|v| v.value.clone());
            let value = value.as_deref();
            if all {
                return Ok(match value {
                    None => Val::Many(Vec::new(), star),
                    Some(v) => Val::Many(v.elements(), star),
                });
            }
            return Ok(match value {
                None => Val::Unset,
                Some(Value::Assoc(m)) => {
                    let key = self.expand_scalar(idx, io)?;
                    m.get(&key).cloned().map_or(Val::Unset, Val::One)
                }
                Some(Value::Arr(a)) => match self.index_of(idx, a.len(), io)? {
                    Some(i) => a.get(i).cloned().map_or(Val::Unset, Val::One),
                    None => Val::Unset,
                },
                Some(Value::Str(s)) => match self.index_of(idx, 1, io)? {
                    Some(0) => Val::One(s.clone()),
                    _ => Val::Unset,
                },
            });
        }
        Ok(match name {
            b"@" => Val::Many(self.params.as_ref().clone(), false),
            b"*" => Val::Many(self.params.as_ref().clone(), true),
            _ => self.param_scalar(name).map_or(Val::Unset, Val::One),
        })
    }

    /// Expands one parameter into the builder.
    pub(crate) fn expand_param(
        &mut self,
        p: &Param,
        dq: bool,
        b: &mut Builder,
        io: &Io,
    ) -> Result<(), Ctl> {
        let fail = |sh: &Shell, e: String| {
            sh.error(io, &e);
            Ctl::Abort(1)
        };
        let mut val = if p.indirect {
            self.indirect(p, io)?
        } else {
            self.lookup(p, io)?
        };
        let name = String::from_utf8_lossy(&p.name).into_owned();
        if p.length {
            let n = match &val {
                Val::Unset => {
                    self.check_unset(&name, io)?;
                    0
                }
                Val::One(v) => char_count(v),
                Val::Many(vs, _) => vs.len(),
            };
            return b
                .push_value(n.to_string().as_bytes(), dq)
                .map_err(|e| fail(self, e));
        }
        match &p.op {
            ParamOp::None => {
                if matches!(val, Val::Unset) {
                    self.check_unset(&name, io)?;
                }
            }
            ParamOp::Default { kind, colon, word } => {
                let missing = match &val {
                    Val::Unset => true,
                    Val::One(v) => *colon && v.is_empty(),
                    Val::Many(vs, _) => {
                        vs.is_empty() || (*colon && vs.iter().all(|v| v.is_empty()))
                    }
                };
                match (*kind, missing) {
                    (b'-', true) | (b'+', false) => {
                        return self.expand_parts(word, dq, b, io);
                    }
                    (b'+', true) => return Ok(()),
                    (b'=', true) => {
                        let v = self.expand_scalar(word, io)?;
                        if !crate::parse::is_name(&p.name) {
                            return Err(fail(self, format!("${name}: cannot assign in this way")));
                        }
                        self.vars
                            .set(&p.name, v.clone())
                            .map_err(|e| fail(self, e))?;
                        val = Val::One(v);
                    }
                    (b'?', true) => {
                        let msg = self.expand_scalar(word, io)?;
                        let msg = if msg.is_empty() {
                            "parameter null or not set".to_string()
                        } else {
                            String::from_utf8_lossy(&msg).into_owned()
                        };
                        self.error(io, &format!("{name}: {msg}"));
                        return Err(Ctl::Exit(127));
                    }
                    _ => {}
                }
            }
            op => {
                if matches!(val, Val::Unset) {
                    self.check_unset(&name, io)?;
                }
                val = self.apply_op(op, val, io)?;
            }
        }
        let r = match val {
            Val::Unset if dq => b.push_quoted(b""),
            Val::Unset => Ok(()),
            Val::One(v) => b.push_value(&v, dq),
            Val::Many(vs, star) => {
                if dq && star {
                    let sep: Vec<u8> = self.ifs().into_iter().take(1).collect();
                    b.push_quoted(&vs.join(sep.as_slice()))
                } else {
                    b.push_list(&vs, dq)
                }
            }
        };
        r.map_err(|e| fail(self, e))
    }

    fn check_unset(&self, name: &str, io: &Io) -> Result<(), Ctl> {
        if self.opts.nounset && name != "@" && name != "*" {
            self.error(io, &format!("{name}: unbound variable"));
            return Err(Ctl::Exit(127));
        }
        Ok(())
    }

    /// `${!name}` and `${!array[@]}`.
    fn indirect(&mut self, p: &Param, io: &Io) -> Result<Val, Ctl> {
        if let Some(idx) = &p.index
            && matches!(idx.as_slice(), [Part::Lit(t)] if t == b"@" || t == b"*")
        {
            let keys = match self.vars.get(&p.name).and_then(|v| v.value.as_deref()) {
                None => Vec::new(),
                Some(Value::Str(_)) => vec![b"0".to_vec()],
                Some(Value::Arr(a)) => (0..a.len()).map(|i| i.to_string().into_bytes()).collect(),
                Some(Value::Assoc(m)) => m.keys().cloned().collect(),
            };
            return Ok(Val::Many(keys, false));
        }
        let Some(target) = self.param_scalar(&p.name) else {
            return Ok(Val::Unset);
        };
        let (name, index) = match target.iter().position(|&c| c == b'[') {
            Some(i) if target.ends_with(b"]") => (
                target[..i].to_vec(),
                Some(vec![Part::Lit(target[i + 1..target.len() - 1].to_vec())]),
            ),
            _ => (target, None),
        };
        let valid = crate::parse::is_name(&name)
            || (!name.is_empty() && name.iter().all(u8::is_ascii_digit))
            || matches!(
                name.as_slice(),
                b"@" | b"*" | b"#" | b"?" | b"-" | b"$" | b"!"
            );
        if !valid {
            self.error(
                io,
                &format!("{}: invalid variable name", String::from_utf8_lossy(&name)),
            );
            return Err(Ctl::Abort(1));
        }
        let q = Param {
            name,
            index,
            length: false,
            indirect: false,
            op: ParamOp::None,
        };
        self.lookup(&q, io)
    }

    fn apply_op(&mut self, op: &ParamOp, val: Val, io: &Io) -> Result<Val, Ctl> {
        if let ParamOp::Slice { offset, length } = op {
            return self.slice(val, offset, length.as_ref(), io);
        }
        let (items, many, star) = match val {
            Val::Unset => (vec![Vec::new()], false, false),
            Val::One(v) => (vec![v], false, false),
            Val::Many(vs, star) => (vs, true, star),
        };
        let mut out = Vec::with_capacity(items.len());
        match op {
            ParamOp::Trim {
                suffix,
                longest,
                pattern,
            } => {
                let (pat, active) = self.expand_pattern(pattern, io)?;
                let pat = Pattern::new(&pat, Some(&active));
                for v in items {
                    let r = if *suffix {
                        pat.match_suffix(&v, *longest).map(|s| v[..s].to_vec())
                    } else {
                        pat.match_prefix(&v, *longest).map(|e| v[e..].to_vec())
                    };
                    out.push(r.unwrap_or(v));
                }
            }
            ParamOp::Replace {
                all,
                anchor,
                pattern,
                with,
            } => {
                let (pat, active) = self.expand_pattern(pattern, io)?;
                let rep = self.expand_scalar(with, io)?;
                let p = Pattern::new(&pat, Some(&active));
                for v in items {
                    out.push(if pat.is_empty() {
                        v
                    } else {
                        replace(&v, &p, &rep, *all, *anchor).map_err(|e| {
                            self.error(io, &e);
                            Ctl::Abort(1)
                        })?
                    });
                }
            }
            ParamOp::Case { upper, all } => {
                for v in items {
                    out.push(change_case(&v, *upper, *all));
                }
            }
            _ => out = items,
        }
        Ok(if many {
            Val::Many(out, star)
        } else {
            Val::One(out.into_iter().next().unwrap_or_default())
        })
    }

    fn slice(
        &mut self,
        val: Val,
        offset: &Word,
        length: Option<&Word>,
        io: &Io,
    ) -> Result<Val, Ctl> {
        let off = self.arith_word(offset, io)?;
        let len = match length {
            Some(w) => Some(self.arith_word(w, io)?),
            None => None,
        };
        let window = |n: usize| -> (usize, usize) {
            let start = if off < 0 {
                n.saturating_sub(off.unsigned_abs() as usize)
            } else {
                (off as usize).min(n)
            };
            let end = match len {
                None => n,
                Some(l) if l < 0 => n.saturating_sub(l.unsigned_abs() as usize).max(start),
                Some(l) => start.saturating_add(l as usize).min(n),
            };
            (start, end)
        };
        Ok(match val {
            Val::Unset => Val::One(Vec::new()),
            Val::One(v) => {
                let starts = char_starts(&v);
                let (s, e) = window(starts.len() - 1);
                Val::One(v[starts[s]..starts[e]].to_vec())
            }
            Val::Many(vs, star) => {
                // For `$@`, offset 0 is `$0`.
                let is_params = vs == *self.params;
                let mut all = vs;
                if is_params && off >= 0 {
                    all.insert(0, self.arg0.clone());
                }
                let (s, e) = window(all.len());
                Val::Many(all[s..e].to_vec(), star)
            }
        })
    }
}

/// Number of characters (UTF-8 sequences, or bytes where invalid).
fn char_count(v: &[u8]) -> usize {
    char_starts(v).len() - 1
}

/// Byte offsets of each character start, plus the end.
fn char_starts(v: &[u8]) -> Vec<usize> {
    match std::str::from_utf8(v) {
        Ok(s) => s
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(v.len()))
            .collect(),
        Err(_) => (0..=v.len()).collect(),
    }
}

/// `${v/p/rep}` and its forms; `Err` when the result would pass
/// [`MAX_WORD`] (checked before it grows).
fn replace(v: &[u8], p: &Pattern, rep: &[u8], all: bool, anchor: u8) -> Result<Vec<u8>, String> {
    let too_large = || format!("expansion too large: a word exceeds {} MiB", MAX_WORD >> 20);
    Ok(match anchor {
        b'#' => match p.match_prefix(v, true) {
            Some(e) if rep.len() + (v.len() - e) > MAX_WORD => return Err(too_large()),
            Some(e) => [rep, &v[e..]].concat(),
            None => v.to_vec(),
        },
        b'%' => match p.match_suffix(v, true) {
            Some(s) if s + rep.len() > MAX_WORD => return Err(too_large()),
            Some(s) => [&v[..s], rep].concat(),
            None => v.to_vec(),
        },
        _ => {
            let mut out = Vec::new();
            let mut i = 0;
            let mut replaced = false;
            while i < v.len() {
                if (!replaced || all)
                    && let Some(n) = p.match_prefix(&v[i..], true).filter(|&n| n > 0)
                {
                    if out.len() + rep.len() > MAX_WORD {
                        return Err(too_large());
                    }
                    out.extend_from_slice(rep);
                    i += n;
                    replaced = true;
                    continue;
                }
                if !replaced || all {
                    out.push(v[i]);
                    i += 1;
                } else {
                    // Only the first match is replaced: copy the rest.
                    out.extend_from_slice(&v[i..]);
                    break;
                }
                if out.len() > MAX_WORD {
                    return Err(too_large());
                }
            }
            out
        }
    })
}

fn change_case(v: &[u8], upper: bool, all: bool) -> Vec<u8> {
    let conv = |s: &str| {
        if upper {
            s.to_uppercase()
        } else {
            s.to_lowercase()
        }
    };
    match std::str::from_utf8(v) {
        Ok(s) if all => conv(s).into_bytes(),
        Ok(s) => {
            let mut cs = s.chars();
            match cs.next() {
                Some(c) => [conv(&c.to_string()), cs.collect::<String>()]
                    .concat()
                    .into_bytes(),
                None => Vec::new(),
            }
        }
        Err(_) => {
            let mut out = v.to_vec();
            let n = if all { out.len() } else { out.len().min(1) };
            for c in &mut out[..n] {
                *c = if upper {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                };
            }
            out
        }
    }
}

impl crate::arith::ArithEnv for Shell {
    fn get_var(&mut self, name: &[u8], index: Option<i64>) -> Option<Vec<u8>> {
        match index {
            None => self.param_scalar(name),
            Some(i) => match self.vars.get(name)?.value.as_deref()? {
                Value::Arr(a) => {
                    let i = if i < 0 { a.len() as i64 + i } else { i };
                    a.get(usize::try_from(i).ok()?).cloned()
                }
                Value::Assoc(m) => m.get(i.to_string().as_bytes()).cloned(),
                Value::Str(s) => (i == 0).then(|| s.clone()),
            },
        }
    }

    fn set_var(&mut self, name: &[u8], index: Option<i64>, v: i64) -> Result<(), String> {
        let text = v.to_string().into_bytes();
        match index {
            None => self.vars.set(name, text),
            Some(i) => self.set_element(name, &i.to_string().into_bytes(), text),
        }
    }
}

impl Shell {
    /// `name[key]=value` for indexed (numeric key) and associative arrays.
    pub fn set_element(&mut self, name: &[u8], key: &[u8], value: Vec<u8>) -> Result<(), String> {
        if self.vars.get(name).is_some_and(|v| v.readonly) {
            return Err(format!(
                "{}: readonly variable",
                String::from_utf8_lossy(name)
            ));
        }
        let len = match self.vars.get_value(name) {
            Some(Value::Assoc(_)) => {
                if let Some(Value::Assoc(m)) = self.vars.value_mut(name) {
                    m.insert(key.to_vec(), value);
                }
                return Ok(());
            }
            Some(Value::Arr(a)) => a.len(),
            Some(Value::Str(_)) => 1,
            None => 0,
        };
        let bad = || format!("{}: bad array subscript", String::from_utf8_lossy(key));
        let i: i64 = std::str::from_utf8(key)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(bad)?;
        // A negative index counts from the end; before the start it is an
        // error and the array stays as it was.
        let i = if i < 0 {
            i.checked_add(len as i64)
        } else {
            Some(i)
        };
        let i = i.and_then(|i| usize::try_from(i).ok()).ok_or_else(bad)?;
        if i > crate::limits::MAX_FIELDS {
            return Err("array index too large".to_string());
        }
        let slot = self
            .vars
            .entry(name)
            .value
            .get_or_insert_with(|| std::rc::Rc::new(Value::Arr(Vec::new())));
        let v = std::rc::Rc::make_mut(slot);
        if let Value::Str(s) = v {
            *v = Value::Arr(vec![std::mem::take(s)]);
        }
        if let Value::Arr(arr) = v {
            if arr.len() <= i {
                arr.resize(i + 1, Vec::new());
            }
            arr[i] = value;
        }
        Ok(())
    }
}
