//! `rg` (ripgrep's common subset): `PATTERN [PATH…]`, `--files`, `-n -N
//! -i -S -l -c -w -v -F -o -x -e -g -t -A -B -C --hidden -u`. Hidden files
//! and the root `.gitignore`'s simple patterns are skipped unless asked;
//! output is not a terminal, so line numbers show only with `-n`.

use super::walk::{Visit, walk};
use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::Io;
use crate::pattern::Pattern;

#[derive(Default)]
struct R {
    files_mode: bool,
    number: bool,
    icase: bool,
    smart: bool,
    list: bool,
    count: bool,
    word: bool,
    invert: bool,
    fixed: bool,
    only: bool,
    line: bool,
    hidden: bool,
    no_ignore: bool,
    with_name: Option<bool>,
    quiet: bool,
    after: usize,
    before: usize,
    max: Option<usize>,
    patterns: Vec<Vec<u8>>,
    globs: Vec<(bool, Pattern, bool)>,
    types: Vec<String>,
}

fn type_exts(t: &str) -> &'static [&'static str] {
    match t {
        "py" | "python" => &["py", "pyi"],
        "js" => &["js", "mjs", "cjs", "jsx"],
        "ts" | "typescript" => &["ts", "tsx", "mts", "cts"],
        "rust" | "rs" => &["rs"],
        "md" | "markdown" => &["md", "markdown"],
        "txt" => &["txt"],
        "json" => &["json"],
        "yaml" => &["yaml", "yml"],
        "toml" => &["toml"],
        "html" => &["html", "htm"],
        "css" => &["css"],
        "sh" => &["sh", "bash"],
        "c" => &["c", "h"],
        "cpp" => &["cpp", "cc", "cxx", "hpp", "hh", "h"],
        "go" => &["go"],
        "java" => &["java"],
        "csv" => &["csv"],
        _ => &[],
    }
}

struct Ignore {
    rules: Vec<(Pattern, bool, bool)>,
}

impl Ignore {
    fn load(root: &std::path::Path) -> Ignore {
        let mut rules = Vec::new();
        // Ignore files are small: a larger one (or its rules past the
        // first 10,000) is not read.
        for f in [".gitignore", ".ignore", ".rgignore"] {
            let Ok(text) = super::read_file_at_most(&root.join(f), 1 << 20) else {
                continue;
            };
            for l in crate::bytes::lines(&text) {
                if rules.len() >= 10_000 {
                    break;
                }
                let l = crate::bytes::trim_blanks(l);
                if l.is_empty() || l.starts_with(b"#") || l.starts_with(b"!") {
                    continue;
                }
                let dir_only = l.ends_with(b"/");
                let l = l.strip_suffix(b"/").unwrap_or(l);
                let anchored = l.contains(&b'/');
                let l = l.strip_prefix(b"/").unwrap_or(l);
                rules.push((Pattern::new(l, None), dir_only, anchored));
            }
        }
        Ignore { rules }
    }

    fn ignored(&self, rel: &[u8], is_dir: bool) -> bool {
        let base = crate::fs::base_name(rel);
        self.rules.iter().any(|(p, dir_only, anchored)| {
            (!dir_only || is_dir)
                && if *anchored {
                    p.matches(rel)
                } else {
                    p.matches(base)
                }
        })
    }
}

