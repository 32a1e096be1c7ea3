//! Native tests of programs (`__plimsoll_main`), modules and Node's
//! built-ins. Each test runs on its own thread, so it has its own engine,
//! its own `/work` (a temporary directory, `fs::set_test_root`) and its own
//! captured output (`natives::take_output`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::eval;
use crate::fs::set_test_root;
use crate::natives::take_output;

mod builtins;

/// A temporary directory standing in for `/work`, removed on drop.
struct Work(PathBuf);

impl Drop for Work {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A `/work` holding `files` (path relative to /work, contents), with
/// `stdin` on standard input.
fn work_with_stdin(files: &[(&str, &str)], stdin: &str) -> Work {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "plimsoll-js-work-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (name, text) in files {
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().expect("a file has a parent")).expect("mkdir");
        std::fs::write(&file, text).expect("write");
    }
    std::fs::create_dir_all(&dir).expect("mkdir");
    set_test_root(dir.clone(), stdin.as_bytes());
    Work(dir)
}

fn work(files: &[(&str, &str)]) -> Work {
    work_with_stdin(files, "")
}

/// What a program did: exit code, stdout, stderr.
#[derive(Debug)]
struct Ran {
    code: i32,
    out: String,
    err: String,
}

/// Runs `__plimsoll_main(spec)` as the host does.
fn run(spec: &str) -> Ran {
    take_output();
    let answer = eval(&format!("globalThis.__plimsoll_main({spec})"));
    let (out, err) = take_output();
    let code = match answer {
        Ok(text) => text
            .parse()
            .unwrap_or_else(|_| panic!("not an exit code: {text:?}")),
        Err(e) => panic!("__plimsoll_main failed: {e}\nstdout: {out}\nstderr: {err}"),
    };
    Ran { code, out, err }
}

fn run_file(file: &str, args: &[&str]) -> Ran {
    let mut argv = vec!["/usr/bin/node".to_owned(), file.to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let argv = serde_free_json(&argv);
    run(&format!(
        r#"{{"mode": "file", "file": "{file}", "argv": {argv}, "cwd": "/work", "env": {{"GREETING": "hi"}}}}"#
    ))
}

fn run_code(mode: &str, code: &str) -> Ran {
    let code = serde_free_json(&[code.to_owned()]);
    run(&format!(
        r#"{{"mode": "{mode}", "code": {code}[0], "argv": ["/usr/bin/node", "x"], "cwd": "/work"}}"#
    ))
}

/// A JSON array of strings (no serde in this crate).
fn serde_free_json(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| {
            let mut q = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => q.push_str("\\\""),
                    '\\' => q.push_str("\\\\"),
                    '\n' => q.push_str("\\n"),
                    c if (c as u32) < 0x20 => q.push_str(&format!("\\u{:04x}", c as u32)),
                    c => q.push(c),
                }
            }
            q.push('"');
            q
        })
        .collect();
    format!("[{}]", quoted.join(", "))
}

fn ok(ran: &Ran) {
    assert_eq!(ran.code, 0, "{ran:#?}");
}

#[test]
fn an_es_module_imports_modules_json_and_commonjs_from_the_workspace() {
    let _w = work(&[
        (
            ".plimsoll/code.mjs",
            "import { double } from '../lib/math.mjs';\n\
             import data from '/work/data.json' with { type: 'json' };\n\
             import helper, { shout } from '../lib/helper.cjs';\n\
             import * as idx from '../lib';\n\
             import legacy from '../lib/legacy.js';\n\
             console.log(double(21), data.name, helper.version, shout('x'), idx.fromIndex, legacy.kind);\n\
             console.log(import.meta.url, import.meta.filename, import.meta.dirname);\n\
             console.log(import.meta.resolve('../lib/math.mjs'), import.meta.resolve('node:fs'));\n\
             const late = await import('../lib/math.mjs');\n\
             console.log(late.double(2), typeof require, typeof module);\n",
        ),
        ("lib/math.mjs", "export const double = (x) => x * 2;\n"),
        ("data.json", "{\"name\": \"plimsoll\"}"),
        (
            "lib/helper.cjs",
            "module.exports = { version: 3, shout: (s) => s.toUpperCase() + '!' };\n",
        ),
        ("lib/index.js", "export const fromIndex = 'index';\n"),
        ("lib/legacy.js", "exports.kind = 'commonjs';\n"),
    ]);
    let ran = run_file("/work/.plimsoll/code.mjs", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "42 plimsoll 3 X! index commonjs\n\
         file:///work/.plimsoll/code.mjs /work/.plimsoll/code.mjs /work/.plimsoll\n\
         file:///work/lib/math.mjs node:fs\n\
         4 undefined undefined\n"
    );
    assert_eq!(ran.err, "");
}

