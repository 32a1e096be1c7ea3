//! Running a program to its end, as `node` would: the Rust half of
//! `__plimsoll_main` (`node/main.js`).
//!
//! `node/main.js` sets up `process` from the host's spec and hands
//! [`run_program`] a function that starts the program (evaluates the main
//! module, requires the main CommonJS file, or runs `-e`/`-p`/stdin code)
//! and returns the promise of its evaluation, if there is one. This file
//! runs the event loop until nothing is left and turns the way the program
//! ended into an exit code:
//!
//! | how it ended | code |
//! | --- | --- |
//! | ran out of work | `process.exitCode`, else 0 |
//! | `process.exit(n)` (from anywhere, at once) | `n` |
//! | an uncaught exception or an unhandled rejection (stack on stderr) | 1 |
//! | top-level `await` on a promise that can never settle | 13 |
//!
//! As in Node, `process.on('uncaughtException' | 'unhandledRejection')`
//! listeners take the error instead, and `'exit'` listeners run at the end.

use rquickjs::promise::PromiseState;
use std::cell::Cell;

use rquickjs::{Ctx, Error, Exception, Function, Object, Promise, Result, Value};

use crate::engine::{fallback_description, take_unhandled};
use crate::event_loop::{self, Fired, drain_jobs, exit_code};
use crate::modules::call_hook;

/// Node's exit code for a top-level `await` that never settles.
const UNSETTLED_AWAIT: i32 = 13;

/// What the program's listeners made of an uncaught error.
enum Verdict {
    /// A listener took it; the program goes on.
    Handled,
    /// The program ends with this code.
    Fatal(i32),
}

thread_local! {
    /// Whether a program is running (its code could call
    /// `__plimsoll_main` again).
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// `runProgram(start)`: runs the program `start` begins to its end and
/// returns its exit code (0–255).
fn run_program<'js>(ctx: Ctx<'js>, start: Function<'js>) -> Result<i32> {
    if RUNNING.with(|r| r.replace(true)) {
        return Err(Exception::throw_internal(
            &ctx,
            "a program is already running in this instance",
        ));
    }
    let code = drive(&ctx, &start);
    RUNNING.with(|r| r.set(false));
    // However it ended, nothing of it may run later: the timers go, and the
    // jobs left run with every effect refused.
    event_loop::end_program(&ctx, code);
    // Rejections left by that are not the program's to report.
    drop(take_unhandled(&ctx));
    Ok(code & 0xff)
}

fn drive<'js>(ctx: &Ctx<'js>, start: &Function<'js>) -> i32 {
    let main = match start.call::<_, Value>(()) {
        Ok(value) => value.into_promise(),
        Err(e) => {
            if let Some(code) = exit_code() {
                return code;
            }
            match uncaught(ctx, thrown(ctx, e), "uncaughtException") {
                Verdict::Handled => None,
                Verdict::Fatal(code) => return finish(ctx, Some(code)),
            }
        }
    };
    let mut main_reported = false;
    loop {
        drain_jobs(ctx);
        if let Some(code) = exit_code() {
            return code;
        }
        if let Some(promise) = &main
            && !main_reported
            && promise.state() == PromiseState::Rejected
        {
            main_reported = true;
            if let Verdict::Fatal(code) =
                uncaught(ctx, rejection(ctx, promise), "uncaughtException")
            {
                return finish(ctx, Some(code));
            }
        }
        for (promise, reason) in take_unhandled(ctx) {
            if main.as_ref().is_some_and(|m| *m.as_value() == promise) {
                continue;
            }
            if let Verdict::Fatal(code) = uncaught(ctx, reason, "unhandledRejection") {
                return finish(ctx, Some(code));
            }
        }
        if let Some(code) = exit_code() {
            return code;
        }
        match event_loop::fire_next(ctx) {
            Fired::Idle => break,
            Fired::Ran => {}
            Fired::Threw(value) => {
                if let Some(code) = exit_code() {
                    return code;
                }
                if let Verdict::Fatal(code) = uncaught(ctx, value, "uncaughtException") {
                    return finish(ctx, Some(code));
                }
            }
        }
    }
    if let Some(promise) = &main
        && promise.state() == PromiseState::Pending
    {
        let note = call_hook::<_, String>(ctx, "unsettled", ()).unwrap_or_else(|_| {
            "Warning: Detected unsettled top-level await: the program awaited a promise that can never settle".to_owned()
        });
        eprint(&note);
        return finish(ctx, Some(UNSETTLED_AWAIT));
    }
    finish(ctx, None)
}

