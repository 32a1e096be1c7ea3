//! Evaluating the prelude without keeping its source text.
//!
//! QuickJS keeps the source of every function it compiles (for
//! `Function.prototype.toString`), and a nested function's text again
//! inside its parent's: for the prelude and `node/*.js` (about 230 KB of
//! JavaScript) that is over half a megabyte of heap in every instance. So
//! each is compiled, written out as bytecode without its source
//! (`JS_WRITE_OBJ_STRIP_SOURCE`; line numbers stay, for stack traces) and
//! read back before it runs; the copy with the source is freed at once.
//! This happens while the engine is created, i.e. at build time for a
//! pre-initialized component. A prelude function's `toString()` then shows
//! `[native code]`, as a built-in's does.

use std::ffi::CString;

use rquickjs::{Ctx, Error, Result, Value, qjs};

/// Evaluates `source`, a strict global script named `name`, as the prelude
/// parts are, and returns its completion value.
pub fn eval_stripped<'js>(ctx: &Ctx<'js>, source: &str, name: &str) -> Result<Value<'js>> {
    let source = CString::new(source)?;
    let name = CString::new(name)?;
    let raw = ctx.as_raw().as_ptr();
    let flags =
        qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_STRICT | qjs::JS_EVAL_FLAG_COMPILE_ONLY;
    let write_flags = qjs::JS_WRITE_OBJ_BYTECODE | qjs::JS_WRITE_OBJ_STRIP_SOURCE;
    // SAFETY: `raw` is the live context of `ctx`; every value made here is
    // freed exactly once (JS_EvalFunction takes `read`), the buffer from
    // JS_WriteObject is freed with js_free, and a failure leaves its
    // exception pending for the caller to catch.
    unsafe {
        let compiled = qjs::JS_Eval(
            raw,
            source.as_ptr(),
            source.as_bytes().len() as _,
            name.as_ptr(),
            flags as i32,
        );
        if qjs::JS_IsException(compiled) {
            return Err(Error::Exception);
        }
        let mut len = 0;
        let bytes = qjs::JS_WriteObject(raw, &mut len, compiled, write_flags as i32);
        qjs::JS_FreeValue(raw, compiled);
        if bytes.is_null() {
            return Err(Error::Exception);
        }
        let read = qjs::JS_ReadObject(raw, bytes, len, qjs::JS_READ_OBJ_BYTECODE as i32);
        qjs::js_free(raw, bytes.cast());
        if qjs::JS_IsException(read) {
            return Err(Error::Exception);
        }
        let value = qjs::JS_EvalFunction(raw, read);
        if qjs::JS_IsException(value) {
            return Err(Error::Exception);
        }
        Ok(Value::from_raw(ctx.clone(), value))
    }
}