#[test]
fn top_level_await_timers_and_jobs_run_to_completion() {
    let _w = work(&[(
        "main.mjs",
        "const order = [];\n\
         setTimeout(() => order.push('timeout 20'), 20);\n\
         setTimeout(() => order.push('timeout 0'), 0);\n\
         setImmediate(() => order.push('immediate'));\n\
         queueMicrotask(() => order.push('microtask'));\n\
         process.nextTick(() => order.push('tick'));\n\
         const t0 = Date.now();\n\
         await new Promise((r) => setTimeout(r, 30));\n\
         order.push('awaited');\n\
         const i = setInterval(() => { order.push('interval'); if (order.filter((x) => x === 'interval').length === 3) clearInterval(i); }, 1);\n\
         const never = setTimeout(() => order.push('cleared'), 5); clearTimeout(never);\n\
         setTimeout(() => order.push('unref'), 10000).unref();\n\
         process.on('exit', (code) => console.log(order.join(','), Date.now() - t0 >= 30, code));\n",
    )]);
    let ran = run_file("/work/main.mjs", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "microtask,tick,immediate,timeout 0,timeout 20,awaited,interval,interval,interval true 0\n"
    );
}

#[test]
fn commonjs_require_module_exports_and_create_require() {
    let _w = work(&[
        (
            "main.js",
            "const lib = require('./lib');\n\
             const { join } = require('node:path');\n\
             const same = require('./lib.js');\n\
             const data = require('./data.json');\n\
             console.log(lib.add(2, 3), lib === same, data.n, join('a', 'b'), __filename, __dirname);\n\
             console.log(require.main === module, module.id, typeof exports, require.resolve('./lib'));\n\
             console.log(require('./cycle-a').done);\n",
        ),
        (
            "lib.js",
            "module.exports.add = (a, b) => a + b; module.exports.loaded = module.loaded;\n",
        ),
        ("data.json", "{\"n\": 7}"),
        (
            "cycle-a.js",
            "exports.done = false; const b = require('./cycle-b'); exports.done = b.sawPartial;\n",
        ),
        (
            "cycle-b.js",
            "const a = require('./cycle-a'); exports.sawPartial = a.done === false;\n",
        ),
        (
            "esm.mjs",
            "import { createRequire } from 'node:module';\n\
             const require = createRequire(process.cwd() + '/');\n\
             const lib = require('./lib.js');\n\
             const fromUrl = createRequire(import.meta.url)('./data.json');\n\
             console.log(lib.add(1, 1), fromUrl.n, typeof globalThis.require);\n",
        ),
    ]);
    let ran = run_file("/work/main.js", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "5 true 7 a/b /work/main.js /work\ntrue . object /work/lib.js\ntrue\n"
    );
    let ran = run_file("/work/esm.mjs", &[]);
    ok(&ran);
    assert_eq!(ran.out, "2 7 undefined\n");
}

