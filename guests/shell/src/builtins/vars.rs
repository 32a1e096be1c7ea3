//! Variable builtins: `set`, `unset`, `export`, `readonly`, `local`,
//! `declare`/`typeset` and `getopts`.

use super::complain;
use crate::bytes::{lossy, single_quote};
use crate::exec::state::Value;
use crate::exec::{R, Shell};
use crate::io::{Io, put};
use crate::parse::is_name;

/// Splits `NAME=value` / `NAME+=value` / `NAME`.
fn split_assign(a: &[u8]) -> (&[u8], Option<&[u8]>, bool) {
    match a.iter().position(|&c| c == b'=') {
        Some(i) if i > 0 && a[i - 1] == b'+' => (&a[..i - 1], Some(&a[i + 1..]), true),
        Some(i) => (&a[..i], Some(&a[i + 1..]), false),
        None => (a, None, false),
    }
}

fn set_option(sh: &mut Shell, name: &[u8], on: bool) -> bool {
    match name {
        b"errexit" => sh.opts.errexit = on,
        b"nounset" => sh.opts.nounset = on,
        b"xtrace" => sh.opts.xtrace = on,
        b"pipefail" => sh.opts.pipefail = on,
        b"noglob" => sh.opts.noglob = on,
        b"noclobber" => sh.opts.noclobber = on,
        // Accepted, without effect here.
        b"posix"
        | b"verbose"
        | b"vi"
        | b"emacs"
        | b"monitor"
        | b"notify"
        | b"allexport"
        | b"braceexpand"
        | b"hashall"
        | b"interactive-comments"
        | b"history"
        | b"ignoreeof"
        | b"noexec"
        | b"nolog"
        | b"physical"
        | b"privileged"
        | b"functrace"
        | b"errtrace" => {}
        _ => return false,
    }
    true
}

fn set_flag(sh: &mut Shell, c: u8, on: bool) -> bool {
    match c {
        b'e' => sh.opts.errexit = on,
        b'u' => sh.opts.nounset = on,
        b'x' => sh.opts.xtrace = on,
        b'f' => sh.opts.noglob = on,
        b'C' => sh.opts.noclobber = on,
        b'v' | b'h' | b'B' | b'a' | b'b' | b'm' | b'n' | b'H' | b'P' | b'T' | b'E' | b'k'
        | b't' | b'l' | b'i' | b's' => {}
        _ => return false,
    }
    true
}

/// Applies `set`-style option arguments; returns the index of the first
/// operand, or `Err(message)`.
pub fn apply_options(sh: &mut Shell, args: &[Vec<u8>]) -> Result<(usize, bool), String> {
    let mut i = 0;
    let mut dashdash = false;
    while i < args.len() {
        let a = &args[i];
        if a == b"--" {
            dashdash = true;
            i += 1;
            break;
        }
        if a == b"-" || a == b"+" || a.len() < 2 || !(a[0] == b'-' || a[0] == b'+') {
            break;
        }
        let on = a[0] == b'-';
        let mut j = 1;
        while j < a.len() {
            let c = a[j];
            if c == b'o' {
                i += 1;
                let Some(name) = args.get(i) else {
                    return Err("-o: option name required".into());
                };
                if !set_option(sh, name, on) {
                    return Err(format!("{}: invalid option name", lossy(name)));
                }
            } else if !set_flag(sh, c, on) {
                return Err(format!("-{}: invalid option", c as char));
            }
            j += 1;
        }
        i += 1;
    }
    Ok((i, dashdash))
}

