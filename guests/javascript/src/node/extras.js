// node/extras.js: the smaller built-in modules, each the part of Node's that
// programs commonly use: `util` (format, inspect, promisify, inherits,
// types, isDeepStrictEqual), `assert` (and `assert/strict`), `os`,
// `readline` (and `readline/promises`), `querystring`, `string_decoder`,
// `perf_hooks`, `tty`.
//
// Unlike the other node/*.js files this one is evaluated only when a
// program first requires one of these (see EXTRAS in node/process.js), so
// an engine that never does carries none of it. Returns the modules by name.
(function (native, lib) {
    "use strict";

    const modules = {};

    const { call, show, hidePreludeFrames, wellFormed } = lib;
    const ErrorCtor = Error;
    const StringCtor = String;
    const NumberCtor = Number;
    const PromiseCtor = Promise;
    const MapCtor = Map;
    const SetCtor = Set;
    const DateCtor = Date;
    const RegExpCtor = RegExp;
    const objectIs = Object.is;
    const objectKeys = Object.keys;
    const getPrototypeOf = Object.getPrototypeOf;
    const setPrototypeOf = Object.setPrototypeOf;
    const defineProperty = Object.defineProperty;
    const isArray = Array.isArray;
    const isView = ArrayBuffer.isView;
    const stringify = JSON.stringify;
    const reflectApply = Reflect.apply;
    const regexpTest = RegExp.prototype.test;
    const stringReplace = String.prototype.replace;
    const stringSplit = String.prototype.split;
    const stringIncludes = String.prototype.includes;
    const arrayPush = Array.prototype.push;
    const arrayJoin = Array.prototype.join;
    const dateGetTime = Date.prototype.getTime;
    const now = performance.now.bind(performance);
    const performanceObject = performance;

    // ---- util ----------------------------------------------------------------

    function inspect(value, _options = undefined) {
        if (typeof value === "string") return call(stringIncludes, value, "'") ? stringify(value) : "'" + value + "'";
        return show(value);
    }
    inspect.custom = Symbol.for("nodejs.util.inspect.custom");
    inspect.defaultOptions = {};

    function format(fmt, ...args) {
        if (typeof fmt !== "string") {
            const parts = [];
            for (const v of [fmt, ...args]) call(arrayPush, parts, typeof v === "string" ? v : inspect(v));
            return call(arrayJoin, parts, " ");
        }
        let i = 0;
        let out = call(stringReplace, fmt, /%[sdifjoOc%]/g, (spec) => {
            if (spec === "%%") return "%";
            if (i >= args.length) return spec;
            const v = args[i++];
            switch (spec) {
                case "%s": return typeof v === "string" ? v : typeof v === "bigint" ? StringCtor(v) + "n" : typeof v === "object" && v !== null ? inspect(v) : StringCtor(v);
                case "%d": return typeof v === "bigint" ? StringCtor(v) + "n" : typeof v === "object" ? "NaN" : StringCtor(NumberCtor(v));
                case "%i": return typeof v === "bigint" ? StringCtor(v) + "n" : StringCtor(parseInt(v, 10));
                case "%f": return StringCtor(parseFloat(v));
                case "%j":
                    try {
                        return stringify(v);
                    } catch (_) {
                        return "[Circular]";
                    }
                case "%c": return "";
                default: return inspect(v);
            }
        });
        for (; i < args.length; i++) out += " " + (typeof args[i] === "string" ? args[i] : inspect(args[i]));
        return out;
    }

    const kCustomPromisify = Symbol.for("nodejs.util.promisify.custom");
    function promisify(original) {
        if (typeof original !== "function") throw lib.invalidArgType("original", "of type function", original);
        if (typeof original[kCustomPromisify] === "function") return original[kCustomPromisify];
        return function (...args) {
            return new PromiseCtor((resolve, reject) => {
                reflectApply(original, this, [...args, (err, value) => (err ? reject(err) : resolve(value))]);
            });
        };
    }
    promisify.custom = kCustomPromisify;

    function callbackify(original) {
        return function (...args) {
            const callback = args.pop();
            PromiseCtor.resolve(reflectApply(original, this, args)).then((v) => callback(null, v), (e) => callback(e));
        };
    }

    function inherits(ctor, superCtor) {
        defineProperty(ctor, "super_", { value: superCtor, writable: true, configurable: true });
        setPrototypeOf(ctor.prototype, superCtor.prototype);
    }

    function deprecate(fn, message) {
        let warned = false;
        return function (...args) {
            if (!warned) {
                warned = true;
                lib.process.emitWarning(message, "DeprecationWarning");
            }
            return reflectApply(fn, this, args);
        };
    }

    // Node's deep equality; `strict` compares primitives with Object.is
    // and also prototypes.
    function deepEqual(a, b, strict, seen = []) {
        if (strict ? objectIs(a, b) : a == b || (a !== a && b !== b)) return true;
        if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
        if (strict && getPrototypeOf(a) !== getPrototypeOf(b)) return false;
        for (let i = 0; i < seen.length; i++) if (seen[i][0] === a && seen[i][1] === b) return true;
        seen = [...seen, [a, b]];
        if (a instanceof DateCtor || b instanceof DateCtor) {
            if (!(a instanceof DateCtor && b instanceof DateCtor) || call(dateGetTime, a) !== call(dateGetTime, b)) return false;
        } else if (a instanceof RegExpCtor || b instanceof RegExpCtor) {
            if (!(a instanceof RegExpCtor && b instanceof RegExpCtor) || StringCtor(a) !== StringCtor(b)) return false;
        } else if (isView(a) || isView(b)) {
            if (!isView(a) || !isView(b) || a.byteLength !== b.byteLength) return false;
            const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
            const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
            for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
            return true;
        } else if (a instanceof ErrorCtor || b instanceof ErrorCtor) {
            if (a.name !== b.name || a.message !== b.message) return false;
        }
        if (isArray(a) !== isArray(b)) return false;
        if (a instanceof MapCtor || b instanceof MapCtor) {
            if (!(a instanceof MapCtor && b instanceof MapCtor) || a.size !== b.size) return false;
            for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k), strict, seen)) return false;
        } else if (a instanceof SetCtor || b instanceof SetCtor) {
            if (!(a instanceof SetCtor && b instanceof SetCtor) || a.size !== b.size) return false;
            outer: for (const v of a) {
                if (b.has(v)) continue;
                if (typeof v === "object" && v !== null) {
                    for (const w of b) if (deepEqual(v, w, strict, seen)) continue outer;
                }
                return false;
            }
        }
        const ka = objectKeys(a);
        const kb = objectKeys(b);
        if (ka.length !== kb.length) return false;
        for (let i = 0; i < ka.length; i++) {
            if (!Object.hasOwn(b, ka[i]) || !deepEqual(a[ka[i]], b[ka[i]], strict, seen)) return false;
        }
        return true;
    }

    const types = {
        isPromise: (v) => v instanceof PromiseCtor,
        isDate: (v) => v instanceof DateCtor,
        isRegExp: (v) => v instanceof RegExpCtor,
        isMap: (v) => v instanceof MapCtor,
        isSet: (v) => v instanceof SetCtor,
        isNativeError: (v) => v instanceof ErrorCtor,
        isTypedArray: (v) => isView(v) && !(v instanceof DataView),
        isUint8Array: (v) => v instanceof Uint8Array,
        isArrayBuffer: (v) => v instanceof ArrayBuffer,
        isAsyncFunction: (v) => typeof v === "function" && v[Symbol.toStringTag] === "AsyncFunction",
        isGeneratorFunction: (v) => typeof v === "function" && v[Symbol.toStringTag] === "GeneratorFunction",
    };

    const util = {
        format, inspect, promisify, callbackify, inherits, deprecate, types,
        isDeepStrictEqual: (a, b) => deepEqual(a, b, true),
        isArray,
        stripVTControlCharacters: (s) => call(stringReplace, s, /\u001b\[[0-9;]*[A-Za-z]/g, ""),
        styleText: (_format, text) => text,
        formatWithOptions: (_options, ...args) => reflectApply(format, undefined, args),
        TextEncoder: globalThis.TextEncoder,
        TextDecoder: globalThis.TextDecoder,
    };
    modules.util = util;
    modules["util/types"] = types;

    // ---- assert ----------------------------------------------------------------

    class AssertionError extends ErrorCtor {
        constructor(options) {
            super(options.message);
            this.generatedMessage = !options.userMessage;
            this.code = "ERR_ASSERTION";
            this.actual = options.actual;
            this.expected = options.expected;
            this.operator = options.operator;
        }
    }
    defineProperty(AssertionError.prototype, "name", { value: "AssertionError", writable: true, configurable: true });

    function raise(message, actual, expected, operator, generated) {
        if (message instanceof ErrorCtor) throw message;
        const userMessage = message !== undefined;
        throw hidePreludeFrames(new AssertionError({ message: userMessage ? StringCtor(message) : generated, actual, expected, operator, userMessage }));
    }

    function ok(...args) {
        if (args.length === 0) raise(undefined, undefined, true, "==", "No value argument passed to `assert.ok()`");
        if (!args[0]) raise(args[1], args[0], true, "==", "The expression evaluated to a falsy value:\n\n  assert.ok(" + inspect(args[0]) + ")\n");
    }

    const diff = (a, b, what) => "Expected values to be " + what + ":\n+ actual - expected\n\n+ " + inspect(a) + "\n- " + inspect(b);

    function matches(error, expected) {
        if (expected === undefined) return true;
        if (expected instanceof RegExpCtor) return call(regexpTest, expected, StringCtor(error));
        if (typeof expected === "function") {
            if (expected.prototype !== undefined && error instanceof expected) return true;
            if (ErrorCtor.isPrototypeOf(expected) || expected === ErrorCtor) return false;
            return reflectApply(expected, undefined, [error]) === true;
        }
        if (typeof expected === "object" && expected !== null) {
            for (const key of objectKeys(expected)) {
                const want = expected[key];
                const have = error === null || error === undefined ? undefined : error[key];
                if (want instanceof RegExpCtor && typeof have === "string") {
                    if (!call(regexpTest, want, have)) return false;
                } else if (!deepEqual(have, want, true)) {
                    return false;
                }
            }
            return true;
        }
        return true;
    }

    function checkThrown(thrown, error, expected, message, operator) {
        if (!thrown) raise(typeof expected === "string" ? expected : message, undefined, expected, operator, "Missing expected " + (operator === "rejects" ? "rejection" : "exception") + ".");
        if (typeof expected === "string") return;
        if (!matches(error, expected)) {
            if (typeof expected === "function" && expected.prototype !== undefined && !(error instanceof expected) && (ErrorCtor.isPrototypeOf(expected) || expected === ErrorCtor)) throw error;
            raise(message, error, expected, operator, "The error did not match the expected value: " + inspect(error));
        }
    }

    const assert = function assert(...args) {
        reflectApply(ok, undefined, args);
    };
    const methods = {
        ok,
        fail(message = "Failed") { raise(message, undefined, undefined, "fail", "Failed"); },
        equal(a, b, message) { if (!(a == b || (a !== a && b !== b))) raise(message, a, b, "==", inspect(a) + " == " + inspect(b)); },
        notEqual(a, b, message) { if (a == b || (a !== a && b !== b)) raise(message, a, b, "!=", inspect(a) + " != " + inspect(b)); },
        strictEqual(a, b, message) { if (!objectIs(a, b)) raise(message, a, b, "strictEqual", "Expected values to be strictly equal:\n\n" + inspect(a) + " !== " + inspect(b) + "\n"); },
        notStrictEqual(a, b, message) { if (objectIs(a, b)) raise(message, a, b, "notStrictEqual", "Expected \"actual\" to be strictly unequal to: " + inspect(b)); },
        deepEqual(a, b, message) { if (!deepEqual(a, b, false)) raise(message, a, b, "deepEqual", diff(a, b, "loosely deep-equal")); },
        notDeepEqual(a, b, message) { if (deepEqual(a, b, false)) raise(message, a, b, "notDeepEqual", "Expected \"actual\" not to be loosely deep-equal to: " + inspect(b)); },
        deepStrictEqual(a, b, message) { if (!deepEqual(a, b, true)) raise(message, a, b, "deepStrictEqual", diff(a, b, "strictly deep-equal")); },
        notDeepStrictEqual(a, b, message) { if (deepEqual(a, b, true)) raise(message, a, b, "notDeepStrictEqual", "Expected \"actual\" not to be strictly deep-equal to: " + inspect(b)); },
        throws(fn, expected = undefined, message = undefined) {
            let thrown = false;
            let error;
            try {
                fn();
            } catch (e) {
                thrown = true;
                error = e;
            }
            checkThrown(thrown, error, expected, message, "throws");
        },
        doesNotThrow(fn, message = undefined) {
            try {
                fn();
            } catch (e) {
                raise(typeof message === "string" ? message : undefined, e, undefined, "doesNotThrow", "Got unwanted exception.\nActual message: \"" + (e && e.message) + "\"");
            }
        },
        async rejects(promise, expected = undefined, message = undefined) {
            let thrown = false;
            let error;
            try {
                await (typeof promise === "function" ? promise() : promise);
            } catch (e) {
                thrown = true;
                error = e;
            }
            checkThrown(thrown, error, expected, message, "rejects");
        },
        async doesNotReject(promise, message = undefined) {
            try {
                await (typeof promise === "function" ? promise() : promise);
            } catch (e) {
                raise(typeof message === "string" ? message : undefined, e, undefined, "doesNotReject", "Got unwanted rejection.\nActual message: \"" + (e && e.message) + "\"");
            }
        },
        match(s, re, message) { if (typeof s !== "string" || !call(regexpTest, re, s)) raise(message, s, re, "match", "The input did not match the regular expression " + StringCtor(re) + ". Input:\n\n" + inspect(s) + "\n"); },
        doesNotMatch(s, re, message) { if (typeof s === "string" && call(regexpTest, re, s)) raise(message, s, re, "doesNotMatch", "The input was expected to not match the regular expression " + StringCtor(re) + ". Input:\n\n" + inspect(s) + "\n"); },
        ifError(value) { if (value !== null && value !== undefined) throw value; },
        AssertionError,
    };
    for (const name of objectKeys(methods)) assert[name] = methods[name];
    const strict = function strict(...args) {
        reflectApply(ok, undefined, args);
    };
    for (const name of objectKeys(methods)) strict[name] = methods[name];
    strict.equal = methods.strictEqual;
    strict.notEqual = methods.notStrictEqual;
    strict.deepEqual = methods.deepStrictEqual;
    strict.notDeepEqual = methods.notDeepStrictEqual;
    strict.strict = strict;
    assert.strict = strict;
    modules.assert = assert;
    modules["assert/strict"] = strict;

    // ---- os ----------------------------------------------------------------------

    const MEMORY = 192 * 1024 * 1024;
    const os = {
        EOL: "\n",
        devNull: "/dev/null",
        platform: () => "linux",
        type: () => "Linux",
        arch: () => "wasm32",
        machine: () => "wasm32",
        release: () => "",
        version: () => lib.process.version,
        hostname: () => "sandbox",
        homedir: () => lib.process.env.HOME || "/work",
        tmpdir: () => "/tmp",
        endianness: () => "LE",
        cpus: () => [{ model: "wasm32", speed: 0, times: { user: 0, nice: 0, sys: 0, idle: 0, irq: 0 } }],
        availableParallelism: () => 1,
        totalmem: () => MEMORY,
        freemem: () => MEMORY,
        uptime: () => now() / 1000,
        loadavg: () => [0, 0, 0],
        networkInterfaces: () => ({}),
        userInfo: () => ({ uid: 0, gid: 0, username: "root", homedir: "/work", shell: null }),
        getPriority: () => 0,
        setPriority() {},
        constants: { signals: {}, errno: {}, priority: {} },
    };
    modules.os = os;

    // ---- readline ----------------------------------------------------------------

    const LINE_BREAK = /\r?\n/;

    // Reads its input whole (standard input or a file stream) and gives it
    // out line by line: 'line' events then 'close', `for await`, question().
    class Interface extends lib.EventEmitter {
        #input;
        #output;
        #lines = null;
        #at = 0;
        #closed = false;
        #flowing = false;
        #promises;
        constructor(input, output, promises) {
            super();
            this.#input = input;
            this.#output = output;
            this.#promises = promises;
            this.terminal = false;
            this.line = "";
        }
        #load() {
            if (this.#lines !== null) return;
            const input = this.#input;
            const text = input && typeof input.takeText === "function" ? input.takeText() : "";
            const lines = call(stringSplit, text, LINE_BREAK);
            if (lines.length > 0 && lines[lines.length - 1] === "") lines.length -= 1;
            this.#lines = lines;
        }
        #next() {
            this.#load();
            return this.#at < this.#lines.length ? this.#lines[this.#at++] : null;
        }
        #flow() {
            if (this.#flowing) return;
            this.#flowing = true;
            lib.later(() => {
                for (let line = this.#next(); line !== null && !this.#closed; line = this.#next()) this.emit("line", line);
                this.close();
            });
        }
        on(name, listener) {
            super.on(name, listener);
            if (name === "line") this.#flow();
            return this;
        }
        addListener(name, listener) { return this.on(name, listener); }
        once(name, listener) {
            super.once(name, listener);
            if (name === "line") this.#flow();
            return this;
        }
        close() {
            if (this.#closed) return;
            this.#closed = true;
            this.emit("close");
        }
        question(query, options = undefined, callback = undefined) {
            if (typeof options === "function") callback = options;
            if (this.#output && typeof this.#output.write === "function") this.#output.write(StringCtor(query));
            const line = this.#next();
            if (this.#promises) return PromiseCtor.resolve(line === null ? "" : line);
            if (typeof callback === "function") lib.later(() => callback(line === null ? "" : line));
        }
        prompt() {}
        setPrompt() {}
        getPrompt() { return ""; }
        write() {}
        pause() { return this; }
        resume() { return this; }
        [Symbol.asyncIterator]() {
            const self = this;
            return {
                async next() {
                    const line = self.#closed ? null : self.#next();
                    if (line === null) {
                        self.close();
                        return { value: undefined, done: true };
                    }
                    return { value: line, done: false };
                },
                async return() {
                    self.close();
                    return { value: undefined, done: true };
                },
                [Symbol.asyncIterator]() { return this; },
            };
        }
    }

    function createInterface(promises) {
        return function (input, output = undefined) {
            if (input !== null && typeof input === "object" && input.input !== undefined) return new Interface(input.input, input.output, promises);
            return new Interface(input, output, promises);
        };
    }
    modules.readline = ({ createInterface: createInterface(false), Interface, clearLine() { return true; }, cursorTo() { return true; }, emitKeypressEvents() {} });
    modules["readline/promises"] = ({ createInterface: createInterface(true), Interface });

    // ---- querystring, string_decoder, perf_hooks, tty ----------------------------

    modules.querystring = ({
        parse(s, sep = "&", eq = "=") {
            const out = {};
            if (typeof s !== "string" || s === "") return out;
            for (const part of call(stringSplit, s, sep)) {
                if (part === "") continue;
                const at = part.indexOf(eq);
                const key = at >= 0 ? part.slice(0, at) : part;
                const value = at >= 0 ? part.slice(at + eq.length) : "";
                const k = new URLSearchParams("a=" + encodeURIComponent(key).replace(/%2B/g, "+")).get("a");
                const v = new URLSearchParams("a=" + value).get("a");
                if (!Object.hasOwn(out, k)) out[k] = v;
                else if (isArray(out[k])) call(arrayPush, out[k], v);
                else out[k] = [out[k], v];
            }
            return out;
        },
        stringify(obj, sep = "&", eq = "=") {
            const parts = [];
            for (const key of objectKeys(obj || {})) {
                const values = isArray(obj[key]) ? obj[key] : [obj[key]];
                for (const v of values) call(arrayPush, parts, encodeURIComponent(key) + eq + encodeURIComponent(v === undefined || v === null ? "" : StringCtor(v)));
            }
            return call(arrayJoin, parts, sep);
        },
        escape: (s) => encodeURIComponent(s),
        unescape: (s) => decodeURIComponent(s),
    });

    class StringDecoder {
        #pending = new Uint8Array(0);
        constructor(encoding = "utf8") {
            this.encoding = lib.normalizeEncoding(encoding);
        }
        write(bytes) {
            if (typeof bytes === "string") return bytes;
            let all = bytes;
            if (this.#pending.length > 0) {
                all = new Uint8Array(this.#pending.length + bytes.length);
                all.set(this.#pending);
                all.set(bytes, this.#pending.length);
            }
            let end = all.length;
            if (this.encoding === "utf8") {
                // Keep an incomplete UTF-8 sequence at the end for later.
                let back = end - 1;
                while (back >= 0 && back > end - 4 && (all[back] & 0xc0) === 0x80) back--;
                if (back >= 0) {
                    const lead = all[back];
                    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
                    if (end - back < need) end = back;
                }
            }
            this.#pending = all.slice(end);
            return lib.decode(all.subarray(0, end), this.encoding);
        }
        end(bytes = undefined) {
            let out = bytes === undefined ? "" : this.write(bytes);
            if (this.#pending.length > 0) out += lib.decode(this.#pending, this.encoding);
            this.#pending = new Uint8Array(0);
            return out;
        }
    }
    modules.string_decoder = { StringDecoder };
    modules.perf_hooks = { performance: performanceObject };
    modules.tty = { isatty: () => false };

    return modules;
})