fn parse(argv: &[Vec<u8>]) -> Result<(R, Vec<Vec<u8>>), String> {
    let (opts, mut ops) = getopt(
        &argv[1..],
        b"egtTABCmMj",
        &[
            "regexp",
            "glob",
            "iglob",
            "type",
            "type-not",
            "after-context",
            "before-context",
            "context",
            "max-count",
            "max-depth",
            "threads",
            "color",
            "colors",
            "sort",
            "max-columns",
        ],
        true,
    )?;
    let mut r = R::default();
    let num = |v: &Option<Vec<u8>>| {
        lossy(v.as_deref().unwrap_or_default())
            .parse::<usize>()
            .map_err(|_| "invalid number".to_string())
    };
    for o in opts {
        match o {
            Opt::Short(c, v) => match c {
                b'n' => r.number = true,
                b'N' => r.number = false,
                b'i' => r.icase = true,
                b'S' => r.smart = true,
                b's' => r.icase = false,
                b'l' => r.list = true,
                b'c' => r.count = true,
                b'w' => r.word = true,
                b'v' => r.invert = true,
                b'F' => r.fixed = true,
                b'o' => r.only = true,
                b'x' => r.line = true,
                b'q' => r.quiet = true,
                b'H' => r.with_name = Some(true),
                b'I' => r.with_name = Some(false),
                b'u' => {
                    if r.no_ignore {
                        r.hidden = true;
                    }
                    r.no_ignore = true;
                }
                b'.' => r.hidden = true,
                b'e' => r.patterns.push(v.unwrap_or_default()),
                b'g' => {
                    let g = v.unwrap_or_default();
                    let (neg, g) = match g.strip_prefix(b"!") {
                        Some(x) => (true, x.to_vec()),
                        None => (false, g),
                    };
                    r.globs
                        .push((neg, Pattern::new(&g, None), g.contains(&b'/')));
                }
                b't' => r.types.push(lossy(&v.unwrap_or_default())),
                b'A' => r.after = num(&v)?,
                b'B' => r.before = num(&v)?,
                b'C' => {
                    r.after = num(&v)?;
                    r.before = r.after;
                }
                b'm' => r.max = Some(num(&v)?),
                b'T' | b'M' | b'j' | b'p' | b'z' | b'a' | b'L' | b'U' | b'P' => {}
                _ => return Err(format!("unrecognized flag -{}", c as char)),
            },
            Opt::Long(n, v) => match n.as_str() {
                "files" => r.files_mode = true,
                "line-number" => r.number = true,
                "no-line-number" => r.number = false,
                "ignore-case" => r.icase = true,
                "smart-case" => r.smart = true,
                "files-with-matches" => r.list = true,
                "count" => r.count = true,
                "word-regexp" => r.word = true,
                "invert-match" => r.invert = true,
                "fixed-strings" => r.fixed = true,
                "only-matching" => r.only = true,
                "line-regexp" => r.line = true,
                "hidden" => r.hidden = true,
                "no-ignore" | "no-ignore-vcs" => r.no_ignore = true,
                "with-filename" => r.with_name = Some(true),
                "no-filename" => r.with_name = Some(false),
                "quiet" => r.quiet = true,
                "regexp" => r.patterns.push(v.unwrap_or_default()),
                "glob" | "iglob" => {
                    let g = v.unwrap_or_default();
                    let (neg, g) = match g.strip_prefix(b"!") {
                        Some(x) => (true, x.to_vec()),
                        None => (false, g),
                    };
                    r.globs
                        .push((neg, Pattern::new(&g, None), g.contains(&b'/')));
                }
                "type" => r.types.push(lossy(&v.unwrap_or_default())),
                "after-context" => r.after = num(&v)?,
                "before-context" => r.before = num(&v)?,
                "context" => {
                    r.after = num(&v)?;
                    r.before = r.after;
                }
                "max-count" => r.max = Some(num(&v)?),
                _ => {}
            },
        }
    }
    if !r.files_mode && r.patterns.is_empty() {
        if ops.is_empty() {
            return Err("no pattern given".into());
        }
        r.patterns.push(ops.remove(0));
    }
    Ok((r, ops))
}

fn wanted(r: &R, rel: &[u8]) -> bool {
    let base = crate::fs::base_name(rel);
    let positive: Vec<&(bool, Pattern, bool)> = r.globs.iter().filter(|g| !g.0).collect();
    let hit = |g: &(bool, Pattern, bool)| {
        if g.2 {
            g.1.matches(rel)
        } else {
            g.1.matches(base) || g.1.matches(rel)
        }
    };
    if !positive.is_empty() && !positive.iter().any(|g| hit(g)) {
        return false;
    }
    if r.globs.iter().filter(|g| g.0).any(hit) {
        return false;
    }
    if !r.types.is_empty() {
        let ext = base.rsplit(|&c| c == b'.').next().unwrap_or_default();
        return r
            .types
            .iter()
            .any(|t| type_exts(t).iter().any(|e| e.as_bytes() == ext));
    }
    true
}

