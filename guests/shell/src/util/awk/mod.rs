//! `awk [-F FS] [-v VAR=VALUE]… [-f FILE | 'PROGRAM'] [FILE | VAR=VALUE]…`:
//! POSIX awk with common gawk extensions (`**`, `nextfile`, `length(arr)`,
//! `tolower`/`toupper`, `fflush`, regex `RS`). Records, fields and strings
//! are bytes; regexes are EREs translated to the `regex` crate.

mod ast;
mod builtins;
mod expr;
mod fields;
mod interp;
mod lex;
mod output;
mod parse;
mod value;

use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::{Io, put};
use ast::Pattern;
use interp::{Awk, Cell, Flow, Res, Source};
use std::collections::HashMap;
use std::rc::Rc;
use value::{AMap, Val};

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let (b, used) = crate::bytes::backslash_escape(&s[i + 1..], true);
            if b.first() == Some(&b'\\') && b.len() == 2 {
                out.push(s[i + 1]);
                i += 2;
                continue;
            }
            out.extend(b);
            i += 1 + used.max(1);
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// `NAME=value` operands and `-v` values.
fn assignment(s: &[u8]) -> Option<(String, Vec<u8>)> {
    let eq = s.iter().position(|&c| c == b'=')?;
    let name = &s[..eq];
    if !crate::parse::is_name(name) {
        return None;
    }
    Some((lossy(name), unescape(&s[eq + 1..])))
}

