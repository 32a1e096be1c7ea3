// Unit tests of the prelude's `fetch`, `Headers`, `Request`, `Response`,
// `AbortController` and `AbortSignal`, run by Node against a fake `native`.
//
//     node --test guests/javascript/test/
//
// The prelude runs in a fresh `vm` context, which has only the ECMAScript
// globals (no URL, TextEncoder, DOMException, structuredClone, timers or
// console): close to QuickJS, whose globals beyond ECMAScript are few (see
// the list the test checks). What this cannot cover is the Rust side: the
// `callOrigin` native and the host behind it; those need the real build.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";

const PRELUDE = readFileSync(new URL("../src/prelude.js", import.meta.url), "utf8");

// Globals a Node vm context might still have that QuickJS does not.
const NOT_IN_QUICKJS = [
    "URL", "URLSearchParams", "TextEncoder", "TextDecoder", "structuredClone", "fetch", "Headers",
    "Request", "Response", "AbortController", "AbortSignal", "Blob", "FormData", "ReadableStream",
    "setTimeout", "setInterval", "clearTimeout", "console", "Event", "EventTarget",
];

// A prelude instance with a fake native. `handler(call)` answers each
// `callOrigin`; `clock.now` is what Date.now returns.
function load({ domException = false } = {}) {
    const context = vm.createContext({});
    // The context's own global object (the one its code sees).
    const ctx = vm.runInContext("globalThis", context);
    for (const name of NOT_IN_QUICKJS) delete ctx[name];
    // QuickJS-ng has DOMException (with atob/btoa); test both with Node's
    // and with the prelude's fallback.
    if (domException) ctx.DOMException = DOMException;
    else delete ctx.DOMException;
    const clock = { now: 1_000_000 };
    ctx.__now = () => clock.now;
    vm.runInContext("{ const now = __now; delete globalThis.__now; Date.now = function () { return now(); }; }", context);

    const CtxUint8Array = ctx.Uint8Array;
    const env = {
        ctx,
        clock,
        calls: [],
        writes: [],
        handler: () => respond(200, [], "ok"),
        // A broker answer, as natives.rs builds it (in the context's realm).
        respond,
        refuse: (error, reason) => ({ error, reason }),
    };
    function respond(status, headers = [], body = "") {
        const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
        return {
            status,
            headers: headers.map((pair) => [pair[0], pair[1]]),
            text: new TextDecoder().decode(bytes),
            bytes: new CtxUint8Array(bytes),
        };
    }
    const native = {
        write(stream, text) {
            env.writes.push([stream, text]);
        },
        call() {
            throw new Error("fetch must not use native.call");
        },
        callOrigin(origin, method, path, headers, body, timeoutMs) {
            assert.equal(arguments.length, 6);
            for (const v of [origin, method, path]) assert.equal(typeof v, "string");
            for (const pair of headers) {
                assert.equal(pair.length, 2);
                assert.equal(typeof pair[0], "string");
                assert.equal(typeof pair[1], "string");
            }
            assert.ok(typeof body === "string" || body instanceof CtxUint8Array, "body is a string or a Uint8Array");
            assert.ok(timeoutMs === undefined || (Number.isInteger(timeoutMs) && timeoutMs >= 0 && timeoutMs <= 0xffffffff));
            const c = {
                origin,
                method,
                path,
                headers: Array.from(headers, (pair) => [pair[0], pair[1]]),
                body: typeof body === "string" ? body : Buffer.from(body).toString("latin1"),
                bodyIsBytes: typeof body !== "string",
                timeoutMs,
            };
            env.calls.push(c);
            return env.handler(c, env.calls.length);
        },
        random: () => 0.5,
    };
    env.helpers = vm.runInContext(PRELUDE, context, { filename: "<prelude>" })(native);
    env.run = (code) => vm.runInContext(code, context);
    return env;
}

// Whether `promise` rejects; returns the reason.
async function rejection(promise) {
    try {
        await promise;
    } catch (e) {
        return e;
    }
    assert.fail("the promise was fulfilled");
}

