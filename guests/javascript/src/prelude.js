// The JavaScript half of the guest: `console`, the `plimsoll` global and the
// helpers that render values for `eval`.
//
// This file is evaluated once, when the first `eval` creates the context. It
// is a single function expression; Rust calls it with an object of native
// functions and keeps what it returns. The natives are only reachable
// through this closure, never from a cell. Everything the helpers rely on is
// captured here, before any cell runs, so a cell that replaces
// `JSON.stringify` or `Array.prototype.join` breaks only its own code.
(function (native) {
    "use strict";

    const stringify = JSON.stringify;
    const parseJson = JSON.parse;
    const objectProto = Object.prototype;
    const objectToString = Object.prototype.toString;
    const getPrototypeOf = Object.getPrototypeOf;
    const defineProperty = Object.defineProperty;
    const freeze = Object.freeze;
    const isArray = Array.isArray;
    const isView = ArrayBuffer.isView;
    const toWellFormed = String.prototype.toWellFormed;
    const toLowerCase = String.prototype.toLowerCase;
    const stringReplace = String.prototype.replace;
    const fromEntries = Object.fromEntries;
    const objectEntries = Object.entries;
    const hasOwn = Object.hasOwn;
    const arrayFrom = Array.from;
    const MapCtor = Map;
    const SetCtor = Set;
    const ErrorBase = Error;
    const StringCtor = String;
    const Uint8ArrayCtor = Uint8Array;
    const ArrayBufferCtor = ArrayBuffer;
    const call = Function.prototype.call.bind(Function.prototype.call);

    // Natives take only well-formed strings: a lone surrogate has no UTF-8
    // encoding and would make the conversion to a Rust string fail.
    function wellFormed(s) {
        return call(toWellFormed, s);
    }

    function safeString(v) {
        try {
            return StringCtor(v);
        } catch (_) {
            try {
                return call(objectToString, v);
            } catch (_) {
                return "<unprintable value>";
            }
        }
    }

    // Objects that console shows as JSON: arrays, plain objects and class
    // instances that keep Object.prototype.toString.
    function isJsonish(v) {
        if (v === null || typeof v !== "object") return false;
        if (isArray(v)) return true;
        const proto = getPrototypeOf(v);
        if (proto === objectProto || proto === null) return true;
        try {
            return v.toString === objectToString;
        } catch (_) {
            return false;
        }
    }

    function functionLabel(f) {
        let name = "";
        try {
            name = f.name;
        } catch (_) {
            // A throwing `name` getter: keep it anonymous.
        }
        return "[Function" + (typeof name === "string" && name !== "" ? ": " + name : " (anonymous)") + "]";
    }

    // A JSON.stringify replacer that gives values JSON drops or refuses a
    // readable stand-in, and marks a reference back to an enclosing object
    // as "[Circular]" instead of failing.
    function jsonReplacer() {
        // The chain of objects from the root to the one being serialised.
        const ancestors = [];
        return function (_key, value) {
            switch (typeof value) {
                case "bigint": return StringCtor(value) + "n";
                case "function": return functionLabel(value);
                case "symbol": return value.toString();
                case "object": break;
                default: return value;
            }
            if (value === null) return value;
            while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop();
            for (let i = 0; i < ancestors.length; i++) {
                if (ancestors[i] === value) return "[Circular]";
            }
            ancestors.push(value);
            let standIn;
            if (value instanceof MapCtor) standIn = fromEntries(value);
            else if (value instanceof SetCtor) standIn = arrayFrom(value);
            else return value;
            // The stand-in is the holder of the Map's or Set's members: keep
            // it on the chain too, so a member pointing back is caught.
            ancestors.push(standIn);
            return standIn;
        };
    }

    // A value inside a Map or Set (`outer` holds the enclosing ones):
    // strings quoted, like JSON.
    function showInner(v, outer) {
        if (typeof v === "string") return stringify(v);
        for (let i = 0; i < outer.length; i++) {
            if (outer[i] === v) return "[Circular]";
        }
        return show(v, outer);
    }

    function describeError(e) {
        // `String(e)` is "Name: message"; QuickJS's `stack` holds only the
        // frames, one "    at ..." line each.
        const head = safeString(e);
        let stack;
        try {
            stack = e.stack;
        } catch (_) {
            stack = undefined;
        }
        return typeof stack === "string" && stack.length > 0 ? head + "\n" + call(stringReplace, stack, /\n$/, "") : head;
    }

    // Removes the prelude's own frames from an error's stack, so that an
    // error thrown by `plimsoll` points at the cell that made the call.
    function hidePreludeFrames(e) {
        try {
            if (typeof e.stack === "string") e.stack = call(stringReplace, e.stack, /^.*\(<prelude>:.*\n?/gm, "");
        } catch (_) {
            // A frozen or exotic error: leave its stack as it is.
        }
        return e;
    }

    // One console argument.
    function show(v, outer = []) {
        switch (typeof v) {
            case "string": return v;
            case "bigint": return StringCtor(v) + "n";
            case "function": return functionLabel(v);
        }
        if (v instanceof ErrorBase) return describeError(v);
        if (v instanceof MapCtor) {
            const inner = [...outer, v];
            let out = "Map(" + v.size + ") {";
            let first = true;
            for (const [key, value] of v) {
                out += (first ? "" : ", ") + showInner(key, inner) + " => " + showInner(value, inner);
                first = false;
            }
            return out + "}";
        }
        if (v instanceof SetCtor) {
            const inner = [...outer, v];
            let out = "Set(" + v.size + ") {";
            let first = true;
            for (const value of v) {
                out += (first ? "" : ", ") + showInner(value, inner);
                first = false;
            }
            return out + "}";
        }
        if (isJsonish(v)) {
            try {
                const s = stringify(v, jsonReplacer());
                if (s !== undefined) return s;
            } catch (_) {
                // A throwing getter or toJSON: fall through to String().
            }
        }
        return safeString(v);
    }

    function line(args) {
        let out = "";
        for (let i = 0; i < args.length; i++) {
            if (i > 0) out += " ";
            out += show(args[i]);
        }
        return wellFormed(out);
    }

    const STDOUT = 1;
    const STDERR = 2;
    const consoleObject = {
        log(...args) { native.write(STDOUT, line(args)); },
        info(...args) { native.write(STDOUT, line(args)); },
        debug(...args) { native.write(STDOUT, line(args)); },
        error(...args) { native.write(STDERR, line(args)); },
        warn(...args) { native.write(STDERR, line(args)); },
        trace(...args) {
            const here = hidePreludeFrames(new ErrorBase());
            native.write(STDERR, line(["Trace:", ...args]) + "\n" + wellFormed(call(stringReplace, safeString(here.stack), /\n$/, "")));
        },
        assert(condition, ...args) {
            if (!condition) native.write(STDERR, line(["Assertion failed:", ...args]));
        },
    };
    defineProperty(globalThis, "console", { value: consoleObject, writable: true, configurable: true, enumerable: false });

    // Math.random from a generator seeded per instance. QuickJS seeds its
    // own once, when the context is created; in a pre-initialized component
    // that happens at build time, and every run would draw the same numbers.
    const random = native.random;
    defineProperty(Math, "random", {
        value: { random() { return random(); } }.random,
        writable: true, configurable: true, enumerable: false,
    });

    // ---- plimsoll: the broker ------------------------------------------------

    class BrokerError extends ErrorBase {
        constructor(message, reason) {
            super(message);
            // The host's explanation (Denied, UpstreamError) or the message.
            this.reason = reason;
        }
    }
    defineProperty(BrokerError.prototype, "name", { value: "BrokerError", writable: true, configurable: true });

    function errorClass(name, describe) {
        const cls = class extends BrokerError {
            constructor(reason) {
                const message = describe(reason);
                super(message, reason === undefined ? message : reason);
            }
        };
        defineProperty(cls, "name", { value: name });
        defineProperty(cls.prototype, "name", { value: name, writable: true, configurable: true });
        return cls;
    }

    const errors = {
        Denied: errorClass("Denied", (r) => "the grant does not allow this call: " + r),
        BudgetExhausted: errorClass("BudgetExhausted", () => "the run has used its whole call budget"),
        RequestTooLarge: errorClass("RequestTooLarge", () => "the request body is larger than the request cap"),
        ResponseTooLarge: errorClass("ResponseTooLarge", () => "the upstream answered with more than the response cap"),
        Timeout: errorClass("Timeout", () => "the upstream did not answer within the per-call timeout"),
        UpstreamError: errorClass("UpstreamError", (r) => "the upstream failed: " + r),
    };

    class Response {
        constructor(raw) {
            /** HTTP status code; redirects are not followed. */
            this.status = raw.status;
            /** Headers as [name, value] pairs, in the order received. */
            this.headerList = raw.headers;
            /** Headers by lower-case name; repeated headers joined with ", ". */
            this.headers = {};
            for (const [name, value] of raw.headers) {
                const key = call(toLowerCase, name);
                // defineProperty, not assignment: a header called
                // "__proto__" must become a property like any other.
                const joined = hasOwn(this.headers, key) ? this.headers[key] + ", " + value : value;
                defineProperty(this.headers, key, { value: joined, writable: true, enumerable: true, configurable: true });
            }
            /** The body as text (invalid UTF-8 replaced by U+FFFD). */
            this.body = raw.text;
            /** The body as bytes. */
            this.bytes = raw.bytes;
        }
        get ok() { return this.status >= 200 && this.status < 300; }
        text() { return this.body; }
        json() { return parseJson(this.body); }
        header(name) {
            const key = call(toLowerCase, StringCtor(name));
            return hasOwn(this.headers, key) ? this.headers[key] : null;
        }
    }

    function requireString(what, v) {
        if (typeof v !== "string") throw new TypeError(what + " must be a string, not " + (v === null ? "null" : typeof v));
        return wellFormed(v);
    }

    // Accepts a plain object {name: value}, an array of [name, value] pairs,
    // or anything with entries() (a Map).
    function headerPairs(headers) {
        const pairs = [];
        if (headers === undefined || headers === null) return pairs;
        if (typeof headers !== "object") throw new TypeError("headers must be an object or an array of [name, value] pairs");
        let entries;
        if (isArray(headers)) entries = headers;
        else if (typeof headers.entries === "function" && getPrototypeOf(headers) !== objectProto) entries = headers.entries();
        else entries = objectEntries(headers);
        for (const entry of entries) {
            if (!isArray(entry) || entry.length !== 2) throw new TypeError("each header must be a [name, value] pair");
            pairs.push([wellFormed(StringCtor(entry[0])), wellFormed(StringCtor(entry[1]))]);
        }
        return pairs;
    }

    function hasHeader(pairs, name) {
        for (const [k] of pairs) if (call(toLowerCase, k) === name) return true;
        return false;
    }

    // The body as a string or a Uint8Array, the two shapes the native takes.
    function encodeBody(body, pairs) {
        if (body === undefined || body === null) return "";
        if (typeof body === "string") return wellFormed(body);
        if (body instanceof Uint8ArrayCtor) return body;
        if (body instanceof ArrayBufferCtor) return new Uint8ArrayCtor(body);
        if (isView(body)) return new Uint8ArrayCtor(body.buffer, body.byteOffset, body.byteLength);
        const json = stringify(body);
        if (json === undefined) throw new TypeError("the body cannot be encoded as JSON");
        if (!hasHeader(pairs, "content-type")) pairs.push(["content-type", "application/json"]);
        return wellFormed(json);
    }

    async function brokerCall(api, method, path, body, headers) {
        try {
            return callOnce(api, method, path, body, headers);
        } catch (e) {
            throw hidePreludeFrames(e);
        }
    }

    function callOnce(api, method, path, body, headers) {
        api = requireString("api", api);
        method = requireString("method", method);
        path = requireString("path", path);
        const pairs = headerPairs(headers);
        const bytes = encodeBody(body, pairs);
        // The host answers synchronously; the promise settles on the next
        // turn of the job queue, which `eval` drains before it returns.
        const raw = native.call(api, method, path, pairs, bytes);
        if (raw.error !== undefined) {
            const cls = errors[raw.error];
            throw cls ? new cls(raw.reason) : new BrokerError(raw.error + ": " + raw.reason, raw.reason);
        }
        return new Response(raw);
    }

    const plimsoll = {
        call: brokerCall,
        get: (api, path, headers) => brokerCall(api, "GET", path, undefined, headers),
        del: (api, path, headers) => brokerCall(api, "DELETE", path, undefined, headers),
        delete: (api, path, headers) => brokerCall(api, "DELETE", path, undefined, headers),
        post: (api, path, body, headers) => brokerCall(api, "POST", path, body, headers),
        put: (api, path, body, headers) => brokerCall(api, "PUT", path, body, headers),
        patch: (api, path, body, headers) => brokerCall(api, "PATCH", path, body, headers),
        Response,
        BrokerError,
        ...errors,
    };
    defineProperty(globalThis, "plimsoll", { value: freeze(plimsoll), writable: true, configurable: true, enumerable: false });

    // ---- fs: the workspace, as Node's synchronous calls ---------------------

    function fsPath(path) {
        if (typeof path !== "string") throw new TypeError("the path must be a string");
        return wellFormed(path);
    }

    function fsData(data) {
        if (typeof data === "string") return wellFormed(data);
        if (data instanceof Uint8ArrayCtor) return data;
        if (data instanceof ArrayBufferCtor) return new Uint8ArrayCtor(data);
        if (isView(data)) return new Uint8ArrayCtor(data.buffer, data.byteOffset, data.byteLength);
        return wellFormed(safeString(data));
    }

    function fsResult(raw, syscall, path) {
        if (raw.error !== undefined) {
            const e = new ErrorBase(raw.error + ": " + syscall + " '" + path + "'");
            e.code = raw.error;
            e.syscall = syscall;
            e.path = path;
            throw hidePreludeFrames(e);
        }
        return raw.value;
    }

    function encodingOf(options) {
        const enc = typeof options === "string" ? options : (options && options.encoding);
        if (enc === undefined || enc === null) return false;
        if (enc === "utf8" || enc === "utf-8") return true;
        throw new TypeError("only the utf8 encoding is supported");
    }

    const fs = {
        readFileSync(path, options) {
            path = fsPath(path);
            return fsResult(native.fsRead(path, encodingOf(options)), "open", path);
        },
        writeFileSync(path, data) {
            path = fsPath(path);
            fsResult(native.fsWrite(path, fsData(data), false), "open", path);
        },
        appendFileSync(path, data) {
            path = fsPath(path);
            fsResult(native.fsWrite(path, fsData(data), true), "open", path);
        },
        existsSync(path) {
            return typeof path === "string" && native.fsExists(wellFormed(path));
        },
        readdirSync(path) {
            path = fsPath(path === undefined ? "." : path);
            return fsResult(native.fsList(path), "scandir", path);
        },
        mkdirSync(path, options) {
            path = fsPath(path);
            fsResult(native.fsMkdir(path, !!(options && options.recursive)), "mkdir", path);
        },
        unlinkSync(path) {
            path = fsPath(path);
            fsResult(native.fsRemove(path), "unlink", path);
        },
    };
    defineProperty(globalThis, "fs", { value: freeze(fs), writable: true, configurable: true, enumerable: false });

    // ---- helpers for Rust ------------------------------------------------------

    return {
        // The completion value as `eval` returns it: JSON, "" for undefined,
        // String(value) where JSON has no encoding.
        render(value) {
            if (value === undefined) return "";
            let json;
            try {
                json = stringify(value);
            } catch (_) {
                json = undefined;
            }
            return wellFormed(json === undefined ? safeString(value) : json);
        },
        // An uncaught exception or rejection reason, with its stack.
        describe(value) {
            if (value instanceof ErrorBase) return wellFormed(describeError(value));
            return wellFormed(show(value));
        },
    };
})