impl Awk<'_> {
    fn next_main_record(&mut self) -> Res<Option<Vec<u8>>> {
        loop {
            if self.main.is_none() {
                while !self.operands.is_empty() {
                    let op = self.operands.remove(0);
                    if let Some((name, value)) = assignment(&op) {
                        self.set(&name, Val::StrNum(value))?;
                        continue;
                    }
                    self.used_stdin = true;
                    let data = if op == b"-" || op == b"/dev/stdin" {
                        self.io.stdin().borrow_mut().take_all()
                    } else {
                        match self
                            .sh
                            .fs
                            .host(&self.sh.cwd, &op)
                            .and_then(|h| crate::util::read_file_capped(&h))
                        {
                            Ok(d) => d,
                            Err(e) => {
                                let _ = put(
                                    &self.io.stderr(),
                                    format!(
                                        "awk: cannot open \"{}\" ({})\n",
                                        lossy(&op),
                                        crate::fs::error_text(&e)
                                    )
                                    .as_bytes(),
                                );
                                self.exit_code = 2;
                                continue;
                            }
                        }
                    };
                    self.set("FILENAME", Val::Str(op))?;
                    self.set("FNR", Val::Num(0.0))?;
                    self.main = Some(Source { data, pos: 0 });
                    break;
                }
                if self.main.is_none() && !self.used_stdin {
                    self.used_stdin = true;
                    let data = self.io.stdin().borrow_mut().take_all();
                    self.main = Some(Source { data, pos: 0 });
                }
                if self.main.is_none() {
                    return Ok(None);
                }
            }
            let mut src = self.main.take().unwrap_or_default();
            let r = self.read_record(&mut src)?;
            if let Some(rec) = r {
                self.main = Some(src);
                return Ok(Some(rec));
            }
        }
    }

    fn run_main(&mut self) -> Res<()> {
        let prog = self.prog.clone();
        'records: while let Some(rec) = self.next_main_record()? {
            let nr = self.get("NR")?.num();
            self.set("NR", Val::Num(nr + 1.0))?;
            let fnr = self.get("FNR")?.num();
            self.set("FNR", Val::Num(fnr + 1.0))?;
            self.set_record(rec);
            for (i, (pat, action)) in prog.rules.iter().enumerate() {
                let hit = match pat {
                    Pattern::All => true,
                    Pattern::Expr(e) => self.eval(e)?.truthy(),
                    Pattern::Range(a, b) => {
                        if self.ranges[i] {
                            if self.eval(b)?.truthy() {
                                self.ranges[i] = false;
                            }
                            true
                        } else if self.eval(a)?.truthy() {
                            if !self.eval(b)?.truthy() {
                                self.ranges[i] = true;
                            }
                            true
                        } else {
                            false
                        }
                    }
                };
                if !hit {
                    continue;
                }
                let r = match action {
                    Some(stmts) => self.exec_block(stmts),
                    None => {
                        let mut line = self.record.clone();
                        line.extend(self.special("ORS"));
                        self.emit(None, &line)
                    }
                };
                match r {
                    Ok(()) => {}
                    Err(Flow::Next) => continue 'records,
                    Err(Flow::NextFile) => {
                        self.main = None;
                        continue 'records;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// `awk` itself.
pub fn awk(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let err = |m: &str| {
        let _ = put(&io.stderr(), format!("awk: {m}\n").as_bytes());
    };
    let mut fs: Option<Vec<u8>> = None;
    let mut assigns: Vec<(String, Vec<u8>)> = Vec::new();
    let mut program: Option<Vec<u8>> = None;
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a == b"--" {
            i += 1;
            break;
        }
        if a.len() < 2 || a[0] != b'-' {
            break;
        }
        let take = |i: &mut usize, inline: &[u8]| -> Option<Vec<u8>> {
            if !inline.is_empty() {
                Some(inline.to_vec())
            } else {
                *i += 1;
                argv.get(*i).cloned()
            }
        };
        match a[1] {
            b'F' => fs = take(&mut i, &a[2..]),
            b'v' => match take(&mut i, &a[2..]).as_deref().and_then(assignment) {
                Some(x) => assigns.push(x),
                None => {
                    err("-v: invalid variable assignment");
                    return 2;
                }
            },
            b'f' => {
                let Some(f) = take(&mut i, &a[2..]) else {
                    err("-f: option requires an argument");
                    return 2;
                };
                match sh
                    .fs
                    .host(&sh.cwd, &f)
                    .and_then(|h| crate::util::read_file_capped(&h))
                {
                    Ok(d) => {
                        let p = program.get_or_insert_with(Vec::new);
                        p.extend(d);
                        p.push(b'\n');
                    }
                    Err(e) => {
                        err(&format!(
                            "can't open source file `{}': {}",
                            lossy(&f),
                            crate::fs::error_text(&e)
                        ));
                        return 2;
                    }
                }
            }
            b'-' => {}
            _ => {
                err(&format!("unknown option {}", lossy(a)));
                return 2;
            }
        }
        i += 1;
    }
    let program = match program {
        Some(p) => p,
        None => match argv.get(i) {
            Some(p) => {
                i += 1;
                p.clone()
            }
            None => {
                err("usage: awk [-F fs][-v var=value][prog | -f progfile][file ...]");
                return 2;
            }
        },
    };
    let prog = match lex::lex(&program).and_then(parse::parse) {
        Ok(p) => p,
        Err(e) => {
            err(&e);
            return 2;
        }
    };
    let operands: Vec<Vec<u8>> = argv[i..].to_vec();
    let nrules = prog.rules.len();
    let mut a = Awk {
        sh,
        io,
        prog: Rc::new(prog),
        globals: HashMap::new(),
        arrays: Vec::new(),
        frames: Vec::new(),
        record: Vec::new(),
        fields: None,
        out: Vec::new(),
        outputs: Vec::new(),
        readers: HashMap::new(),
        operands: operands.clone(),
        main: None,
        used_stdin: false,
        ranges: vec![false; nrules],
        cache: HashMap::new(),
        rand: (0x853c49e6748fea9b, 0.0),
        exit_code: 0,
    };
    let defaults: [(&str, &[u8]); 11] = [
        ("FS", b" "),
        ("OFS", b" "),
        ("ORS", b"\n"),
        ("RS", b"\n"),
        ("SUBSEP", b"\x1c"),
        ("CONVFMT", b"%.6g"),
        ("OFMT", b"%.6g"),
        ("FILENAME", b""),
        ("NR", b"0"),
        ("FNR", b"0"),
        ("RLENGTH", b"-1"),
    ];
    for (k, v) in defaults {
        a.globals
            .insert(k.to_string(), Cell::Val(Val::StrNum(v.to_vec())));
    }
    a.globals.insert("RSTART".into(), Cell::Val(Val::Num(0.0)));
    let mut env = AMap::default();
    for (k, v) in a.sh.vars.exported() {
        env.set(k, Val::StrNum(v));
    }
    a.arrays.push(env);
    a.globals.insert("ENVIRON".into(), Cell::Arr(0));
    let mut args = AMap::default();
    args.set(b"0".to_vec(), Val::Str(b"awk".to_vec()));
    for (n, o) in operands.iter().enumerate() {
        args.set((n + 1).to_string().into_bytes(), Val::StrNum(o.clone()));
    }
    a.arrays.push(args);
    a.globals.insert("ARGV".into(), Cell::Arr(1));
    a.globals.insert(
        "ARGC".into(),
        Cell::Val(Val::Num((operands.len() + 1) as f64)),
    );
    if let Some(f) = fs {
        let f = if f == b"t" {
            b"\t".to_vec()
        } else {
            unescape(&f)
        };
        a.globals.insert("FS".into(), Cell::Val(Val::Str(f)));
    }
    for (k, v) in assigns {
        a.globals.insert(k, Cell::Val(Val::StrNum(v)));
    }
    let prog = a.prog.clone();
    let mut result: Res<()> = Ok(());
    for b in &prog.begin {
        result = a.exec_block(b);
        if result.is_err() {
            break;
        }
    }
    if result.is_ok() && (!prog.rules.is_empty() || !prog.end.is_empty()) {
        result = a.run_main();
    }
    if matches!(result, Ok(()) | Err(Flow::Exit)) {
        for b in &prog.end {
            match a.exec_block(b) {
                Ok(()) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
    }
    if !matches!(result, Err(Flow::Stop)) && a.flush_out().is_err() {
        result = Err(Flow::Stop);
    }
    for (name, o) in std::mem::take(&mut a.outputs) {
        if let Err(e) = a.finish_output(&name, o)
            && result.is_ok()
        {
            result = Err(e);
        }
    }
    match result {
        Err(Flow::Error(e)) => {
            err(&e);
            2
        }
        Err(Flow::Stop) => 2,
        _ => a.exit_code,
    }
}