// Whether a stack shows prelude frames as QuickJS writes them ("    at f
// (<prelude>:1:2)", "<anonymous>" for a nameless function), which is what
// hidePreludeFrames removes. V8 writes a nameless frame without the
// parentheses; those lines are not what QuickJS would show.
function leaksPrelude(stack) {
    return /\(<prelude>:/.test(stack);
}

function urlOf(call) {
    return call.origin + call.path;
}

function plain(v) {
    return JSON.parse(JSON.stringify(v));
}

test("the globals exist, are not enumerable, and plimsoll.Response is untouched", () => {
    const { ctx, run } = load();
    for (const name of ["fetch", "Headers", "Request", "Response", "AbortController", "AbortSignal", "DOMException"]) {
        assert.equal(typeof ctx[name], "function", name);
        const d = Object.getOwnPropertyDescriptor(ctx, name);
        assert.deepEqual([d.enumerable, d.writable, d.configurable], [false, true, true], name);
    }
    assert.notEqual(ctx.plimsoll.Response, ctx.Response);
    assert.equal(ctx.plimsoll.Response.name, "Response");
    assert.equal(ctx.Response.name, "Response");
    assert.equal(run("typeof plimsoll.Response.prototype.header"), "function");
    assert.equal(run("typeof Response.prototype.header"), "undefined");
    assert.equal(run("Object.prototype.toString.call(new Headers())"), "[object Headers]");
    assert.throws(() => run("new AbortSignal()"), (e) => e instanceof ctx.TypeError);
});

test("DOMException: the engine's is kept, a fallback is made without one", async () => {
    const withNative = load({ domException: true });
    assert.equal(withNative.ctx.DOMException, DOMException);
    const e = await rejection(withNative.ctx.fetch("https://a.example/", { signal: withNative.run("AbortSignal.abort()") }));
    assert.ok(e instanceof DOMException);
    assert.equal(e.name, "AbortError");
    assert.equal(e.code, 20);

    const { ctx, run } = load();
    assert.equal(run("new DOMException('m', 'TimeoutError').code"), 23);
    assert.equal(run("String(new DOMException('m', 'AbortError'))"), "AbortError: m");
    assert.equal(run("new DOMException() instanceof Error"), true);
    assert.equal(run("new DOMException().name"), "Error");
    assert.ok(ctx.DOMException);
});

test("GET: origin, path and query as the broker wants them; the Response", async () => {
    const env = load();
    env.handler = () => env.respond(200, [["Content-Type", "text/plain"], ["X-Many", "a"], ["x-many", "b"]], "hello");
    const promise = env.ctx.fetch("  HTTPS://API.Example.COM:443/v1/items?q=a b&r=é#frag ");
    // The call is made at once; the promise settles on the job queue.
    assert.equal(env.calls.length, 1);
    const r = await promise;
    assert.deepEqual(env.calls[0], {
        origin: "https://api.example.com",
        method: "GET",
        path: "/v1/items?q=a%20b&r=%C3%A9",
        headers: [["accept", "*/*"]],
        body: "",
        bodyIsBytes: false,
        timeoutMs: undefined,
    });
    assert.ok(r instanceof env.ctx.Response);
    assert.equal(r.status, 200);
    assert.equal(r.ok, true);
    assert.equal(r.statusText, "");
    assert.equal(r.type, "basic");
    assert.equal(r.url, "https://api.example.com/v1/items?q=a%20b&r=%C3%A9");
    assert.equal(r.redirected, false);
    assert.equal(r.headers.get("content-type"), "text/plain");
    assert.equal(r.headers.get("CONTENT-TYPE"), "text/plain");
    assert.equal(r.headers.get("x-many"), "a, b");
    assert.equal(r.headers.has("X-Many"), true);
    assert.equal(r.headers.get("absent"), null);
    assert.equal(r.bodyUsed, false);
    assert.equal(await r.text(), "hello");
    assert.equal(r.bodyUsed, true);
    // Fetched headers are immutable.
    assert.throws(() => r.headers.set("x", "y"), (e) => e instanceof env.ctx.TypeError);
});

test("POST JSON: method, headers sorted and combined, body, json()", async () => {
    const env = load();
    env.handler = () => env.respond(201, [["content-type", "application/json"]], '{"id":7,"ok":true}');
    const r = await env.ctx.fetch("https://api.example.com/v1/orders", {
        method: "post",
        headers: { "Content-Type": "application/json", "X-B": "2", Accept: "application/json" },
        body: JSON.stringify({ item: "x" }),
    });
    assert.deepEqual(env.calls[0], {
        origin: "https://api.example.com",
        method: "POST",
        path: "/v1/orders",
        headers: [["accept", "application/json"], ["content-type", "application/json"], ["x-b", "2"]],
        body: '{"item":"x"}',
        bodyIsBytes: false,
        timeoutMs: undefined,
    });
    assert.equal(r.status, 201);
    assert.deepEqual(plain(await r.json()), { id: 7, ok: true });
});

test("methods: the standard ones upper-cased, PATCH as written, forbidden ones refused", async () => {
    const env = load();
    await env.ctx.fetch("https://a.example/", { method: "delete" });
    await env.ctx.fetch("https://a.example/", { method: "patch", body: "x" });
    await env.ctx.fetch("https://a.example/", { method: "PATCH", body: "x" });
    assert.deepEqual(env.calls.map((c) => c.method), ["DELETE", "patch", "PATCH"]);
    for (const method of ["CONNECT", "trace", "bad method", ""]) {
        const e = await rejection(env.ctx.fetch("https://a.example/", { method }));
        assert.ok(e instanceof env.ctx.TypeError, method);
    }
    const e = await rejection(env.ctx.fetch("https://a.example/", { body: "x" }));
    assert.match(e.message, /GET request cannot have a body/);
    assert.equal(env.calls.length, 3);
});

test("bodies: strings get text/plain, bytes go as bytes, other objects as strings", async () => {
    const env = load();
    const post = (body, headers) => env.ctx.fetch("https://a.example/p", { method: "POST", body, headers });
    await post("héllo");
    await post("x", { "content-type": "application/xml" });
    await post(env.run("new Uint8Array([1, 2, 255])"));
    await post(env.run("new Uint16Array([0x0201, 0x0403]).subarray(1)"));
    await post(env.run("new Uint8Array([9, 8, 7]).buffer"));
    await post(env.run("new DataView(new Uint8Array([5, 6, 7, 8]).buffer, 1, 2)"));
    await post(env.run("({ toString() { return 'obj' } })"));
    env.run("globalThis.URLSearchParams = class { toString() { return 'a=1&b=2' } }");
    await post(env.run("new URLSearchParams()"));
    const c = env.calls;
    assert.deepEqual([c[0].body, c[0].bodyIsBytes], ["héllo", false]);
    assert.deepEqual(c[0].headers, [["content-type", "text/plain;charset=UTF-8"], ["accept", "*/*"]]);
    assert.deepEqual(c[1].headers, [["content-type", "application/xml"], ["accept", "*/*"]]);
    assert.deepEqual([c[2].body, c[2].bodyIsBytes], ["\x01\x02\xff", true]);
    assert.deepEqual(c[2].headers, [["accept", "*/*"]]);
    assert.equal(c[3].body, "\x03\x04");
    assert.equal(c[4].body, "\x09\x08\x07");
    assert.equal(c[5].body, "\x06\x07");
    assert.deepEqual([c[6].body, c[6].headers[0][1]], ["obj", "text/plain;charset=UTF-8"]);
    assert.deepEqual([c[7].body, c[7].headers[0][1]], ["a=1&b=2", "application/x-www-form-urlencoded;charset=UTF-8"]);
});

test("a body sent is a copy: changing the array afterwards changes nothing", async () => {
    const env = load();
    const bytes = env.run("new Uint8Array([1, 2, 3])");
    const request = new env.ctx.Request("https://a.example/", { method: "PUT", body: bytes });
    bytes[0] = 9;
    await env.ctx.fetch(request);
    assert.equal(env.calls[0].body, "\x01\x02\x03");
});

test("reading a body: text, json, arrayBuffer, bytes; once only; clone", async () => {
    const env = load();
    env.handler = () => env.respond(200, [], '{"a":[1,2]}');
    const url = "https://a.example/";
    const r1 = await env.ctx.fetch(url);
    const copy = r1.clone();
    assert.deepEqual(plain(await r1.json()), { a: [1, 2] });
    const second = await rejection(r1.text());
    assert.ok(second instanceof env.ctx.TypeError);
    assert.match(second.message, /already been read/);
    assert.ok(!leaksPrelude(second.stack), second.stack);
    assert.throws(() => r1.clone(), (e) => e instanceof env.ctx.TypeError);
    assert.equal(await copy.text(), '{"a":[1,2]}');

    const buffer = await (await env.ctx.fetch(url)).arrayBuffer();
    assert.ok(buffer instanceof env.ctx.ArrayBuffer);
    assert.equal(Buffer.from(buffer).toString(), '{"a":[1,2]}');
    const bytes = await (await env.ctx.fetch(url)).bytes();
    assert.ok(bytes instanceof env.ctx.Uint8Array);
    assert.equal(bytes.length, 11);

    env.handler = () => env.respond(200, [], "not json");
    const bad = await rejection((await env.ctx.fetch(url)).json());
    assert.ok(bad instanceof env.ctx.SyntaxError);

    // A leading BOM is not part of the text, as WHATWG decodes it.
    env.handler = () => env.respond(200, [], "\ufeffbom");
    assert.equal(await (await env.ctx.fetch(url)).text(), "bom");
    // No body: every read is empty.
    env.handler = () => env.respond(204, [], "");
    const empty = await env.ctx.fetch(url);
    assert.equal(await empty.text(), "");
    assert.equal(await empty.text(), "");
    assert.equal(empty.bodyUsed, false);
});

test("an HTTP error status is a Response, not a rejection", async () => {
    const env = load();
    env.handler = () => env.respond(404, [], "missing");
    const r = await env.ctx.fetch("https://a.example/nope");
    assert.equal(r.status, 404);
    assert.equal(r.ok, false);
    assert.equal(await r.text(), "missing");
    env.handler = () => env.respond(500, [], "");
    assert.equal((await env.ctx.fetch("https://a.example/")).ok, false);
});

test("broker refusals reject with TypeError('fetch failed') caused by the plimsoll error", async () => {
    const env = load();
    const cases = [
        ["Denied", "no grant covers this origin", "Denied"],
        ["BudgetExhausted", undefined, "BudgetExhausted"],
        ["RequestTooLarge", undefined, "RequestTooLarge"],
        ["ResponseTooLarge", undefined, "ResponseTooLarge"],
        ["Timeout", undefined, "Timeout"],
        ["UpstreamError", "connection refused", "UpstreamError"],
    ];
    for (const [error, reason, cls] of cases) {
        env.handler = () => env.refuse(error, reason);
        const e = await rejection(env.ctx.fetch("https://unknown.example/x"));
        assert.ok(e instanceof env.ctx.TypeError, error);
        assert.equal(e.message, "fetch failed");
        assert.ok(e.cause instanceof env.ctx.plimsoll[cls], error);
        assert.ok(e.cause instanceof env.ctx.plimsoll.BrokerError);
        if (reason !== undefined) assert.equal(e.cause.reason, reason);
        assert.ok(!leaksPrelude(e.stack), e.stack);
        assert.ok(!leaksPrelude(e.cause.stack), e.cause.stack);
    }
    env.handler = () => env.refuse("Denied", "no grant covers this origin");
    const e = await rejection(env.ctx.fetch("https://unknown.example/x"));
    assert.equal(e.cause.message, "the grant does not allow this call: no grant covers this origin");
    // What `eval` reports for it uncaught: the cause is shown.
    const described = env.helpers.describe(e);
    assert.match(described, /^TypeError: fetch failed\n/);
    assert.match(described, /\nCaused by: Denied: the grant does not allow this call: no grant covers this origin/);
});

test("redirects are followed, each hop a new broker call", async () => {
    const env = load();
    env.handler = (c, n) => {
        if (n === 1) return env.respond(302, [["location", "/v2/next?x=1"]], "moved");
        if (n === 2) return env.respond(301, [["Location", "https://b.example:8443/final"]], "");
        return env.respond(200, [], "done");
    };
    const r = await env.ctx.fetch("https://a.example/v1/start#top", { headers: { "x-k": "v" } });
    assert.deepEqual(
        env.calls.map((c) => [c.origin, c.path, c.method]),
        [
            ["https://a.example", "/v1/start", "GET"],
            ["https://a.example", "/v2/next?x=1", "GET"],
            ["https://b.example:8443", "/final", "GET"],
        ],
    );
    assert.deepEqual(env.calls[2].headers, [["x-k", "v"], ["accept", "*/*"]]);
    assert.equal(r.status, 200);
    assert.equal(r.redirected, true);
    assert.equal(r.url, "https://b.example:8443/final");
    assert.equal(await r.text(), "done");
});

test("redirects: 303 and POST-on-302 become GET without a body; 307 keeps both", async () => {
    const env = load();
    let status;
    env.handler = (c, n) => (n % 2 === 1 ? env.respond(status, [["location", "other"]]) : env.respond(200));
    const post = () => env.ctx.fetch("https://a.example/dir/form", {
        method: "POST", body: "a=1", headers: { "content-type": "application/x-www-form-urlencoded", "x-k": "v" },
    });
    for (status of [303, 302, 307, 308]) await post();
    const second = env.calls.filter((_, i) => i % 2 === 1);
    assert.deepEqual(second.map((c) => [c.method, c.path, c.body]), [
        ["GET", "/dir/other", ""],
        ["GET", "/dir/other", ""],
        ["POST", "/dir/other", "a=1"],
        ["POST", "/dir/other", "a=1"],
    ]);
    assert.deepEqual(second[0].headers, [["x-k", "v"], ["accept", "*/*"]]);
    assert.deepEqual(second[2].headers, [["content-type", "application/x-www-form-urlencoded"], ["x-k", "v"], ["accept", "*/*"]]);
});

test("a redirect to an origin no grant covers rejects with the host's Denied", async () => {
    const env = load();
    env.handler = (c) =>
        c.origin === "https://a.example"
            ? env.respond(302, [["location", "https://evil.example/steal"]])
            : env.refuse("Denied", "no grant covers this origin");
    const e = await rejection(env.ctx.fetch("https://a.example/"));
    assert.equal(env.calls.length, 2);
    assert.equal(env.calls[1].origin, "https://evil.example");
    assert.ok(e instanceof env.ctx.TypeError);
    assert.ok(e.cause instanceof env.ctx.plimsoll.Denied);
    assert.equal(e.cause.reason, "no grant covers this origin");
});

test("redirect modes: error rejects, manual returns the 3xx; bad locations and loops fail", async () => {
    const env = load();
    env.handler = () => env.respond(302, [["location", "/elsewhere"]], "");
    const e = await rejection(env.ctx.fetch("https://a.example/", { redirect: "error" }));
    assert.ok(e instanceof env.ctx.TypeError);
    assert.equal(e.message, "fetch failed");
    assert.equal(env.calls.length, 1);

    const r = await env.ctx.fetch("https://a.example/", { redirect: "manual" });
    assert.equal(r.status, 302);
    assert.equal(r.headers.get("location"), "/elsewhere");
    assert.equal(r.redirected, false);
    assert.equal(env.calls.length, 2);

    const bad = await rejection(env.ctx.fetch("https://a.example/", { redirect: "sideways" }));
    assert.ok(bad instanceof env.ctx.TypeError);

    // 20 redirects are followed; the 21st fails.
    env.calls.length = 0;
    const loop = await rejection(env.ctx.fetch("https://a.example/"));
    assert.equal(env.calls.length, 21);
    assert.match(loop.cause.message, /redirect count exceeded/);

    env.calls.length = 0;
    for (const location of ["ftp://a.example/x", "https://user:pw@a.example/"]) {
        env.handler = () => env.respond(301, [["location", location]]);
        const failed = await rejection(env.ctx.fetch("https://a.example/"));
        assert.equal(failed.message, "fetch failed");
        assert.ok(failed.cause instanceof env.ctx.TypeError);
    }
    assert.equal(env.calls.length, 2);
    // A 3xx without Location is just a response.
    env.handler = () => env.respond(300, [], "choices");
    assert.equal((await env.ctx.fetch("https://a.example/")).status, 300);
});

test("AbortSignal.timeout: the remaining time goes to the host; its Timeout is a TimeoutError", async () => {
    const env = load();
    const signal = env.ctx.AbortSignal.timeout(1500);
    env.handler = (c) => {
        env.clock.now += c.timeoutMs;
        return env.refuse("Timeout");
    };
    const e = await rejection(env.ctx.fetch("https://a.example/slow", { signal }));
    assert.equal(env.calls[0].timeoutMs, 1500);
    assert.equal(e.name, "TimeoutError");
    assert.ok(e instanceof env.ctx.DOMException);
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason, e);

    // Time already spent counts.
    const later = env.ctx.AbortSignal.timeout(1000);
    env.clock.now += 400;
    env.handler = () => env.respond(200);
    await env.ctx.fetch("https://a.example/", { signal: later });
    assert.equal(env.calls[1].timeoutMs, 600);
    assert.equal(later.aborted, false);

    // The host's own, shorter, limit: still a TimeoutError.
    env.handler = () => env.refuse("Timeout");
    const hostLimit = env.ctx.AbortSignal.timeout(60_000);
    const e2 = await rejection(env.ctx.fetch("https://a.example/", { signal: hostLimit }));
    assert.equal(e2.name, "TimeoutError");
    assert.equal(hostLimit.aborted, false);

    // Expired before the call: no call.
    const expired = env.ctx.AbortSignal.timeout(100);
    env.clock.now += 200;
    const n = env.calls.length;
    const e3 = await rejection(env.ctx.fetch("https://a.example/", { signal: expired }));
    assert.equal(e3.name, "TimeoutError");
    assert.equal(env.calls.length, n);
    assert.equal(expired.aborted, true);

    assert.throws(() => env.ctx.AbortSignal.timeout(-1), (x) => x instanceof env.ctx.TypeError);
    assert.throws(() => env.ctx.AbortSignal.timeout(NaN), (x) => x instanceof env.ctx.TypeError);
});

