//! `sed [-n] [-E|-r] [-s] [-i[SUFFIX]] [-e SCRIPT]… [-f FILE] [SCRIPT]
//! [FILE…]`: GNU sed's commands over bytes, with regexes through the
//! `regex` crate (BRE/ERE translated; `.` matches a newline in the pattern
//! space, as in GNU sed).

mod parse;
mod run;

use run::{Input, State, run};

use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::Io;
use parse::Cmd;
use std::collections::HashMap;

/// `sed` itself.
pub fn sed(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "sed");
    // `-i` takes an optional attached suffix; rewrite `-i` forms first.
    let mut in_place: Option<Vec<u8>> = None;
    let mut args = Vec::new();
    for a in &argv[1..] {
        if a.starts_with(b"-i") && !a.starts_with(b"--") {
            in_place = Some(a[2..].to_vec());
            continue;
        }
        if a == b"--in-place" {
            in_place = Some(Vec::new());
            continue;
        }
        if let Some(s) = a.strip_prefix(b"--in-place=") {
            in_place = Some(s.to_vec());
            continue;
        }
        // `-ni`, `-Ei` …: split off the `i`.
        if a.len() > 2
            && a[0] == b'-'
            && a[1] != b'-'
            && a[1..].iter().all(|c| b"nErsuzi".contains(c))
            && a.contains(&b'i')
        {
            in_place = Some(Vec::new());
            let rest: Vec<u8> = a.iter().copied().filter(|&c| c != b'i').collect();
            if rest.len() > 1 {
                args.push(rest);
            }
            continue;
        }
        args.push(a.clone());
    }
    let (opts, mut ops) = match getopt(&args, b"efl", &["expression", "file", "line-length"], true)
    {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut quiet, mut ere, mut separate) = (false, false, false);
    let mut script: Vec<u8> = Vec::new();
    let mut have_script = false;
    for o in opts {
        match o {
            Opt::Short(b'n', _) => quiet = true,
            Opt::Short(b'E' | b'r', _) => ere = true,
            Opt::Short(b's', _) => separate = true,
            Opt::Short(b'e', Some(v)) => add_script(&mut script, &mut have_script, v),
            Opt::Long(n, Some(v)) if n == "expression" => {
                add_script(&mut script, &mut have_script, v)
            }
            Opt::Short(b'f', Some(f)) => match u.read_input(&f) {
                Ok(d) => {
                    if have_script {
                        script.push(b'\n');
                    }
                    script.extend(d);
                    have_script = true;
                }
                Err(e) => {
                    u.err(format!(
                        "couldn't open file {}: {}",
                        lossy(&f),
                        crate::fs::error_text(&e)
                    ));
                    return 1;
                }
            },
            Opt::Long(n, None) if n == "quiet" || n == "silent" => quiet = true,
            Opt::Long(n, None) if n == "regexp-extended" => ere = true,
            _ => {}
        }
    }
    if !have_script {
        if ops.is_empty() {
            u.err("no script specified");
            return 1;
        }
        script = ops.remove(0);
    }
    let cmds = match parse::parse(&script, ere) {
        Ok(c) => c,
        Err(e) => {
            let unsupported = e.contains("not supported");
            u.err(e);
            return if unsupported { 2 } else { 1 };
        }
    };
    let mut labels = HashMap::new();
    for (i, c) in cmds.iter().enumerate() {
        if matches!(c.cmd, Cmd::Label) {
            labels.insert(c.label.clone(), i);
        }
    }
    for c in &cmds {
        if let Cmd::Branch(_, l) = &c.cmd
            && !l.is_empty()
            && !labels.contains_key(l)
        {
            u.err(format!(
                "-e expression #1, char 0: can't find label for jump to `{}'",
                lossy(l)
            ));
            return 1;
        }
    }
    let n = cmds.len();
    let mut st = State {
        cmds,
        labels,
        active: vec![None; n],
        hold: Vec::new(),
        quiet,
        last_re: None,
        writes: HashMap::new(),
        write_failed: false,
        quit: None,
    };
    let mut status = 0;
    if let Some(suffix) = &in_place {
        if ops.is_empty() {
            u.err("no input files");
            return 1;
        }
        for f in &ops {
            let data = match u.read_input(f) {
                Ok(d) => d,
                Err(e) => {
                    u.err(format!(
                        "can't read {}: {}",
                        lossy(f),
                        crate::fs::error_text(&e)
                    ));
                    status = 2;
                    continue;
                }
            };
            let mut out = Vec::new();
            let mut line = 0;
            st.active = vec![None; n];
            // The new contents stay in memory until written back.
            let mut result = Vec::new();
            let mut drain = |o: &mut Vec<u8>| {
                result.append(o);
                result.len() <= crate::limits::MAX_FILE_READ
            };
            let r = run(
                &mut st,
                &mut Input::new(&data),
                &mut out,
                &mut drain,
                &u,
                &mut line,
            );
            result.append(&mut out);
            match r {
                Ok(true) => {}
                Ok(false) => {
                    u.err(format!(
                        "{}: the result exceeds the limit of {} MiB; the file is unchanged",
                        lossy(f),
                        crate::limits::MAX_FILE_READ >> 20
                    ));
                    status = 4;
                    continue;
                }
                Err(e) => {
                    u.err(format!("{}: {e}; the file is unchanged", lossy(f)));
                    status = 4;
                    continue;
                }
            }
            let out = result;
            let Ok(host) = u.host(f) else { continue };
            if !suffix.is_empty() {
                let backup = [f.as_slice(), suffix].concat();
                if let Ok(b) = u.host(&backup) {
                    let _ = std::fs::write(b, &data);
                }
            }
            if let Err(e) = std::fs::write(&host, &out) {
                u.err(format!(
                    "couldn't write {}: {}",
                    lossy(f),
                    crate::fs::error_text(&e)
                ));
                status = 4;
            }
            if st.quit.is_some() {
                break;
            }
        }
    } else {
        let mut failed = false;
        let inputs = u.inputs(&ops, &mut failed);
        if failed {
            status = 2;
        }
        let mut out = Vec::new();
        let mut line = 0;
        let stdout = io.stdout();
        let mut drain = |o: &mut Vec<u8>| {
            let r = crate::io::put(&stdout, o);
            o.clear();
            r.is_ok()
        };
        let mut result = Ok(true);
        if separate {
            for (_, d) in &inputs {
                result = run(
                    &mut st,
                    &mut Input::new(d),
                    &mut out,
                    &mut drain,
                    &u,
                    &mut line,
                );
                if st.quit.is_some() || !matches!(result, Ok(true)) {
                    break;
                }
            }
        } else {
            let mut all = Vec::new();
            for (_, d) in &inputs {
                all.extend_from_slice(d);
                if !d.is_empty()
                    && !d.ends_with(b"\n")
                    && !std::ptr::eq(d, &inputs[inputs.len() - 1].1)
                {
                    all.push(b'\n');
                }
            }
            drop(inputs);
            result = run(
                &mut st,
                &mut Input::new(&all),
                &mut out,
                &mut drain,
                &u,
                &mut line,
            );
        }
        if !out.is_empty() {
            let _ = u.out(&out);
        }
        if let Err(e) = result {
            u.err(e);
            status = 4;
        }
    }
    st.close_writes();
    if st.write_failed {
        status = 4;
    }
    st.quit.unwrap_or(status)
}

fn add_script(script: &mut Vec<u8>, have: &mut bool, v: Vec<u8>) {
    if *have {
        script.push(b'\n');
    }
    script.extend(v);
    *have = true;
}