/// `set [-euxfC] [-o OPT] [--] [ARGS…]`.
pub fn set(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let args = &argv[1..];
    if args.is_empty() {
        let mut names: Vec<(Vec<u8>, Vec<u8>)> = sh
            .vars
            .iter()
            .filter_map(|(k, v)| v.value.as_deref().map(|x| (k.clone(), x.scalar())))
            .collect();
        names.sort();
        let mut out = Vec::new();
        for (k, v) in names {
            out.extend(k);
            out.push(b'=');
            out.extend(crate::bytes::quote_if_needed(&v));
            out.push(b'\n');
        }
        let _ = put(&io.stdout(), &out);
        return Ok(0);
    }
    if args.len() == 1 && (args[0] == b"-o" || args[0] == b"+o") {
        let o = sh.opts;
        let mut out = String::new();
        for (n, v) in [
            ("errexit", o.errexit),
            ("noclobber", o.noclobber),
            ("noglob", o.noglob),
            ("nounset", o.nounset),
            ("pipefail", o.pipefail),
            ("xtrace", o.xtrace),
        ] {
            if args[0] == b"-o" {
                out.push_str(&format!("{n:<15}\t{}\n", if v { "on" } else { "off" }));
            } else {
                out.push_str(&format!("set {}o {n}\n", if v { '-' } else { '+' }));
            }
        }
        let _ = put(&io.stdout(), out.as_bytes());
        return Ok(0);
    }
    match apply_options(sh, args) {
        Ok((i, dashdash)) => {
            if dashdash || i < args.len() {
                sh.params = std::rc::Rc::new(args[i..].to_vec());
            }
            Ok(0)
        }
        Err(e) => {
            complain(io, "set", &e);
            Ok(2)
        }
    }
}

/// `unset [-v|-f] NAME…`.
pub fn unset(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut funcs = false;
    let mut status = 0;
    for a in &argv[1..] {
        match a.as_slice() {
            b"-f" => funcs = true,
            b"-v" => funcs = false,
            b"-n" => {}
            name if funcs => {
                std::rc::Rc::make_mut(&mut sh.funcs).remove(name);
            }
            name => {
                if let Some(open) = name.iter().position(|&c| c == b'[')
                    && name.ends_with(b"]")
                {
                    status |= unset_element(sh, io, &name[..open], &name[open + 1..name.len() - 1]);
                    continue;
                }
                if !is_name(name) {
                    complain(
                        io,
                        "unset",
                        &format!("`{}': not a valid identifier", lossy(name)),
                    );
                    status = 1;
                    continue;
                }
                if sh.vars.get(name).is_none() && sh.funcs.contains_key(name) {
                    std::rc::Rc::make_mut(&mut sh.funcs).remove(name);
                    continue;
                }
                if let Err(e) = sh.vars.unset(name) {
                    complain(io, "unset", &e);
                    status = 1;
                }
            }
        }
    }
    Ok(status)
}

/// `unset 'a[i]'`: like bash, refuses bad names and read-only arrays and
/// never creates a variable.
fn unset_element(sh: &mut Shell, io: &Io, name: &[u8], key: &[u8]) -> i32 {
    if !is_name(name) {
        let shown = [name, b"[", key, b"]"].concat();
        complain(
            io,
            "unset",
            &format!("`{}': not a valid identifier", lossy(&shown)),
        );
        return 1;
    }
    match sh.vars.get(name) {
        None => return 0,
        Some(v) if v.readonly => {
            complain(
                io,
                "unset",
                &format!("{}: cannot unset: readonly variable", lossy(name)),
            );
            return 1;
        }
        Some(_) => {}
    }
    let var = sh.vars.entry(name);
    match var.value.as_mut().map(std::rc::Rc::make_mut) {
        Some(Value::Assoc(m)) => {
            m.remove(key);
        }
        Some(Value::Arr(a)) => {
            if let Some(i) = std::str::from_utf8(key)
                .ok()
                .and_then(|k| k.parse::<usize>().ok())
            {
                if i + 1 == a.len() {
                    a.pop();
                } else if let Some(e) = a.get_mut(i) {
                    e.clear();
                }
            }
        }
        _ => {}
    }
    0
}

/// `export -p`: `export NAME='value'` lines, sorted.
fn print_exports(sh: &Shell, io: &Io, prefix: &[u8], readonly: bool) {
    let mut rows: Vec<(&Vec<u8>, &crate::exec::state::Var)> = sh
        .vars
        .iter()
        .filter(|(_, v)| if readonly { v.readonly } else { v.exported })
        .collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    for (k, v) in rows {
        out.extend_from_slice(prefix);
        out.extend_from_slice(k);
        if let Some(val) = &v.value {
            out.push(b'=');
            out.extend(single_quote(&val.scalar()));
        }
        out.push(b'\n');
    }
    let _ = put(&io.stdout(), &out);
}

