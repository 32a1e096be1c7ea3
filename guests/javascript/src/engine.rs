//! The QuickJS runtime behind `eval`: its limits, how a cell is evaluated
//! and how its outcome is rendered.
//!
//! A cell is a global script. A program (`node FILE`, `node -e`, ...) is
//! started by a cell that calls `__plimsoll_main` (`node/main.js`,
//! `program.rs`); both share the engine created here, with its module
//! loader (`modules.rs`) and event loop (`event_loop.rs`).

use std::cell::RefCell;
use std::io::Write as _;

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Error, Function, Object, Persistent, Promise, Runtime, Value, qjs};

use crate::compile::eval_stripped;
use crate::event_loop::{self, Fired};
use crate::{modules, natives};

/// QuickJS's heap limit. Below the host's default 256 MiB linear-memory
/// envelope, so that a runaway allocation normally ends in a catchable
/// "out of memory" `InternalError` while the instance still has room to
/// report it. A smaller host limit is met first: then `malloc` fails at
/// `memory.grow` and QuickJS throws the same error.
const MEMORY_LIMIT: usize = 192 << 20;

/// QuickJS's limit on the stack it measures, in bytes: deeper recursion
/// throws a catchable `RangeError` ("Maximum call stack size exceeded").
///
/// QuickJS measures the wasm *shadow* stack (linear memory, `build.rs`), but
/// what actually runs out first is the host's *native* wasm stack (wasmtime's
/// `max_wasm_stack`, 4 MiB in plimsoll), which traps the instance. A JS call
/// costs roughly 15 to 25 times more native stack than shadow stack: with
/// 4 MiB of native stack the most native-hungry recursion measured (a getter
/// calling itself) overflows at about 179 KiB of shadow stack, plain
/// function recursion at about 250 KiB. 128 KiB keeps a margin below all of
/// them (about 470 plain JS frames). Scale it with the host's stack.
const MAX_STACK_SIZE: usize = 128 << 10;

/// A JavaScript file of `src/`, as `build.rs` squeezed it.
macro_rules! embedded {
    ($name:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/", $name))
    };
}

/// The prelude: builds `console`, `plimsoll` and `fetch` and returns the
/// helpers `render` and `describe` (and `lib`, its internals for
/// `node/*.js`).
const PRELUDE: &str = embedded!("prelude.js");

/// The Node.js layer, evaluated after the prelude in this order: each file
/// is a function of `(native, lib)` that adds what it defines to `lib`
/// (and to the globals); `node/main.js` returns the hooks the loader and
/// the program runner call.
const NODE_PARTS: [(&str, &str); 9] = [
    ("<prelude/events>", embedded!("node/events.js")),
    ("<prelude/path>", embedded!("node/path.js")),
    ("<prelude/url>", embedded!("node/url.js")),
    ("<prelude/buffer>", embedded!("node/buffer.js")),
    ("<prelude/timers>", embedded!("node/timers.js")),
    ("<prelude/process>", embedded!("node/process.js")),
    ("<prelude/fs>", embedded!("node/fs.js")),
    ("<prelude/modules>", embedded!("node/modules.js")),
    ("<prelude/main>", embedded!("node/main.js")),
];

/// Parts of the Node.js layer evaluated only when first needed, through
/// the native `part(name)`: the smaller built-in modules (`util`,
/// `assert`, `os`, `readline`, ...).
const LAZY_PARTS: [(&str, &str); 1] = [("<prelude/extras>", embedded!("node/extras.js"))];

/// How the host's call to run a program starts (`node/main.js`).
const PROGRAM_CALL: &str = "globalThis.__plimsoll_main(";

thread_local! {
    /// The instance's one engine, created by the first `eval`.
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };

    /// Promises rejected with no handler attached (yet), recorded by the
    /// runtime's rejection tracker during the current `eval`.
    static UNHANDLED: RefCell<Vec<Rejection>> = const { RefCell::new(Vec::new()) };
}

struct Rejection {
    promise: Persistent<Value<'static>>,
    reason: Persistent<Value<'static>>,
}

/// Why a cell failed.
enum Failure<'js> {
    /// A JavaScript value was thrown or a promise was rejected with it.
    Thrown(Value<'js>),
    /// Anything else, already described.
    Message(String),
}