/// `rg [OPTIONS] PATTERN [PATH…]` / `rg --files [PATH…]`.
pub fn rg(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "rg");
    let (r, mut paths) = match parse(argv) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let implicit = paths.is_empty();
    if implicit {
        paths.push(b".".to_vec());
    }
    let mut files: Vec<(Vec<u8>, std::path::PathBuf)> = Vec::new();
    let mut status_err = false;
    let mut single_file = false;
    for p in &paths {
        let Ok(host) = u.host(p) else {
            u.err(format!(
                "{}: No such file or directory (os error 2)",
                lossy(p)
            ));
            status_err = true;
            continue;
        };
        match std::fs::metadata(&host) {
            Ok(m) if m.is_file() => {
                single_file = paths.len() == 1;
                files.push((p.clone(), host));
                continue;
            }
            Ok(_) => {}
            Err(_) => {
                u.err(format!(
                    "{}: No such file or directory (os error 2)",
                    lossy(p)
                ));
                status_err = true;
                continue;
            }
        }
        let ignore = if r.no_ignore {
            Ignore { rules: Vec::new() }
        } else {
            Ignore::load(&host)
        };
        let prefix_len = p.len() + 1;
        let _ = walk(
            p,
            host,
            None,
            |e| {
                if e.depth == 0 {
                    return Visit::Continue;
                }
                let rel = &e.path[prefix_len.min(e.path.len())..];
                let base = crate::fs::base_name(&e.path);
                if base == b".git"
                    || (!r.hidden && base.first() == Some(&b'.'))
                    || ignore.ignored(rel, e.is_dir())
                {
                    return Visit::Skip;
                }
                if e.meta.is_file() && wanted(&r, rel) {
                    let shown = if implicit {
                        rel.to_vec()
                    } else {
                        e.path.clone()
                    };
                    files.push((shown, e.host.clone()));
                }
                Visit::Continue
            },
            |_, _| {},
        );
    }
    if r.files_mode {
        let mut out = Vec::new();
        for (f, _) in &files {
            out.extend_from_slice(f);
            out.push(b'\n');
        }
        let _ = u.out(&out);
        return if files.is_empty() { 1 } else { 0 };
    }
    let icase = r.icase
        || (r.smart
            && !r
                .patterns
                .iter()
                .any(|p| p.iter().any(|c| c.is_ascii_uppercase())));
    let alts: Vec<String> = r
        .patterns
        .iter()
        .map(|p| {
            if r.fixed {
                regex::escape(&lossy(p))
            } else {
                lossy(p)
            }
        })
        .map(|p| {
            if r.word {
                format!("\\b(?:{p})\\b")
            } else {
                format!("(?:{p})")
            }
        })
        .collect();
    let mut body = alts.join("|");
    if r.line {
        body = format!("^(?:{body})$");
    }
    let re = match super::re::build(&body, icase) {
        Ok(re) => re,
        Err(e) => {
            u.err(format!("regex parse error: {e}"));
            return 2;
        }
    };
    let show_name = r.with_name.unwrap_or(!single_file);
    let mut any = false;
    let mut out = Vec::new();
    for (name, host) in &files {
        let Ok(data) = super::read_file_capped(host) else {
            continue;
        };
        if data.contains(&0) {
            continue;
        }
        let lines: Vec<&[u8]> = crate::bytes::lines(&data).collect();
        let mut count = 0;
        let mut printed: Option<usize> = None;
        let mut after_left = 0;
        let mut body = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if r.max.is_some_and(|m| count >= m) {
                break;
            }
            let hit = re.is_match(l) != r.invert;
            let pre = |b: &mut Vec<u8>, sep: u8| {
                if show_name && !(r.list || r.count) {
                    b.extend_from_slice(name);
                    b.push(sep);
                }
                if r.number {
                    b.extend(format!("{}{}", i + 1, sep as char).into_bytes());
                }
            };
            if !hit {
                if after_left > 0 {
                    pre(&mut body, b'-');
                    body.extend_from_slice(l);
                    body.push(b'\n');
                    printed = Some(i);
                    after_left -= 1;
                }
                continue;
            }
            count += 1;
            if r.list || r.count || r.quiet {
                continue;
            }
            let from = i.saturating_sub(r.before).max(printed.map_or(0, |p| p + 1));
            if (r.before > 0 || r.after > 0) && printed.is_some_and(|p| from > p + 1) {
                body.extend_from_slice(b"--\n");
            }
            for (j, cl) in lines.iter().enumerate().take(i).skip(from) {
                if show_name {
                    body.extend_from_slice(name);
                    body.push(b'-');
                }
                if r.number {
                    body.extend(format!("{}-", j + 1).into_bytes());
                }
                body.extend_from_slice(cl);
                body.push(b'\n');
            }
            if r.only && !r.invert {
                for m in re.find_iter(l) {
                    pre(&mut body, b':');
                    body.extend_from_slice(m.as_bytes());
                    body.push(b'\n');
                }
            } else {
                pre(&mut body, b':');
                body.extend_from_slice(l);
                body.push(b'\n');
            }
            printed = Some(i);
            after_left = r.after;
        }
        if count == 0 {
            continue;
        }
        any = true;
        if r.quiet {
            break;
        }
        if r.list {
            out.extend_from_slice(name);
            out.push(b'\n');
        } else if r.count {
            if show_name {
                out.extend_from_slice(name);
                out.push(b':');
            }
            out.extend(format!("{count}\n").into_bytes());
        } else {
            out.extend(body);
        }
        if out.len() > 1 << 16 {
            let _ = u.out(&out);
            out.clear();
        }
    }
    let _ = u.out(&out);
    if status_err {
        2
    } else if any {
        0
    } else {
        1
    }
}
