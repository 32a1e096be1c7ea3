//! `find PATH… [EXPRESSION]`: tests `-name -iname -path -ipath -regex
//! -type -size -empty -newer -mtime -mmin`, operators `! -not -a -and -o
//! -or ( )`, options `-maxdepth -mindepth`, actions `-print -print0
//! -printf -delete -exec … ; -exec … + -prune -quit`. Entries are visited
//! in name order.

mod parse;

use super::walk::{Entry, Visit, walk};
use crate::exec::{Ctl, Shell};
use crate::fs::Target;
use crate::io::{Fd, Input, Io, put};
use crate::pattern::Pattern;
use parse::{Action, E, Parser, Test};

struct Finder<'a> {
    sh: &'a mut Shell,
    io: &'a Io,
    actions: Vec<Action>,
    now: i64,
    batches: Vec<Vec<Vec<u8>>>,
    deletes: Vec<(Vec<u8>, std::path::PathBuf, bool)>,
    prune: bool,
    quit: bool,
    status: i32,
}

fn pattern_match(p: &Pattern, s: &[u8], icase: bool) -> bool {
    if icase {
        p.matches(&s.to_ascii_lowercase())
    } else {
        p.matches(s)
    }
}

impl Finder<'_> {
    fn test(&mut self, t: &Test, e: &Entry) -> bool {
        match t {
            Test::Name(p, icase) => pattern_match(p, crate::fs::base_name(&e.path), *icase),
            Test::Path(p, icase) => pattern_match(p, &e.path, *icase),
            Test::Regex(r) => r.is_match(&e.path),
            Test::Type(c) => match c {
                b'f' => e.meta.is_file(),
                b'd' => e.meta.is_dir(),
                b'l' => e.meta.file_type().is_symlink(),
                _ => false,
            },
            Test::Size(c, n, mult) => {
                let units = e.meta.len().div_ceil(*mult);
                match c {
                    '+' => units > *n,
                    '-' => units < *n,
                    _ => units == *n,
                }
            }
            Test::Empty => {
                if e.meta.is_dir() {
                    std::fs::read_dir(&e.host)
                        .map(|mut r| r.next().is_none())
                        .unwrap_or(false)
                } else {
                    e.meta.len() == 0
                }
            }
            Test::Newer(t) => e.meta.modified().map(|m| m > *t).unwrap_or(false),
            Test::Age(c, n, unit) => {
                let m = e
                    .meta
                    .modified()
                    .map(|m| crate::util::time::epoch(m).0)
                    .unwrap_or(0);
                let age = (self.now - m).div_euclid(*unit);
                match c {
                    '+' => age > *n,
                    '-' => age < *n,
                    _ => age == *n,
                }
            }
            Test::True => true,
            Test::False => false,
        }
    }

    fn eval(&mut self, x: &E, e: &Entry) -> bool {
        match x {
            E::And(items) => items.iter().all(|x| self.eval(x, e)),
            E::Or(items) => items.iter().any(|x| self.eval(x, e)),
            E::Not(a) => !self.eval(a, e),
            E::Test(t) => self.test(t, e),
            E::Act(i) => self.act(*i, e),
        }
    }

    fn act(&mut self, i: usize, e: &Entry) -> bool {
        match &self.actions[i] {
            Action::Print(end) => {
                let mut line = e.path.clone();
                line.push(*end);
                let _ = put(&self.io.stdout(), &line);
                true
            }
            Action::Printf(fmt) => {
                let text = printf(fmt, e);
                let _ = put(&self.io.stdout(), &text);
                true
            }
            Action::Delete => {
                self.deletes
                    .push((e.path.clone(), e.host.clone(), e.is_dir()));
                true
            }
            Action::Prune => {
                self.prune = true;
                true
            }
            Action::Quit => {
                self.quit = true;
                true
            }
            Action::Exec(cmd, batch) => {
                if *batch {
                    self.batches[i].push(e.path.clone());
                    return true;
                }
                let argv: Vec<Vec<u8>> = cmd.iter().map(|a| replace_braces(a, &e.path)).collect();
                self.run(&argv) == 0
            }
        }
    }

    fn run(&mut self, argv: &[Vec<u8>]) -> i32 {
        if argv.is_empty() {
            return 1;
        }
        let mut io = self.io.clone();
        io.fds[0] = Some(Fd::In(Input::empty()));
        match self.sh.dispatch_external(argv, &io) {
            Ok(s) => s,
            Err(Ctl::Fatal(s)) => {
                // A limit ended the evaluation: stop walking.
                self.quit = true;
                s
            }
            Err(_) => 1,
        }
    }
}

