// node/url.js: the `URL` and `URLSearchParams` globals and `url`
// (`fileURLToPath`, `pathToFileURL`). QuickJS has no URL; this one follows
// the WHATWG parser for what programs use (absolute and relative http(s)
// and file: URLs, `new URL("./x", import.meta.url)`), without IDNA or IPv4
// number forms. fetch keeps its own stricter parser (prelude.js).
(function (native, lib) {
    "use strict";

    const { call, wellFormed } = lib;
    const TypeErrorCtor = TypeError;
    const StringCtor = String;
    const charCodeAt = String.prototype.charCodeAt;
    const stringSlice = String.prototype.slice;
    const indexOf = String.prototype.indexOf;
    const lastIndexOf = String.prototype.lastIndexOf;
    const toLowerCase = String.prototype.toLowerCase;
    const stringReplace = String.prototype.replace;
    const regexpExec = RegExp.prototype.exec;
    const arrayPush = Array.prototype.push;
    const arraySplice = Array.prototype.splice;
    const arrayJoin = Array.prototype.join;
    const arraySort = Array.prototype.sort;
    const encodeComponent = encodeURIComponent;
    const decodeComponent = decodeURIComponent;
    const symbolIterator = Symbol.iterator;
    const defineProperty = Object.defineProperty;

    const SPECIAL = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21", "file:": "" };
    const isSpecial = (scheme) => Object.hasOwn(SPECIAL, scheme);

    function slice(s, a, b) {
        return call(stringSlice, s, a, b);
    }

    function invalid(input) {
        const e = lib.nodeError(TypeErrorCtor, "ERR_INVALID_URL", "Invalid URL");
        e.input = input;
        return e;
    }

    // Percent-encodes the characters `set` selects, C0 controls and
    // everything outside ASCII (as UTF-8), leaving existing %XX escapes
    // alone.
    function encodeSet(s, set) {
        let out = "";
        for (let i = 0; i < s.length; i++) {
            const c = call(charCodeAt, s, i);
            if (c > 0x7e || c < 0x20 || set(c)) {
                let end = i + 1;
                if (c >= 0xd800 && c <= 0xdbff && end < s.length) end++;
                out += encodeComponent(slice(s, i, end));
                i = end - 1;
            } else {
                out += s[i];
            }
        }
        return out;
    }
    const inPath = (c) => c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e || c === 0x3f || c === 0x60 || c === 0x7b || c === 0x7d;
    const inQuery = (c) => c === 0x20 || c === 0x22 || c === 0x23 || c === 0x3c || c === 0x3e;
    const inSpecialQuery = (c) => inQuery(c) || c === 0x27;
    const inFragment = (c) => c === 0x20 || c === 0x22 || c === 0x3c || c === 0x3e || c === 0x60;
    const inUserinfo = (c) => inPath(c) || c === 0x2f || c === 0x3a || c === 0x3b || c === 0x3d || c === 0x40 || (c >= 0x5b && c <= 0x5e) || c === 0x7c;

    // "." and ".." segments resolved; `path` starts with "/".
    function removeDots(path) {
        const segments = [];
        let start = 1;
        for (let i = 1; i <= path.length; i++) {
            if (i === path.length || path[i] === "/") {
                const seg = slice(path, start, i);
                const lower = call(toLowerCase, seg);
                if (seg === ".." || lower === ".%2e" || lower === "%2e." || lower === "%2e%2e") {
                    if (segments.length > 0) call(arraySplice, segments, segments.length - 1, 1);
                    if (i === path.length) call(arrayPush, segments, "");
                } else if (seg === "." || lower === "%2e") {
                    if (i === path.length) call(arrayPush, segments, "");
                } else {
                    call(arrayPush, segments, seg);
                }
                start = i + 1;
            }
        }
        return "/" + call(arrayJoin, segments, "/");
    }

    // Splits "path?query#fragment".
    function splitTail(s) {
        let fragment = null;
        let query = null;
        const hash = call(indexOf, s, "#");
        if (hash >= 0) {
            fragment = slice(s, hash + 1);
            s = slice(s, 0, hash);
        }
        const q = call(indexOf, s, "?");
        if (q >= 0) {
            query = slice(s, q + 1);
            s = slice(s, 0, q);
        }
        return { path: s, query, fragment };
    }

    const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;
    const AUTHORITY_END = /[/?#]/;

    // Parses `input` (against the parsed `base`, or null) into the record
    // the URL class keeps: {scheme, username, password, host, port, path,
    // query, fragment, opaque}.
    function parse(input, base) {
        let s = call(stringReplace, call(stringReplace, wellFormed(StringCtor(input)), /^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, ""), /[\t\n\r]/g, "");
        const m = call(regexpExec, SCHEME, s);
        let scheme;
        let rest;
        if (m !== null) {
            scheme = call(toLowerCase, m[1]) + ":";
            rest = slice(s, m[0].length);
        } else {
            if (base === null) throw invalid(input);
            scheme = base.scheme;
            rest = s;
            if (base.opaque) {
                if (rest[0] !== "#") throw invalid(input);
                return { ...base, fragment: slice(rest, 1) };
            }
        }
        const special = isSpecial(scheme);
        if (special) rest = call(stringReplace, rest, /\\/g, "/");
        const relative = base !== null && base.scheme === scheme && slice(rest, 0, 2) !== "//" && (m === null || special);
        if (!relative && slice(rest, 0, 2) !== "//" && !(special && scheme !== "file:")) {
            if (scheme === "file:") return finish(scheme, "", "", "", "", rest[0] === "/" ? rest : "/" + rest, special);
            // An opaque URL ("mailto:x", "data:...").
            const t = splitTail(rest);
            return { scheme, username: "", password: "", host: null, port: "", path: encodeSet(t.path, () => false), query: t.query === null ? null : encodeSet(t.query, inQuery), fragment: t.fragment === null ? null : encodeSet(t.fragment, inFragment), opaque: true };
        }
        if (relative) {
            if (rest === "") return { ...base, fragment: null };
            if (rest[0] === "#") return { ...base, fragment: encodeSet(slice(rest, 1), inFragment) };
            if (rest[0] === "?") {
                const t = splitTail(rest);
                return { ...base, query: encodeSet(t.query, special ? inSpecialQuery : inQuery), fragment: t.fragment === null ? null : encodeSet(t.fragment, inFragment) };
            }
            let path = rest;
            if (rest[0] !== "/") {
                const t = splitTail(rest);
                const dir = slice(base.path, 0, call(lastIndexOf, base.path, "/") + 1);
                path = (dir === "" ? "/" : dir) + t.path + (t.query === null ? "" : "?" + t.query) + (t.fragment === null ? "" : "#" + t.fragment);
            }
            return finish(scheme, base.username, base.password, base.host, base.port, path, special);
        }
        // "//authority/path..." (or "http:host/path"; a file: URL's
        // authority is what follows exactly two slashes, often nothing).
        if (scheme === "file:") rest = slice(rest, 2);
        else while (rest[0] === "/") rest = slice(rest, 1);
        const end = call(regexpExec, AUTHORITY_END, rest);
        const at = end === null ? rest.length : end.index;
        let authority = slice(rest, 0, at);
        const tail = slice(rest, at);
        let username = "";
        let password = "";
        const userEnd = call(lastIndexOf, authority, "@");
        if (userEnd >= 0) {
            const info = slice(authority, 0, userEnd);
            authority = slice(authority, userEnd + 1);
            const colon = call(indexOf, info, ":");
            username = encodeSet(colon >= 0 ? slice(info, 0, colon) : info, inUserinfo);
            password = colon >= 0 ? encodeSet(slice(info, colon + 1), inUserinfo) : "";
        }
        let host = authority;
        let port = "";
        const portMatch = call(regexpExec, /:(\d*)$/, host);
        if (portMatch !== null && (host[0] !== "[" || call(indexOf, host, "]") < portMatch.index)) {
            host = slice(host, 0, portMatch.index);
            port = portMatch[1];
            if (port !== "") {
                const n = +port;
                if (n > 65535) throw invalid(input);
                port = StringCtor(n);
            }
        }
        if (special) {
            host = call(toLowerCase, host);
            if (host === "" && scheme !== "file:") throw invalid(input);
            if (call(regexpExec, /[\u0000\t\n\r #/:<>?@[\\\]^|%]/, call(stringReplace, host, /^\[[0-9a-f:.]*\]$/, "")) !== null) throw invalid(input);
            if (port === SPECIAL[scheme]) port = "";
            if (scheme === "file:" && host === "localhost") host = "";
        }
        return finish(scheme, username, password, host, port, tail === "" && special ? "/" : tail, special);
    }

    function finish(scheme, username, password, host, port, rest, special) {
        const t = splitTail(rest);
        let path = t.path;
        if (special || path[0] === "/") path = removeDots(path === "" ? "/" : path);
        return {
            scheme, username, password, host, port,
            path: encodeSet(path, inPath),
            query: t.query === null ? null : encodeSet(t.query, special ? inSpecialQuery : inQuery),
            fragment: t.fragment === null ? null : encodeSet(t.fragment, inFragment),
            opaque: false,
        };
    }

    function hostPart(r) {
        return r.host + (r.port === "" ? "" : ":" + r.port);
    }

    function serialize(r) {
        let out = r.scheme;
        if (r.host !== null) {
            out += "//";
            if (r.username !== "" || r.password !== "") out += r.username + (r.password === "" ? "" : ":" + r.password) + "@";
            out += hostPart(r);
        }
        out += r.path;
        if (r.query !== null) out += "?" + r.query;
        if (r.fragment !== null) out += "#" + r.fragment;
        return out;
    }

    // ---- URLSearchParams ----

    function decodeForm(s) {
        s = call(stringReplace, s, /\+/g, " ");
        try {
            return decodeComponent(s);
        } catch (_) {
            return call(stringReplace, s, /%([0-9a-fA-F]{2})/g, (all, hex) => {
                const c = parseInt(hex, 16);
                return c < 0x80 ? StringCtor.fromCharCode(c) : all;
            });
        }
    }

    function encodeForm(s) {
        return call(stringReplace, encodeComponent(wellFormed(s)), /%20|[!'()~]/g, (c) => c === "%20" ? "+" : "%" + call(charCodeAt, c, 0).toString(16).toUpperCase());
    }

    function parseForm(s) {
        const list = [];
        if (s[0] === "?") s = slice(s, 1);
        let start = 0;
        for (let i = 0; i <= s.length; i++) {
            if (i === s.length || s[i] === "&") {
                const part = slice(s, start, i);
                start = i + 1;
                if (part === "") continue;
                const eq = call(indexOf, part, "=");
                call(arrayPush, list, eq >= 0 ? [decodeForm(slice(part, 0, eq)), decodeForm(slice(part, eq + 1))] : [decodeForm(part), ""]);
            }
        }
        return list;
    }

    class URLSearchParams {
        #list = [];
        #onChange = null;
        constructor(init = undefined) {
            if (init === undefined || init === null) return;
            if (typeof init === "object" || typeof init === "function") {
                if (typeof init[symbolIterator] === "function") {
                    for (const pair of init) {
                        const p = [...pair];
                        if (p.length !== 2) throw new TypeErrorCtor("Each query pair must be an iterable [name, value] tuple");
                        call(arrayPush, this.#list, [StringCtor(p[0]), StringCtor(p[1])]);
                    }
                } else {
                    for (const key of Object.keys(init)) call(arrayPush, this.#list, [key, StringCtor(init[key])]);
                }
            } else {
                this.#list = parseForm(StringCtor(init));
            }
        }
        static attach(params, onChange) {
            params.#onChange = onChange;
        }
        static reset(params, query) {
            params.#list = query === null ? [] : parseForm(query);
        }
        #changed() {
            if (this.#onChange !== null) this.#onChange(this.toString());
        }
        get size() { return this.#list.length; }
        append(name, value) {
            call(arrayPush, this.#list, [StringCtor(name), StringCtor(value)]);
            this.#changed();
        }
        delete(name, value = undefined) {
            name = StringCtor(name);
            for (let i = this.#list.length - 1; i >= 0; i--) {
                if (this.#list[i][0] === name && (value === undefined || this.#list[i][1] === StringCtor(value))) call(arraySplice, this.#list, i, 1);
            }
            this.#changed();
        }
        get(name) {
            name = StringCtor(name);
            for (const [k, v] of this.#list) if (k === name) return v;
            return null;
        }
        getAll(name) {
            name = StringCtor(name);
            const out = [];
            for (const [k, v] of this.#list) if (k === name) call(arrayPush, out, v);
            return out;
        }
        has(name, value = undefined) {
            name = StringCtor(name);
            for (const [k, v] of this.#list) if (k === name && (value === undefined || v === StringCtor(value))) return true;
            return false;
        }
        set(name, value) {
            name = StringCtor(name);
            value = StringCtor(value);
            let found = false;
            for (let i = 0; i < this.#list.length; i++) {
                if (this.#list[i][0] !== name) continue;
                if (found) {
                    call(arraySplice, this.#list, i, 1);
                    i--;
                } else {
                    this.#list[i][1] = value;
                    found = true;
                }
            }
            if (!found) call(arrayPush, this.#list, [name, value]);
            this.#changed();
        }
        sort() {
            call(arraySort, this.#list, (a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
            this.#changed();
        }
        forEach(callback, thisArg = undefined) {
            for (const [k, v] of this.#list) call(callback, thisArg, v, k, this);
        }
        *entries() {
            for (const [k, v] of this.#list) yield [k, v];
        }
        *keys() {
            for (const [k] of this.#list) yield k;
        }
        *values() {
            for (const [, v] of this.#list) yield v;
        }
        [symbolIterator]() {
            return this.entries();
        }
        toString() {
            const parts = [];
            for (const [k, v] of this.#list) call(arrayPush, parts, encodeForm(k) + "=" + encodeForm(v));
            return call(arrayJoin, parts, "&");
        }
    }
    const attachParams = URLSearchParams.attach;
    const resetParams = URLSearchParams.reset;
    delete URLSearchParams.attach;
    delete URLSearchParams.reset;

    // ---- URL ----

    class URL {
        #r;
        #params = null;
        constructor(input, base = undefined) {
            const b = base === undefined ? null : base instanceof URL ? base.#r : parse(base, null);
            this.#r = parse(input instanceof URL ? input.href : input, b);
        }
        static canParse(input, base = undefined) {
            try {
                new URL(input, base);
                return true;
            } catch (_) {
                return false;
            }
        }
        static parse(input, base = undefined) {
            try {
                return new URL(input, base);
            } catch (_) {
                return null;
            }
        }
        #set(r) {
            this.#r = r;
            if (this.#params !== null) resetParams(this.#params, r.query);
        }
        get href() { return serialize(this.#r); }
        set href(v) { this.#set(parse(v, null)); }
        get origin() {
            const r = this.#r;
            if (r.scheme === "file:" || !isSpecial(r.scheme)) return "null";
            return r.scheme + "//" + hostPart(r);
        }
        get protocol() { return this.#r.scheme; }
        set protocol(v) {
            const m = call(regexpExec, /^([a-zA-Z][a-zA-Z0-9+.-]*):?/, StringCtor(v));
            if (m !== null && isSpecial(call(toLowerCase, m[1]) + ":") === isSpecial(this.#r.scheme)) this.#r = { ...this.#r, scheme: call(toLowerCase, m[1]) + ":" };
        }
        get username() { return this.#r.username; }
        set username(v) { if (this.#r.host) this.#r = { ...this.#r, username: encodeSet(StringCtor(v), inUserinfo) }; }
        get password() { return this.#r.password; }
        set password(v) { if (this.#r.host) this.#r = { ...this.#r, password: encodeSet(StringCtor(v), inUserinfo) }; }
        get host() { return this.#r.host === null ? "" : hostPart(this.#r); }
        set host(v) {
            if (this.#r.opaque) return;
            try {
                const r = parse(this.#r.scheme + "//" + StringCtor(v), null);
                this.#r = { ...this.#r, host: r.host, port: r.port };
            } catch (_) {
                // An invalid host is ignored, as by the standard's setter.
            }
        }
        get hostname() { return this.#r.host === null ? "" : this.#r.host; }
        set hostname(v) {
            if (this.#r.opaque) return;
            try {
                const r = parse(this.#r.scheme + "//" + StringCtor(v), null);
                this.#r = { ...this.#r, host: r.host };
            } catch (_) {
                // Ignored, as above.
            }
        }
        get port() { return this.#r.port; }
        set port(v) {
            const s = StringCtor(v);
            if (s === "") this.#r = { ...this.#r, port: "" };
            else if (call(regexpExec, /^\d+/, s) !== null && +call(regexpExec, /^\d+/, s)[0] <= 65535) {
                const port = StringCtor(+call(regexpExec, /^\d+/, s)[0]);
                this.#r = { ...this.#r, port: port === SPECIAL[this.#r.scheme] ? "" : port };
            }
        }
        get pathname() { return this.#r.path; }
        set pathname(v) {
            if (this.#r.opaque) return;
            let p = StringCtor(v);
            if (isSpecial(this.#r.scheme)) p = call(stringReplace, p, /\\/g, "/");
            if (p[0] !== "/") p = "/" + p;
            this.#r = { ...this.#r, path: encodeSet(removeDots(p), inPath) };
        }
        get search() { return this.#r.query === null || this.#r.query === "" ? "" : "?" + this.#r.query; }
        set search(v) {
            let s = StringCtor(v);
            if (s[0] === "?") s = slice(s, 1);
            this.#set({ ...this.#r, query: s === "" ? null : encodeSet(s, isSpecial(this.#r.scheme) ? inSpecialQuery : inQuery) });
        }
        get searchParams() {
            if (this.#params === null) {
                this.#params = new URLSearchParams(this.#r.query === null ? "" : this.#r.query);
                attachParams(this.#params, (q) => {
                    this.#r = { ...this.#r, query: q === "" ? null : q };
                });
            }
            return this.#params;
        }
        get hash() { return this.#r.fragment === null || this.#r.fragment === "" ? "" : "#" + this.#r.fragment; }
        set hash(v) {
            let s = StringCtor(v);
            if (s[0] === "#") s = slice(s, 1);
            this.#r = { ...this.#r, fragment: s === "" ? null : encodeSet(s, inFragment) };
        }
        toString() { return this.href; }
        toJSON() { return this.href; }
    }
    defineProperty(URL.prototype, Symbol.toStringTag, { value: "URL", configurable: true });

    // ---- url ----

    function fileURLToPath(url) {
        let u = url;
        if (typeof url === "string") u = new URL(url);
        else if (!(url instanceof URL)) throw lib.invalidArgType("path", "of type string or an instance of URL", url);
        if (u.protocol !== "file:") throw lib.nodeError(TypeErrorCtor, "ERR_INVALID_URL_SCHEME", "The URL must be of scheme file");
        if (u.hostname !== "" && u.hostname !== "localhost") throw lib.nodeError(TypeErrorCtor, "ERR_INVALID_FILE_URL_HOST", "File URL host must be \"localhost\" or empty on linux");
        const p = u.pathname;
        if (call(regexpExec, /%2f/i, p) !== null) throw lib.nodeError(TypeErrorCtor, "ERR_INVALID_FILE_URL_PATH", "File URL path must not include encoded / characters");
        try {
            return decodeComponent(p);
        } catch (_) {
            return p;
        }
    }

    function pathToFileURL(p) {
        if (typeof p !== "string") throw lib.invalidArgType("path", "of type string", p);
        let resolved = lib.path.resolve(p);
        if (p.length > 0 && p[p.length - 1] === "/" && resolved !== "/") resolved += "/";
        // What Node's pathToFileURL escapes, and everything outside ASCII.
        const encoded = call(stringReplace, resolved, /[\u0000-\u0020"#%<>?[\\\]^`{|}~\u007f]/g, (c) => "%" + call(charCodeAt, c, 0).toString(16).toUpperCase().padStart(2, "0"));
        return new URL("file://" + encodeSet(encoded, () => false));
    }

    // A `path` argument as a string: a file URL becomes its path.
    lib.pathArg = function (value, name) {
        if (typeof value === "string") return value;
        if (value instanceof URL) return fileURLToPath(value);
        if (value instanceof Uint8Array) return lib.decodeUtf8(value);
        throw lib.invalidArgType(name, "of type string or an instance of Buffer or URL", value);
    };

    lib.URL = URL;
    lib.fileURLToPath = fileURLToPath;
    lib.pathToFileURL = pathToFileURL;
    lib.defineGlobal("URL", URL);
    lib.defineGlobal("URLSearchParams", URLSearchParams);
    lib.builtins.url = () => ({
        URL, URLSearchParams, fileURLToPath, pathToFileURL,
        format(u) { return u instanceof URL ? u.href : StringCtor(u); },
    });
})
