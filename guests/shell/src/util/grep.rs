//! `grep` (and `egrep`, `fgrep`): BRE/ERE/fixed/Perl-ish patterns over
//! bytes, recursive search, context lines, counts and file lists.

use super::walk::{Visit, walk};
use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::io::Io;
use crate::pattern::Pattern;
use regex::bytes::Regex;

/// Most bytes of patterns (`-e`, `-f`) one grep takes.
const MAX_PATTERNS: usize = 1 << 20;

#[derive(Default)]
struct G {
    ere: bool,
    fixed: bool,
    perl: bool,
    icase: bool,
    invert: bool,
    count: bool,
    list: bool,
    list_missing: bool,
    number: bool,
    with_name: Option<bool>,
    only: bool,
    quiet: bool,
    silent: bool,
    word: bool,
    line: bool,
    recursive: bool,
    text: bool,
    skip_binary: bool,
    max: Option<usize>,
    after: usize,
    before: usize,
    patterns: Vec<Vec<u8>>,
    include: Vec<Vec<u8>>,
    exclude: Vec<Vec<u8>>,
    exclude_dir: Vec<Vec<u8>>,
}

struct Matcher {
    re: Regex,
    word: bool,
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

impl Matcher {
    /// Match spans in a line.
    fn spans(&self, line: &[u8]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        while start <= line.len() {
            let Some(m) = self.re.find_at(line, start) else {
                break;
            };
            let (s, e) = (m.start(), m.end());
            if self.word {
                let ok_left = s == 0 || !is_word(line[s - 1]);
                let ok_right = e >= line.len() || !is_word(line[e]);
                if !(ok_left && ok_right) {
                    start = s + 1;
                    continue;
                }
            }
            out.push((s, e));
            start = if e > s { e } else { e + 1 };
        }
        out
    }