test("an aborted signal rejects with its reason and never calls the host", async () => {
    const env = load();
    const controller = new env.ctx.AbortController();
    const seen = [];
    controller.signal.addEventListener("abort", (ev) => seen.push(ev.type));
    controller.signal.onabort = () => seen.push("onabort");
    controller.abort();
    controller.abort("again"); // no effect
    assert.deepEqual(seen, ["onabort", "abort"]);
    const e = await rejection(env.ctx.fetch("https://a.example/", { signal: controller.signal }));
    assert.equal(e.name, "AbortError");
    assert.ok(e instanceof env.ctx.DOMException);
    assert.equal(e, controller.signal.reason);
    assert.throws(() => controller.signal.throwIfAborted(), (x) => x === e);

    const reason = await rejection(env.ctx.fetch("https://a.example/", { signal: env.ctx.AbortSignal.abort("why") }));
    assert.equal(reason, "why");
    // A Request carries its signal to fetch.
    const request = new env.ctx.Request("https://a.example/", { signal: controller.signal });
    assert.equal((await rejection(env.ctx.fetch(request))).name, "AbortError");
    assert.equal(env.calls.length, 0);
});

test("an abort after the call but before the promise settles still wins; later ones fail body reads", async () => {
    const env = load();
    const c1 = new env.ctx.AbortController();
    const p = env.ctx.fetch("https://a.example/", { signal: c1.signal });
    c1.abort();
    assert.equal((await rejection(p)).name, "AbortError");
    assert.equal(env.calls.length, 1);

    const c2 = new env.ctx.AbortController();
    const r = await env.ctx.fetch("https://a.example/", { signal: c2.signal });
    c2.abort(new Error("stop"));
    assert.equal((await rejection(r.text())).message, "stop");

    // A timeout that passes unobserved does not spoil a body already here.
    const t = env.ctx.AbortSignal.timeout(10);
    const r2 = await env.ctx.fetch("https://a.example/", { signal: t });
    env.clock.now += 100;
    assert.equal(await r2.text(), "ok");
});