/// Sets variables from `NAME[=value]` arguments with the given flags.
fn declare_names(sh: &mut Shell, io: &Io, cmd: &str, args: &[Vec<u8>], f: &Flags) -> i32 {
    let mut status = 0;
    for a in args {
        let (name, value, append) = split_assign(a);
        if !is_name(name) {
            complain(io, cmd, &format!("`{}': not a valid identifier", lossy(a)));
            status = 1;
            continue;
        }
        if f.local && !sh.vars.make_local(name) {
            complain(io, cmd, "can only be used in a function");
            return 1;
        }
        if f.unexport {
            sh.vars.entry(name).exported = false;
            continue;
        }
        if f.assoc
            && !matches!(
                sh.vars.get(name).and_then(|v| v.value.as_deref()),
                Some(Value::Assoc(_))
            )
        {
            let _ = sh.vars.set_value(name, Value::Assoc(Default::default()));
        } else if f.array && sh.vars.get(name).and_then(|v| v.value.as_deref()).is_none() {
            let _ = sh.vars.set_value(name, Value::Arr(Vec::new()));
        }
        if let Some(v) = value {
            let v = if f.array || f.assoc {
                None.or_else(|| parse_compound(v))
            } else {
                None
            }
            .map_or_else(
                || Value::Str(v.to_vec()),
                |items| {
                    if f.assoc {
                        let mut m = std::collections::BTreeMap::new();
                        for it in items {
                            if let Some(rest) = it.strip_prefix(b"[")
                                && let Some(close) = rest.iter().position(|&c| c == b']')
                            {
                                let val = rest[close + 1..].strip_prefix(b"=").unwrap_or(&[]);
                                m.insert(rest[..close].to_vec(), val.to_vec());
                            }
                        }
                        Value::Assoc(m)
                    } else {
                        Value::Arr(items)
                    }
                },
            );
            let v = match (append, v) {
                (true, Value::Str(s)) => {
                    let mut old = sh.vars.value(name).unwrap_or_default();
                    old.extend(s);
                    Value::Str(old)
                }
                (_, v) => v,
            };
            if let Err(e) = sh.vars.set_value(name, v) {
                complain(io, cmd, &e);
                status = 1;
                continue;
            }
        }
        let var = sh.vars.entry(name);
        if f.export {
            var.exported = true;
        }
        if f.readonly {
            var.readonly = true;
        }
    }
    status
}

/// `(a b c)` written as one word (after `declare -a x=(…)` was expanded as
/// a plain word): split on blanks.
fn parse_compound(v: &[u8]) -> Option<Vec<Vec<u8>>> {
    let inner = v.strip_prefix(b"(")?.strip_suffix(b")")?;
    Some(
        inner
            .split(|c| c.is_ascii_whitespace())
            .filter(|s| !s.is_empty())
            .map(|s| s.to_vec())
            .collect(),
    )
}

#[derive(Default)]
struct Flags {
    export: bool,
    unexport: bool,
    readonly: bool,
    local: bool,
    array: bool,
    assoc: bool,
    print: bool,
    functions: bool,
}

fn parse_flags<'a>(args: &'a [Vec<u8>], f: &mut Flags) -> Result<&'a [Vec<u8>], String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == b"--" {
            i += 1;
            break;
        }
        if a.len() < 2 || (a[0] != b'-' && a[0] != b'+') {
            break;
        }
        let on = a[0] == b'-';
        for &c in &a[1..] {
            match c {
                b'x' if on => f.export = true,
                b'x' => f.unexport = true,
                b'n' => f.unexport = true,
                b'r' => f.readonly = on,
                b'a' => f.array = on,
                b'A' => f.assoc = on,
                b'p' => f.print = true,
                b'f' | b'F' => f.functions = true,
                b'g' => f.local = false,
                b'i' | b'l' | b'u' | b't' => {}
                _ => return Err(format!("-{}: invalid option", c as char)),
            }
        }
        i += 1;
    }
    Ok(&args[i..])
}

