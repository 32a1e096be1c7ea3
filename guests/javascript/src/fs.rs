//! The file natives behind `fs` (`node/fs.js`), the module loader's reads,
//! and standard input.
//!
//! Paths arrive absolute (`node/fs.js` resolves them against
//! `process.cwd()`); a relative one is taken as relative to `/work`. What a
//! path reaches is only what the host preopened (the workspace at `/work`):
//! nothing here widens it. Errors come back as Node's error codes
//! (`{error: "ENOENT"}`) for the JavaScript side to throw.
//!
//! Native tests have no `/work`: [`set_test_root`] maps it to a temporary
//! directory for the calling thread. A component always uses `/work`
//! itself.

use std::io::Read as _;
use std::path::PathBuf;

use rquickjs::{Array, Ctx, Function, Object, Result, TypedArray, Value};

use crate::event_loop::refuse_if_exiting;
use crate::natives::body_bytes;

/// The workspace, as guest code names it.
pub const WORK: &str = "/work";

/// The largest file `fs.readFileSync` reads, bytes: past it the call
/// throws instead of growing the heap until the instance's memory runs out.
const MAX_READ: u64 = 256 << 20;

#[cfg(test)]
thread_local! {
    static TEST_ROOT: std::cell::RefCell<Option<PathBuf>> = const { std::cell::RefCell::new(None) };
    static TEST_STDIN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Native tests only: `/work` is `root` for this thread, and standard input
/// holds `stdin`.
#[cfg(test)]
pub fn set_test_root(root: PathBuf, stdin: &[u8]) {
    TEST_ROOT.with(|r| *r.borrow_mut() = Some(root));
    TEST_STDIN.with(|s| *s.borrow_mut() = stdin.to_vec());
}

/// The path the guest means, as this process opens it.
fn host_path(path: &str) -> PathBuf {
    let absolute = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{WORK}/{path}")
    };
    #[cfg(test)]
    if let Some(root) = TEST_ROOT.with(|r| r.borrow().clone())
        && let Some(rest) = absolute.strip_prefix(WORK)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return root.join(rest.trim_start_matches('/'));
    }
    PathBuf::from(absolute)
}

/// Node's error code for an I/O error.
fn io_code(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => "ENOENT",
        K::PermissionDenied => "EACCES",
        K::AlreadyExists => "EEXIST",
        K::IsADirectory => "EISDIR",
        K::NotADirectory => "ENOTDIR",
        K::DirectoryNotEmpty => "ENOTEMPTY",
        K::InvalidInput | K::InvalidData => "EINVAL",
        K::StorageFull | K::QuotaExceeded => "ENOSPC",
        K::FileTooLarge => "EFBIG",
        K::CrossesDevices => "EXDEV",
        K::Unsupported => "ENOSYS",
        _ => "EIO",
    }
}

/// `{ value }` or `{ error: code }`, for the prelude to return or throw.
fn outcome<'js, T: rquickjs::IntoJs<'js>>(
    ctx: &Ctx<'js>,
    r: std::io::Result<T>,
) -> Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    match r {
        Ok(v) => out.set("value", v)?,
        Err(e) => out.set("error", io_code(&e))?,
    }
    Ok(out)
}

/// Reads at most [`MAX_READ`] bytes; more is `EFBIG`.
fn read_capped(reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(MAX_READ + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_READ {
        return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
    }
    Ok(bytes)
}

/// The bytes as the caller asked: a `Uint8Array`, or text (which must then
/// be UTF-8).
fn bytes_or_text<'js>(ctx: &Ctx<'js>, bytes: Vec<u8>, text: bool) -> Result<Object<'js>> {
    if text {
        let s = String::from_utf8(bytes)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData));
        return outcome(ctx, s);
    }
    let array = TypedArray::<u8>::new(ctx.clone(), bytes)?;
    outcome(ctx, Ok(array))
}

/// `fsRead(path, text)`: the file's bytes, or its text when `text`.
fn fs_read<'js>(ctx: Ctx<'js>, path: String, text: bool) -> Result<Object<'js>> {
    match std::fs::File::open(host_path(&path)).and_then(read_capped) {
        Ok(bytes) => bytes_or_text(&ctx, bytes, text),
        Err(e) => outcome::<bool>(&ctx, Err(e)),
    }
}

/// `readStdin(text)`: everything left on standard input (the first call
/// takes it all; later ones get nothing, as reading a pipe again would).
fn read_stdin<'js>(ctx: Ctx<'js>, text: bool) -> Result<Object<'js>> {
    #[cfg(test)]
    let read: std::io::Result<Vec<u8>> =
        Ok(TEST_STDIN.with(|s| std::mem::take(&mut *s.borrow_mut())));
    #[cfg(not(test))]
    let read = read_capped(std::io::stdin().lock());
    match read {
        Ok(bytes) => bytes_or_text(&ctx, bytes, text),
        Err(e) => outcome::<bool>(&ctx, Err(e)),
    }
}

/// `fsWrite(path, data, append)`: writes (or appends) a string or bytes.
fn fs_write<'js>(
    ctx: Ctx<'js>,
    path: String,
    data: Value<'js>,
    append: bool,
) -> Result<Object<'js>> {
    use std::io::Write as _;
    refuse_if_exiting(&ctx)?;
    let bytes = body_bytes(&ctx, data)?;
    let r = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(host_path(&path))
        .and_then(|mut f| f.write_all(&bytes))
        .map(|()| true);
    outcome(&ctx, r)
}

