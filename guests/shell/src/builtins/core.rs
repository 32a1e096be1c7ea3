//! Flow and environment builtins: `:`, `cd`, `pwd`, `exit`, `return`,
//! `shift`, `break`, `continue`, `let`, `umask`, `trap` and small ones.

use super::complain;
use crate::bytes::{lossy, parse_int};
use crate::exec::{Ctl, R, Shell};
use crate::fs::Target;
use crate::io::{Io, put};

/// `:`, `true` and the accepted no-ops (`wait`, `hash`, `alias`, …).
pub fn colon(_: &mut Shell, _: &Io, _: &[Vec<u8>]) -> R {
    Ok(0)
}

/// `false`.
pub fn false_(_: &mut Shell, _: &Io, _: &[Vec<u8>]) -> R {
    Ok(1)
}

/// Changes the working directory of `sh` to `dir` (absolute), setting
/// `PWD` and `OLDPWD`. `Err` carries the reason.
pub fn change_dir(sh: &mut Shell, dir: &[u8]) -> Result<(), String> {
    let abs = sh.fs.absolute(&sh.cwd, dir);
    match sh.fs.target(&abs) {
        Some(Target::Path(p)) => match std::fs::metadata(&p) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err("Not a directory".into()),
            Err(e) => return Err(crate::fs::error_text(&e)),
        },
        _ => return Err("No such file or directory".into()),
    }
    let abs = crate::fs::Fs::logical(&abs);
    let old = std::mem::replace(&mut sh.cwd, abs.clone());
    let _ = sh.vars.set(b"OLDPWD", old);
    let _ = sh.vars.set(b"PWD", abs);
    Ok(())
}

/// `cd [-L|-P] [DIR|-]`.
pub fn cd(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut args: Vec<&[u8]> = argv[1..].iter().map(|a| a.as_slice()).collect();
    while let Some(a) = args.first() {
        match *a {
            b"-L" | b"-P" | b"-e" | b"-@" => {
                args.remove(0);
            }
            b"--" => {
                args.remove(0);
                break;
            }
            _ => break,
        }
    }
    if args.len() > 1 {
        complain(io, "cd", "too many arguments");
        return Ok(1);
    }
    let mut print = false;
    let target: Vec<u8> = match args.first().copied() {
        None => sh.vars.value(b"HOME").unwrap_or_else(|| b"/work".to_vec()),
        Some(b"-") => {
            print = true;
            match sh.vars.value(b"OLDPWD") {
                Some(o) => o,
                None => {
                    complain(io, "cd", "OLDPWD not set");
                    return Ok(1);
                }
            }
        }
        Some(d) => d.to_vec(),
    };
    if target.is_empty() {
        return Ok(0);
    }
    match change_dir(sh, &target) {
        Ok(()) => {
            if print {
                let mut line = sh.cwd.clone();
                line.push(b'\n');
                let _ = put(&io.stdout(), &line);
            }
            Ok(0)
        }
        Err(e) => {
            complain(io, "cd", &format!("{}: {e}", lossy(&target)));
            Ok(1)
        }
    }
}