test("AbortSignal.any follows its sources, and its earliest deadline is the timeout", async () => {
    const env = load();
    const controller = new env.ctx.AbortController();
    const both = env.ctx.AbortSignal.any([controller.signal, env.ctx.AbortSignal.timeout(5000), env.ctx.AbortSignal.timeout(2000)]);
    await env.ctx.fetch("https://a.example/", { signal: both });
    assert.equal(env.calls[0].timeoutMs, 2000);
    let fired = 0;
    both.addEventListener("abort", () => fired++, { once: true });
    controller.abort("x");
    assert.equal(both.aborted, true);
    assert.equal(both.reason, "x");
    assert.equal(fired, 1);
    const already = env.ctx.AbortSignal.any([env.ctx.AbortSignal.abort("first")]);
    assert.equal(already.reason, "first");
    const timed = env.ctx.AbortSignal.any([env.ctx.AbortSignal.timeout(10)]);
    env.clock.now += 11;
    assert.equal(timed.aborted, true);
    assert.equal(timed.reason.name, "TimeoutError");
});

test("a throwing abort listener is reported and the others still run", () => {
    const env = load();
    const controller = new env.ctx.AbortController();
    const seen = [];
    controller.signal.addEventListener("abort", () => { throw new Error("listener broke"); });
    controller.signal.addEventListener("abort", () => seen.push("second"));
    controller.abort();
    assert.deepEqual(seen, ["second"]);
    assert.equal(env.writes.length, 1);
    assert.equal(env.writes[0][0], 2);
    assert.match(env.writes[0][1], /^Uncaught Error: listener broke/);
});