    fn is_match(&self, line: &[u8]) -> bool {
        if self.word {
            !self.spans(line).is_empty()
        } else {
            self.re.is_match(line)
        }
    }
}

fn build(g: &G) -> Result<Matcher, String> {
    let mut alts = Vec::new();
    for p in &g.patterns {
        for one in p.split(|&c| c == b'\n') {
            let t = if g.fixed {
                let mut s = String::new();
                s.push_str(&regex::escape(&String::from_utf8_lossy(one)));
                s
            } else if g.perl {
                String::from_utf8_lossy(one).into_owned()
            } else {
                super::re::translate(one, g.ere)?
            };
            alts.push(t);
        }
    }
    let mut body = alts
        .iter()
        .map(|a| format!("(?:{a})"))
        .collect::<Vec<_>>()
        .join("|");
    if alts.is_empty() {
        body = "(?:)".into();
    }
    if g.line {
        body = format!("^(?:{body})$");
    }
    let re = super::re::build(&body, g.icase)?;
    Ok(Matcher { re, word: g.word })
}

fn parse(u: &Ctx, argv: &[Vec<u8>]) -> Result<(G, Vec<Vec<u8>>), String> {
    let (opts, mut operands) = getopt(
        &argv[1..],
        b"efmABCdD",
        &[
            "regexp",
            "file",
            "max-count",
            "after-context",
            "before-context",
            "context",
            "include",
            "exclude",
            "exclude-dir",
        ],
        true,
    )?;
    let mut g = G {
        ere: argv[0] == b"egrep",
        fixed: argv[0] == b"fgrep",
        ..G::default()
    };
    let num = |v: &Option<Vec<u8>>| -> Result<usize, String> {
        let t = String::from_utf8_lossy(v.as_deref().unwrap_or_default()).into_owned();
        t.trim()
            .parse()
            .map_err(|_| format!("invalid number: '{t}'"))
    };
    for o in opts {
        match o {
            Opt::Short(c, v) => match c {
                b'E' => g.ere = true,
                b'F' => g.fixed = true,
                b'G' => g.ere = false,
                b'P' => g.perl = true,
                b'i' | b'y' => g.icase = true,
                b'v' => g.invert = true,
                b'c' => g.count = true,
                b'l' => g.list = true,
                b'L' => g.list_missing = true,
                b'n' => g.number = true,
                b'H' => g.with_name = Some(true),
                b'h' => g.with_name = Some(false),
                b'o' => g.only = true,
                b'q' => g.quiet = true,
                b's' => g.silent = true,
                b'w' => g.word = true,
                b'x' => g.line = true,
                b'r' | b'R' => g.recursive = true,
                b'a' => g.text = true,
                b'I' => g.skip_binary = true,
                b'e' => g.patterns.push(v.unwrap_or_default()),
                b'f' => {
                    let p = v.unwrap_or_default();
                    let data = u.read_input(&p).map_err(|e| {
                        format!(
                            "{}: {}",
                            String::from_utf8_lossy(&p),
                            crate::fs::error_text(&e)
                        )
                    })?;
                    let text = data.strip_suffix(b"\n").unwrap_or(&data).to_vec();
                    g.patterns.push(text);
                    // Translated, a pattern grows several times before the
                    // regex size limit refuses it: refuse it first.
                    if g.patterns.iter().map(|p| p.len()).sum::<usize>() > MAX_PATTERNS {
                        return Err(format!(
                            "{}: patterns too large (more than {} MiB)",
                            String::from_utf8_lossy(&p),
                            MAX_PATTERNS >> 20
                        ));
                    }
                }
                b'm' => g.max = Some(num(&v)?),
                b'A' => g.after = num(&v)?,
                b'B' => g.before = num(&v)?,
                b'C' => {
                    g.after = num(&v)?;
                    g.before = g.after;
                }
                b'd' | b'D' | b'U' | b'b' | b'T' | b'Z' | b'z' => {}
                d if d.is_ascii_digit() => {
                    g.after = (d - b'0') as usize;
                    g.before = g.after;
                }
                _ => return Err(format!("invalid option -- '{}'", c as char)),
            },
            Opt::Long(name, v) => match name.as_str() {
                "extended-regexp" => g.ere = true,
                "fixed-strings" => g.fixed = true,
                "perl-regexp" => g.perl = true,
                "ignore-case" => g.icase = true,
                "invert-match" => g.invert = true,
                "count" => g.count = true,
                "files-with-matches" => g.list = true,
                "files-without-match" => g.list_missing = true,
                "line-number" => g.number = true,
                "with-filename" => g.with_name = Some(true),
                "no-filename" => g.with_name = Some(false),
                "only-matching" => g.only = true,
                "quiet" | "silent" => g.quiet = true,
                "no-messages" => g.silent = true,
                "word-regexp" => g.word = true,
                "line-regexp" => g.line = true,
                "recursive" | "dereference-recursive" => g.recursive = true,
                "text" => g.text = true,
                "regexp" => g.patterns.push(v.unwrap_or_default()),
                "max-count" => g.max = Some(num(&v)?),
                "after-context" => g.after = num(&v)?,
                "before-context" => g.before = num(&v)?,
                "context" => {
                    g.after = num(&v)?;
                    g.before = g.after;
                }
                "include" => g.include.push(v.unwrap_or_default()),
                "exclude" => g.exclude.push(v.unwrap_or_default()),
                "exclude-dir" => g.exclude_dir.push(v.unwrap_or_default()),
                "color" | "colour" | "binary-files" | "null" | "label" | "line-buffered" => {}
                _ => return Err(format!("unrecognized option '--{name}'")),
            },
        }
    }
    if g.patterns.is_empty() {
        if operands.is_empty() {
            return Err("usage: grep [OPTION]... PATTERNS [FILE]...".into());
        }
        g.patterns.push(operands.remove(0));
    }
    if g.patterns.iter().map(|p| p.len()).sum::<usize>() > MAX_PATTERNS {
        return Err(format!(
            "patterns too large (more than {} MiB)",
            MAX_PATTERNS >> 20
        ));
    }
    Ok((g, operands))
}

struct Run<'a> {
    g: &'a G,
    m: Matcher,
    name: bool,
    any: bool,
    out: Vec<u8>,
}

