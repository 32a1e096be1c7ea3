//! A bounded, iterative, pre-order directory walk (entries sorted by name)
//! for find, grep -r, rg, ls -R, du, tree, tar and cp -r.

use crate::fs::name_bytes;
use crate::limits::MAX_WALK;
use std::fs::Metadata;
use std::path::PathBuf;

/// One visited entry.
pub struct Entry {
    /// The path as the utility prints it (the operand joined with names).
    pub path: Vec<u8>,
    /// The host path.
    pub host: PathBuf,
    /// Its metadata (not following links).
    pub meta: Metadata,
    /// 0 for the starting point.
    pub depth: usize,
}

impl Entry {
    /// Whether it is a directory.
    pub fn is_dir(&self) -> bool {
        self.meta.is_dir()
    }
}

/// What to do after visiting an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// Go on (into it, if a directory).
    Continue,
    /// Do not descend into it.
    Skip,
    /// End the walk.
    Stop,
}

/// Joins a display path and a name.
pub fn join(base: &[u8], name: &[u8]) -> Vec<u8> {
    if base.ends_with(b"/") {
        [base, name].concat()
    } else {
        [base, b"/", name].concat()
    }
}

/// Walks from `path` (shown as `display`) down to `max_depth` levels
/// below it. `Err` when the starting point is missing, or when the walk
/// passes [`MAX_WALK`] entries (then the message says so). Errors reading
/// a directory go to `on_error` and the walk goes on.
pub fn walk(
    display: &[u8],
    host: PathBuf,
    max_depth: Option<usize>,
    mut visit: impl FnMut(&Entry) -> Visit,
    mut on_error: impl FnMut(&[u8], &std::io::Error),
) -> Result<(), std::io::Error> {
    let meta = std::fs::symlink_metadata(&host)?;
    let mut stack = vec![Entry {
        path: display.to_vec(),
        host,
        meta,
        depth: 0,
    }];
    let mut count = 0usize;
    while let Some(e) = stack.pop() {
        count += 1;
        if count > MAX_WALK {
            return Err(std::io::Error::other(format!(
                "too many files: the walk stops after {MAX_WALK} entries"
            )));
        }
        let v = visit(&e);
        if v == Visit::Stop {
            return Ok(());
        }
        if v == Visit::Skip || !e.is_dir() || max_depth.is_some_and(|m| e.depth >= m) {
            continue;
        }
        let rd = match std::fs::read_dir(&e.host) {
            Ok(rd) => rd,
            Err(err) => {
                on_error(&e.path, &err);
                continue;
            }
        };
        let mut kids: Vec<(Vec<u8>, PathBuf)> = rd
            .flatten()
            .map(|d| (name_bytes(&d.file_name()), d.path()))
            .collect();
        kids.sort();
        for (name, h) in kids.into_iter().rev() {
            let Ok(meta) = std::fs::symlink_metadata(&h) else {
                continue;
            };
            stack.push(Entry {
                path: join(&e.path, &name),
                host: h,
                meta,
                depth: e.depth + 1,
            });
        }
    }
    Ok(())
}