test("URLs with user info are refused without calling the host, and not echoed", async () => {
    const env = load();
    for (const url of ["https://user:s3cret@a.example/", "https://user@a.example/", "https://@a.example/", "https://:s3cret@a.example/"]) {
        const e = await rejection(env.ctx.fetch(url));
        assert.ok(e instanceof env.ctx.TypeError, url);
        assert.match(e.message, /user info/);
        assert.ok(!e.message.includes("s3cret"));
        assert.throws(() => new env.ctx.Request(url), (x) => x instanceof env.ctx.TypeError);
    }
    assert.equal(env.calls.length, 0);
});

test("fetch never throws: bad arguments reject", async () => {
    const env = load();
    for (const args of [[Symbol("s")], ["https://a.example/", 5], ["https://a.example/", { headers: 5 }], []]) {
        const p = env.ctx.fetch(...args);
        assert.ok(p instanceof env.ctx.Promise);
        assert.ok((await rejection(p)) instanceof env.ctx.TypeError);
    }
    assert.equal(env.calls.length, 0);
});

test("only absolute http: and https: URLs are fetched", async () => {
    const env = load();
    const bad = [
        "ftp://a.example/", "file:///etc/passwd", "data:text/plain,hi", "javascript:alert(1)", "ws://a.example/",
        "/relative", "relative/path", "//a.example/x", "", "https://", "https://a.example:99999/", "https://a.example:8x/",
        "https://exa mple.com/", "https://ex%61mple.com/", "https://bücher.example/", "https://[::1/",
    ];
    for (const url of bad) {
        const e = await rejection(env.ctx.fetch(url));
        assert.ok(e instanceof env.ctx.TypeError, url);
        assert.ok(!leaksPrelude(e.stack), e.stack);
    }
    assert.equal(env.calls.length, 0);
});