/// `pwd [-L|-P]`.
pub fn pwd(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> R {
    let mut line = sh.cwd.clone();
    line.push(b'\n');
    let _ = put(&io.stdout(), &line);
    Ok(0)
}

fn status_arg(sh: &Shell, io: &Io, name: &str, arg: Option<&Vec<u8>>) -> Result<i32, i32> {
    match arg {
        None => Ok(sh.status),
        Some(a) => match parse_int(a) {
            Some(n) => Ok((n & 0xff) as i32),
            None => {
                complain(
                    io,
                    name,
                    &format!("{}: numeric argument required", lossy(a)),
                );
                Err(2)
            }
        },
    }
}

/// `exit [N]`.
pub fn exit(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    match status_arg(sh, io, "exit", argv.get(1)) {
        Ok(n) => Err(Ctl::Exit(n)),
        Err(n) => Err(Ctl::Exit(n)),
    }
}

/// `return [N]`.
pub fn return_(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if sh.calls == 0 && sh.sourcing == 0 {
        complain(
            io,
            "return",
            "can only `return' from a function or sourced script",
        );
        return Ok(1);
    }
    match status_arg(sh, io, "return", argv.get(1)) {
        Ok(n) => Err(Ctl::Return(n)),
        Err(n) => Err(Ctl::Return(n)),
    }
}

/// `shift [N]`.
pub fn shift(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let n = match argv.get(1) {
        None => 1,
        Some(a) => match parse_int(a) {
            Some(n) if n >= 0 => n as usize,
            _ => {
                complain(
                    io,
                    "shift",
                    &format!("{}: numeric argument required", lossy(a)),
                );
                return Ok(1);
            }
        },
    };
    if n > sh.params.len() {
        return Ok(1);
    }
    std::rc::Rc::make_mut(&mut sh.params).drain(..n);
    Ok(0)
}

fn loop_count(io: &Io, name: &str, argv: &[Vec<u8>]) -> Result<usize, i32> {
    match argv.get(1) {
        None => Ok(1),
        Some(a) => match parse_int(a) {
            Some(n) if n >= 1 => Ok(n as usize),
            _ => {
                complain(io, name, &format!("{}: loop count out of range", lossy(a)));
                Err(1)
            }
        },
    }
}

/// `break [N]`.
pub fn break_(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if sh.loops == 0 {
        complain(
            io,
            "break",
            "only meaningful in a `for', `while', or `until' loop",
        );
        return Ok(0);
    }
    match loop_count(io, "break", argv) {
        Ok(n) => Err(Ctl::Break(n.min(sh.loops))),
        Err(s) => Ok(s),
    }
}

/// `continue [N]`.
pub fn continue_(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if sh.loops == 0 {
        complain(
            io,
            "continue",
            "only meaningful in a `for', `while', or `until' loop",
        );
        return Ok(0);
    }
    match loop_count(io, "continue", argv) {
        Ok(n) => Err(Ctl::Continue(n.min(sh.loops))),
        Err(s) => Ok(s),
    }
}

/// `let EXPR…`.
pub fn let_(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if argv.len() < 2 {
        complain(io, "let", "expression expected");
        return Ok(1);
    }
    let mut last = 0;
    for a in &argv[1..] {
        last = sh.arith_text(a, io)?;
    }
    Ok((last == 0) as i32)
}

/// `umask [-S] [MODE]` (kept, not applied: the workspace has no modes).
pub fn umask(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let args: Vec<&Vec<u8>> = argv[1..].iter().filter(|a| a.as_slice() != b"-S").collect();
    let symbolic = argv[1..].iter().any(|a| a == b"-S");
    match args.first() {
        None => {
            let text = if symbolic {
                let m = !sh.umask & 0o777;
                let part = |s: u32| {
                    let mut t = String::new();
                    for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
                        if s & bit != 0 {
                            t.push(c);
                        }
                    }
                    t
                };
                format!(
                    "u={},g={},o={}\n",
                    part(m >> 6),
                    part((m >> 3) & 7),
                    part(m & 7)
                )
            } else {
                format!("{:04o}\n", sh.umask)
            };
            let _ = put(&io.stdout(), text.as_bytes());
            Ok(0)
        }
        Some(m) => match u32::from_str_radix(&lossy(m), 8) {
            Ok(v) if v <= 0o777 => {
                sh.umask = v;
                Ok(0)
            }
            _ => {
                complain(
                    io,
                    "umask",
                    &format!("{}: octal number out of range", lossy(m)),
                );
                Ok(1)
            }
        },
    }
}