fn replace_braces(a: &[u8], path: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < a.len() {
        if a[i..].starts_with(b"{}") {
            out.extend_from_slice(path);
            i += 2;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out
}

fn printf(fmt: &[u8], e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        match fmt[i] {
            b'\\' if i + 1 < fmt.len() => {
                let (b, used) = crate::bytes::backslash_escape(&fmt[i + 1..], true);
                out.extend(b);
                i += 1 + used;
            }
            b'%' if i + 1 < fmt.len() => {
                let c = fmt[i + 1];
                i += 2;
                match c {
                    b'p' => out.extend_from_slice(&e.path),
                    b'f' => out.extend_from_slice(crate::fs::base_name(&e.path)),
                    b'h' => out.extend(crate::util::paths::dir_of(&e.path)),
                    b'P' => {
                        let rest = e
                            .path
                            .iter()
                            .position(|&c| c == b'/')
                            .map_or(&[][..], |p| &e.path[p + 1..]);
                        out.extend_from_slice(if e.depth == 0 { b"" } else { rest });
                    }
                    b's' => out.extend(e.meta.len().to_string().into_bytes()),
                    b'd' => out.extend(e.depth.to_string().into_bytes()),
                    b'y' => out.push(if e.is_dir() { b'd' } else { b'f' }),
                    b'm' => out.extend_from_slice(if e.is_dir() { b"755" } else { b"644" }),
                    b'T' | b't' => {
                        let s = e
                            .meta
                            .modified()
                            .map(|m| crate::util::time::epoch(m).0)
                            .unwrap_or(0);
                        if c == b'T' && fmt.get(i) == Some(&b'@') {
                            i += 1;
                            out.extend(s.to_string().into_bytes());
                        } else {
                            let tm = crate::util::time::gmtime(s, 0);
                            out.extend(
                                crate::util::time::strftime("%a %b %e %H:%M:%S %Y", &tm, s)
                                    .into_bytes(),
                            );
                        }
                    }
                    b'%' => out.push(b'%'),
                    other => {
                        out.push(b'%');
                        out.push(other);
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `find [PATH…] [EXPRESSION]`.
pub fn find(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let err = |m: String| {
        let _ = put(&io.stderr(), format!("find: {m}\n").as_bytes());
    };
    let args = &argv[1..];
    let n_paths = args
        .iter()
        .take_while(|a| {
            !(a.starts_with(b"-") && a.len() > 1) && a.as_slice() != b"(" && a.as_slice() != b"!"
        })
        .count();
    let mut paths: Vec<Vec<u8>> = args[..n_paths].to_vec();
    if paths.is_empty() {
        paths.push(b".".to_vec());
    }
    let now = crate::util::time::now().0;
    let mut p = Parser {
        args: &args[n_paths..],
        i: 0,
        actions: Vec::new(),
        maxdepth: None,
        mindepth: 0,
        depth: 0,
        nodes: 0,
        now,
        sh,
    };
    let expr = if p.args.is_empty() {
        E::Test(Test::True)
    } else {
        match p.or() {
            Ok(e) if p.i == p.args.len() => e,
            Ok(_) => {
                err(format!(
                    "paths must precede expression: `{}'",
                    String::from_utf8_lossy(&p.args[p.i])
                ));
                return 1;
            }
            Err(e) => {
                err(e);
                return 1;
            }
        }
    };
    let _ = p.now;
    let has_action = p
        .actions
        .iter()
        .any(|a| !matches!(a, Action::Prune | Action::Quit));
    let (maxdepth, mindepth) = (p.maxdepth, p.mindepth);
    let mut actions = std::mem::take(&mut p.actions);
    let expr = if has_action {
        expr
    } else {
        actions.push(Action::Print(b'\n'));
        E::And(vec![expr, E::Act(actions.len() - 1)])
    };
    let batches = vec![Vec::new(); actions.len()];
    let mut f = Finder {
        sh,
        io,
        actions,
        now,
        batches,
        deletes: Vec::new(),
        prune: false,
        quit: false,
        status: 0,
    };
    for path in &paths {
        if f.quit {
            break;
        }
        let host = match f.sh.fs.target(&f.sh.fs.absolute(&f.sh.cwd, path)) {
            Some(Target::Path(h)) => h,
            _ => {
                err(format!(
                    "'{}': No such file or directory",
                    String::from_utf8_lossy(path)
                ));
                f.status = 1;
                continue;
            }
        };
        let mut errors = Vec::new();
        let r = walk(
            path,
            host,
            maxdepth,
            |e| {
                f.prune = false;
                if e.depth >= mindepth {
                    f.eval(&expr, e);
                }
                if f.quit {
                    Visit::Stop
                } else if f.prune {
                    Visit::Skip
                } else {
                    Visit::Continue
                }
            },
            |p, e| {
                errors.push(format!(
                    "'{}': {}",
                    String::from_utf8_lossy(p),
                    crate::fs::error_text(e)
                ))
            },
        );
        for e in errors {
            err(e);
            f.status = 1;
        }
        if let Err(e) = r {
            if e.kind() == std::io::ErrorKind::NotFound {
                err(format!(
                    "'{}': No such file or directory",
                    String::from_utf8_lossy(path)
                ));
            } else {
                err(crate::fs::error_text(&e));
            }
            f.status = 1;
        }
    }
    for i in 0..f.actions.len() {
        if let Action::Exec(cmd, true) = &f.actions[i] {
            let items = std::mem::take(&mut f.batches[i]);
            if items.is_empty() {
                continue;
            }
            let mut argv: Vec<Vec<u8>> = cmd[..cmd.len() - 1].to_vec();
            argv.extend(items);
            if f.run(&argv) != 0 {
                f.status = 1;
            }
        }
    }
    for (shown, host, dir) in std::mem::take(&mut f.deletes).into_iter().rev() {
        let r = if dir {
            std::fs::remove_dir(&host)
        } else {
            std::fs::remove_file(&host)
        };
        if let Err(e) = r {
            err(format!(
                "cannot delete '{}': {}",
                String::from_utf8_lossy(&shown),
                crate::fs::error_text(&e)
            ));
            f.status = 1;
        }
    }
    f.status
}
