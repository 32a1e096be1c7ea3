//! The native functions under `console` and `plimsoll`.
//!
//! `prelude.js` validates and normalises every argument before it calls
//! these (strings are well-formed, headers are `[name, value]` pairs, bodies
//! are a string or a `Uint8Array`), so the conversions here fail only on
//! misuse by the prelude itself; when they do, they throw a JS `TypeError`
//! instead of trapping.

use std::io::Write as _;

use rquickjs::{Array, Ctx, Exception, Function, Object, Result, TypedArray, Value};

use crate::bindings::plimsoll::sandbox::broker;

/// The object handed to the prelude: `{ write, call, random }`.
pub fn object<'js>(ctx: &Ctx<'js>) -> Result<Object<'js>> {
    let natives = Object::new(ctx.clone())?;
    natives.set("write", Function::new(ctx.clone(), write)?)?;
    natives.set("call", Function::new(ctx.clone(), call)?)?;
    natives.set("random", Function::new(ctx.clone(), random)?)?;
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
fn write(stream: i32, text: String) {
    let mut line = text.into_bytes();
    line.push(b'\n');
    if stream == 2 {
        let _ = std::io::stderr().write_all(&line);
    } else {
        let _ = std::io::stdout().write_all(&line);
    }
}

/// `call(api, method, path, headers, body)`: one broker call.
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
    let request = broker::Request {
        method,
        path,
        headers: header_pairs(&ctx, &headers)?,
        body: body_bytes(&ctx, body)?,
    };
    let out = Object::new(ctx.clone())?;
    match broker::call(&api, &request) {
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