/// The end of the program: `'exit'` listeners run (with `code`, or
/// `process.exitCode`) and may still change the code.
fn finish(ctx: &Ctx<'_>, code: Option<i32>) -> i32 {
    if let Some(code) = exit_code() {
        return code;
    }
    match call_hook::<_, i32>(ctx, "finish", (code,)) {
        Ok(code) => code,
        Err(e) => {
            if let Some(code) = exit_code() {
                return code;
            }
            let value = thrown(ctx, e);
            eprint(&fallback_description(&value));
            1
        }
    }
}

/// Offers an uncaught error to the program's listeners
/// (`hooks.uncaught(value, kind)`); if none takes it, prints it.
fn uncaught<'js>(ctx: &Ctx<'js>, value: Value<'js>, kind: &str) -> Verdict {
    match call_hook::<_, Value>(ctx, "uncaught", (value.clone(), kind)) {
        Ok(answer) if answer.as_bool() == Some(true) => Verdict::Handled,
        Ok(answer) => {
            let text = answer
                .as_string()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| fallback_description(&value));
            eprint(&text);
            Verdict::Fatal(1)
        }
        Err(e) => {
            if let Some(code) = exit_code() {
                return Verdict::Fatal(code);
            }
            // A listener threw: that error is the uncaught one now.
            eprint(&fallback_description(&thrown(ctx, e)));
            Verdict::Fatal(1)
        }
    }
}

/// The value a failed call threw.
fn thrown<'js>(ctx: &Ctx<'js>, error: Error) -> Value<'js> {
    match error {
        Error::Exception => ctx.catch(),
        other => rquickjs::String::from_str(ctx.clone(), &other.to_string())
            .map(|s| s.into_value())
            .unwrap_or_else(|_| Value::new_undefined(ctx.clone())),
    }
}

/// The reason a settled, rejected promise holds.
fn rejection<'js>(ctx: &Ctx<'js>, promise: &Promise<'js>) -> Value<'js> {
    match promise.result::<Value>() {
        Some(Err(e)) => thrown(ctx, e),
        Some(Ok(value)) => value,
        None => Value::new_undefined(ctx.clone()),
    }
}

/// One line to stderr (the program's own output goes through `console`).
fn eprint(text: &str) {
    let mut line = Vec::with_capacity(text.len() + 1);
    line.extend_from_slice(text.as_bytes());
    line.push(b'\n');
    crate::natives::emit(2, &line);
}

/// `environ()`: the instance's environment variables as `[name, value]`
/// pairs (read when `process.env` is first used, never during
/// pre-initialization).
fn environ() -> Vec<Vec<String>> {
    std::env::vars_os()
        .map(|(k, v)| {
            vec![
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            ]
        })
        .collect()
}

/// `quickjsVersion()`: QuickJS-ng's version, for `process.versions`.
fn quickjs_version() -> String {
    // SAFETY: JS_GetVersion returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(rquickjs::qjs::JS_GetVersion()) };
    version.to_string_lossy().into_owned()
}

/// Adds the program's natives to the prelude's `native` object.
pub fn register<'js>(ctx: &Ctx<'js>, natives: &Object<'js>) -> Result<()> {
    natives.set("runProgram", Function::new(ctx.clone(), run_program)?)?;
    natives.set(
        "programRunning",
        Function::new(ctx.clone(), || RUNNING.with(Cell::get))?,
    )?;
    natives.set("environ", Function::new(ctx.clone(), environ)?)?;
    natives.set(
        "quickjsVersion",
        Function::new(ctx.clone(), quickjs_version)?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests;