#[test]
fn js_files_follow_package_type_and_syntax() {
    let _w = work(&[
        ("app/package.json", "{\"type\": \"module\"}"),
        (
            "app/main.js",
            "import { x } from './dep.js'; console.log(x, typeof module);\n",
        ),
        ("app/dep.js", "export const x = 'esm by package type';\n"),
        (
            "plain/main.js",
            "import fs from 'fs';\nconsole.log(typeof fs.readFileSync);\n",
        ),
        (
            "node_modules/greet/package.json",
            "{\"name\": \"greet\", \"exports\": {\".\": {\"import\": \"./esm.mjs\", \"require\": \"./cjs.cjs\"}, \"./extra\": \"./extra.js\"}}",
        ),
        (
            "node_modules/greet/esm.mjs",
            "export default 'hello from esm';\n",
        ),
        (
            "node_modules/greet/cjs.cjs",
            "module.exports = 'hello from cjs';\n",
        ),
        ("node_modules/greet/extra.js", "module.exports = 'extra';\n"),
        (
            "plain/bare.mjs",
            "import g from 'greet'; import e from 'greet/extra'; import { createRequire } from 'module';\n\
             console.log(g, e, createRequire(import.meta.url)('greet'));\n",
        ),
    ]);
    let ran = run_file("/work/app/main.js", &[]);
    ok(&ran);
    assert_eq!(ran.out, "esm by package type undefined\n");
    let ran = run_file("/work/plain/main.js", &[]);
    ok(&ran);
    assert_eq!(ran.out, "function\n");
    let ran = run_file("/work/plain/bare.mjs", &[]);
    ok(&ran);
    assert_eq!(ran.out, "hello from esm extra hello from cjs\n");
}

#[test]
fn process_argv_env_cwd_and_exit_codes() {
    let _w = work(&[
        (
            "args.mjs",
            "import process from 'node:process';\n\
             console.log(JSON.stringify(process.argv), process.env.GREETING, process.cwd(), process.platform, process.version.startsWith('QuickJS-ng'));\n\
             process.exitCode = 4;\n",
        ),
        (
            "exit.mjs",
            "async function deep() { try { await null; process.exit(3); } finally { console.log('finally must not run'); } }\n\
             process.on('exit', (c) => console.log('exit event', c));\n\
             setTimeout(() => console.log('timer must not run'), 0);\n\
             try { await deep(); } catch (e) { console.log('caught', e); }\n\
             console.log('after exit must not run');\n",
        ),
        (
            "sync-exit.js",
            "try { [1].map(() => process.exit(7)); } catch (e) { console.log('caught'); }\nconsole.log('no');\n",
        ),
    ]);
    let ran = run_file("/work/args.mjs", &["one", "two"]);
    assert_eq!(ran.code, 4, "{ran:#?}");
    assert_eq!(
        ran.out,
        "[\"/usr/bin/node\",\"/work/args.mjs\",\"one\",\"two\"] hi /work linux true\n"
    );
    let ran = run_file("/work/exit.mjs", &[]);
    assert_eq!(ran.code, 3, "{ran:#?}");
    assert_eq!(ran.out, "exit event 3\n");
    assert_eq!(ran.err, "");
    let ran = run_file("/work/sync-exit.js", &[]);
    assert_eq!(ran.code, 7, "{ran:#?}");
    assert_eq!(ran.out, "");
}