// Fields drop in declaration order, and QuickJS insists on it: values
// first, then the context, then the runtime (which asserts that no object
// is left). A component instance is never torn down, but tests are.
struct Engine {
    /// `{render, describe}` from the prelude.
    helpers: Persistent<Object<'static>>,
    context: Context,
    _runtime: Runtime,
    /// Cells evaluated so far; names the next one in stack traces.
    cells: u64,
}

/// The `eval` export: evaluates `code` in the instance's persistent context.
///
/// An error is also written to stderr, so a run's captured output tells the
/// whole story. Both streams are flushed before returning.
pub fn eval(code: &str) -> Result<String, String> {
    let outcome = ENGINE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let engine = match slot.as_mut() {
            Some(engine) => engine,
            None => slot.insert(Engine::new()?),
        };
        engine.eval(code)
    });
    if let Err(message) = &outcome {
        let mut stderr = std::io::stderr().lock();
        let _ = stderr.write_all(message.as_bytes());
        let _ = stderr.write_all(b"\n");
    }
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    outcome
}

impl Engine {
    fn new() -> Result<Self, String> {
        let runtime =
            Runtime::new().map_err(|e| format!("could not create the JavaScript runtime: {e}"))?;
        runtime.set_memory_limit(MEMORY_LIMIT);
        runtime.set_max_stack_size(MAX_STACK_SIZE);
        runtime.set_host_promise_rejection_tracker(Some(Box::new(track_rejection)));
        // After `process.exit`, whatever code still runs is interrupted.
        runtime.set_interrupt_handler(Some(Box::new(event_loop::exiting)));
        runtime.set_loader(modules::NodeResolver, modules::NodeLoader);
        let context = Context::full(&runtime)
            .map_err(|e| format!("could not create the JavaScript context: {e}"))?;
        let helpers = context.with(|ctx| {
            let setup = || -> rquickjs::Result<Persistent<Object<'static>>> {
                let natives = natives::object(&ctx)?;
                natives.set("part", Function::new(ctx.clone(), lazy_part)?)?;
                let prelude: Function = eval_stripped(&ctx, PRELUDE, "<prelude>")?.get()?;
                let helpers: Object = prelude.call((natives.clone(),))?;
                let lib: Object = helpers.get("lib")?;
                for (name, source) in NODE_PARTS {
                    let part: Function = eval_stripped(&ctx, source, name)?.get()?;
                    part.call::<_, ()>((natives.clone(), lib.clone()))?;
                }
                modules::install(&ctx, lib.get("hooks")?)?;
                Ok(Persistent::save(&ctx, helpers))
            };
            setup().map_err(|e| match e {
                Error::Exception => format!(
                    "the JavaScript prelude failed: {}",
                    fallback_description(&ctx.catch())
                ),
                other => format!("the JavaScript prelude failed: {other}"),
            })
        })?;
        Ok(Engine {
            helpers,
            context,
            _runtime: runtime,
            cells: 0,
        })
    }

    fn eval(&mut self, code: &str) -> Result<String, String> {
        // An empty cell is how the build pre-initializes the engine
        // (`plimsoll preinit`, which calls `eval("")` and snapshots the
        // instance); it does not count, so the first cell a run sees is
        // still `cell-1`.
        // Nor is the host's call that runs a program (`node/main.js`); its
        // frame is hidden from the program's stack traces like the
        // prelude's.
        let name = if code.starts_with(PROGRAM_CALL) {
            "<prelude/run>".to_owned()
        } else {
            if !code.is_empty() {
                self.cells += 1;
            }
            format!("cell-{}", self.cells)
        };
        self.context.with(|ctx| {
            // QuickJS measures its stack limit from the top recorded here.
            // SAFETY: the runtime pointer comes from a live context.
            unsafe { qjs::JS_UpdateStackTop(qjs::JS_GetRuntime(ctx.as_raw().as_ptr())) };
            UNHANDLED.with(|u| u.borrow_mut().clear());
            let helpers = self
                .helpers
                .clone()
                .restore(&ctx)
                .map_err(|e| format!("the JavaScript engine lost its helpers: {e}"))?;

            // Promises whose rejection `run_cell` reports itself.
            let mut reported = Vec::new();
            let outcome = run_cell(&ctx, code, name, &mut reported);
            // `process.exit` in a cell ends the cell (what is left of it
            // runs with every effect refused); the session goes on.
            if let Some(exit) = event_loop::wind_down(&ctx) {
                drop(take_unhandled(&ctx));
                return Err(format!(
                    "process.exit({exit}) was called: the cell ended there"
                ));
            }
            // A failed cell leaves no timer to fire in a later one.
            if outcome.is_err() {
                event_loop::clear_timers();
            }
            let outcome = outcome.and_then(|value| {
                call_helper(&ctx, &helpers, "render", value).map_err(Failure::Message)
            });

            let mut errors = Vec::new();
            let result = match outcome {
                Ok(text) => Some(text),
                Err(failure) => {
                    errors.push(describe_failure(&ctx, &helpers, "Uncaught ", failure));
                    None
                }
            };
            for (promise, reason) in take_unhandled(&ctx) {
                if !reported.contains(&promise) {
                    errors.push(describe_failure(
                        &ctx,
                        &helpers,
                        "Uncaught (in promise) ",
                        Failure::Thrown(reason),
                    ));
                }
            }
            match result {
                Some(text) if errors.is_empty() => Ok(text),
                _ => Err(errors.join("\n")),
            }
        })
    }
}

