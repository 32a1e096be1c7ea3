//! `ls`: one name per line (standard output is never a terminal here),
//! and coreutils' long format (`drwxr-xr-x 2 root root 4096 Dec  2 14:24
//! name`, with a `total` line). The workspace keeps no modes or owners:
//! directories show `drwxr-xr-x`, files `-rw-r--r--`, owner `root`.

use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::fs::{Target, name_bytes};
use crate::io::Io;
use std::fs::Metadata;
use std::path::PathBuf;

#[derive(Default, Clone, Copy)]
struct L {
    long: bool,
    all: bool,
    almost: bool,
    recursive: bool,
    human: bool,
    by_time: bool,
    by_size: bool,
    reverse: bool,
    dirs_self: bool,
    classify: bool,
    slash: bool,
    no_owner: bool,
    no_group: bool,
    unsorted: bool,
}

struct Item {
    name: Vec<u8>,
    host: PathBuf,
    meta: Option<Metadata>,
}

impl Item {
    fn is_dir(&self) -> bool {
        self.meta.as_ref().is_some_and(|m| m.is_dir())
    }
    fn size(&self) -> u64 {
        match &self.meta {
            Some(m) if m.is_dir() => 4096,
            Some(m) => m.len(),
            None => 0,
        }
    }
    fn mtime(&self) -> i64 {
        self.meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .map(|t| super::time::epoch(t).0)
            .unwrap_or(0)
    }
    fn links(&self) -> u64 {
        if !self.is_dir() {
            return 1;
        }
        let subdirs = std::fs::read_dir(&self.host)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
                    .count()
            })
            .unwrap_or(0);
        2 + subdirs as u64
    }
}

/// `-h` sizes: `1023`, `1.0K`, `15K`, `2.3M` (rounded up, as coreutils).
pub fn human(n: u64) -> String {
    if n < 1024 {
        return n.to_string();
    }
    let units = ['K', 'M', 'G', 'T', 'P', 'E'];
    let mut v = n as f64;
    for u in units {
        v /= 1024.0;
        if v < 1024.0 || u == 'E' {
            if v < 10.0 {
                let r = (v * 10.0).ceil() / 10.0;
                if r >= 10.0 {
                    return format!("{}{u}", r.ceil() as u64);
                }
                return format!("{r:.1}{u}");
            }
            let r = v.ceil() as u64;
            if r >= 1024 {
                continue;
            }
            return format!("{r}{u}");
        }
    }
    n.to_string()
}

fn blocks(it: &Item) -> u64 {
    match &it.meta {
        Some(m) if m.is_dir() => 4,
        Some(m) => m.len().div_ceil(4096) * 4,
        None => 0,
    }
}

fn sort_items(items: &mut [Item], o: &L) {
    if o.unsorted {
        return;
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    if o.by_time {
        items.sort_by_key(|b| std::cmp::Reverse(b.meta.as_ref().and_then(|m| m.modified().ok())));
    } else if o.by_size {
        items.sort_by_key(|b| std::cmp::Reverse(b.size()));
    }
    if o.reverse {
        items.reverse();
    }
}

fn suffix(it: &Item, o: &L) -> &'static [u8] {
    if (o.classify || o.slash) && it.is_dir() {
        b"/"
    } else {
        b""
    }
}

fn render(items: &[Item], o: &L, total: bool, out: &mut Vec<u8>) {
    if !o.long {
        for it in items {
            out.extend_from_slice(&it.name);
            out.extend_from_slice(suffix(it, o));
            out.push(b'\n');
        }
        return;
    }
    let now = super::time::now().0;
    let rows: Vec<(String, String, String, String)> = items
        .iter()
        .map(|it| {
            let mode = if it.is_dir() {
                "drwxr-xr-x"
            } else {
                "-rw-r--r--"
            };
            let size = if o.human {
                human(it.size())
            } else {
                it.size().to_string()
            };
            (
                mode.to_string(),
                it.links().to_string(),
                size,
                super::time::ls_time(it.mtime(), now),
            )
        })
        .collect();
    if total {
        let sum: u64 = items.iter().map(blocks).sum();
        let t = if o.human {
            human(sum * 1024)
        } else {
            sum.to_string()
        };
        out.extend(format!("total {t}\n").into_bytes());
    }
    let lw = rows.iter().map(|r| r.1.len()).max().unwrap_or(1);
    let sw = rows.iter().map(|r| r.2.len()).max().unwrap_or(1);
    for (it, (mode, links, size, time)) in items.iter().zip(rows) {
        let mut line = format!("{mode} {links:>lw$} ");
        if !o.no_owner {
            line.push_str("root ");
        }
        if !o.no_group {
            line.push_str("root ");
        }
        line.push_str(&format!("{size:>sw$} {time} "));
        out.extend(line.into_bytes());
        out.extend_from_slice(&it.name);
        out.extend_from_slice(suffix(it, o));
        out.push(b'\n');
    }
}

fn read_dir_items(
    u: &Ctx,
    host: &std::path::Path,
    o: &L,
    shown: &[u8],
) -> Result<Vec<Item>, String> {
    let rd = std::fs::read_dir(host).map_err(|e| {
        format!(
            "cannot open directory '{}': {}",
            String::from_utf8_lossy(shown),
            crate::fs::error_text(&e)
        )
    })?;
    let mut items = Vec::new();
    if o.all {
        for (n, h) in [
            (&b"."[..], host.to_path_buf()),
            (&b".."[..], host.join("..")),
        ] {
            let meta = std::fs::metadata(&h)
                .ok()
                .or_else(|| std::fs::metadata(host).ok());
            items.push(Item {
                name: n.to_vec(),
                host: h,
                meta,
            });
        }
    }
    for e in rd.flatten() {
        let name = name_bytes(&e.file_name());
        if name.first() == Some(&b'.') && !(o.all || o.almost) {
            continue;
        }
        let meta = std::fs::symlink_metadata(e.path()).ok();
        items.push(Item {
            name,
            host: e.path(),
            meta,
        });
        if items.len() > crate::limits::MAX_WALK {
            break;
        }
    }
    let _ = u;
    Ok(items)
}