/// What a directory entry or a path is, as `stat` names it.
fn kind_of(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

/// `fsList(path, withTypes)`: the names in a directory, sorted; with
/// `withTypes`, `[name, kind]` pairs.
fn fs_list<'js>(ctx: Ctx<'js>, path: String, with_types: bool) -> Result<Object<'js>> {
    let listed = std::fs::read_dir(host_path(&path)).and_then(|entries| {
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type().map(kind_of).unwrap_or("other");
            found.push((entry.file_name().to_string_lossy().into_owned(), kind));
        }
        found.sort();
        Ok(found)
    });
    let found = match listed {
        Ok(found) => found,
        Err(e) => return outcome::<bool>(&ctx, Err(e)),
    };
    let list = Array::new(ctx.clone())?;
    for (i, (name, kind)) in found.into_iter().enumerate() {
        if with_types {
            let pair = Array::new(ctx.clone())?;
            pair.set(0, name)?;
            pair.set(1, kind)?;
            list.set(i, pair)?;
        } else {
            list.set(i, name)?;
        }
    }
    outcome(&ctx, Ok(list))
}

/// `fsExists(path)`.
fn fs_exists(path: String) -> bool {
    std::fs::metadata(host_path(&path)).is_ok()
}

/// Milliseconds since the epoch, for `Stats`.
fn millis(t: std::io::Result<std::time::SystemTime>) -> f64 {
    t.ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// `fsStat(path, follow)`: `{kind, size, mtimeMs, atimeMs, birthtimeMs}`
/// (of the link itself unless `follow`).
fn fs_stat<'js>(ctx: Ctx<'js>, path: String, follow: bool) -> Result<Object<'js>> {
    let p = host_path(&path);
    let md = if follow {
        std::fs::metadata(p)
    } else {
        std::fs::symlink_metadata(p)
    };
    let md = match md {
        Ok(md) => md,
        Err(e) => return outcome::<bool>(&ctx, Err(e)),
    };
    let stat = Object::new(ctx.clone())?;
    stat.set("kind", kind_of(md.file_type()))?;
    stat.set("size", md.len() as f64)?;
    stat.set("mtimeMs", millis(md.modified()))?;
    stat.set("atimeMs", millis(md.accessed()))?;
    stat.set("birthtimeMs", millis(md.created()))?;
    outcome(&ctx, Ok(stat))
}

/// `fsMkdir(path, recursive)`.
fn fs_mkdir<'js>(ctx: Ctx<'js>, path: String, recursive: bool) -> Result<Object<'js>> {
    refuse_if_exiting(&ctx)?;
    let p = host_path(&path);
    let r = if recursive {
        std::fs::create_dir_all(p)
    } else {
        std::fs::create_dir(p)
    };
    outcome(&ctx, r.map(|()| true))
}

/// `fsRemove(path, recursive)`: a file, or a directory (empty unless
/// `recursive`).
fn fs_remove<'js>(ctx: Ctx<'js>, path: String, recursive: bool) -> Result<Object<'js>> {
    refuse_if_exiting(&ctx)?;
    let p = host_path(&path);
    let r = match std::fs::symlink_metadata(&p) {
        Ok(md) if md.is_dir() && recursive => std::fs::remove_dir_all(p),
        Ok(md) if md.is_dir() => std::fs::remove_dir(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) => Err(e),
    };
    outcome(&ctx, r.map(|()| true))
}

/// `fsRename(from, to)`.
fn fs_rename<'js>(ctx: Ctx<'js>, from: String, to: String) -> Result<Object<'js>> {
    refuse_if_exiting(&ctx)?;
    let r = std::fs::rename(host_path(&from), host_path(&to));
    outcome(&ctx, r.map(|()| true))
}

/// `fsCopy(from, to)`: copies a file's bytes.
fn fs_copy<'js>(ctx: Ctx<'js>, from: String, to: String) -> Result<Object<'js>> {
    refuse_if_exiting(&ctx)?;
    let r = std::fs::copy(host_path(&from), host_path(&to));
    outcome(&ctx, r.map(|_| true))
}

/// Adds the file natives to the prelude's `native` object.
pub fn register<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> Result<()> {
    natives.set("fsRead", Function::new(ctx.clone(), fs_read)?)?;
    natives.set("fsWrite", Function::new(ctx.clone(), fs_write)?)?;
    natives.set("fsList", Function::new(ctx.clone(), fs_list)?)?;
    natives.set("fsExists", Function::new(ctx.clone(), fs_exists)?)?;
    natives.set("fsStat", Function::new(ctx.clone(), fs_stat)?)?;
    natives.set("fsMkdir", Function::new(ctx.clone(), fs_mkdir)?)?;
    natives.set("fsRemove", Function::new(ctx.clone(), fs_remove)?)?;
    natives.set("fsRename", Function::new(ctx.clone(), fs_rename)?)?;
    natives.set("fsCopy", Function::new(ctx.clone(), fs_copy)?)?;
    natives.set("readStdin", Function::new(ctx.clone(), read_stdin)?)?;
    Ok(())
}