/// Evaluates one cell and returns its completion value, settled.
///
/// The cell runs as a global script with QuickJS's async flag: top-level
/// `await` works, top-level declarations stay global (so they persist into
/// the next cell), and the result is a promise of `{value}` holding the
/// completion value.
fn run_cell<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    name: String,
    reported: &mut Vec<Value<'js>>,
) -> Result<Value<'js>, Failure<'js>> {
    // QuickJS takes the source as a C string.
    if let Some(at) = code.find('\0') {
        return Err(Failure::Message(format!(
            "Uncaught SyntaxError: the cell contains a NUL character (at byte {at})"
        )));
    }
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.promise = true;
    // Keep frames of whoever called eval out of the cell's stack traces.
    options.backtrace_barrier = true;
    options.filename = Some(name);
    let evaluated: Value = ctx
        .eval_with_options(code, options)
        .map_err(|e| caught(ctx, e))?;
    run_loop(ctx)?;

    let Some(cell) = evaluated.into_promise() else {
        return Err(Failure::Message(
            "internal error: the cell did not evaluate to a promise".to_owned(),
        ));
    };
    reported.push(cell.clone().into_value());
    let wrapper = settled(ctx, &cell, "the cell awaited a promise that never settled")?;
    let completion = match wrapper.as_object() {
        Some(object) => object
            .get::<_, Value>("value")
            .map_err(|e| caught(ctx, e))?,
        None => {
            return Err(Failure::Message(
                "internal error: the cell's result has no value".to_owned(),
            ));
        }
    };
    // A cell that ends in a promise (`fetchAll()` without `await`) has its
    // value awaited too; the job queue is already drained.
    if let Some(promise) = completion.as_promise().cloned() {
        reported.push(promise.clone().into_value());
        return settled(
            ctx,
            &promise,
            "the cell's value is a promise that never settled",
        );
    }
    Ok(completion)
}

/// `part(name)`: the function of a lazy part of the Node.js layer.
fn lazy_part<'js>(ctx: Ctx<'js>, name: String) -> rquickjs::Result<Value<'js>> {
    match LAZY_PARTS.iter().find(|(n, _)| *n == name) {
        Some((n, source)) => eval_stripped(&ctx, source, n),
        None => Err(rquickjs::Exception::throw_internal(
            &ctx,
            "no such part of the prelude",
        )),
    }
}

/// Runs promise jobs and timers until none is left (or `process.exit` is
/// called). A timer callback that throws fails the cell.
fn run_loop<'js>(ctx: &Ctx<'js>) -> Result<(), Failure<'js>> {
    loop {
        event_loop::drain_jobs(ctx);
        if event_loop::exiting() {
            return Ok(());
        }
        match event_loop::fire_next(ctx) {
            Fired::Idle => return Ok(()),
            Fired::Ran => {}
            Fired::Threw(value) => return Err(Failure::Thrown(value)),
        }
    }
}