/// `trap [-p] [ACTION] [SIGNAL…]`: only `EXIT` (or `0`) runs; other
/// signals are accepted and never delivered.
pub fn trap(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let args: Vec<&Vec<u8>> = argv[1..].iter().filter(|a| a.as_slice() != b"--").collect();
    if args.is_empty() || args[0] == b"-p" || args[0] == b"-l" {
        if let Some(t) = &sh.exit_trap {
            let mut line = b"trap -- ".to_vec();
            line.extend(crate::bytes::single_quote(t));
            line.extend_from_slice(b" EXIT\n");
            let _ = put(&io.stdout(), &line);
        }
        return Ok(0);
    }
    // `trap SIGNAL` alone resets it, like `trap - SIGNAL`.
    let (action, sigs): (Option<&Vec<u8>>, &[&Vec<u8>]) = if args.len() == 1 || args[0] == b"-" {
        (
            None,
            if args.len() == 1 {
                &args[..]
            } else {
                &args[1..]
            },
        )
    } else {
        (Some(args[0]), &args[1..])
    };
    for s in sigs {
        let up = s.to_ascii_uppercase();
        if matches!(up.as_slice(), b"EXIT" | b"0" | b"SIGEXIT") {
            sh.exit_trap = action.filter(|a| !a.is_empty()).cloned();
        }
    }
    Ok(0)
}

/// `ulimit …`: reports `unlimited`.
pub fn ulimit(_: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if argv.len() <= 2 {
        let _ = put(&io.stdout(), b"unlimited\n");
    }
    Ok(0)
}

/// `times`.
pub fn times(_: &mut Shell, io: &Io, _: &[Vec<u8>]) -> R {
    let _ = put(&io.stdout(), b"0m0.000s 0m0.000s\n0m0.000s 0m0.000s\n");
    Ok(0)
}

/// `kill`: there are no other processes.
pub fn kill(_: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let targets: Vec<&Vec<u8>> = argv[1..].iter().filter(|a| !a.starts_with(b"-")).collect();
    if targets
        .iter()
        .all(|t| t.as_slice() == b"1" || t.as_slice() == b"$$")
        && !targets.is_empty()
    {
        return Ok(0);
    }
    for t in targets {
        complain(io, "kill", &format!("({}) - No such process", lossy(t)));
    }
    Ok(1)
}

fn dir_stack(sh: &Shell) -> Vec<Vec<u8>> {
    sh.vars
        .get(b"DIRSTACK")
        .and_then(|v| v.value.as_deref())
        .map(|v| v.elements())
        .unwrap_or_default()
}

fn print_dirs(sh: &Shell, io: &Io) {
    let mut line = sh.cwd.clone();
    for d in dir_stack(sh) {
        line.push(b' ');
        line.extend(d);
    }
    line.push(b'\n');
    let _ = put(&io.stdout(), &line);
}

/// `pushd DIR`.
pub fn pushd(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let Some(dir) = argv.get(1) else {
        complain(io, "pushd", "no other directory");
        return Ok(1);
    };
    let old = sh.cwd.clone();
    if let Err(e) = change_dir(sh, dir) {
        complain(io, "pushd", &format!("{}: {e}", lossy(dir)));
        return Ok(1);
    }
    let mut st = dir_stack(sh);
    st.insert(0, old);
    let _ = sh
        .vars
        .set_value(b"DIRSTACK", crate::exec::state::Value::Arr(st));
    print_dirs(sh, io);
    Ok(0)
}

/// `popd`.
pub fn popd(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> R {
    let mut st = dir_stack(sh);
    if st.is_empty() {
        complain(io, "popd", "directory stack empty");
        return Ok(1);
    }
    let top = st.remove(0);
    if let Err(e) = change_dir(sh, &top) {
        complain(io, "popd", &format!("{}: {e}", lossy(&top)));
        return Ok(1);
    }
    let _ = sh
        .vars
        .set_value(b"DIRSTACK", crate::exec::state::Value::Arr(st));
    print_dirs(sh, io);
    Ok(0)
}

/// `dirs`.
pub fn dirs(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> R {
    print_dirs(sh, io);
    Ok(0)
}