test("URL parsing follows the URL standard where fetch needs it", async () => {
    const env = load();
    const cases = [
        ["https://a.example", "https://a.example", "/"],
        ["http://A.Example:80/x", "http://a.example", "/x"],
        ["https://a.example:443/", "https://a.example", "/"],
        ["https://a.example:0443/", "https://a.example", "/"],
        ["http://a.example:8080/x", "http://a.example:8080", "/x"],
        ["https://a.example:/x", "https://a.example", "/x"],
        ["https://a.example/a/./b/../c", "https://a.example", "/a/c"],
        ["https://a.example/a/%2E%2e/c/%2e", "https://a.example", "/c/"],
        ["https://a.example/..", "https://a.example", "/"],
        ["https://a.example\\a\\b", "https://a.example", "/a/b"],
        ["https:a.example/x", "https://a.example", "/x"],
        ["https:///a.example/x", "https://a.example", "/x"],
        ["https://a.example/a//b?", "https://a.example", "/a//b?"],
        ["https://a.example/ü `{x}`?q='\"<>`#f g", "https://a.example", "/%C3%BC%20%60%7Bx%7D%60?q=%27%22%3C%3E`"],
        ["https://a.example/%41%zz", "https://a.example", "/%41%zz"],
        ["https://a.example/😀", "https://a.example", "/%F0%9F%98%80"],
        ["https://a.example/\uD800", "https://a.example", "/%EF%BF%BD"],
        ["https://a.exa\tmple/x\ny", "https://a.example", "/xy"],
        ["https://[::1]:8443/x", "https://[::1]:8443", "/x"],
        ["https://[FE80::1]/", "https://[fe80::1]", "/"],
        ["https://a.example?only=query", "https://a.example", "/?only=query"],
        ["https://a.example#only-fragment", "https://a.example", "/"],
    ];
    for (const [url, origin, path] of cases) {
        env.calls.length = 0;
        await env.ctx.fetch(url);
        assert.deepEqual([env.calls[0].origin, env.calls[0].path], [origin, path], url);
    }
    assert.equal(new env.ctx.Request("https://a.example/x?y#z w").url, "https://a.example/x?y#z%20w");
});

test("a URL fetched again parses as the first time; fetched headers are made once, on demand", async () => {
    const env = load();
    env.handler = (c, n) => n === 1
        ? env.respond(302, [["location", "/b"]])
        : env.respond(200, [["Content-Type", "text/plain"], ["x-a", "1"], ["X-A", "2"]], "ok");
    const url = "https://api.example.com/a/./c/../?q=1#frag";
    const simple = "https://api.example.com:443/a?q=1#frag";
    const r1 = await env.ctx.fetch(simple);
    assert.equal(r1.url, "https://api.example.com/b");
    assert.equal(r1.redirected, true);
    const r2 = await env.ctx.fetch(simple);
    assert.equal(r2.url, "https://api.example.com/a?q=1");
    const r3 = await env.ctx.fetch(url);
    assert.equal(r3.url, "https://api.example.com/a/?q=1");
    assert.deepEqual(env.calls.map((c) => c.origin + c.path), [
        "https://api.example.com/a?q=1", "https://api.example.com/b", "https://api.example.com/a?q=1", "https://api.example.com/a/?q=1",
    ]);
    // A clone made before the headers were looked at has them too.
    const copy = r2.clone();
    assert.equal(r2.headers, r2.headers);
    assert.equal(r2.headers.get("x-a"), "1, 2");
    assert.deepEqual(plain([...r2.headers]), [["content-type", "text/plain"], ["x-a", "1, 2"]]);
    assert.deepEqual(plain([...copy.headers]), [["content-type", "text/plain"], ["x-a", "1, 2"]]);
    for (const r of [r2, copy]) assert.throws(() => r.headers.append("x", "y"), (e) => e instanceof env.ctx.TypeError);
    assert.equal(await copy.text(), "ok");
    assert.equal(await r2.text(), "ok");
});

test("relative redirect locations resolve against the current URL", async () => {
    const env = load();
    const cases = [
        ["/abs", "https://a.example/abs"],
        ["sib", "https://a.example/d1/d2/sib"],
        ["../up?x", "https://a.example/d1/up?x"],
        ["?q=2", "https://a.example/d1/d2/page?q=2"],
        ["#frag", "https://a.example/d1/d2/page?q=1"],
        ["//b.example/p", "https://b.example/p"],
        ["https:other", "https://a.example/d1/d2/other"],
        ["http://c.example", "http://c.example/"],
        ["", "https://a.example/d1/d2/page?q=1"],
    ];
    for (const [location, expected] of cases) {
        env.handler = (c, n) => (n === 1 ? env.respond(302, [["location", location]]) : env.respond(200));
        env.calls.length = 0;
        const r = await env.ctx.fetch("https://a.example/d1/d2/page?q=1");
        assert.equal(env.calls.length, 2, location);
        assert.equal(r.url, expected, location);
        assert.equal(urlOf(env.calls[1]), expected, location);
    }
});