/// `export [-p] [-n] [NAME[=value]…]`.
pub fn export(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut f = Flags::default();
    let names = match parse_flags(&argv[1..], &mut f) {
        Ok(n) => n,
        Err(e) => {
            complain(io, "export", &e);
            return Ok(2);
        }
    };
    if names.is_empty() {
        print_exports(sh, io, b"export ", false);
        return Ok(0);
    }
    f.export = !f.unexport;
    Ok(declare_names(sh, io, "export", names, &f))
}

/// `readonly [-p] [NAME[=value]…]`.
pub fn readonly(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut f = Flags::default();
    let names = parse_flags(&argv[1..], &mut f).unwrap_or(&[]);
    if names.is_empty() {
        print_exports(sh, io, b"readonly ", true);
        return Ok(0);
    }
    f.readonly = true;
    Ok(declare_names(sh, io, "readonly", names, &f))
}

/// `local [-r|-x|-a|-A] NAME[=value]…`.
pub fn local(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if !sh.vars.in_function() {
        complain(io, "local", "can only be used in a function");
        return Ok(1);
    }
    let mut f = Flags::default();
    let names = match parse_flags(&argv[1..], &mut f) {
        Ok(n) => n,
        Err(e) => {
            complain(io, "local", &e);
            return Ok(2);
        }
    };
    f.local = true;
    Ok(declare_names(sh, io, "local", names, &f))
}

/// `declare`/`typeset [-aAxrpfFg] [NAME[=value]…]`.
pub fn declare(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut f = Flags {
        local: sh.vars.in_function(),
        ..Flags::default()
    };
    let names = match parse_flags(&argv[1..], &mut f) {
        Ok(n) => n,
        Err(e) => {
            complain(io, "declare", &e);
            return Ok(2);
        }
    };
    if f.functions {
        let mut status = 0;
        for n in names {
            if sh.funcs.contains_key(n.as_slice()) {
                let _ = put(&io.stdout(), &[n.as_slice(), b"\n"].concat());
            } else {
                status = 1;
            }
        }
        return Ok(status);
    }
    if f.print || names.is_empty() {
        let mut rows: Vec<(Vec<u8>, crate::exec::state::Var)> = if names.is_empty() {
            sh.vars
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        } else {
            names
                .iter()
                .filter_map(|n| sh.vars.get(n).map(|v| (n.clone(), v.clone())))
                .collect()
        };
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        for (k, v) in &rows {
            out.extend_from_slice(&declare_line(k, v));
        }
        let _ = put(&io.stdout(), &out);
        return Ok(if rows.len() < names.len() { 1 } else { 0 });
    }
    Ok(declare_names(sh, io, "declare", names, &f))
}

fn declare_line(k: &[u8], v: &crate::exec::state::Var) -> Vec<u8> {
    let mut flags = String::new();
    match v.value.as_deref() {
        Some(Value::Arr(_)) => flags.push('a'),
        Some(Value::Assoc(_)) => flags.push('A'),
        _ => {}
    }
    if v.readonly {
        flags.push('r');
    }
    if v.exported {
        flags.push('x');
    }
    if flags.is_empty() {
        flags.push('-');
    }
    let mut line = format!("declare -{flags} ").into_bytes();
    line.extend_from_slice(k);
    let dq = |s: &[u8]| {
        let mut o = vec![b'"'];
        for &c in s {
            if matches!(c, b'"' | b'\\' | b'$' | b'`') {
                o.push(b'\\');
            }
            o.push(c);
        }
        o.push(b'"');
        o
    };
    match v.value.as_deref() {
        None => {}
        Some(Value::Str(s)) => {
            line.push(b'=');
            line.extend(dq(s));
        }
        Some(Value::Arr(a)) => {
            line.extend_from_slice(b"=(");
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    line.push(b' ');
                }
                line.extend(format!("[{i}]=").into_bytes());
                line.extend(dq(e));
            }
            line.push(b')');
        }
        Some(Value::Assoc(m)) => {
            line.extend_from_slice(b"=(");
            for (key, e) in m {
                line.push(b'[');
                line.extend_from_slice(key);
                line.extend_from_slice(b"]=");
                line.extend(dq(e));
                line.push(b' ');
            }
            line.push(b')');
        }
    }
    line.push(b'\n');
    line
}
