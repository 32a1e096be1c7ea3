//! The native functions under `console`, `plimsoll`, `fetch` and `fs`.
//!
//! `prelude.js` validates and normalises every argument before it calls
//! these (strings are well-formed, headers are `[name, value]` pairs, bodies
//! are a string or a `Uint8Array`), so the conversions here fail only on
//! misuse by the prelude itself; when they do, they throw a JS `TypeError`
//! instead of trapping.

use std::io::Write as _;

use rquickjs::{Array, Ctx, Exception, Function, Object, Result, TypedArray, Value};

use crate::bindings::plimsoll::sandbox::broker;

/// The object handed to the prelude: `{ write, call, callOrigin, random }`
/// and the file functions behind `fs`.
pub fn object<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let natives = Object::new(ctx.clone())?;
    natives.set("write", Function::new(ctx.clone(), write)?)?;
    natives.set("call", Function::new(ctx.clone(), call)?)?;
    natives.set("callOrigin", Function::new(ctx.clone(), call_origin)?)?;
    natives.set("random", Function::new(ctx.clone(), random)?)?;
    natives.set("fsRead", Function::new(ctx.clone(), fs_read)?)?;
    natives.set("fsWrite", Function::new(ctx.clone(), fs_write)?)?;
    natives.set("fsList", Function::new(ctx.clone(), fs_list)?)?;
    natives.set("fsExists", Function::new(ctx.clone(), fs_exists)?)?;
    natives.set("fsMkdir", Function::new(ctx.clone(), fs_mkdir)?)?;
    natives.set("fsRemove", Function::new(ctx.clone(), fs_remove)?)?;
    Ok(natives)
}

/// The largest file `fs.readFileSync` reads, bytes: past it the call
/// throws instead of growing the heap until the instance's memory runs out.
const MAX_READ: u64 = 256 << 20;

/// A path as the guest means it: relative paths are in the workspace
/// (`/work`), the interpreter's working directory. What the path reaches is
/// only what the host preopened; nothing here widens it.
fn work_path(path: &str) -> std::path::PathBuf {
    if path.starts_with('/') {
        std::path::PathBuf::from(path)
    } else {
        std::path::Path::new("/work").join(path)
    }
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

/// `fsRead(path, text)`: the file's bytes, or its text when `text` (which
/// must then be UTF-8).
fn fs_read<'js>(ctx: Ctx<'js>, path: String, text: bool) -> Result<Object<'js>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let read = std::fs::File::open(work_path(&path)).and_then(|f| {
        f.take(MAX_READ + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_READ {
            return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
        }
        Ok(())
    });
    if let Err(e) = read {
        return outcome::<bool>(&ctx, Err(e));
    }
    if text {
        let s = String::from_utf8(bytes)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData));
        return outcome(&ctx, s);
    }
    let array = TypedArray::<u8>::new(ctx.clone(), bytes)?;
    outcome(&ctx, Ok(array))
}

/// `fsWrite(path, data, append)`: writes (or appends) a string or bytes.
fn fs_write<'js>(
    ctx: Ctx<'js>,
    path: String,
    data: Value<'js>,
    append: bool,
) -> Result<Object<'js>> {
    use std::io::Write as _;
    let bytes = body_bytes(&ctx, data)?;
    let r = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(work_path(&path))
        .and_then(|mut f| f.write_all(&bytes))
        .map(|()| true);
    outcome(&ctx, r)
}

/// `fsList(path)`: the names in a directory, sorted.
fn fs_list<'js>(ctx: Ctx<'js>, path: String) -> Result<Object<'js>> {
    let r = std::fs::read_dir(work_path(&path)).and_then(|entries| {
        let mut names = Vec::new();
        for entry in entries {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    });
    outcome(&ctx, r)
}

/// `fsExists(path)`.
fn fs_exists(path: String) -> bool {
    std::fs::metadata(work_path(&path)).is_ok()
}

/// `fsMkdir(path, recursive)`.
fn fs_mkdir<'js>(ctx: Ctx<'js>, path: String, recursive: bool) -> Result<Object<'js>> {
    let p = work_path(&path);
    let r = if recursive {
        std::fs::create_dir_all(p)
    } else {
        std::fs::create_dir(p)
    };
    outcome(&ctx, r.map(|()| true))
}

/// `fsRemove(path)`: a file, or an empty directory.
fn fs_remove<'js>(ctx: Ctx<'js>, path: String) -> Result<Object<'js>> {
    let p = work_path(&path);
    let r = match std::fs::symlink_metadata(&p) {
        Ok(md) if md.is_dir() => std::fs::remove_dir(p),
        Ok(_) => std::fs::remove_file(p),
        Err(e) => Err(e),
    };
    outcome(&ctx, r.map(|()| true))
}