#[test]
fn uncaught_errors_and_unhandled_rejections_exit_1_with_the_stack() {
    let _w = work(&[
        (
            "throws.mjs",
            "function boom() { throw new TypeError('boom'); }\nconsole.log('before');\nboom();\n",
        ),
        (
            "rejects.mjs",
            "async function later() { await null; throw new RangeError('lost'); }\nlater();\nsetTimeout(() => console.log('timer must not run'), 50);\n",
        ),
        ("rejects-value.js", "Promise.reject(42);\n"),
        (
            "handled.js",
            "process.on('uncaughtException', (e) => console.log('handled', e.message));\nsetTimeout(() => { throw new Error('in timer'); }, 1);\n",
        ),
        ("timer.js", "setTimeout(() => { null.x; }, 1);\n"),
        ("unsettled.mjs", "await new Promise(() => {});\n"),
        ("missing.mjs", "import './nowhere.mjs';\n"),
        (
            "parent.mjs",
            "import './child.mjs';\nconsole.log('parent must not run');\n",
        ),
        (
            "child.mjs",
            "await null;\nthrow new SyntaxError('from the child');\n",
        ),
    ]);
    let ran = run_file("/work/parent.mjs", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert_eq!(ran.out, "");
    assert!(
        ran.err
            .starts_with("SyntaxError: from the child\n    at <anonymous> (/work/child.mjs:2:"),
        "{}",
        ran.err
    );
    assert_eq!(ran.err.matches("from the child").count(), 1, "{}", ran.err);

    let ran = run_file("/work/throws.mjs", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert_eq!(ran.out, "before\n");
    assert!(
        ran.err
            .starts_with("TypeError: boom\n    at boom (/work/throws.mjs:1:"),
        "{}",
        ran.err
    );
    assert!(!ran.err.contains("<prelude"), "{}", ran.err);

    let ran = run_file("/work/rejects.mjs", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err
            .starts_with("RangeError: lost\n    at later (/work/rejects.mjs:1:"),
        "{}",
        ran.err
    );
    assert_eq!(ran.out, "");

    let ran = run_file("/work/rejects-value.js", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err
            .contains("The promise rejected with the reason \"42\""),
        "{}",
        ran.err
    );

    let ran = run_file("/work/handled.js", &[]);
    assert_eq!(ran.code, 0, "{ran:#?}");
    assert_eq!(ran.out, "handled in timer\n");

    let ran = run_file("/work/timer.js", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err
            .starts_with("TypeError: cannot read property 'x' of null"),
        "{}",
        ran.err
    );

    let ran = run_file("/work/unsettled.mjs", &[]);
    assert_eq!(ran.code, 13, "{ran:#?}");
    assert!(ran.err.contains("unsettled top-level await"), "{}", ran.err);

    let ran = run_file("/work/missing.mjs", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err.starts_with(
            "Error: Cannot find module '/work/nowhere.mjs' imported from /work/missing.mjs"
        ),
        "{}",
        ran.err
    );
    let ran = run_file("/work/nope.js", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err
            .starts_with("Error: Cannot find module '/work/nope.js'"),
        "{}",
        ran.err
    );
}

#[test]
fn eval_print_and_stdin_modes() {
    let _w = work_with_stdin(
        &[("lib.js", "module.exports = { n: 5 };\n")],
        "console.log('from stdin', require('./lib').n, require('fs').readFileSync(0, 'utf8').length)",
    );
    let ran = run_code("print", "[1, 2].map((x) => x * 2)");
    ok(&ran);
    assert_eq!(ran.out, "[2,4]\n");
    let ran = run_code("print", "'text'");
    assert_eq!(ran.out, "text\n");
    let ran = run_code(
        "eval",
        "console.log(require('./lib').n, __filename, process.argv.length, typeof module.exports); process.exitCode = 2",
    );
    assert_eq!(ran.code, 2, "{ran:#?}");
    assert_eq!(ran.out, "5 [eval] 2 object\n");
    let ran = run_code(
        "eval",
        "import { n } from './lib.js'; console.log(n, import.meta.url)",
    );
    ok(&ran);
    assert_eq!(ran.out, "5 file:///work/%5Beval%5D\n");
    let ran = run_code("eval", "__plimsoll_main({ mode: 'eval', code: '1' })");
    assert_eq!(ran.code, 1, "{ran:#?}");
    assert!(
        ran.err.contains("a program is already running"),
        "{}",
        ran.err
    );
    let ran = run(r#"{"mode": "stdin", "cwd": "/work"}"#);
    ok(&ran);
    // The program text took all of standard input.
    assert_eq!(ran.out, "from stdin 5 0\n");
}

#[test]
fn the_loader_stays_in_the_workspace_and_names_what_is_missing() {
    let _w = work(&[
        (
            "main.mjs",
            "for (const s of ['../etc/passwd', '/etc/passwd', 'file:///etc/passwd', 'child_process', 'node:http', 'node:nope', 'left-pad', 'https://x.test/a.js']) {\n\
               try { await import(s); console.log(s, 'loaded'); } catch (e) { console.log(s, '->', e.code, e.message.split('\\n')[0]); }\n\
             }\n",
        ),
        ("deep/0.mjs", "import './1.mjs';\n"),
    ]);
    let ran = run_file("/work/main.mjs", &[]);
    ok(&ran);
    assert_eq!(
        ran.out,
        "../etc/passwd -> ERR_MODULE_NOT_FOUND Cannot find module '../etc/passwd' imported from /work/main.mjs\n\
         /etc/passwd -> ERR_MODULE_NOT_FOUND Cannot find module '/etc/passwd' imported from /work/main.mjs\n\
         file:///etc/passwd -> ERR_MODULE_NOT_FOUND Cannot find module 'file:///etc/passwd' imported from /work/main.mjs\n\
         child_process -> ERR_UNKNOWN_BUILTIN_MODULE Cannot find module 'child_process': node:child_process is not available here (there are no processes in this sandbox)\n\
         node:http -> ERR_UNKNOWN_BUILTIN_MODULE Cannot find module 'node:http': node:http is not available here (there are no sockets in this sandbox; HTTP goes through fetch() (the run's grants))\n\
         node:nope -> ERR_UNKNOWN_BUILTIN_MODULE No such built-in module: node:nope\n\
         left-pad -> ERR_MODULE_NOT_FOUND Cannot find package 'left-pad' imported from /work/main.mjs\n\
         https://x.test/a.js -> ERR_UNSUPPORTED_ESM_URL_SCHEME Only file: and node: URLs can be loaded here, not https://x.test/a.js\n"
    );
}

#[test]
fn import_chains_are_bounded() {
    let mut files: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("chain/{i}.mjs"),
                format!("import './{}.mjs';\n", i + 1),
            )
        })
        .collect();
    files.push(("chain/300.mjs".to_owned(), "export {};\n".to_owned()));
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let _w = work(&refs);
    let ran = run_file("/work/chain/0.mjs", &[]);
    assert_eq!(ran.code, 1, "{ran:#?}");
    // QuickJS's own stack limit may come first (it does in a debug build,
    // whose native frames are large); either way a catchable RangeError.
    assert!(
        ran.err.starts_with("RangeError: Import chain too deep")
            || ran
                .err
                .starts_with("RangeError: Maximum call stack size exceeded"),
        "{}",
        ran.err
    );
}