/// The value of a promise after the job queue has been drained.
fn settled<'js>(
    ctx: &Ctx<'js>,
    promise: &Promise<'js>,
    pending: &str,
) -> Result<Value<'js>, Failure<'js>> {
    match promise.state() {
        PromiseState::Resolved | PromiseState::Rejected => match promise.result::<Value>() {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => Err(caught(ctx, e)),
            None => Err(Failure::Message(pending.to_owned())),
        },
        // Nothing is left to run that could settle it: no job, no timer
        // (and there are no I/O callbacks).
        PromiseState::Pending => Err(Failure::Message(pending.to_owned())),
    }
}

fn caught<'js>(ctx: &Ctx<'js>, error: Error) -> Failure<'js> {
    match error {
        Error::Exception => Failure::Thrown(ctx.catch()),
        other => Failure::Message(other.to_string()),
    }
}

/// Calls `helpers[name](value)` and returns the string it makes.
fn call_helper<'js>(
    ctx: &Ctx<'js>,
    helpers: &Object<'js>,
    name: &str,
    value: Value<'js>,
) -> Result<String, String> {
    let result = helpers
        .get::<_, Function>(name)
        .and_then(|f| f.call::<_, String>((value,)));
    result.map_err(|e| match e {
        Error::Exception => format!(
            "could not render the value: {}",
            fallback_description(&ctx.catch())
        ),
        other => format!("could not render the value: {other}"),
    })
}

fn describe_failure<'js>(
    ctx: &Ctx<'js>,
    helpers: &Object<'js>,
    prefix: &str,
    failure: Failure<'js>,
) -> String {
    match failure {
        Failure::Message(message) => message,
        Failure::Thrown(value) => {
            // The prelude's `describe` may itself fail (no memory left, a
            // `toString` that throws): fall back to what Rust can read.
            let text = call_helper(ctx, helpers, "describe", value.clone())
                .unwrap_or_else(|_| fallback_description(&value));
            format!("{prefix}{text}")
        }
    }
}

/// A description that runs no JavaScript.
pub(crate) fn fallback_description(value: &Value<'_>) -> String {
    if let Some(text) = value.as_string().and_then(|s| s.to_string().ok()) {
        return text;
    }
    if let Some(object) = value.as_object() {
        let field = |key: &str| {
            object
                .get::<_, Option<rquickjs::String>>(key)
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
        };
        if let Some(message) = field("message") {
            let name = field("name").unwrap_or_else(|| "Error".to_owned());
            return match field("stack") {
                Some(stack) => format!("{name}: {message}\n{}", stack.trim_end()),
                None => format!("{name}: {message}"),
            };
        }
    }
    format!("a {} value that could not be described", value.type_name())
}

/// The host-promise-rejection tracker: QuickJS calls it when a promise is
/// rejected with no handler (`handled == false`) and when a handler is
/// attached to such a promise later (`handled == true`).
fn track_rejection<'js>(ctx: Ctx<'js>, promise: Value<'js>, reason: Value<'js>, handled: bool) {
    UNHANDLED.with(|unhandled| {
        let mut unhandled = unhandled.borrow_mut();
        if handled {
            unhandled.retain(|r| {
                r.promise
                    .clone()
                    .restore(&ctx)
                    .map(|p| p != promise)
                    .unwrap_or(false)
            });
        } else {
            unhandled.push(Rejection {
                promise: Persistent::save(&ctx, promise),
                reason: Persistent::save(&ctx, reason),
            });
        }
    });
}

/// Takes the rejections still unhandled once the job queue is drained.
pub(crate) fn take_unhandled<'js>(ctx: &Ctx<'js>) -> Vec<(Value<'js>, Value<'js>)> {
    let taken = UNHANDLED.with(|u| std::mem::take(&mut *u.borrow_mut()));
    taken
        .into_iter()
        .filter_map(|r| Some((r.promise.restore(ctx).ok()?, r.reason.restore(ctx).ok()?)))
        .collect()
}

// Native tests of the engine (`cargo test` on the build machine's own
// target; see README): `engine/tests.rs`.
#[cfg(test)]
mod tests;