impl Run<'_> {
    /// Searches one input; returns whether it had a selected line.
    fn search(&mut self, u: &Ctx, name: &[u8], data: &[u8]) -> bool {
        let g = self.g;
        let binary = !g.text && data.contains(&0);
        if binary && g.skip_binary {
            return false;
        }
        let body = data.strip_suffix(b"\n").unwrap_or(data);
        let lines: Vec<&[u8]> = if data.is_empty() {
            Vec::new()
        } else {
            body.split(|&c| c == b'\n').collect()
        };
        let mut count = 0usize;
        let mut last_printed: Option<usize> = None;
        let mut after_left = 0usize;
        let show_name = self.name;
        let mut out = std::mem::take(&mut self.out);
        let prefix = |out: &mut Vec<u8>, n: usize, sep: u8| {
            if show_name {
                out.extend_from_slice(name);
                out.push(sep);
            }
            if g.number {
                out.extend(format!("{}{}", n + 1, sep as char).into_bytes());
            }
        };
        let quiet_output = g.quiet || g.list || g.list_missing || g.count || binary;
        for (i, line) in lines.iter().enumerate() {
            if g.max.is_some_and(|m| count >= m) {
                break;
            }
            let hit = self.m.is_match(line) != g.invert;
            if !hit {
                if after_left > 0 && !quiet_output {
                    prefix(&mut out, i, b'-');
                    out.extend_from_slice(line);
                    out.push(b'\n');
                    last_printed = Some(i);
                    after_left -= 1;
                }
                continue;
            }
            count += 1;
            if g.quiet {
                break;
            }
            if quiet_output {
                continue;
            }
            let from = i.saturating_sub(g.before);
            let from = last_printed.map_or(from, |l| from.max(l + 1));
            if (g.before > 0 || g.after > 0) && last_printed.is_some_and(|l| from > l + 1) {
                out.extend_from_slice(b"--\n");
            }
            for (j, ctx_line) in lines.iter().enumerate().take(i).skip(from) {
                prefix(&mut out, j, b'-');
                out.extend_from_slice(ctx_line);
                out.push(b'\n');
            }
            if g.only && !g.invert {
                for (s, e) in self.m.spans(line) {
                    if e > s {
                        prefix(&mut out, i, b':');
                        out.extend_from_slice(&line[s..e]);
                        out.push(b'\n');
                    }
                }
            } else {
                prefix(&mut out, i, b':');
                out.extend_from_slice(line);
                out.push(b'\n');
            }
            last_printed = Some(i);
            after_left = g.after;
            if out.len() > 1 << 16 {
                let _ = u.out(&out);
                out.clear();
            }
        }
        if g.count {
            if self.name {
                out.extend_from_slice(name);
                out.push(b':');
            }
            out.extend(format!("{count}\n").into_bytes());
        }
        if g.list && count > 0 {
            out.extend_from_slice(name);
            out.push(b'\n');
        }
        if g.list_missing && count == 0 {
            out.extend_from_slice(name);
            out.push(b'\n');
        }
        let _ = u.out(&out);
        out.clear();
        self.out = out;
        if binary && count > 0 && !g.quiet && !g.list && !g.count && !g.list_missing {
            u.err(format!(
                "{}: binary file matches",
                String::from_utf8_lossy(name)
            ));
        }
        if count > 0 {
            self.any = true;
        }
        count > 0
    }
}

fn glob_ok(g: &G, name: &[u8]) -> bool {
    let base = crate::fs::base_name(name);
    if !g.include.is_empty()
        && !g
            .include
            .iter()
            .any(|p| Pattern::new(p, None).matches(base))
    {
        return false;
    }
    !g.exclude
        .iter()
        .any(|p| Pattern::new(p, None).matches(base))
}