#[test]
fn cells_get_require_process_and_timers() {
    let _w = work(&[("lib.js", "module.exports = 'relative to cwd';\n")]);
    assert_eq!(
        eval(
            "const fs = require('fs'); fs.writeFileSync('/work/cell.txt', 'x'); fs.readFileSync('/work/cell.txt', 'utf8')"
        ),
        Ok("\"x\"".to_owned())
    );
    assert_eq!(
        eval(
            "[require('path').join('/a', 'b'), require('./lib'), typeof process.cwd, process.argv.length, require('node:url').pathToFileURL('/work/a b').href]"
        ),
        Ok("[\"/a/b\",\"relative to cwd\",\"function\",1,\"file:///work/a%20b\"]".to_owned())
    );
    assert_eq!(
        eval("await new Promise((r) => setTimeout(() => r('later'), 5))"),
        Ok("\"later\"".to_owned())
    );
    assert_eq!(
        eval("(await import('./lib.js')).default"),
        Ok("\"relative to cwd\"".to_owned())
    );
    let e = eval("setTimeout(() => console.log('dropped'), 50); setTimeout(() => { throw new Error('t') }, 0)").unwrap_err();
    assert!(e.starts_with("Uncaught Error: t"), "{e}");
    let e = eval("console.log('before'); process.exit(5); console.log('after')").unwrap_err();
    assert!(e.contains("process.exit(5)"), "{e}");
    let (out, _) = take_output();
    assert_eq!(out, "before\n");
    // The session goes on.
    assert_eq!(eval("1 + 1"), Ok("2".to_owned()));
}
