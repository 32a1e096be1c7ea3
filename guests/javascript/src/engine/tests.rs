//! Native tests of the engine (`cargo test` on the build machine's own
//! target; see README). The broker import only exists inside a component,
//! so nothing here reaches `plimsoll`'s native call. Each test runs on its
//! own thread and so gets its own engine.
use crate::engine::eval;

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
fn modules_from_the_workspace_but_no_host_objects() {
    let dir = std::env::temp_dir().join(format!("plimsoll-js-modules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("m.mjs"), "export const x = 41;\n").expect("write");
    crate::fs::set_test_root(dir.clone(), b"");
    // Cells are scripts: no import statements, but import() and require
    // load from the workspace (relative to process.cwd(), /work).
    assert_eq!(ok("(await import('/work/m.mjs')).x + 1"), "42");
    assert_eq!(ok("(await import('./m.mjs')).x"), "41");
    let e = err("import * as os from 'os'");
    assert!(e.starts_with("Uncaught SyntaxError"), "{e}");
    let e = err("await import('./missing.mjs')");
    assert!(e.contains("Cannot find module '/work/missing.mjs'"), "{e}");
    let e = err("require('child_process')");
    assert!(
        e.contains("node:child_process is not available here"),
        "{e}"
    );
    // No QuickJS host objects (quickjs-libc's std/os), only Node's.
    assert_eq!(
        ok(
            "[typeof std, typeof os, typeof scriptArgs, typeof print, typeof require, typeof process]"
        ),
        "[\"undefined\",\"undefined\",\"undefined\",\"undefined\",\"function\",\"object\"]"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
    assert!(
        e.contains("The \"path\" argument must be of type string"),
        "{e}"
    );
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
        err("throw new Error('still described')").starts_with("Uncaught Error: still described")
    );
}