/// `grep [-rnHhEFivlLcwxoqs] [-e PAT]… [-A/-B/-C N] [-m N] PATTERN [FILE…]`.
pub fn grep(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "grep");
    let (g, mut files) = match parse(&u, argv) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let m = match build(&g) {
        Ok(m) => m,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let implicit_dot = files.is_empty() && g.recursive;
    if implicit_dot {
        files.push(b".".to_vec());
    }
    let any_dir = files
        .iter()
        .any(|f| u.host(f).map(|h| h.is_dir()).unwrap_or(false));
    let name = g
        .with_name
        .unwrap_or(files.len() > 1 || (g.recursive && any_dir));
    let mut run = Run {
        g: &g,
        m,
        name,
        any: false,
        out: Vec::new(),
    };
    let mut error = false;
    if files.is_empty() {
        let data = u.stdin();
        run.search(&u, b"(standard input)", &data);
    }
    for f in &files {
        if g.quiet && run.any {
            break;
        }
        if f == b"-" {
            let data = u.stdin();
            run.search(&u, b"(standard input)", &data);
            continue;
        }
        let host = match u.target(f) {
            Some(crate::fs::Target::Path(h)) => h,
            Some(_) => {
                let data = u.read_input(f).unwrap_or_default();
                run.search(&u, f, &data);
                continue;
            }
            None => {
                if !g.silent {
                    u.err(format!(
                        "{}: No such file or directory",
                        String::from_utf8_lossy(f)
                    ));
                }
                error = true;
                continue;
            }
        };
        match std::fs::metadata(&host) {
            Ok(md) if md.is_dir() => {
                if !g.recursive {
                    if !g.silent {
                        u.err(format!("{}: Is a directory", String::from_utf8_lossy(f)));
                    }
                    error = true;
                    continue;
                }
                let mut found: Vec<(Vec<u8>, std::path::PathBuf)> = Vec::new();
                let r = walk(
                    f,
                    host,
                    None,
                    |e| {
                        if e.is_dir() {
                            let base = crate::fs::base_name(&e.path);
                            if e.depth > 0
                                && g.exclude_dir
                                    .iter()
                                    .any(|p| Pattern::new(p, None).matches(base))
                            {
                                return Visit::Skip;
                            }
                        } else if e.meta.is_file() && glob_ok(&g, &e.path) {
                            let shown = if implicit_dot {
                                e.path.strip_prefix(b"./").unwrap_or(&e.path).to_vec()
                            } else {
                                e.path.clone()
                            };
                            found.push((shown, e.host.clone()));
                        }
                        Visit::Continue
                    },
                    |p, err| {
                        if !g.silent {
                            u.err(format!(
                                "{}: {}",
                                String::from_utf8_lossy(p),
                                crate::fs::error_text(err)
                            ));
                        }
                    },
                );
                if let Err(e) = r {
                    u.err(crate::fs::error_text(&e));
                    error = true;
                }
                for (shown, h) in found {
                    match super::read_file_capped(&h) {
                        Ok(data) => {
                            run.search(&u, &shown, &data);
                        }
                        Err(e) => {
                            if !g.silent {
                                u.err_path(&shown, &e);
                            }
                            error = true;
                        }
                    }
                    if g.quiet && run.any {
                        break;
                    }
                }
            }
            Ok(_) => match super::read_file_capped(&host) {
                Ok(data) => {
                    run.search(&u, f, &data);
                }
                Err(e) => {
                    if !g.silent {
                        u.err_path(f, &e);
                    }
                    error = true;
                }
            },
            Err(e) => {
                if !g.silent {
                    u.err_path(f, &e);
                }
                error = true;
            }
        }
    }
    if g.quiet && run.any {
        return 0;
    }
    if error {
        2
    } else if run.any {
        0
    } else {
        1
    }
}