test("Headers: WHATWG behaviour", () => {
    const { ctx, run } = load();
    const h = new ctx.Headers({ "Content-Type": "text/plain", "X-B": " padded\t" });
    h.append("x-a", "1");
    h.append("X-A", "2");
    assert.equal(h.get("x-a"), "1, 2");
    assert.equal(h.get("x-b"), "padded");
    h.set("X-a", "3");
    assert.equal(h.get("x-a"), "3");
    assert.equal(h.has("CONTENT-TYPE"), true);
    h.delete("content-type");
    assert.equal(h.has("content-type"), false);
    h.append("set-cookie", "a=1");
    h.append("set-cookie", "b=2");
    h.append("x-a", "4");
    assert.deepEqual(plain([...h]), [["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-a", "3, 4"], ["x-b", "padded"]]);
    assert.deepEqual(plain([...h.keys()]), ["set-cookie", "set-cookie", "x-a", "x-b"]);
    assert.deepEqual(plain([...h.values()]), ["a=1", "b=2", "3, 4", "padded"]);
    assert.deepEqual(plain(h.getSetCookie()), ["a=1", "b=2"]);
    assert.deepEqual(plain(new ctx.Headers().getSetCookie()), []);
    const seen = [];
    h.forEach(function (value, name, headers) { seen.push([name, value, headers === h, this.tag]); }, { tag: "t" });
    assert.deepEqual(seen[2], ["x-a", "3, 4", true, "t"]);
    assert.deepEqual(plain([...new ctx.Headers([["a", "1"], ["b", "2"]]).entries()]), [["a", "1"], ["b", "2"]]);
    assert.deepEqual(plain([...new ctx.Headers(new ctx.Headers({ c: "3" }))]), [["c", "3"]]);
    assert.deepEqual(plain([...new ctx.Headers(run("new Map([['m', 'v']])"))]), [["m", "v"]]);
    const isTypeError = (e) => e instanceof ctx.TypeError && !leaksPrelude(e.stack);
    assert.throws(() => h.set("x", "a\r\nInjected: 1"), isTypeError);
    assert.throws(() => h.append("x", "a\nb"), isTypeError);
    assert.throws(() => h.append("x", "a\0b"), isTypeError);
    assert.throws(() => h.append("bad name", "v"), isTypeError);
    assert.throws(() => h.append("", "v"), isTypeError);
    assert.throws(() => h.append("x:y", "v"), isTypeError);
    assert.throws(() => h.append("x", "\u0100"), isTypeError);
    assert.throws(() => h.get("bad name"), isTypeError);
    assert.throws(() => new ctx.Headers([["only-name"]]), isTypeError);
    assert.throws(() => new ctx.Headers(null), isTypeError);
    assert.throws(() => new ctx.Headers("x"), isTypeError);
    assert.throws(() => ctx.Headers.prototype.get.call({}, "x"), isTypeError);
    // A header named __proto__ is a header like any other.
    const p = new ctx.Headers([["__proto__", "v"]]);
    assert.equal(p.get("__proto__"), "v");
    // A value that is trimmed of CR LF at the ends is fine.
    h.set("x-t", "v\r\n");
    assert.equal(h.get("x-t"), "v");
});

test("Request: properties, bodies, clone, and what fetch takes from it", async () => {
    const env = load();
    const { ctx } = env;
    const controller = new ctx.AbortController();
    const req = new ctx.Request("https://a.example/r", {
        method: "put", headers: [["X-K", "v"]], body: "data", signal: controller.signal, redirect: "manual",
    });
    assert.equal(req.url, "https://a.example/r");
    assert.equal(req.method, "PUT");
    assert.equal(req.headers.get("x-k"), "v");
    assert.equal(req.headers.get("content-type"), "text/plain;charset=UTF-8");
    assert.equal(req.signal, controller.signal);
    assert.equal(req.redirect, "manual");
    const copy = req.clone();
    assert.equal(await copy.text(), "data");
    assert.equal(copy.bodyUsed, true);
    assert.equal(req.bodyUsed, false);
    assert.deepEqual(plain(await new ctx.Request("https://a.example/", { method: "POST", body: '{"j":1}' }).json()), { j: 1 });
    const ab = await new ctx.Request("https://a.example/", { method: "POST", body: "hé" }).arrayBuffer();
    assert.deepEqual([...new Uint8Array(ab)], [0x68, 0xc3, 0xa9]);

    env.handler = () => env.respond(302, [["location", "/x"]]);
    const r = await ctx.fetch(req);
    assert.equal(r.status, 302); // redirect: manual came with the request
    assert.deepEqual([env.calls[0].method, env.calls[0].body], ["PUT", "data"]);
    // The body moved to fetch's request.
    assert.equal(req.bodyUsed, true);
    assert.equal((await rejection(ctx.fetch(req))).constructor, ctx.TypeError);
    // init overrides the Request's own.
    env.handler = () => env.respond(200);
    await ctx.fetch(new ctx.Request("https://a.example/a", { headers: { a: "1" } }), { method: "DELETE", headers: { b: "2" } });
    assert.deepEqual([env.calls[1].method, env.calls[1].headers], ["DELETE", [["b", "2"], ["accept", "*/*"]]]);
    assert.throws(() => new ctx.Request("https://a.example/", { method: "HEAD", body: "x" }), (e) => e instanceof ctx.TypeError);
    assert.throws(() => new ctx.Request("https://a.example/", { signal: {} }), (e) => e instanceof ctx.TypeError);
    assert.throws(() => new ctx.Request("relative"), (e) => e instanceof ctx.TypeError);
});

