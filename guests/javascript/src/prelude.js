// The JavaScript half of the guest: `console`, the `plimsoll` global,
// `fetch` and its companions (`Headers`, `Request`, `Response`,
// `AbortController`, `AbortSignal`), and the helpers that render values
// for `eval`. Node's globals and modules (`process`, `require`, `fs`, ...)
// are built on top of it by `node/*.js`, which get the internals in `lib`.
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
    // For fetch and its companions.
    const charCodeAt = String.prototype.charCodeAt;
    const stringSlice = String.prototype.slice;
    const stringIndexOf = String.prototype.indexOf;
    const toUpperCase = String.prototype.toUpperCase;
    const fromCharCode = String.fromCharCode;
    const reflectApply = Reflect.apply;
    const arrayPush = Array.prototype.push;
    const arraySort = Array.prototype.sort;
    const uint8Slice = Uint8Array.prototype.slice;
    const regexpExec = RegExp.prototype.exec;
    const typedArrayBuffer = Object.getOwnPropertyDescriptor(getPrototypeOf(Uint8Array.prototype), "buffer").get;
    const arrayBufferSlice = ArrayBuffer.prototype.slice;
    const PromiseCtor = Promise;
    const promiseThen = Promise.prototype.then;
    const promiseReject = Promise.reject;
    const promiseResolve = Promise.resolve;
    const resolvedPromise = Promise.resolve();
    const WeakMapCtor = WeakMap;
    const weakMapGet = WeakMap.prototype.get;
    const weakMapSet = WeakMap.prototype.set;
    const mapGet = Map.prototype.get;
    const mapSet = Map.prototype.set;
    const mapClear = Map.prototype.clear;
    const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size").get;
    const TypeErrorCtor = TypeError;
    const RangeErrorCtor = RangeError;
    const dateNow = Date.now;
    const mathCeil = Math.ceil;
    const mathMin = Math.min;
    const mathTrunc = Math.trunc;
    const numberIsFinite = Number.isFinite;
    const symbolIterator = Symbol.iterator;
    const symbolToStringTag = Symbol.toStringTag;
    // QuickJS-ng has DOMException (JS_NewContext adds it with atob/btoa);
    // the fallback is for an engine without it.
    const DOMExceptionCtor = typeof DOMException === "function" ? DOMException : undefined;

    // The internal state of every Headers, Request, Response, AbortSignal
    // and AbortController, keyed by the object: `{kind, ...}`. Cells only
    // see the public methods, which read it through `slotOf`.
    const slots = new WeakMapCtor();

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

    function describeError(e, depth = 0) {
        // `String(e)` is "Name: message"; QuickJS's `stack` holds only the
        // frames, one "    at ..." line each.
        const head = safeString(e);
        let stack;
        try {
            stack = e.stack;
        } catch (_) {
            stack = undefined;
        }
        let out = typeof stack === "string" && stack.length > 0 ? head + "\n" + call(stringReplace, stack, /\n$/, "") : head;
        // The cause below, as Node shows it: `fetch`'s TypeError("fetch
        // failed") says why only there (the broker's refusal).
        let cause;
        try {
            if (!hasOwn(e, "cause")) return out;
            cause = e.cause;
        } catch (_) {
            return out;
        }
        if (depth >= 4) return out + "\nCaused by: ...";
        return out + "\nCaused by: " + (cause instanceof ErrorBase ? describeError(cause, depth + 1) : show(cause));
    }

    // Removes the prelude's own frames from an error's stack, so that an
    // error thrown by `plimsoll` points at the cell that made the call.
    function hidePreludeFrames(e) {
        try {
            if (typeof e.stack === "string") e.stack = call(stringReplace, e.stack, /^.*\(<prelude[^>]*>:.*\n?/gm, "");
        } catch (_) {
            // A frozen or exotic error: leave its stack as it is.
        }
        return e;
    }

    // How node/*.js show their own objects (a Buffer): a function that
    // returns the text, or undefined for any other value.
    let extraDisplay = null;

    // One console argument.
    function show(v, outer = []) {
        switch (typeof v) {
            case "string": return v;
            case "bigint": return StringCtor(v) + "n";
            case "function": return functionLabel(v);
        }
        if (v instanceof ErrorBase) return describeError(v);
        const fetchObject = fetchDisplay(v);
        if (fetchObject !== undefined) return fetchObject;
        if (extraDisplay !== null) {
            const shown = extraDisplay(v);
            if (shown !== undefined) return shown;
        }
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

    // `plimsoll.Response`; the global `Response` is fetch's (below).
    const BrokerResponse = class Response {
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
    };

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
        if (raw.error !== undefined) throw brokerError(raw);
        return new BrokerResponse(raw);
    }

    // The typed error for a native's `{error, reason}`.
    function brokerError(raw) {
        const cls = errors[raw.error];
        return hidePreludeFrames(cls ? new cls(raw.reason) : new BrokerError(raw.error + ": " + raw.reason, raw.reason));
    }

    const plimsoll = {
        call: brokerCall,
        get: (api, path, headers) => brokerCall(api, "GET", path, undefined, headers),
        del: (api, path, headers) => brokerCall(api, "DELETE", path, undefined, headers),
        delete: (api, path, headers) => brokerCall(api, "DELETE", path, undefined, headers),
        post: (api, path, body, headers) => brokerCall(api, "POST", path, body, headers),
        put: (api, path, body, headers) => brokerCall(api, "PUT", path, body, headers),
        patch: (api, path, body, headers) => brokerCall(api, "PATCH", path, body, headers),
        Response: BrokerResponse,
        BrokerError,
        ...errors,
    };
    defineProperty(globalThis, "plimsoll", { value: freeze(plimsoll), writable: true, configurable: true, enumerable: false });

    // ---- fetch: WHATWG fetch over the broker ---------------------------------
    //
    // `fetch(url)` goes to the host by URL (the broker's `call-origin`): the
    // host maps the URL's origin to the run's grant, applies every check of
    // `plimsoll.call`, adds the credential and traces the call. What is
    // here is the WHATWG shape around it: URL parsing, Headers, Request,
    // Response, AbortSignal and redirects, each redirect hop a new broker
    // call. There are no streams (bodies are buffered; the host caps them)
    // and no timers (an `AbortSignal.timeout` becomes the call's timeout and
    // otherwise fires when it is looked at).

    // Closure-private: lets the prelude construct objects cells cannot.
    const INTERNAL = freeze({});

    function push(list, value) {
        call(arrayPush, list, value);
    }

    function code(s, i) {
        return call(charCodeAt, s, i);
    }

    function slice(s, from, to) {
        return call(stringSlice, s, from, to);
    }

    function lower(s) {
        return call(toLowerCase, s);
    }

    function typeError(message, cause) {
        return hidePreludeFrames(cause === undefined ? new TypeErrorCtor(message) : new TypeErrorCtor(message, { cause }));
    }

    function rangeError(message) {
        return hidePreludeFrames(new RangeErrorCtor(message));
    }

    // What fetch's internals know about `obj`, if it is a `kind`.
    function slotOf(obj, kind) {
        const st = call(weakMapGet, slots, obj);
        if (st === undefined || st.kind !== kind) throw typeError("Illegal invocation: the receiver is not a " + kind);
        return st;
    }

    function isKind(obj, kind) {
        const st = call(weakMapGet, slots, obj);
        return st !== undefined && st.kind === kind;
    }

    // A WebIDL dictionary argument: undefined and null are `{}`.
    function dictionary(v, what) {
        if (v === undefined || v === null) return {};
        if (typeof v !== "object" && typeof v !== "function") throw typeError(what + " must be an object");
        return v;
    }

    // ---- DOMException, for AbortError and TimeoutError ----

    const DOMExceptionClass = DOMExceptionCtor !== undefined ? DOMExceptionCtor : (() => {
        // The legacy codes of the names fetch and AbortSignal use.
        const codes = { NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12, NetworkError: 19, AbortError: 20, TimeoutError: 23 };
        const cls = class DOMException extends ErrorBase {
            constructor(message = "", name = "Error") {
                super(StringCtor(message));
                defineProperty(this, "name", { value: StringCtor(name), writable: true, configurable: true });
            }
            get code() { return hasOwn(codes, this.name) ? codes[this.name] : 0; }
        };
        defineProperty(cls.prototype, symbolToStringTag, { value: "DOMException", configurable: true });
        return cls;
    })();

    function abortError() {
        return hidePreludeFrames(new DOMExceptionClass("This operation was aborted", "AbortError"));
    }

    function timeoutError() {
        return hidePreludeFrames(new DOMExceptionClass("The operation was aborted due to timeout", "TimeoutError"));
    }

    // ---- UTF-8, for the few bodies the prelude converts itself ----
    //
    // Bodies sent to the host go as strings and the host's answers come
    // with their text decoded, both in Rust; these are for reading a string
    // body as bytes or a bytes body as text.

    // `s` must be well-formed (no lone surrogates).
    function utf8Encode(s) {
        let length = 0;
        for (let i = 0; i < s.length; i++) {
            const c = code(s, i);
            if (c < 0x80) length += 1;
            else if (c < 0x800) length += 2;
            else if (c >= 0xd800 && c <= 0xdbff) { length += 4; i++; }
            else length += 3;
        }
        const out = new Uint8ArrayCtor(length);
        let j = 0;
        for (let i = 0; i < s.length; i++) {
            let c = code(s, i);
            if (c < 0x80) {
                out[j++] = c;
            } else if (c < 0x800) {
                out[j++] = 0xc0 | (c >> 6);
                out[j++] = 0x80 | (c & 0x3f);
            } else if (c >= 0xd800 && c <= 0xdbff) {
                c = 0x10000 + ((c - 0xd800) << 10) + (code(s, ++i) - 0xdc00);
                out[j++] = 0xf0 | (c >> 18);
                out[j++] = 0x80 | ((c >> 12) & 0x3f);
                out[j++] = 0x80 | ((c >> 6) & 0x3f);
                out[j++] = 0x80 | (c & 0x3f);
            } else {
                out[j++] = 0xe0 | (c >> 12);
                out[j++] = 0x80 | ((c >> 6) & 0x3f);
                out[j++] = 0x80 | (c & 0x3f);
            }
        }
        return out;
    }

    // WHATWG "UTF-8 decode": a leading BOM is dropped, and each maximal
    // invalid subsequence becomes one U+FFFD (as Rust's from_utf8_lossy).
    function utf8Decode(bytes) {
        let out = "";
        let units = [];
        const unit = (u) => {
            units[units.length] = u;
            if (units.length >= 1024) {
                out += reflectApply(fromCharCode, undefined, units);
                units = [];
            }
        };
        const n = bytes.length;
        let i = n >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
        while (i < n) {
            const b = bytes[i++];
            if (b < 0x80) { unit(b); continue; }
            let need, cp, low = 0x80, high = 0xbf;
            if (b >= 0xc2 && b <= 0xdf) { need = 1; cp = b & 0x1f; }
            else if (b >= 0xe0 && b <= 0xef) { need = 2; cp = b & 0x0f; if (b === 0xe0) low = 0xa0; if (b === 0xed) high = 0x9f; }
            else if (b >= 0xf0 && b <= 0xf4) { need = 3; cp = b & 0x07; if (b === 0xf0) low = 0x90; if (b === 0xf4) high = 0x8f; }
            else { unit(0xfffd); continue; }
            let seen = 0;
            while (seen < need && i < n && bytes[i] >= low && bytes[i] <= high) {
                cp = (cp << 6) | (bytes[i++] & 0x3f);
                low = 0x80;
                high = 0xbf;
                seen++;
            }
            // An incomplete sequence is one U+FFFD; the byte that broke it
            // is read again on its own.
            if (seen < need) unit(0xfffd);
            else if (cp < 0x10000) unit(cp);
            else { unit(0xd800 + ((cp - 0x10000) >> 10)); unit(0xdc00 + ((cp - 0x10000) & 0x3ff)); }
        }
        return out + reflectApply(fromCharCode, undefined, units);
    }

    // ---- URLs ----
    //
    // QuickJS has no `URL`. This is the WHATWG URL parser cut down to what
    // fetch can use: absolute http: and https: URLs (and relative ones
    // against a base, for redirects). As in the standard, tabs and newlines
    // are removed, backslashes are slashes, `.` and `..` segments
    // (`%2e` too) are resolved, the default port is dropped, the host is
    // lower-cased, and what must be percent-encoded is. Unlike it, URLs with
    // user info are refused (grants carry the credentials) and hosts must
    // already be ASCII (no IDNA) and are not reparsed as IPv4 numbers.
    //
    // A URL is `{scheme, host, port, path, query, fragment}`: `port` is ""
    // for the default, `query` and `fragment` are null when absent.

    function isSlash(c) {
        return c === 0x2f || c === 0x5c; // / or \
    }

    const HEX = "0123456789ABCDEF";

    // `s` with the code points `encode(c)` selects, and everything above
    // U+007E, percent-encoded as UTF-8.
    function percentEncode(s, encode) {
        let out = "";
        let from = 0;
        for (let i = 0; i < s.length; i++) {
            let c = code(s, i);
            if (c <= 0x7e && !encode(c)) continue;
            out += slice(s, from, i);
            if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) c = 0x10000 + ((c - 0xd800) << 10) + (code(s, ++i) - 0xdc00);
            const bytes = c < 0x80 ? [c] : utf8Encode(c < 0x10000 ? fromCharCode(c) : fromCharCode(0xd800 + ((c - 0x10000) >> 10), 0xdc00 + ((c - 0x10000) & 0x3ff)));
            for (let k = 0; k < bytes.length; k++) out += "%" + HEX[bytes[k] >> 4] + HEX[bytes[k] & 15];
            from = i + 1;
        }
        return out + slice(s, from);
    }

    // The URL standard's percent-encode sets (C0 controls and space are in
    // all of them; above U+007E is always encoded).
    const inPathSet = (c) => c <= 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e || c === 0x3f || c === 0x5e || c === 0x60 || c === 0x7b || c === 0x7d;
    const inQuerySet = (c) => c <= 0x20 || c === 0x22 || c === 0x23 || c === 0x27 || c === 0x3c || c === 0x3e;
    const inFragmentSet = (c) => c <= 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;

    function isSingleDot(segment) {
        return segment === "." || lower(segment) === "%2e";
    }

    function isDoubleDot(segment) {
        const s = lower(segment);
        return s === ".." || s === ".%2e" || s === "%2e." || s === "%2e%2e";
    }

    // A path that is "" or starts with a slash, resolved and encoded.
    function parsePath(p) {
        const segments = [];
        let start = 1;
        for (let j = 1; j <= p.length; j++) {
            if (j < p.length && !isSlash(code(p, j))) continue;
            const segment = slice(p, start, j);
            const last = j >= p.length;
            if (isDoubleDot(segment)) {
                if (segments.length > 0) segments.length--;
                if (last) push(segments, "");
            } else if (isSingleDot(segment)) {
                if (last) push(segments, "");
            } else {
                push(segments, percentEncode(segment, inPathSet));
            }
            start = j + 1;
        }
        let out = "";
        for (let i = 0; i < segments.length; i++) out += "/" + segments[i];
        return out === "" ? "/" : out;
    }

    // The path, query and fragment that follow an authority.
    function parseTail(scheme, host, port, tail) {
        const hash = call(stringIndexOf, tail, "#");
        const beforeHash = hash < 0 ? tail : slice(tail, 0, hash);
        const question = call(stringIndexOf, beforeHash, "?");
        const path = question < 0 ? beforeHash : slice(beforeHash, 0, question);
        return {
            scheme, host, port,
            path: parsePath(path),
            query: question < 0 ? null : percentEncode(slice(beforeHash, question + 1), inQuerySet),
            fragment: hash < 0 ? null : percentEncode(slice(tail, hash + 1), inFragmentSet),
        };
    }

    // `host[:port]` and what follows it; leading slashes are already gone.
    function parseAuthority(scheme, s) {
        let end = 0;
        while (end < s.length) {
            const c = code(s, end);
            if (isSlash(c) || c === 0x3f || c === 0x23) break; // / \ ? #
            end++;
        }
        const authority = slice(s, 0, end);
        if (call(stringIndexOf, authority, "@") >= 0) {
            throw typeError("fetch refuses URLs with user info (user:password@): the run's grants carry the credentials");
        }
        let host, port;
        if (authority !== "" && code(authority, 0) === 0x5b) { // [IPv6]
            const close = call(stringIndexOf, authority, "]");
            if (close < 0) throw typeError("Invalid URL: an IPv6 host has no closing ]");
            host = lower(slice(authority, 0, close + 1));
            for (let i = 1; i < host.length - 1; i++) {
                const c = code(host, i);
                if (!((c >= 0x30 && c <= 0x3a) || (c >= 0x61 && c <= 0x66) || c === 0x2e)) throw typeError("Invalid URL: the IPv6 host is malformed");
            }
            const after = slice(authority, close + 1);
            if (after !== "" && code(after, 0) !== 0x3a) throw typeError("Invalid URL: unexpected characters after the IPv6 host");
            port = slice(after, 1);
        } else {
            const colon = call(stringIndexOf, authority, ":");
            host = lower(colon < 0 ? authority : slice(authority, 0, colon));
            port = colon < 0 ? "" : slice(authority, colon + 1);
            for (let i = 0; i < host.length; i++) {
                const c = code(host, i);
                if (c > 0x7e) throw typeError("fetch supports only ASCII host names: write the host in its ASCII (xn--) form");
                // The URL standard's forbidden domain code points.
                if (c <= 0x20 || c === 0x23 || c === 0x25 || c === 0x2f || c === 0x3a || c === 0x3c || c === 0x3e || c === 0x3f ||
                    c === 0x40 || c === 0x5b || c === 0x5c || c === 0x5d || c === 0x5e || c === 0x7c) {
                    throw typeError("Invalid URL: the host contains a forbidden character");
                }
            }
        }
        if (host === "") throw typeError("Invalid URL: the URL has no host");
        let portNumber = 0;
        for (let i = 0; i < port.length; i++) {
            const c = code(port, i);
            if (c < 0x30 || c > 0x39) throw typeError("Invalid URL: the port is not a number");
            portNumber = portNumber * 10 + (c - 0x30);
            if (portNumber > 65535) throw typeError("Invalid URL: the port is larger than 65535");
        }
        const defaultPort = scheme === "http" ? 80 : 443;
        return parseTail(scheme, host, port === "" || portNumber === defaultPort ? "" : StringCtor(portNumber), slice(s, end));
    }

    function skipSlashes(s) {
        let i = 0;
        while (i < s.length && isSlash(code(s, i))) i++;
        return slice(s, i);
    }

    function startsWithTwoSlashes(s) {
        return s.length >= 2 && isSlash(code(s, 0)) && isSlash(code(s, 1));
    }

    // `ref` (no scheme, or the base's) against `base`.
    function resolveRelative(ref, base) {
        if (startsWithTwoSlashes(ref)) return parseAuthority(base.scheme, skipSlashes(ref));
        if (ref === "") return { scheme: base.scheme, host: base.host, port: base.port, path: base.path, query: base.query, fragment: null };
        const c = code(ref, 0);
        if (isSlash(c)) return parseTail(base.scheme, base.host, base.port, ref);
        if (c === 0x3f) return parseTail(base.scheme, base.host, base.port, base.path + ref); // ?query
        if (c === 0x23) { // #fragment
            return {
                scheme: base.scheme, host: base.host, port: base.port, path: base.path, query: base.query,
                fragment: percentEncode(slice(ref, 1), inFragmentSet),
            };
        }
        // A relative path replaces the base's last segment.
        let dir = base.path.length;
        while (dir > 0 && code(base.path, dir - 1) !== 0x2f) dir--;
        return parseTail(base.scheme, base.host, base.port, slice(base.path, 0, dir) + ref);
    }

    // An absolute URL the parser below would return unchanged: a lower-case
    // http(s) scheme and host, a port without leading zeros, and no
    // whitespace, backslash, user info, `.`/`..` or `%2e` path segment, or
    // character any part would percent-encode. Most URLs are like this;
    // one regular expression parses them (the parser costs tens of
    // microseconds a URL in QuickJS). Groups: scheme, host, port, path,
    // query, fragment.
    const SIMPLE_URL = /^(https?):\/\/([a-z0-9._~-]+)(?::([1-9][0-9]{0,4}))?((?![^?#]*%2[eE])(?:\/(?!\.\.?(?:[\/?#]|$))[!$-.0-;=@-\[\]_a-z|~]*)*)(?:\?([!$-&(-;=?-~]*))?(?:#([!#-;=?-_a-~]*))?$/;

    // The URLs parseSimpleUrl parsed last, by string: a cell fetches the
    // same few again and again. The parsed URLs are frozen (every parsed
    // URL is treated as immutable; a redirect makes a new one).
    const simpleUrls = new MapCtor();
    const SIMPLE_URLS_MAX = 64;

    // `s` parsed by SIMPLE_URL, or null for the full parser.
    function parseSimpleUrl(s) {
        const known = call(mapGet, simpleUrls, s);
        if (known !== undefined) return known;
        const url = matchSimpleUrl(s);
        if (url !== null && s.length <= 2048) {
            if (call(mapSize, simpleUrls) >= SIMPLE_URLS_MAX) call(mapClear, simpleUrls);
            call(mapSet, simpleUrls, s, freeze(url));
        }
        return url;
    }

    function matchSimpleUrl(s) {
        const m = call(regexpExec, SIMPLE_URL, s);
        if (m === null) return null;
        const scheme = m[1];
        let port = m[3];
        if (port === undefined) {
            port = "";
        } else {
            const n = +port;
            // Too large: the full parser says so.
            if (n > 65535) return null;
            if (n === (scheme === "http" ? 80 : 443)) port = "";
        }
        return {
            scheme, host: m[2], port,
            path: m[4] === "" ? "/" : m[4],
            query: m[5] === undefined ? null : m[5],
            fragment: m[6] === undefined ? null : m[6],
        };
    }

    // A URL, parsed; `base` (a parsed URL) for relative ones. Throws a
    // TypeError naming what is wrong, never echoing the URL (it could carry
    // a password).
    function parseUrl(input, base) {
        const raw = wellFormed(StringCtor(input));
        // An absolute URL with "//" ignores the base, as below.
        const simple = parseSimpleUrl(raw);
        if (simple !== null) return simple;
        let start = 0;
        let end = raw.length;
        while (start < end && code(raw, start) <= 0x20) start++;
        while (end > start && code(raw, end - 1) <= 0x20) end--;
        let s = "";
        let from = start;
        for (let i = start; i < end; i++) {
            const c = code(raw, i);
            if (c === 0x09 || c === 0x0a || c === 0x0d) {
                s += slice(raw, from, i);
                from = i + 1;
            }
        }
        s += slice(raw, from, end);

        let scheme = null;
        let rest = s;
        const isAlpha = (c) => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
        if (s.length > 0 && isAlpha(code(s, 0))) {
            let j = 1;
            while (j < s.length) {
                const c = code(s, j);
                if (!(isAlpha(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2d || c === 0x2e)) break;
                j++;
            }
            if (j < s.length && code(s, j) === 0x3a) {
                scheme = lower(slice(s, 0, j));
                rest = slice(s, j + 1);
            }
        }
        if (scheme !== null) {
            if (scheme !== "http" && scheme !== "https") {
                throw typeError("fetch supports only http: and https: URLs" + (scheme.length <= 16 ? ", not " + scheme + ":" : ""));
            }
            // "http:x" is relative to an http: base, as in the standard.
            if (base !== undefined && base.scheme === scheme && !startsWithTwoSlashes(rest)) return resolveRelative(rest, base);
            return parseAuthority(scheme, skipSlashes(rest));
        }
        if (base === undefined) throw typeError("Invalid URL: fetch needs an absolute URL (there is no base URL to resolve a relative one against)");
        return resolveRelative(rest, base);
    }

    function urlOrigin(url) {
        return url.scheme + "://" + url.host + (url.port === "" ? "" : ":" + url.port);
    }

    // The path and query: what the broker calls the path.
    function urlTarget(url) {
        return url.path + (url.query === null ? "" : "?" + url.query);
    }

    function urlHref(url, withFragment) {
        return urlOrigin(url) + urlTarget(url) + (withFragment && url.fragment !== null ? "#" + url.fragment : "");
    }

    // ---- Headers ----

    // RFC 9110 tchar: a header name or method is one or more of these.
    function isToken(s) {
        if (s === "") return false;
        for (let i = 0; i < s.length; i++) {
            const c = code(s, i);
            const ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) ||
                c === 0x21 || (c >= 0x23 && c <= 0x27) || c === 0x2a || c === 0x2b || c === 0x2d || c === 0x2e ||
                c === 0x5e || c === 0x5f || c === 0x60 || c === 0x7c || c === 0x7e;
            if (!ok) return false;
        }
        return true;
    }

    // WebIDL ByteString: every code unit must be at most 0xFF.
    function byteString(v, what) {
        const s = StringCtor(v);
        for (let i = 0; i < s.length; i++) {
            if (code(s, i) > 0xff) throw typeError(what + " must contain only characters up to U+00FF");
        }
        return s;
    }

    function headerName(name) {
        const s = byteString(name, "a header name");
        if (!isToken(s)) throw typeError("invalid header name " + stringify(s));
        return s;
    }

    // Leading and trailing HTTP whitespace goes; NUL, CR and LF may not
    // remain. The value is never echoed: it may be a secret.
    function headerValue(value) {
        const s = byteString(value, "a header value");
        const ws = (c) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
        let start = 0;
        let end = s.length;
        while (start < end && ws(code(s, start))) start++;
        while (end > start && ws(code(s, end - 1))) end--;
        for (let i = start; i < end; i++) {
            const c = code(s, i);
            if (c === 0 || c === 0x0a || c === 0x0d) throw typeError("invalid header value: it contains NUL, CR or LF");
        }
        return slice(s, start, end);
    }

    function listIndexOf(list, lowerName, from) {
        for (let i = from; i < list.length; i++) if (lower(list[i][0]) === lowerName) return i;
        return -1;
    }

    // Removes every entry named `lowerName` from `list`, in place.
    function listRemove(list, lowerName) {
        let kept = 0;
        for (let i = 0; i < list.length; i++) {
            if (lower(list[i][0]) !== lowerName) list[kept++] = list[i];
        }
        list.length = kept;
    }

    function listGet(list, lowerName) {
        let value = null;
        for (let i = 0; i < list.length; i++) {
            if (lower(list[i][0]) === lowerName) value = value === null ? list[i][1] : value + ", " + list[i][1];
        }
        return value;
    }

    function compareNames(a, b) {
        return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
    }

    // WHATWG "sort and combine": lower-case names in order, repeated ones
    // joined with ", ", except set-cookie, which stays one entry per value.
    // This is also what fetch sends (the host refuses repeated names).
    function sortAndCombine(list) {
        const entries = [];
        for (let i = 0; i < list.length; i++) push(entries, [lower(list[i][0]), list[i][1]]);
        call(arraySort, entries, compareNames);
        const out = [];
        for (let i = 0; i < entries.length; i++) {
            const name = entries[i][0];
            let value = entries[i][1];
            if (name !== "set-cookie") {
                while (i + 1 < entries.length && entries[i + 1][0] === name) value += ", " + entries[++i][1];
            }
            push(out, [name, value]);
        }
        return out;
    }

    function checkMutable(st) {
        if (st.immutable) throw typeError("these headers are immutable");
    }

    function headersAppend(st, name, value) {
        name = headerName(name);
        value = headerValue(value);
        checkMutable(st);
        push(st.list, [name, value]);
    }

    // `init` (HeadersInit: a Headers, a sequence of pairs or a record)
    // appended to the headers `st`.
    function fillHeaders(st, init) {
        if (init === null || (typeof init !== "object" && typeof init !== "function")) {
            throw typeError("headers must be a Headers, an object, or a sequence of [name, value] pairs");
        }
        const other = call(weakMapGet, slots, init);
        if (other !== undefined && other.kind === "Headers") {
            const list = other.list;
            for (let i = 0; i < list.length; i++) headersAppend(st, list[i][0], list[i][1]);
            return;
        }
        if (init[symbolIterator] !== undefined && init[symbolIterator] !== null) {
            for (const entry of init) {
                const pair = isArray(entry) ? entry
                    : entry !== null && typeof entry === "object" && typeof entry[symbolIterator] === "function" ? arrayFrom(entry)
                    : null;
                if (pair === null || pair.length !== 2) throw typeError("each header must be a [name, value] pair");
                headersAppend(st, pair[0], pair[1]);
            }
            return;
        }
        const entries = objectEntries(init);
        for (let i = 0; i < entries.length; i++) headersAppend(st, entries[i][0], entries[i][1]);
    }

    function* headerIterator(pairs, what) {
        for (let i = 0; i < pairs.length; i++) {
            if (what === "keys") yield pairs[i][0];
            else if (what === "values") yield pairs[i][1];
            else yield [pairs[i][0], pairs[i][1]];
        }
    }

    class Headers {
        constructor(init = undefined, state = undefined) {
            const st = init === INTERNAL ? state : { kind: "Headers", list: [], immutable: false };
            call(weakMapSet, slots, this, st);
            if (init !== INTERNAL && init !== undefined) fillHeaders(st, init);
        }
        append(name, value) {
            headersAppend(slotOf(this, "Headers"), name, value);
        }
        delete(name) {
            const st = slotOf(this, "Headers");
            name = lower(headerName(name));
            checkMutable(st);
            listRemove(st.list, name);
        }
        get(name) {
            return listGet(slotOf(this, "Headers").list, lower(headerName(name)));
        }
        getSetCookie() {
            const list = slotOf(this, "Headers").list;
            const out = [];
            for (let i = 0; i < list.length; i++) if (lower(list[i][0]) === "set-cookie") push(out, list[i][1]);
            return out;
        }
        has(name) {
            return listIndexOf(slotOf(this, "Headers").list, lower(headerName(name)), 0) >= 0;
        }
        set(name, value) {
            const st = slotOf(this, "Headers");
            name = headerName(name);
            value = headerValue(value);
            checkMutable(st);
            const key = lower(name);
            const at = listIndexOf(st.list, key, 0);
            if (at < 0) {
                push(st.list, [name, value]);
                return;
            }
            // The first keeps its place; the others go.
            st.list[at] = [name, value];
            let kept = at + 1;
            for (let i = at + 1; i < st.list.length; i++) if (lower(st.list[i][0]) !== key) st.list[kept++] = st.list[i];
            st.list.length = kept;
        }
        forEach(callback, thisArg = undefined) {
            const st = slotOf(this, "Headers");
            if (typeof callback !== "function") throw typeError("Headers.forEach needs a function");
            const pairs = sortAndCombine(st.list);
            for (let i = 0; i < pairs.length; i++) call(callback, thisArg, pairs[i][1], pairs[i][0], this);
        }
        entries() {
            return headerIterator(sortAndCombine(slotOf(this, "Headers").list), "entries");
        }
        keys() {
            return headerIterator(sortAndCombine(slotOf(this, "Headers").list), "keys");
        }
        values() {
            return headerIterator(sortAndCombine(slotOf(this, "Headers").list), "values");
        }
    }
    defineProperty(Headers.prototype, symbolIterator, { value: Headers.prototype.entries, writable: true, configurable: true });
    defineProperty(Headers.prototype, symbolToStringTag, { value: "Headers", configurable: true });

    // A new header list from a HeadersInit (undefined for none), as
    // `new Headers(init)` would hold.
    function headerList(init) {
        if (init === undefined) return [];
        const st = { kind: "Headers", list: [], immutable: false };
        fillHeaders(st, init);
        return st.list;
    }

    function copyList(list, from) {
        const out = [];
        for (let i = from; i < list.length; i++) push(out, list[i]);
        return out;
    }

    // A new Headers object with a copy of `st`'s entries.
    function copyHeaders(st, immutable) {
        return new Headers(INTERNAL, { kind: "Headers", list: copyList(st.list, 0), immutable });
    }

    // ---- AbortSignal and AbortController ----
    //
    // A signal's state: `aborted`, `reason`; `deadline` (a Date.now() time)
    // for AbortSignal.timeout; `sources`, the signals an AbortSignal.any
    // follows, and `dependents`, the ones following this one.

    function newSignal() {
        const st = {
            kind: "AbortSignal", object: null, aborted: false, reason: undefined, deadline: undefined,
            dependent: false, sources: [], dependents: [], listeners: [], onabort: null,
        };
        st.object = new AbortSignal(INTERNAL, st);
        return st;
    }

    // There are no timers: a timeout signal fires when someone looks at it
    // (`aborted`, `reason`, `throwIfAborted`, fetch) after its deadline.
    function refreshSignal(st) {
        if (st.aborted) return;
        if (st.deadline !== undefined && dateNow() >= st.deadline) {
            abortSignal(st, timeoutError());
            return;
        }
        for (let i = 0; i < st.sources.length && !st.aborted; i++) refreshSignal(st.sources[i]);
    }

    // The earliest deadline `st` follows, or undefined.
    function signalDeadline(st) {
        let deadline = st.deadline;
        for (let i = 0; i < st.sources.length; i++) {
            const d = st.sources[i].deadline;
            if (d !== undefined && (deadline === undefined || d < deadline)) deadline = d;
        }
        return deadline;
    }

    // WHATWG "signal abort".
    function abortSignal(st, reason) {
        if (st.aborted) return;
        st.aborted = true;
        st.reason = reason;
        const followers = [];
        for (let i = 0; i < st.dependents.length; i++) {
            const d = st.dependents[i];
            if (!d.aborted) {
                d.aborted = true;
                d.reason = reason;
                push(followers, d);
            }
        }
        st.dependents = [];
        fireAbort(st);
        for (let i = 0; i < followers.length; i++) fireAbort(followers[i]);
    }

    // A listener that throws is reported on stderr, as a browser reports
    // it; the others still run.
    function invokeListener(st, callback, event) {
        try {
            if (typeof callback === "function") call(callback, st.object, event);
            else if (callback !== null && typeof callback === "object") call(callback.handleEvent, callback, event);
        } catch (e) {
            native.write(STDERR, wellFormed("Uncaught " + show(hidePreludeFrames(e))));
        }
    }

    function dispatch(st, event) {
        if (event.type === "abort" && st.onabort !== null) invokeListener(st, st.onabort, event);
        const listeners = copyList(st.listeners, 0);
        for (let i = 0; i < listeners.length; i++) {
            const l = listeners[i];
            if (l.removed || l.type !== event.type) continue;
            if (l.once) removeListener(st, l);
            invokeListener(st, l.callback, event);
        }
    }

    function fireAbort(st) {
        dispatch(st, { type: "abort", target: st.object, currentTarget: st.object, isTrusted: true });
    }

    function removeListener(st, l) {
        l.removed = true;
        let kept = 0;
        for (let i = 0; i < st.listeners.length; i++) if (st.listeners[i] !== l) st.listeners[kept++] = st.listeners[i];
        st.listeners.length = kept;
    }

    function listenerCapture(options) {
        if (typeof options === "boolean") return options;
        return options !== null && typeof options === "object" && !!options.capture;
    }

    class AbortSignal {
        constructor(token = undefined, state = undefined) {
            if (token !== INTERNAL) throw typeError("Illegal constructor: use AbortController, AbortSignal.abort(), AbortSignal.timeout() or AbortSignal.any()");
            call(weakMapSet, slots, this, state);
        }
        get aborted() {
            const st = slotOf(this, "AbortSignal");
            refreshSignal(st);
            return st.aborted;
        }
        get reason() {
            const st = slotOf(this, "AbortSignal");
            refreshSignal(st);
            return st.reason;
        }
        get onabort() {
            return slotOf(this, "AbortSignal").onabort;
        }
        set onabort(handler) {
            slotOf(this, "AbortSignal").onabort = typeof handler === "function" || (handler !== null && typeof handler === "object") ? handler : null;
        }
        throwIfAborted() {
            const st = slotOf(this, "AbortSignal");
            refreshSignal(st);
            if (st.aborted) throw st.reason;
        }
        addEventListener(type, callback, options = undefined) {
            const st = slotOf(this, "AbortSignal");
            if (callback === null || callback === undefined) return;
            type = StringCtor(type);
            const capture = listenerCapture(options);
            for (let i = 0; i < st.listeners.length; i++) {
                const l = st.listeners[i];
                if (l.type === type && l.callback === callback && l.capture === capture) return;
            }
            const once = options !== null && typeof options === "object" && !!options.once;
            push(st.listeners, { type, callback, capture, once, removed: false });
        }
        removeEventListener(type, callback, options = undefined) {
            const st = slotOf(this, "AbortSignal");
            type = StringCtor(type);
            const capture = listenerCapture(options);
            for (let i = 0; i < st.listeners.length; i++) {
                const l = st.listeners[i];
                if (l.type === type && l.callback === callback && l.capture === capture) {
                    removeListener(st, l);
                    return;
                }
            }
        }
        dispatchEvent(event) {
            const st = slotOf(this, "AbortSignal");
            if (event === null || typeof event !== "object") throw typeError("dispatchEvent needs an event object");
            dispatch(st, event);
            return true;
        }
        static abort(reason = undefined) {
            const st = newSignal();
            st.aborted = true;
            st.reason = reason === undefined ? abortError() : reason;
            return st.object;
        }
        // The signal's remaining time is passed to the host as the call's
        // timeout, so the host ends a call that outlives it.
        static timeout(ms) {
            const n = +ms;
            if (!numberIsFinite(n) || mathTrunc(n) < 0 || mathTrunc(n) > 9007199254740991) {
                throw typeError("AbortSignal.timeout needs a number of milliseconds from 0 to 2^53 - 1");
            }
            const st = newSignal();
            st.deadline = dateNow() + mathTrunc(n);
            return st.object;
        }
        static any(signals) {
            const sources = [];
            for (const s of signals) push(sources, slotOf(s, "AbortSignal"));
            const st = newSignal();
            st.dependent = true;
            for (let i = 0; i < sources.length; i++) {
                refreshSignal(sources[i]);
                if (sources[i].aborted) {
                    st.aborted = true;
                    st.reason = sources[i].reason;
                    return st.object;
                }
            }
            for (let i = 0; i < sources.length; i++) {
                // Follow a dependent signal's own sources, as WHATWG does.
                const roots = sources[i].dependent ? sources[i].sources : [sources[i]];
                for (let k = 0; k < roots.length; k++) {
                    let known = false;
                    for (let m = 0; m < st.sources.length; m++) if (st.sources[m] === roots[k]) known = true;
                    if (known) continue;
                    push(st.sources, roots[k]);
                    push(roots[k].dependents, st);
                }
            }
            return st.object;
        }
    }
    defineProperty(AbortSignal.prototype, symbolToStringTag, { value: "AbortSignal", configurable: true });

    class AbortController {
        constructor() {
            call(weakMapSet, slots, this, { kind: "AbortController", signal: newSignal() });
        }
        get signal() {
            return slotOf(this, "AbortController").signal.object;
        }
        abort(reason = undefined) {
            abortSignal(slotOf(this, "AbortController").signal, reason === undefined ? abortError() : reason);
        }
    }
    defineProperty(AbortController.prototype, symbolToStringTag, { value: "AbortController", configurable: true });

    // ---- bodies ----
    //
    // A body is `{text, bytes, used}` with `text` (a well-formed string) or
    // `bytes` (a Uint8Array nobody else holds) or both; a null body is null.
    // Reading one copies, so clones may share it.

    function newBody(text, bytes) {
        return { text, bytes, used: false };
    }

    // BodyInit: a body and the Content-Type it implies (or null).
    function extractBody(value) {
        if (typeof value === "string") return { body: newBody(wellFormed(value), undefined), type: "text/plain;charset=UTF-8" };
        if (value instanceof ArrayBufferCtor) return { body: newBody(undefined, new Uint8ArrayCtor(call(arrayBufferSlice, value))), type: null };
        if (isView(value)) {
            const view = new Uint8ArrayCtor(value.buffer, value.byteOffset, value.byteLength);
            return { body: newBody(undefined, call(uint8Slice, view)), type: null };
        }
        // QuickJS has no URLSearchParams; a cell may bring one.
        const Params = globalThis.URLSearchParams;
        if (typeof Params === "function" && value instanceof Params) {
            return { body: newBody(wellFormed(StringCtor(value)), undefined), type: "application/x-www-form-urlencoded;charset=UTF-8" };
        }
        // Anything else is converted to a string, as WebIDL does.
        return { body: newBody(wellFormed(StringCtor(value)), undefined), type: "text/plain;charset=UTF-8" };
    }

    function copyBody(body) {
        return body === null ? null : newBody(body.text, body.bytes);
    }

    function bodyText(body) {
        if (body === null) return "";
        return body.text !== undefined ? body.text : utf8Decode(body.bytes);
    }

    function bodyBytes(body) {
        if (body === null) return new Uint8ArrayCtor(0);
        return body.bytes !== undefined ? call(uint8Slice, body.bytes) : utf8Encode(body.text);
    }

    // What the native takes: a string or a Uint8Array.
    function nativeBody(body) {
        if (body === null) return "";
        return body.text !== undefined ? body.text : body.bytes;
    }

    // text(), json(), arrayBuffer() and bytes() of a Request or Response
    // state. A body is read once; a null body reads as empty every time. A
    // fetched body whose signal has been aborted (explicitly: a timeout
    // that has passed unobserved does not count, as a browser's timer could
    // not have fired before a read in the same turn) cannot be read.
    function consumeBody(st, signal, how) {
        if (signal !== null && signal.aborted) throw signal.reason;
        const body = st.body;
        if (body !== null) {
            if (body.used) throw typeError("Body is unusable: the body has already been read");
            body.used = true;
        }
        switch (how) {
            case "text": return bodyText(body);
            case "json":
                try {
                    return parseJson(bodyText(body));
                } catch (e) {
                    throw hidePreludeFrames(e);
                }
            case "arrayBuffer": return call(typedArrayBuffer, bodyBytes(body));
            default: return bodyBytes(body);
        }
    }

    function setContentType(list, type) {
        if (type !== null && listIndexOf(list, "content-type", 0) < 0) push(list, ["content-type", type]);
    }

    // ---- Request ----

    const NORMALIZED_METHODS = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];

    // A method as WHATWG normalizes it: the six above upper-cased, others
    // (PATCH included) as written. The host decides which it allows.
    function normalizeMethod(method) {
        const s = byteString(method, "the method");
        if (!isToken(s)) throw typeError("invalid method " + stringify(s));
        const upper = call(toUpperCase, s);
        if (upper === "CONNECT" || upper === "TRACE" || upper === "TRACK") throw typeError("the method " + upper + " is forbidden");
        for (let i = 0; i < NORMALIZED_METHODS.length; i++) if (NORMALIZED_METHODS[i] === upper) return upper;
        return s;
    }

    // What `new Request(input, init)` and `fetch(input, init)` make of
    // their arguments: `{url, method, list, signal, redirect, body}`, with
    // the headers as a list (a Headers object is only made for a Request)
    // and `signal` null when there is none (fetch then skips the checks;
    // a Request gets one that never aborts).
    function requestParts(input, init) {
        const dict = dictionary(init, "the RequestInit");
        const base = typeof input === "string" ? null : isKind(input, "Request") ? call(weakMapGet, slots, input) : null;
        const url = base !== null ? base.url : parseUrl(input, undefined);
        const method = dict.method !== undefined ? normalizeMethod(dict.method) : base !== null ? base.method : "GET";
        const headersInit = dict.headers !== undefined ? dict.headers : base !== null ? base.headers : undefined;
        const list = headerList(headersInit);

        let signal = base !== null ? base.signal : null;
        if (dict.signal !== undefined) {
            if (dict.signal !== null && !isKind(dict.signal, "AbortSignal")) throw typeError("signal must be an AbortSignal");
            signal = dict.signal === null ? null : call(weakMapGet, slots, dict.signal);
        }

        let redirect = base !== null ? base.redirect : "follow";
        if (dict.redirect !== undefined) {
            redirect = StringCtor(dict.redirect);
            if (redirect !== "follow" && redirect !== "error" && redirect !== "manual") {
                throw typeError("redirect must be \"follow\", \"error\" or \"manual\"");
            }
        }

        const initBody = dict.body;
        const hasInitBody = initBody !== undefined && initBody !== null;
        if ((hasInitBody || (base !== null && base.body !== null)) && (method === "GET" || method === "HEAD")) {
            throw typeError("a " + method + " request cannot have a body");
        }
        let body = null;
        if (hasInitBody) {
            const extracted = extractBody(initBody);
            body = extracted.body;
            setContentType(list, extracted.type);
        } else if (base !== null && base.body !== null) {
            // The body moves to the new request, as WHATWG's does.
            if (base.body.used) throw typeError("the input Request's body has already been read");
            body = copyBody(base.body);
            base.body.used = true;
        }
        return { url, method, list, signal, redirect, body };
    }

    // A Request's state from `new Request(input, init)`.
    function requestState(input, init) {
        const parts = requestParts(input, init);
        return {
            kind: "Request", url: parts.url, method: parts.method,
            headers: new Headers(INTERNAL, { kind: "Headers", list: parts.list, immutable: false }),
            // A request without a signal gets one that never aborts.
            signal: parts.signal !== null ? parts.signal : newSignal(),
            redirect: parts.redirect, body: parts.body,
        };
    }

    class Request {
        constructor(input, init = undefined) {
            call(weakMapSet, slots, this, input === INTERNAL ? init : requestState(input, init));
        }
        get method() { return slotOf(this, "Request").method; }
        get url() { return urlHref(slotOf(this, "Request").url, true); }
        get headers() { return slotOf(this, "Request").headers; }
        get signal() { return slotOf(this, "Request").signal.object; }
        get redirect() { return slotOf(this, "Request").redirect; }
        get bodyUsed() {
            const body = slotOf(this, "Request").body;
            return body !== null && body.used;
        }
        async text() { return consumeBody(slotOf(this, "Request"), null, "text"); }
        async json() { return consumeBody(slotOf(this, "Request"), null, "json"); }
        async arrayBuffer() { return consumeBody(slotOf(this, "Request"), null, "arrayBuffer"); }
        async bytes() { return consumeBody(slotOf(this, "Request"), null, "bytes"); }
        clone() {
            const st = slotOf(this, "Request");
            if (st.body !== null && st.body.used) throw typeError("cannot clone a Request whose body has been read");
            return new Request(INTERNAL, {
                kind: "Request", url: st.url, method: st.method, headers: copyHeaders(slotOf(st.headers, "Headers"), false),
                signal: st.signal, redirect: st.redirect, body: copyBody(st.body),
            });
        }
    }
    defineProperty(Request.prototype, symbolToStringTag, { value: "Request", configurable: true });

    // ---- Response (fetch's; plimsoll's is plimsoll.Response) ----

    function isNullBodyStatus(status) {
        return status === 101 || status === 103 || status === 204 || status === 205 || status === 304;
    }

    function isRedirectStatus(status) {
        return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
    }

    // WebIDL `unsigned short`.
    function unsignedShort(v) {
        const n = +v;
        if (!numberIsFinite(n)) return 0;
        return ((mathTrunc(n) % 65536) + 65536) % 65536;
    }

    // A Response's state from `new Response(body, init)`; `body` is a
    // BodyInit or null, or an already extracted `{body, type}` (json()).
    function responseState(body, init, extracted) {
        const dict = dictionary(init, "the ResponseInit");
        const status = dict.status !== undefined ? unsignedShort(dict.status) : 200;
        if (status < 200 || status > 599) throw rangeError("a Response's status must be from 200 to 599, not " + status);
        let statusText = "";
        if (dict.statusText !== undefined) {
            statusText = byteString(dict.statusText, "statusText");
            for (let i = 0; i < statusText.length; i++) {
                const c = code(statusText, i);
                if (!(c === 0x09 || (c >= 0x20 && c !== 0x7f))) throw typeError("invalid statusText");
            }
        }
        const list = headerList(dict.headers);
        if (extracted === undefined && body !== null) extracted = extractBody(body);
        if (extracted !== undefined) {
            if (isNullBodyStatus(status)) throw typeError("a Response with status " + status + " cannot have a body");
            setContentType(list, extracted.type);
        }
        const headers = new Headers(INTERNAL, { kind: "Headers", list, immutable: false });
        return {
            kind: "Response", type: "default", status, statusText, headers,
            body: extracted === undefined ? null : extracted.body, urlList: [], signal: null,
        };
    }

    // A Response with no body and immutable headers (error(), redirect()).
    function bodilessResponse(type, status, headerList) {
        return new FetchResponse(INTERNAL, {
            kind: "Response", type, status, statusText: "",
            headers: new Headers(INTERNAL, { kind: "Headers", list: headerList, immutable: true }),
            body: null, urlList: [], signal: null,
        });
    }

    // A Response's Headers object. A fetched response's is made when it is
    // first asked for (`headers` is null until then; `headerList` holds
    // the list).
    function responseHeaders(st) {
        if (st.headers === null) st.headers = new Headers(INTERNAL, { kind: "Headers", list: st.headerList, immutable: true });
        return st.headers;
    }

    function responseBody(response, how) {
        const st = slotOf(response, "Response");
        return consumeBody(st, st.signal, how);
    }

    const FetchResponse = class Response {
        constructor(body = null, init = undefined) {
            call(weakMapSet, slots, this, body === INTERNAL ? init : responseState(body, init, undefined));
        }
        static error() {
            return bodilessResponse("error", 0, []);
        }
        static redirect(url, status = 302) {
            const href = urlHref(parseUrl(url, undefined), true);
            status = unsignedShort(status);
            if (!isRedirectStatus(status)) throw rangeError("a redirect's status must be 301, 302, 303, 307 or 308");
            return bodilessResponse("default", status, [["location", href]]);
        }
        static json(data, init = undefined) {
            let text;
            try {
                text = stringify(data);
            } catch (e) {
                throw hidePreludeFrames(e);
            }
            if (text === undefined) throw typeError("Response.json: the value cannot be serialized as JSON");
            const extracted = { body: newBody(wellFormed(text), undefined), type: "application/json" };
            return new FetchResponse(INTERNAL, responseState(null, init, extracted));
        }
        get type() { return slotOf(this, "Response").type; }
        get url() {
            const list = slotOf(this, "Response").urlList;
            return list.length === 0 ? "" : urlHref(list[list.length - 1], false);
        }
        get redirected() { return slotOf(this, "Response").urlList.length > 1; }
        get status() { return slotOf(this, "Response").status; }
        get ok() {
            const status = slotOf(this, "Response").status;
            return status >= 200 && status <= 299;
        }
        get statusText() { return slotOf(this, "Response").statusText; }
        get headers() { return responseHeaders(slotOf(this, "Response")); }
        get bodyUsed() {
            const body = slotOf(this, "Response").body;
            return body !== null && body.used;
        }
        async text() { return responseBody(this, "text"); }
        async json() { return responseBody(this, "json"); }
        async arrayBuffer() { return responseBody(this, "arrayBuffer"); }
        async bytes() { return responseBody(this, "bytes"); }
        clone() {
            const st = slotOf(this, "Response");
            if (st.body !== null && st.body.used) throw typeError("cannot clone a Response whose body has been read");
            const headers = slotOf(responseHeaders(st), "Headers");
            return new FetchResponse(INTERNAL, {
                kind: "Response", type: st.type, status: st.status, statusText: st.statusText,
                headers: copyHeaders(headers, headers.immutable), body: copyBody(st.body),
                urlList: copyList(st.urlList, 0), signal: st.signal,
            });
        }
    };
    defineProperty(FetchResponse.prototype, symbolToStringTag, { value: "Response", configurable: true });

    // ---- fetch ----

    // The request headers WHATWG drops when a redirect turns a request into
    // a GET without a body.
    const REQUEST_BODY_HEADERS = ["content-encoding", "content-language", "content-location", "content-type"];

    function withoutNames(pairs, names) {
        const out = [];
        for (let i = 0; i < pairs.length; i++) {
            let drop = false;
            for (let k = 0; k < names.length; k++) if (pairs[i][0] === names[k]) drop = true;
            if (!drop) push(out, pairs[i]);
        }
        return out;
    }

    // The signal's remaining time, for the host: undefined without one.
    function timeoutMs(signal) {
        const deadline = signalDeadline(signal);
        if (deadline === undefined) return undefined;
        const left = mathCeil(deadline - dateNow());
        return left < 0 ? 0 : mathMin(left, 0xffffffff);
    }

    // Why a broker call failed, in WHATWG terms: TypeError("fetch failed")
    // with the plimsoll error (its reason intact) as the cause; a timeout
    // under a timeout signal is that signal's TimeoutError.
    function fetchRefusal(raw, signal, timeout) {
        if (raw.error === "Timeout" && timeout !== undefined) {
            // Normally the signal's deadline has passed and it fires now;
            // if the host's own, shorter, limit ended the call, it is a
            // TimeoutError all the same.
            refreshSignal(signal);
            return signal.aborted ? signal.reason : timeoutError();
        }
        return typeError("fetch failed", brokerError(raw));
    }

    // The Response for the broker's answer. Its headers come from the
    // host, which has already filtered them; the list is the native's
    // (nothing else holds it), its Headers object made on demand.
    function fetchedResponse(raw, urlList, signal) {
        let body = null;
        if (!isNullBodyStatus(raw.status)) {
            const text = raw.text;
            body = newBody(text.length > 0 && code(text, 0) === 0xfeff ? slice(text, 1) : text, raw.bytes);
        }
        return new FetchResponse(INTERNAL, {
            kind: "Response", type: "basic", status: raw.status, statusText: "",
            headers: null, headerList: raw.headers,
            body, urlList, signal,
        });
    }

    // The broker calls for one fetch (`rq` from requestParts; `signal`
    // null for none): the request, then each redirect it follows (at most
    // 20), each a new call checked by the host.
    function fetchFollowing(rq, signal) {
        let url = rq.url;
        let method = rq.method;
        let body = rq.body;
        let headers;
        if (rq.list.length === 0) {
            headers = [["accept", "*/*"]];
        } else {
            headers = sortAndCombine(rq.list);
            if (listIndexOf(headers, "accept", 0) < 0) push(headers, ["accept", "*/*"]);
        }
        const urlList = [url];
        for (let redirects = 0; ;) {
            let timeout;
            if (signal !== null) {
                refreshSignal(signal);
                if (signal.aborted) throw signal.reason;
                timeout = timeoutMs(signal);
            }
            const raw = native.callOrigin(urlOrigin(url), method, urlTarget(url), headers, nativeBody(body), timeout);
            if (raw.error !== undefined) throw fetchRefusal(raw, signal, timeout);
            const status = raw.status;
            const at = isRedirectStatus(status) && rq.redirect !== "manual" ? listIndexOf(raw.headers, "location", 0) : -1;
            if (at < 0) return fetchedResponse(raw, urlList, signal);
            const location = raw.headers[at][1];
            if (rq.redirect === "error") throw typeError("fetch failed", typeError("the response is a redirect and the request's redirect mode is \"error\""));
            let next;
            try {
                next = parseUrl(location, url);
            } catch (e) {
                throw typeError("fetch failed", e);
            }
            if (next.fragment === null && url.fragment !== null) {
                next = { scheme: next.scheme, host: next.host, port: next.port, path: next.path, query: next.query, fragment: url.fragment };
            }
            if (++redirects > 20) throw typeError("fetch failed", typeError("redirect count exceeded"));
            if (((status === 301 || status === 302) && method === "POST") || (status === 303 && method !== "GET" && method !== "HEAD")) {
                method = "GET";
                body = null;
                headers = withoutNames(headers, REQUEST_BODY_HEADERS);
            }
            if (urlOrigin(next) !== urlOrigin(url)) headers = withoutNames(headers, ["authorization"]);
            url = next;
            push(urlList, url);
        }
    }

    function fetch(input, init = undefined) {
        // The work is done before the promise exists, so that an error's
        // stack has no frame of the Promise constructor: only the cell's
        // remain once the prelude's are hidden.
        let signal;
        let response;
        try {
            const rq = requestParts(input, init);
            signal = rq.signal;
            response = fetchFollowing(rq, signal);
        } catch (e) {
            // An aborted signal's reason is passed on as it is.
            return call(promiseReject, PromiseCtor, signal !== undefined && signal !== null && signal.aborted && e === signal.reason ? e : hidePreludeFrames(e));
        }
        // Without a signal nothing can happen in between: the promise is
        // settled already, as an async function's would be.
        if (signal === null) return call(promiseResolve, PromiseCtor, response);
        // The host has answered already (the call is synchronous); the
        // promise settles on the job queue, like plimsoll.call's. An abort in
        // between (`const p = fetch(u, {signal}); controller.abort()`) still
        // wins, as it would in a browser.
        return new PromiseCtor((resolve, reject) => {
            call(promiseThen, resolvedPromise, () => {
                if (signal.aborted) reject(signal.reason);
                else resolve(response);
            });
        });
    }

    // How console shows these objects, whose state is internal.
    function fetchDisplay(v) {
        const st = call(weakMapGet, slots, v);
        if (st === undefined) return undefined;
        const headersObject = (h) => {
            const pairs = sortAndCombine(slotOf(h, "Headers").list);
            const out = {};
            for (let i = 0; i < pairs.length; i++) {
                const joined = hasOwn(out, pairs[i][0]) ? out[pairs[i][0]] + ", " + pairs[i][1] : pairs[i][1];
                defineProperty(out, pairs[i][0], { value: joined, writable: true, enumerable: true, configurable: true });
            }
            return out;
        };
        const used = (body) => body !== null && body.used;
        switch (st.kind) {
            case "Headers": return "Headers " + stringify(headersObject(v));
            case "Request":
                return "Request " + stringify({ method: st.method, url: urlHref(st.url, true), redirect: st.redirect, bodyUsed: used(st.body), headers: headersObject(st.headers) });
            case "Response":
                return "Response " + stringify({
                    status: st.status, statusText: st.statusText, ok: st.status >= 200 && st.status <= 299, type: st.type,
                    url: st.urlList.length === 0 ? "" : urlHref(st.urlList[st.urlList.length - 1], false),
                    redirected: st.urlList.length > 1, bodyUsed: used(st.body), headers: headersObject(responseHeaders(st)),
                });
            case "AbortSignal": return "AbortSignal " + stringify({ aborted: st.aborted });
            case "AbortController": return "AbortController " + stringify({ signal: { aborted: st.signal.aborted } });
            default: return undefined;
        }
    }

    const fetchGlobals = { fetch, Headers, Request, Response: FetchResponse, AbortController, AbortSignal };
    if (DOMExceptionCtor === undefined) fetchGlobals.DOMException = DOMExceptionClass;
    const fetchNames = objectEntries(fetchGlobals);
    for (let i = 0; i < fetchNames.length; i++) {
        defineProperty(globalThis, fetchNames[i][0], { value: fetchNames[i][1], writable: true, configurable: true, enumerable: false });
    }

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
        // For node/*.js, which add to it.
        lib: {
            call, wellFormed, safeString, show, line, describeError, hidePreludeFrames,
            typeError, console: consoleObject, utf8Encode, utf8Decode,
            setDisplay(f) { extraDisplay = f; },
        },
    };
})
