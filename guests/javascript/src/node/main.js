// node/main.js: `__plimsoll_main(spec)`, the entry point the host calls to
// run a program as `node` would (with `eval("globalThis.__plimsoll_main(" +
// JSON + ")")`), and the hooks the Rust side calls (`lib.hooks`).
//
// spec: {
//   mode: "file" | "eval" | "print" | "stdin",
//   file: "/work/abs/path",         (mode "file"; relative to cwd otherwise)
//   code: "...",                    (modes "eval" and "print")
//   argv: ["/usr/bin/node", ...],   (process.argv as node sets it)
//   cwd: "/work/...",               (default /work)
//   env: {"NAME": "value", ...},    (process.env; default empty)
// }
//
// `file` runs `node FILE`; `eval` is `node -e CODE`; `print` is
// `node -p CODE`; `stdin` runs the program text on standard input
// (`node -` or `node` with no arguments). Returns the exit code (0-255)
// once the program has run to its end: program.rs runs the event loop.
(function (native, lib) {
    "use strict";

    const TypeErrorCtor = TypeError;
    const parseJson = JSON.parse;
    const objectKeys = Object.keys;
    const isArray = Array.isArray;
    const defineProperty = Object.defineProperty;

    function fail(message) {
        throw lib.hidePreludeFrames(new TypeErrorCtor("__plimsoll_main: " + message));
    }

    function strings(value, what) {
        if (!isArray(value)) fail(what + " must be an array of strings");
        const out = [];
        for (let i = 0; i < value.length; i++) {
            if (typeof value[i] !== "string") fail(what + " must be an array of strings");
            out[i] = lib.wellFormed(value[i]);
        }
        return out;
    }

    function environment(value) {
        if (value === undefined || value === null) return [];
        if (typeof value !== "object" || isArray(value)) fail("env must be an object of strings");
        const names = objectKeys(value);
        const pairs = [];
        for (let i = 0; i < names.length; i++) {
            if (typeof value[names[i]] !== "string") fail("env." + names[i] + " must be a string");
            pairs[i] = [names[i], value[names[i]]];
        }
        return pairs;
    }

    function stdinText() {
        const raw = native.readStdin(true);
        if (raw.error === undefined) return raw.value;
        return lib.decodeUtf8(lib.readStdin());
    }

    function main(spec) {
        if (typeof spec === "string") spec = parseJson(spec);
        if (spec === null || typeof spec !== "object") fail("the spec must be an object");
        if (native.programRunning()) fail("a program is already running in this instance");
        const mode = spec.mode;
        let start;
        let argv;
        if (mode === "file") {
            if (typeof spec.file !== "string" || spec.file === "") fail("mode \"file\" needs a file");
            argv = ["/usr/bin/node", spec.file];
        } else if (mode === "eval" || mode === "print") {
            if (typeof spec.code !== "string") fail("mode \"" + mode + "\" needs code");
            argv = ["/usr/bin/node"];
        } else if (mode === "stdin") {
            argv = ["/usr/bin/node"];
        } else {
            fail("mode must be \"file\", \"eval\", \"print\" or \"stdin\"");
        }
        if (spec.argv !== undefined) argv = strings(spec.argv, "argv");
        const cwd = spec.cwd === undefined ? "/work" : spec.cwd;
        if (typeof cwd !== "string") fail("cwd must be a string");
        try {
            lib.setupProcess(argv, environment(spec.env), cwd);
        } catch (e) {
            native.write(2, lib.wellFormed("node: cannot start in " + cwd + ": " + e.message));
            return 1;
        }
        switch (mode) {
            case "file": {
                const file = lib.path.resolve(spec.file);
                // An ES module (or a CommonJS file, which gets its own
                // `require`) has no global one.
                delete globalThis.require;
                start = () => lib.runMain(file);
                break;
            }
            case "eval": start = () => lib.runScript(spec.code, "[eval]", false); break;
            case "print": start = () => lib.runScript(spec.code, "[eval]", true); break;
            default: start = () => lib.runScript(stdinText(), "[stdin]", false); break;
        }
        return native.runProgram(start);
    }

    defineProperty(globalThis, "__plimsoll_main", { value: main, writable: false, configurable: false, enumerable: false });

    lib.hooks = {
        resolve: lib.resolveHook,
        load: lib.loadHook,
        fireTimer: lib.fireTimer,
        uncaught: lib.uncaught,
        finish: lib.finish,
        unsettled: lib.unsettled,
    };
})