/// `ls [-laA1RhtdrSFpgo] [--] [PATH…]`.
pub fn ls(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "ls");
    let (opts, mut paths) = match getopt(
        &argv[1..],
        b"wITL",
        &["color", "colour", "time-style", "sort", "width"],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let mut o = L::default();
    for op in &opts {
        match op {
            Opt::Short(c, _) => match c {
                b'l' => o.long = true,
                b'a' => o.all = true,
                b'A' => o.almost = true,
                b'R' => o.recursive = true,
                b'h' => o.human = true,
                b't' => o.by_time = true,
                b'S' => o.by_size = true,
                b'r' => o.reverse = true,
                b'd' => o.dirs_self = true,
                b'F' => o.classify = true,
                b'p' => o.slash = true,
                b'g' => {
                    o.long = true;
                    o.no_owner = true
                }
                b'o' => {
                    o.long = true;
                    o.no_group = true
                }
                b'n' => o.long = true,
                b'U' | b'f' => o.unsorted = true,
                b'1' | b'C' | b'x' | b'G' | b'H' | b'L' | b'N' | b'Q' | b'b' | b'c' | b'i'
                | b's' | b'u' | b'v' | b'k' | b'w' | b'I' | b'T' | b'X' => {}
                other => {
                    u.err(format!("invalid option -- '{}'", *other as char));
                    return 2;
                }
            },
            Opt::Long(n, _) => match n.as_str() {
                "all" => o.all = true,
                "almost-all" => o.almost = true,
                "recursive" => o.recursive = true,
                "human-readable" => o.human = true,
                "directory" => o.dirs_self = true,
                "reverse" => o.reverse = true,
                "classify" => o.classify = true,
                _ => {}
            },
        }
    }
    if o.all {
        o.almost = false;
    }
    if paths.is_empty() {
        paths.push(b".".to_vec());
    }
    let mut status = 0;
    let mut files = Vec::new();
    let mut dirs: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    for p in &paths {
        let host = match u.target(p) {
            Some(Target::Path(h)) => h,
            Some(_) => {
                files.push(Item {
                    name: p.clone(),
                    host: PathBuf::new(),
                    meta: None,
                });
                continue;
            }
            None => {
                u.err(format!(
                    "cannot access '{}': No such file or directory",
                    String::from_utf8_lossy(p)
                ));
                status = 2;
                continue;
            }
        };
        match std::fs::metadata(&host) {
            Ok(m) if m.is_dir() && !o.dirs_self => dirs.push((p.clone(), host)),
            Ok(m) => files.push(Item {
                name: p.clone(),
                host,
                meta: Some(m),
            }),
            Err(e) => {
                u.err(format!(
                    "cannot access '{}': {}",
                    String::from_utf8_lossy(p),
                    crate::fs::error_text(&e)
                ));
                status = 2;
            }
        }
    }
    let mut out = Vec::new();
    sort_items(&mut files, &o);
    render(&files, &o, false, &mut out);
    let headers = paths.len() > 1 || o.recursive;
    dirs.sort();
    if o.reverse {
        dirs.reverse();
    }
    let mut first = files.is_empty();
    // Recursive listing: a work list in pre-order.
    let mut todo: Vec<(Vec<u8>, PathBuf)> = dirs.into_iter().rev().collect();
    let mut count = 0usize;
    while let Some((shown, host)) = todo.pop() {
        count += 1;
        if count > crate::limits::MAX_WALK {
            u.err("too many directories");
            status = 2;
            break;
        }
        if !first {
            out.push(b'\n');
        }
        first = false;
        if headers {
            out.extend_from_slice(&shown);
            out.extend_from_slice(b":\n");
        }
        let mut items = match read_dir_items(&u, &host, &o, &shown) {
            Ok(i) => i,
            Err(e) => {
                u.err(e);
                status = 2;
                continue;
            }
        };
        sort_items(&mut items, &o);
        render(&items, &o, true, &mut out);
        if o.recursive {
            let subs: Vec<(Vec<u8>, PathBuf)> = items
                .iter()
                .filter(|it| it.is_dir() && it.name != b"." && it.name != b"..")
                .filter(|it| !it.meta.as_ref().is_some_and(|m| m.file_type().is_symlink()))
                .map(|it| (super::walk::join(&shown, &it.name), it.host.clone()))
                .collect();
            todo.extend(subs.into_iter().rev());
        }
        if out.len() > 1 << 16 {
            let _ = u.out(&out);
            out.clear();
        }
    }
    let _ = u.out(&out);
    status
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0");
        assert_eq!(human(1023), "1023");
        assert_eq!(human(1024), "1.0K");
        assert_eq!(human(1536), "1.5K");
        assert_eq!(human(4096), "4.0K");
        assert_eq!(human(10 * 1024), "10K");
        assert_eq!(human(10 * 1024 + 1), "11K");
        assert_eq!(human(3 * 1024 * 1024), "3.0M");
    }
}