test("Response: constructor, json(), error(), redirect(), UTF-8 both ways", async () => {
    const { ctx, run } = load();
    const r = new ctx.Response("héllo 😀", { status: 201, statusText: "Created", headers: { "x-k": "v" } });
    assert.deepEqual([r.status, r.statusText, r.ok, r.type, r.url, r.redirected], [201, "Created", true, "default", "", false]);
    assert.equal(r.headers.get("content-type"), "text/plain;charset=UTF-8");
    assert.equal(Buffer.from(await r.arrayBuffer()).toString("utf8"), "héllo 😀");
    r.headers.set("x-k", "mutable"); // a constructed Response's headers are not immutable

    // UTF-8 decoding of bytes, with replacement as WHATWG (and Rust) do it.
    const bytes = run("new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xc3, 0xa9, 0xff, 0xe2, 0x82, 0x62, 0xf0, 0x9f, 0x98, 0x80, 0xed, 0xa0, 0x80, 0xc3])");
    assert.equal(await new ctx.Response(bytes).text(), "aé\ufffd\ufffdb😀\ufffd\ufffd\ufffd\ufffd");
    assert.equal(await new ctx.Response(bytes).text(), new TextDecoder().decode(Buffer.from(bytes)));
    const big = run("new Uint8Array(10000).fill(0x41)");
    assert.equal((await new ctx.Response(big).text()).length, 10000);

    const j = ctx.Response.json({ a: 1 }, { status: 202 });
    assert.equal(j.status, 202);
    assert.equal(j.headers.get("content-type"), "application/json");
    assert.equal(await j.text(), '{"a":1}');
    assert.throws(() => ctx.Response.json(undefined), (e) => e instanceof ctx.TypeError);

    assert.equal(await new ctx.Response().text(), "");
    assert.equal(await new ctx.Response(null, { status: 204 }).text(), "");
    assert.throws(() => new ctx.Response("x", { status: 204 }), (e) => e instanceof ctx.TypeError);
    assert.throws(() => new ctx.Response("x", { status: 600 }), (e) => e instanceof ctx.RangeError);
    assert.throws(() => new ctx.Response("x", { status: 199 }), (e) => e instanceof ctx.RangeError);
    assert.throws(() => new ctx.Response("x", { statusText: "a\nb" }), (e) => e instanceof ctx.TypeError);

    const e = ctx.Response.error();
    assert.deepEqual([e.type, e.status, e.ok], ["error", 0, false]);
    assert.throws(() => e.headers.set("a", "b"), (x) => x instanceof ctx.TypeError);
    const redirect = ctx.Response.redirect("https://a.example/next", 307);
    assert.deepEqual([redirect.status, redirect.headers.get("location")], [307, "https://a.example/next"]);
    assert.throws(() => ctx.Response.redirect("https://a.example/", 200), (x) => x instanceof ctx.RangeError);
});

test("console shows these objects by their state", async () => {
    const env = load();
    env.handler = () => env.respond(200, [["content-type", "text/plain"]], "x");
    const r = await env.ctx.fetch("https://a.example/p");
    env.ctx.console.log(r.headers, r);
    assert.equal(
        env.writes[0][1],
        'Headers {"content-type":"text/plain"} Response {"status":200,"statusText":"","ok":true,"type":"basic","url":"https://a.example/p","redirected":false,"bodyUsed":false,"headers":{"content-type":"text/plain"}}',
    );
});

test("a cell that overwrites globals does not break fetch", async () => {
    const env = load();
    env.handler = () => env.respond(200, [["Content-Type", "application/json"]], '{"v":1}');
    env.run(`
        JSON.parse = () => "hijacked"; JSON.stringify = () => "hijacked";
        Array.prototype.push = null; Array.prototype.sort = null; Array.prototype.join = null;
        String.prototype.toLowerCase = null; String.prototype.toUpperCase = null; String.prototype.slice = null;
        String.prototype.charCodeAt = null; String.prototype.indexOf = null; String = null;
        TypeError = null; Uint8Array = null; Date.now = () => 0; Math.min = null; WeakMap.prototype.get = null;
        Headers = null; Request = null; Response = null; AbortSignal = null; DOMException = null;
    `);
    const ctrl = new env.ctx.AbortController();
    const r = await env.ctx.fetch("https://A.example/x", { method: "post", headers: { "X-Y": "z" }, body: "b", signal: ctrl.signal });
    assert.deepEqual([env.calls[0].origin, env.calls[0].method, env.calls[0].headers.length], ["https://a.example", "POST", 3]);
    assert.equal(r.headers.get("content-type"), "application/json");
    const body = await r.json();
    assert.equal(body.v, 1);
    env.handler = () => env.refuse("Denied", "no grant covers this origin");
    const e = await rejection(env.ctx.fetch("https://b.example/"));
    assert.equal(e.message, "fetch failed");
});
