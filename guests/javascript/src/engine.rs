//! The QuickJS runtime behind `eval`: its limits, how a cell is evaluated
//! and how its outcome is rendered.

use std::cell::RefCell;
use std::io::Write as _;

use rquickjs::context::EvalOptions;
use rquickjs::promise::PromiseState;
use rquickjs::{Context, Ctx, Error, Function, Object, Persistent, Promise, Runtime, Value, qjs};

use crate::natives;

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

/// The prelude: builds `console` and `plimsoll` and returns the helpers
/// `render` and `describe`.
const PRELUDE: &str = include_str!("prelude.js");

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
        let context = Context::full(&runtime)
            .map_err(|e| format!("could not create the JavaScript context: {e}"))?;
        let helpers = context.with(|ctx| {
            let setup = || -> rquickjs::Result<Persistent<Object<'static>>> {
                let mut options = EvalOptions::default();
                options.strict = true;
                options.filename = Some("<prelude>".to_owned());
                let prelude: Function = ctx.eval_with_options(PRELUDE, options)?;
                let helpers: Object = prelude.call((natives::object(&ctx)?,))?;
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
        if !code.is_empty() {
            self.cells += 1;
        }
        let name = format!("cell-{}", self.cells);
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
            let outcome = run_cell(&ctx, code, name, &mut reported).and_then(|value| {
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
    drain_jobs(ctx);

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

/// Runs queued promise jobs until none is left.
fn drain_jobs(ctx: &Ctx<'_>) {
    while ctx.execute_pending_job() {}
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
        // Nothing is left to run that could settle it: nothing in this
        // sandbox completes later (no timers, no I/O callbacks).
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
fn fallback_description(value: &Value<'_>) -> String {
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
fn take_unhandled<'js>(ctx: &Ctx<'js>) -> Vec<(Value<'js>, Value<'js>)> {
    let taken = UNHANDLED.with(|u| std::mem::take(&mut *u.borrow_mut()));
    taken
        .into_iter()
        .filter_map(|r| Some((r.promise.restore(ctx).ok()?, r.reason.restore(ctx).ok()?)))
        .collect()
}

// Native tests of the engine (`cargo test` on the build machine's own
// target; see README). The broker import only exists inside a component, so
// nothing here reaches `plimsoll`'s native call. Each test runs on its own
// thread and so gets its own engine.
#[cfg(test)]
mod tests {
    use super::eval;

    fn ok(code: &str) -> String {
        match eval(code) {
            Ok(text) => text,
            Err(e) => panic!("{code:?} failed: {e}"),
        }
    }

    fn err(code: &str) -> String {
        match eval(code) {
            Ok(text) => panic!("{code:?} succeeded with {text:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn completion_values_render_as_json() {
        assert_eq!(ok("1+1"), "2");
        assert_eq!(ok("'a' + 'b'"), "\"ab\"");
        assert_eq!(ok("({a: [1, 2], b: null})"), "{\"a\":[1,2],\"b\":null}");
        assert_eq!(ok("undefined"), "");
        assert_eq!(ok("let unused = 1"), "");
        assert_eq!(ok("10n"), "10");
        assert_eq!(ok("const c = {}; c.c = c; c"), "[object Object]");
        assert_eq!(ok("Symbol('s')"), "Symbol(s)");
        assert_eq!(ok("'\\ud800'"), "\"\\ud800\"");
    }

    #[test]
    fn globals_persist_between_cells() {
        ok("let x = 40; var y = 1; function f() { return x + y + 1 }");
        assert_eq!(ok("x + 2"), "42");
        assert_eq!(ok("f()"), "42");
        assert_eq!(ok("globalThis.y"), "1");
    }

    #[test]
    fn errors_carry_the_stack_and_leave_the_engine_usable() {
        let e = err("function boom() { throw new Error('boom') }\nboom()");
        assert!(e.starts_with("Uncaught Error: boom\n"), "{e}");
        assert!(e.contains("at boom (cell-1:1:"), "{e}");
        assert_eq!(ok("1"), "1");
        let e = err("let = ;");
        assert!(e.starts_with("Uncaught SyntaxError:"), "{e}");
        assert_eq!(err("throw 42"), "Uncaught 42");
        assert_eq!(err("throw {a: 1}"), "Uncaught {\"a\":1}");
        assert_eq!(
            err("1 +\0 1"),
            "Uncaught SyntaxError: the cell contains a NUL character (at byte 3)"
        );
        assert_eq!(ok("2"), "2");
    }

    #[test]
    fn top_level_await_and_promise_values_settle() {
        assert_eq!(ok("await Promise.resolve(5)"), "5");
        assert_eq!(ok("const v = await new Promise(r => r(6)); v * 2"), "12");
        assert_eq!(ok("Promise.resolve(7)"), "7");
        assert_eq!(ok("(async () => { await null; return 8 })()"), "8");
        let e = err("Promise.reject(new Error('nope'))");
        assert!(e.starts_with("Uncaught Error: nope"), "{e}");
        let e = err("await Promise.reject(new TypeError('tt'))");
        assert!(e.starts_with("Uncaught TypeError: tt"), "{e}");
        let e = err("await new Promise(() => {})");
        assert!(e.contains("never settled"), "{e}");
        assert_eq!(ok("3"), "3");
    }

    #[test]
    fn unhandled_rejections_fail_the_cell() {
        let e = err("Promise.reject(new Error('lost')); 1");
        assert!(e.starts_with("Uncaught (in promise) Error: lost"), "{e}");
        // A handler attached later in the same cell counts as handling it.
        assert_eq!(
            ok("const p = Promise.reject(new Error('late')); p.catch(() => {}); 2"),
            "2"
        );
        let e = err("async function f() { throw new RangeError('r') } f(); 'x'");
        assert!(e.starts_with("Uncaught (in promise) RangeError: r"), "{e}");
        // Rejections of an earlier cell are not reported again.
        assert_eq!(ok("4"), "4");
    }

    #[test]
    fn deep_recursion_is_a_catchable_range_error() {
        let e = err("function f(n) { return f(n + 1) } f(0)");
        assert!(
            e.starts_with("Uncaught RangeError: Maximum call stack size exceeded"),
            "{e}"
        );
        assert_eq!(
            ok("function g(n) { return g(n + 1) } try { g(0) } catch (e) { e.name }"),
            "\"RangeError\""
        );
    }

    #[test]
    fn no_modules_or_host_objects() {
        let e = err("await import('os')");
        assert!(e.contains("could not load module 'os'"), "{e}");
        let e = err("require('fs')");
        assert!(e.contains("require is not defined"), "{e}");
        let e = err("import * as os from 'os'");
        assert!(e.starts_with("Uncaught SyntaxError"), "{e}");
        assert_eq!(
            ok("[typeof std, typeof os, typeof scriptArgs, typeof print]"),
            "[\"undefined\",\"undefined\",\"undefined\",\"undefined\"]"
        );
    }

    #[test]
    fn fs_reads_and_writes_the_files_it_is_given() {
        let dir = std::env::temp_dir().join(format!("plimsoll-js-fs-{}", std::process::id()));
        let d = dir.display();
        assert_eq!(
            ok(&format!(
                "fs.mkdirSync('{d}/a', {{recursive: true}}); fs.writeFileSync('{d}/a/x.txt', 'h\\u00e9'); \
                 fs.appendFileSync('{d}/a/x.txt', '!'); \
                 [fs.readFileSync('{d}/a/x.txt', 'utf8'), fs.readFileSync('{d}/a/x.txt').length, \
                  fs.readdirSync('{d}/a'), fs.existsSync('{d}/a/y')]"
            )),
            "[\"h\u{e9}!\",4,[\"x.txt\"],false]"
        );
        let e = err(&format!("fs.readFileSync('{d}/missing', 'utf8')"));
        assert!(e.contains("ENOENT: open"), "{e}");
        assert!(!e.contains("<prelude>"), "prelude frames leak: {e}");
        let e = err("fs.readFileSync(1)");
        assert!(e.contains("the path must be a string"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn plimsoll_validates_before_calling_the_broker() {
        let e = err("await plimsoll.get(1, '/x')");
        assert!(
            e.starts_with("Uncaught TypeError: api must be a string"),
            "{e}"
        );
        assert!(!e.contains("<prelude>"), "prelude frames leak: {e}");
        let e = err("await plimsoll.call('a', 'GET', '/x', undefined, [['only-a-name']])");
        assert!(e.contains("[name, value] pair"), "{e}");
        assert_eq!(
            ok(
                "[typeof plimsoll.get, typeof plimsoll.del, plimsoll.Denied.name, new plimsoll.Timeout() instanceof plimsoll.BrokerError]"
            ),
            "[\"function\",\"function\",\"Denied\",true]"
        );
    }

    #[test]
    fn cells_cannot_break_the_helpers() {
        ok("JSON.stringify = () => 'hijacked'; String = null; Array.prototype.join = null");
        assert_eq!(ok("({a: 1})"), "{\"a\":1}");
        assert!(
            err("throw new Error('still described')")
                .starts_with("Uncaught Error: still described")
        );
    }
}
