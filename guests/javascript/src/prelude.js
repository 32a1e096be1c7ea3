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

    function isPlainObject(v) {
        if (v === null || typeof v !== "object") return false;
        if (isArray(v)) return true;
        const proto = getPrototypeOf(v);
        return proto === objectProto || proto === null || v.toString === objectToString;
    }

    // JSON, but values JSON drops or refuses get a readable stand-in.
    function jsonReplacer(_key, value) {
        switch (typeof value) {
            case "bigint": return StringCtor(value) + "n";
            case "function": return "[Function " + (value.name || "anonymous") + "]";
            case "symbol": return value.toString();
            case "undefined": return value;
            default: return value;
        }
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
        return typeof stack === "string" && stack.length > 0 ? head + "\n" + stack.replace(/\n$/, "") : head;
    }

    // One console argument.
    function show(v) {
        if (typeof v === "string") return v;
        if (v instanceof ErrorBase) return describeError(v);
        if (isPlainObject(v)) {
            try {
                const s = stringify(v, jsonReplacer);
                if (s !== undefined) return s;
            } catch (_) {
                // Cycles: fall through to String().
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
            const here = new ErrorBase();
            native.write(STDERR, line(["Trace:", ...args]) + "\n" + wellFormed(safeString(here.stack)).replace(/\n$/, ""));
        },
        assert(condition, ...args) {
            if (!condition) native.write(STDERR, line(["Assertion failed:", ...args]));
        },
    };
    defineProperty(globalThis, "console", { value: consoleObject, writable: true, configurable: true, enumerable: false });

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
                this.headers[key] = key in this.headers ? this.headers[key] + ", " + value : value;
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
            const v = this.headers[call(toLowerCase, StringCtor(name))];
            return v === undefined ? null : v;
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
        else entries = Object.entries(headers);
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
