//! The native functions under `console`, `plimsoll` and `fetch`, and the
//! object that hands every native to the prelude.
//!
//! `prelude.js` validates and normalises every argument before it calls
//! these (strings are well-formed, headers are `[name, value]` pairs, bodies
//! are a string or a `Uint8Array`), so the conversions here fail only on
//! misuse by the prelude itself; when they do, they throw a JS `TypeError`
//! instead of trapping.

#[cfg(not(test))]
use std::io::Write as _;

use rquickjs::{Array, Ctx, Exception, Function, Object, Result, TypedArray, Value};

use crate::bindings::plimsoll::sandbox::broker;
use crate::event_loop::refuse_if_exiting;

/// The object handed to the prelude and to `node/*.js`: `{ write,
/// writeRaw, call, callOrigin, random, encodeUtf8, decodeUtf8 }`, the file
/// natives ([`crate::fs`]), the event loop's ([`crate::event_loop`]), the
/// module loader's ([`crate::modules`]) and the program's
/// ([`crate::program`]).
pub fn object<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let natives = Object::new(ctx.clone())?;
    natives.set("write", Function::new(ctx.clone(), write)?)?;
    natives.set("writeRaw", Function::new(ctx.clone(), write_raw)?)?;
    natives.set("call", Function::new(ctx.clone(), call)?)?;
    natives.set("callOrigin", Function::new(ctx.clone(), call_origin)?)?;
    natives.set("random", Function::new(ctx.clone(), random)?)?;
    natives.set("encodeUtf8", Function::new(ctx.clone(), encode_utf8)?)?;
    natives.set("decodeUtf8", Function::new(ctx.clone(), decode_utf8)?)?;
    crate::fs::register(ctx, &natives)?;
    crate::event_loop::register(ctx, &natives)?;
    crate::modules::register(ctx, &natives)?;
    crate::program::register(ctx, &natives)?;
    Ok(natives)
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
fn write(ctx: Ctx<'_>, stream: i32, text: String) -> Result<()> {
    refuse_if_exiting(&ctx)?;
    let mut line = text.into_bytes();
    line.push(b'\n');
    emit(stream, &line);
    Ok(())
}

/// `writeRaw(stream, data)`: a string or bytes as they are, no newline
/// added (`process.stdout.write`).
fn write_raw<'js>(ctx: Ctx<'js>, stream: i32, data: Value<'js>) -> Result<()> {
    refuse_if_exiting(&ctx)?;
    let bytes = body_bytes(&ctx, data)?;
    emit(stream, &bytes);
    Ok(())
}

/// Writes to stdout (1) or stderr (2). Native tests read it back with
/// [`take_output`] instead.
pub fn emit(stream: i32, bytes: &[u8]) {
    #[cfg(test)]
    OUTPUT.with(|o| {
        let mut o = o.borrow_mut();
        if stream == 2 { &mut o.1 } else { &mut o.0 }.extend_from_slice(bytes)
    });
    #[cfg(not(test))]
    if stream == 2 {
        let _ = std::io::stderr().write_all(bytes);
    } else {
        let _ = std::io::stdout().write_all(bytes);
    }
}

#[cfg(test)]
thread_local! {
    static OUTPUT: std::cell::RefCell<(Vec<u8>, Vec<u8>)> = const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Native tests only: what this thread wrote to (stdout, stderr) since the
/// last call.
#[cfg(test)]
pub fn take_output() -> (String, String) {
    OUTPUT.with(|o| {
        let (out, err) = std::mem::take(&mut *o.borrow_mut());
        (
            String::from_utf8_lossy(&out).into_owned(),
            String::from_utf8_lossy(&err).into_owned(),
        )
    })
}

/// `encodeUtf8(text)`: the text's UTF-8 bytes (the caller makes it
/// well-formed first).
fn encode_utf8(ctx: Ctx<'_>, text: String) -> Result<TypedArray<'_, u8>> {
    TypedArray::<u8>::new(ctx, text.into_bytes())
}

/// `decodeUtf8(bytes)`: the bytes as text, each invalid sequence replaced
/// by U+FFFD.
fn decode_utf8<'js>(ctx: Ctx<'js>, bytes: Value<'js>) -> Result<String> {
    let bytes = body_bytes(&ctx, bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
    refuse_if_exiting(&ctx)?;
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
    refuse_if_exiting(&ctx)?;
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

/// The bytes of a string (UTF-8) or a `Uint8Array`.
pub fn body_bytes<'js>(ctx: &Ctx<'js>, body: Value<'js>) -> Result<Vec<u8>> {
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