thread_local! {
    /// `Math.random`'s xorshift64* state; 0 until the first call seeds it.
    ///
    /// It must stay 0 through pre-initialization (nothing calls
    /// `Math.random` while the build snapshots the engine), so that every
    /// instance of the snapshot seeds its own from `wasi:random` instead
    /// of sharing one sequence.
    static RANDOM_STATE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// `random()`: a double in [0, 1), as `Math.random` gives. Not for secrets
/// (neither is `Math.random`); `crypto` is not offered.
fn random() -> f64 {
    RANDOM_STATE.with(|state| {
        let mut x = state.get();
        while x == 0 {
            x = crate::bindings::wasi::random::random::get_random_u64();
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        // The top 53 bits of xorshift64*'s output, scaled to [0, 1).
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    })
}

/// `write(stream, text)`: one line to stdout (1) or stderr (2).
///
/// The line goes out in one `write_all` so that lines from stdout and stderr
/// interleave whole. Write errors are ignored: the host caps output and a
/// capped stream must not turn `console.log` into an exception.
fn write(stream: i32, text: String) {
    let mut line = text.into_bytes();
    line.push(b'\n');
    if stream == 2 {
        let _ = std::io::stderr().write_all(&line);
    } else {
        let _ = std::io::stdout().write_all(&line);
    }
}

/// `call(api, method, path, headers, body)`: one broker call under the
/// grant named `api`.
///
/// Returns `{status, headers, text, bytes}` for a response or
/// `{error, reason}` for a refusal; the prelude turns these into a
/// `Response` or a typed error.
fn call<'js>(
    ctx: Ctx<'js>,
    api: String,
    method: String,
    path: String,
    headers: Array<'js>,
    body: Value<'js>,
) -> Result<Object<'js>> {
    let request = broker_request(&ctx, method, path, &headers, body)?;
    call_result(&ctx, broker::call(&api, &request))
}

/// `callOrigin(origin, method, path, headers, body, timeoutMs)`: one broker
/// call by URL, for `fetch`: under the run's grant whose origin is `origin`
/// (`scheme://host[:port]`), with `path` the URL's path and query.
/// `timeoutMs` (`undefined` for none) can only shorten the host's per-call
/// timeout.
///
/// Returns what `call` returns.
fn call_origin<'js>(
    ctx: Ctx<'js>,
    origin: String,
    method: String,
    path: String,
    headers: Array<'js>,
    body: Value<'js>,
    timeout_ms: Option<u32>,
) -> Result<Object<'js>> {
    let request = broker_request(&ctx, method, path, &headers, body)?;
    call_result(&ctx, broker::call_origin(&origin, &request, timeout_ms))
}

fn broker_request<'js>(
    ctx: &Ctx<'js>,
    method: String,
    path: String,
    headers: &Array<'js>,
    body: Value<'js>,
) -> Result<broker::Request> {
    Ok(broker::Request {
        method,
        path,
        headers: header_pairs(ctx, headers)?,
        body: body_bytes(ctx, body)?,
    })
}

/// A broker call's outcome as the prelude reads it: `{status, headers,
/// text, bytes}` (headers as `[name, value]` pairs in the order received,
/// `text` the body decoded as UTF-8 with invalid sequences replaced) or
/// `{error, reason}` (`error` names the `plimsoll` error class; `reason` is
/// the host's explanation, or `undefined`).
fn call_result<'js>(
    ctx: &Ctx<'js>,
    answer: std::result::Result<broker::Response, broker::CallError>,
) -> Result<Object<'js>> {
    let out = Object::new(ctx.clone())?;
    match answer {
        Ok(response) => {
            out.set("status", response.status)?;
            let list = Array::new(ctx.clone())?;
            for (i, (name, value)) in response.headers.into_iter().enumerate() {
                let pair = Array::new(ctx.clone())?;
                pair.set(0, name)?;
                pair.set(1, value)?;
                list.set(i, pair)?;
            }
            out.set("headers", list)?;
            out.set("text", String::from_utf8_lossy(&response.body).into_owned())?;
            out.set("bytes", TypedArray::<u8>::new(ctx.clone(), response.body)?)?;
        }
        Err(refusal) => {
            let (kind, reason) = match refusal {
                broker::CallError::Denied(why) => ("Denied", Some(why)),
                broker::CallError::BudgetExhausted => ("BudgetExhausted", None),
                broker::CallError::RequestTooLarge => ("RequestTooLarge", None),
                broker::CallError::ResponseTooLarge => ("ResponseTooLarge", None),
                broker::CallError::Timeout => ("Timeout", None),
                broker::CallError::Upstream(why) => ("UpstreamError", Some(why)),
            };
            out.set("error", kind)?;
            out.set("reason", reason)?;
        }
    }
    Ok(out)
}

fn header_pairs<'js>(ctx: &Ctx<'js>, headers: &Array<'js>) -> Result<Vec<(String, String)>> {
    let mut pairs = Vec::with_capacity(headers.len());
    for entry in headers.iter::<Array<'js>>() {
        let entry = entry?;
        if entry.len() != 2 {
            return Err(Exception::throw_type(
                ctx,
                "a header must be a [name, value] pair",
            ));
        }
        pairs.push((entry.get::<String>(0)?, entry.get::<String>(1)?));
    }
    Ok(pairs)
}

fn body_bytes<'js>(ctx: &Ctx<'js>, body: Value<'js>) -> Result<Vec<u8>> {
    if let Some(text) = body.as_string() {
        return Ok(text.to_string()?.into_bytes());
    }
    if let Some(object) = body.as_object()
        && let Some(bytes) = object.as_typed_array::<u8>()
    {
        // SAFETY: the slice is copied at once; no JS runs while it is
        // borrowed, so the buffer cannot be detached or resized under it.
        if let Some(slice) = unsafe { bytes.as_bytes() } {
            return Ok(slice.to_vec());
        }
        return Err(Exception::throw_type(
            ctx,
            "the body's ArrayBuffer is detached",
        ));
    }
    Err(Exception::throw_type(
        ctx,
        "the body must be a string or a Uint8Array",
    ))
}
