// node/process.js: the `process` global (also the `process` module): argv,
// env, cwd/chdir, exit/exitCode, stdout/stderr/stdin, platform and versions
// (QuickJS-ng's, not Node's), hrtime, nextTick and its events ('exit',
// 'uncaughtException', 'unhandledRejection'). Also console's `dir`,
// `time*`, `count*`, `group*` and `table`, and the entries of the smaller
// built-ins node/extras.js makes on first use.
//
// Nothing here reads the environment or standard input while the engine is
// created (that state would be frozen into the pre-initialized snapshot):
// `process.env` is filled on first use, from the instance's environment or
// from the host's spec for a program (node/main.js).
(function (native, lib) {
    "use strict";

    const { call, show, describeError, wellFormed } = lib;
    const defineProperty = Object.defineProperty;
    const ErrorCtor = Error;
    const StringCtor = String;
    const numberIsInteger = Number.isInteger;
    const regexpExec = RegExp.prototype.exec;
    const BigIntCtor = BigInt;
    const mathFloor = Math.floor;
    const mathRound = Math.round;
    const reflectApply = Reflect.apply;
    const objectKeys = Object.keys;
    const MapCtor = Map;
    const now = performance.now.bind(performance);

    const STDOUT = 1;
    const STDERR = 2;

    const process = new lib.EventEmitter();
    let cwd = "/work";
    let exitCode;
    let exiting = false;
    let env = null;
    const versions = { quickjs: native.quickjsVersion() };
    const version = "QuickJS-ng " + versions.quickjs;

    lib.cwd = () => cwd;

    function setVariable(target, key, value) {
        defineProperty(target, key, { value: StringCtor(value), writable: true, enumerable: true, configurable: true });
    }

    function envFrom(pairs) {
        const out = {};
        for (let i = 0; i < pairs.length; i++) setVariable(out, pairs[i][0], pairs[i][1]);
        return out;
    }

    // Node's environment object stores what is assigned as strings.
    function envObject(variables) {
        return new Proxy(variables, {
            set(target, key, value) {
                setVariable(target, key, value);
                return true;
            },
            defineProperty(target, key, descriptor) {
                setVariable(target, key, descriptor.value);
                return true;
            },
        });
    }

    // An exit code as Node accepts it: an integer, an integer string,
    // undefined or null.
    function checkCode(code) {
        if (code === undefined || code === null) return undefined;
        if (typeof code === "number" && numberIsInteger(code)) return code;
        if (typeof code === "string" && call(regexpExec, /^\s*-?\d+\s*$/, code) !== null) return +code;
        throw lib.invalidArgType("code", "of type number", code);
    }

    function writer(fd) {
        const stream = new lib.EventEmitter();
        stream.fd = fd;
        stream.isTTY = false;
        stream.writable = true;
        stream.write = function (chunk, encoding = undefined, callback = undefined) {
            if (typeof encoding === "function") {
                callback = encoding;
                encoding = undefined;
            }
            let data;
            if (typeof chunk === "string") data = encoding === undefined || lib.normalizeEncoding(encoding) === "utf8" ? wellFormed(chunk) : lib.encode(chunk, encoding);
            else if (chunk instanceof Uint8Array) data = chunk;
            else throw lib.invalidArgType("chunk", "of type string or an instance of Buffer or Uint8Array", chunk);
            native.writeRaw(fd, data);
            if (typeof callback === "function") lib.later(() => callback(null));
            return true;
        };
        stream.end = function (chunk = undefined, encoding = undefined, callback = undefined) {
            if (typeof chunk === "function") callback = chunk;
            else if (chunk !== undefined && chunk !== null) stream.write(chunk, encoding);
            if (typeof encoding === "function") callback = encoding;
            if (typeof callback === "function") lib.later(callback);
            return stream;
        };
        stream.cork = stream.uncork = function () {};
        stream.getColorDepth = () => 1;
        stream.hasColors = () => false;
        return stream;
    }
    const stdout = writer(STDOUT);
    const stderr = writer(STDERR);
    lib.stdout = stdout;
    lib.stderr = stderr;
    let stdin = null;

    function chdir(directory) {
        if (typeof directory !== "string") throw lib.invalidArgType("directory", "of type string", directory);
        const target = lib.path.resolve(directory);
        const raw = native.fsStat(target, true);
        const code = raw.error !== undefined ? raw.error : raw.value.kind !== "dir" ? "ENOTDIR" : undefined;
        if (code !== undefined) {
            const e = lib.nodeError(ErrorCtor, code, code + ": process.chdir: " + (code === "ENOENT" ? "no such file or directory" : "not a directory") + ", chdir " + cwd + " -> '" + directory + "'");
            e.syscall = "chdir";
            e.path = cwd;
            e.dest = directory;
            throw e;
        }
        cwd = target;
    }

    function exit(code = undefined) {
        if (code !== undefined) exitCode = checkCode(code);
        const final = (exitCode === undefined ? 0 : exitCode) & 0xff;
        if (!exiting) {
            exiting = true;
            process.emit("exit", final);
        }
        native.exit(final);
    }

    function hrtime(previous = undefined) {
        const ns = mathRound(now() * 1e6);
        let seconds = mathFloor(ns / 1e9);
        let nanos = ns - seconds * 1e9;
        if (previous !== undefined) {
            seconds -= previous[0];
            nanos -= previous[1];
            if (nanos < 0) {
                seconds--;
                nanos += 1e9;
            }
        }
        return [seconds, nanos];
    }
    hrtime.bigint = () => BigIntCtor(mathRound(now() * 1e6));

    function memoryUsage() {
        return { rss: 0, heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
    }
    memoryUsage.rss = () => 0;

    function unavailable(what) {
        return function () {
            throw lib.nodeError(ErrorCtor, "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", "process." + what + "() is not available in this sandbox (no processes or signals)");
        };
    }

    const values = {
        argv: ["/usr/bin/node"],
        argv0: "node",
        execArgv: [],
        execPath: "/usr/bin/node",
        title: "node",
        pid: 1,
        ppid: 0,
        platform: "linux",
        arch: "wasm32",
        version,
        versions,
        release: { name: "quickjs-ng" },
        config: { variables: {} },
        features: {},
        stdout,
        stderr,
        exit,
        chdir,
        cwd: () => cwd,
        hrtime,
        memoryUsage,
        uptime: () => now() / 1000,
        cpuUsage: () => ({ user: 0, system: 0 }),
        resourceUsage: () => ({}),
        nextTick(callback, ...args) {
            if (typeof callback !== "function") throw lib.invalidArgType("callback", "of type function", callback);
            lib.later(() => reflectApply(callback, undefined, args));
        },
        emitWarning(warning, type = undefined) {
            const isError = warning instanceof ErrorCtor;
            const name = isError ? warning.name : typeof type === "string" ? type : type && type.type ? type.type : "Warning";
            const message = isError ? warning.message : StringCtor(warning);
            native.write(STDERR, wellFormed("(node:1) " + name + ": " + message));
        },
        umask: () => 0o22,
        getuid: () => 0,
        geteuid: () => 0,
        getgid: () => 0,
        getegid: () => 0,
        getgroups: () => [0],
        kill: unavailable("kill"),
        abort() { exit(134); },
        binding: unavailable("binding"),
        dlopen: unavailable("dlopen"),
    };
    const names = Object.keys(values);
    for (let i = 0; i < names.length; i++) {
        defineProperty(process, names[i], { value: values[names[i]], writable: true, configurable: true, enumerable: true });
    }
    defineProperty(process, "env", {
        get() {
            if (env === null) env = envObject(envFrom(native.environ()));
            return env;
        },
        set(v) { env = v; },
        configurable: true, enumerable: true,
    });
    defineProperty(process, "exitCode", {
        get() { return exitCode; },
        set(v) { exitCode = checkCode(v); },
        configurable: true, enumerable: true,
    });
    defineProperty(process, "stdin", {
        get() {
            if (stdin === null) stdin = new lib.Readable(() => lib.toBuffer(lib.readStdin()), 0);
            return stdin;
        },
        configurable: true, enumerable: true,
    });
    defineProperty(process, Symbol.toStringTag, { value: "process", configurable: true });

    // Standard input's bytes (what is left of them).
    lib.readStdin = function () {
        const raw = native.readStdin(false);
        if (raw.error !== undefined) throw lib.nodeError(ErrorCtor, raw.error, raw.error + ": read '/dev/stdin'");
        return raw.value;
    };

    // For node/main.js: the program's argv, environment and directory.
    lib.setupProcess = function (argv, environment, directory) {
        exitCode = undefined;
        exiting = false;
        process.removeAllListeners();
        process.argv = argv;
        process.argv0 = argv.length > 0 ? argv[0] : "node";
        env = envObject(envFrom(environment));
        cwd = "/work";
        chdir(directory);
    };

    // For the program runner (program.rs): the end of the program. `code`
    // is the exit code of an ending that sets it (1 after an uncaught
    // error), else undefined; 'exit' listeners may still change it.
    lib.finish = function (code) {
        if (code !== undefined && code !== null) exitCode = code;
        const final = (exitCode === undefined ? 0 : exitCode) & 0xff;
        if (!exiting) {
            exiting = true;
            process.emit("exit", final);
        }
        return (exitCode === undefined ? final : exitCode) & 0xff;
    };

    // For the program runner: an uncaught exception or unhandled rejection.
    // Returns true if a listener took it, else the text to print.
    lib.uncaught = function (value, kind) {
        if (kind === "unhandledRejection" && process.listenerCount("unhandledRejection") > 0) {
            process.emit("unhandledRejection", value, undefined);
            return true;
        }
        if (process.listenerCount("uncaughtException") > 0) {
            process.emit("uncaughtException", value, kind === "unhandledRejection" ? "unhandledRejection" : "uncaughtException");
            return true;
        }
        if (value instanceof ErrorCtor) return wellFormed(describeError(lib.hidePreludeFrames(value)));
        if (kind === "unhandledRejection") {
            return wellFormed("[UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"" + show(value) + "\".] {\n  code: 'ERR_UNHANDLED_REJECTION'\n}");
        }
        return wellFormed("Uncaught " + show(value));
    };

    // ---- console, the rest of Node's ---------------------------------------------

    const console = lib.console;
    const timers = new MapCtor();
    const counts = new MapCtor();
    const out = (text) => native.write(1, wellFormed(text));
    const extra = {
        dir: (v) => out(show(v)),
        dirxml: (...args) => reflectApply(console.log, console, args),
        table: (v) => out(show(v)),
        group: (...args) => { if (args.length > 0) reflectApply(console.log, console, args); },
        groupCollapsed: (...args) => { if (args.length > 0) reflectApply(console.log, console, args); },
        groupEnd: () => {},
        time: (label = "default") => { timers.set(StringCtor(label), now()); },
        timeLog: (label = "default", ...args) => {
            const start = timers.get(StringCtor(label));
            if (start === undefined) return;
            out(StringCtor(label) + ": " + (now() - start).toFixed(3) + "ms" + (args.length > 0 ? " " + lib.line(args) : ""));
        },
        timeEnd: (label = "default") => {
            const start = timers.get(StringCtor(label));
            if (start === undefined) return;
            timers.delete(StringCtor(label));
            out(StringCtor(label) + ": " + (now() - start).toFixed(3) + "ms");
        },
        count: (label = "default") => {
            const n = (counts.get(StringCtor(label)) || 0) + 1;
            counts.set(StringCtor(label), n);
            out(StringCtor(label) + ": " + n);
        },
        countReset: (label = "default") => { counts.delete(StringCtor(label)); },
    };
    for (const name of objectKeys(extra)) if (console[name] === undefined) console[name] = extra[name];

    // ---- the smaller modules, made on first use -----------------------------------

    let extras = null;
    const EXTRAS = ["util", "util/types", "assert", "assert/strict", "os", "readline", "readline/promises", "querystring", "string_decoder", "perf_hooks", "tty"];
    for (let i = 0; i < EXTRAS.length; i++) {
        const name = EXTRAS[i];
        lib.builtins[name] = () => {
            if (extras === null) extras = native.part("<prelude/extras>")(native, lib);
            return extras[name];
        };
    }

    lib.process = process;
    lib.defineGlobal("process", process);
    lib.builtins.process = () => process;
})
