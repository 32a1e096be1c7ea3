// Differential tests of the guest's Node.js layer (src/node/path.js,
// url.js, buffer.js, events.js) against Node itself: the same calls, the
// same answers. The parts run in a fresh `vm` context on top of the real
// prelude, with a fake `native` (UTF-8 through Node's TextEncoder/Decoder).
//
//     node --test guests/javascript/test/
//
// What this cannot cover (modules, fs, process, the event loop) is tested
// natively: `cargo test --manifest-path guests/javascript/Cargo.toml`.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL as nodePathToFileURL, fileURLToPath as nodeFileURLToPath } from "node:url";
import vm from "node:vm";

const read = (name) => readFileSync(new URL("../src/" + name, import.meta.url), "utf8");

function load() {
    const context = vm.createContext({});
    const ctx = vm.runInContext("globalThis", context);
    for (const name of ["URL", "URLSearchParams", "TextEncoder", "TextDecoder", "Buffer"]) delete ctx[name];
    const CtxUint8Array = ctx.Uint8Array;
    const native = {
        write() {},
        random: () => 0.5,
        encodeUtf8: (s) => new CtxUint8Array(new TextEncoder().encode(s)),
        decodeUtf8: (b) => new TextDecoder().decode(b),
    };
    const helpers = vm.runInContext(read("prelude.js"), context, { filename: "<prelude>" })(native);
    const lib = helpers.lib;
    for (const part of ["events", "path", "url", "buffer"]) {
        vm.runInContext(read("node/" + part + ".js"), context, { filename: "<prelude/" + part + ">" })(native, lib);
    }
    return { ctx, lib, run: (code) => vm.runInContext(code, context) };
}

const { ctx, lib } = load();
const plain = (v) => JSON.parse(JSON.stringify(v));

test("path matches Node's path.posix", () => {
    const p = lib.path;
    const inputs = [
        "", ".", "..", "/", "//", "a", "a/", "/a", "/a/", "a/b", "/a/b/c", "a//b", "a/./b", "a/../b", "../a", "../../a/b",
        "/a/../..", "/a/b/../../..", "./", ".hidden", "/x/.hidden", "file.txt", "/x/file.tar.gz", "x/y.", "x/..", "/x/y/",
        "a.b/c", "/work/.plimsoll/code.mjs", "..a", "a..", "...",
    ];
    for (const a of inputs) {
        assert.equal(p.normalize(a), path.posix.normalize(a), "normalize " + a);
        assert.equal(p.dirname(a), path.posix.dirname(a), "dirname " + a);
        assert.equal(p.basename(a), path.posix.basename(a), "basename " + a);
        assert.equal(p.basename(a, ".txt"), path.posix.basename(a, ".txt"), "basename ext " + a);
        assert.equal(p.basename(a, "a"), path.posix.basename(a, "a"), "basename a " + a);
        assert.equal(p.extname(a), path.posix.extname(a), "extname " + a);
        assert.equal(p.isAbsolute(a), path.posix.isAbsolute(a), "isAbsolute " + a);
        assert.deepEqual(plain(p.parse(a)), path.posix.parse(a), "parse " + a);
        assert.equal(p.resolve(a), path.posix.resolve("/work", a), "resolve " + a);
        for (const b of ["", "b", "/b", "../b", "./b/c/"]) {
            assert.equal(p.join(a, b), path.posix.join(a, b), "join " + a + " " + b);
            assert.equal(p.resolve(a, b), path.posix.resolve("/work", a, b), "resolve " + a + " " + b);
            assert.equal(p.relative(a, b), path.posix.relative(path.posix.resolve("/work", a), path.posix.resolve("/work", b)), "relative " + a + " " + b);
        }
    }
    for (const o of [{ dir: "/a", base: "b.txt" }, { root: "/", name: "x", ext: ".js" }, { name: "x", ext: "js" }, { dir: "d", name: "n", ext: ".e" }, { root: "/", dir: "/", base: "f" }]) {
        assert.equal(p.format(o), path.posix.format(o), "format " + JSON.stringify(o));
    }
    assert.throws(() => p.join("a", 1), { code: "ERR_INVALID_ARG_TYPE" });
});

test("URL matches Node's WHATWG URL for what programs use", () => {
    const cases = [
        ["https://example.com"], ["https://Example.COM:443/a/../b/./c?x=1&y=%20#frag"], ["http://h:8080/p"], ["http://user:pa ss@h/p"],
        ["./data.json", "file:///work/.plimsoll/code.mjs"], ["../x", "file:///work/a/b.mjs"], ["/abs", "https://h/a/b"],
        ["?q=2", "https://h/a/b?q=1#f"], ["#g", "https://h/a/b?q=1"], ["", "https://h/a/b?q=1#f"], ["//other/p", "https://h/a"],
        ["file:///work/a b/ü.txt"], ["file:///work/%41"], ["file:/x/y"], ["file://localhost/etc"], ["https://h/ä?ä#ä"],
        ["https://h/a%2Fb"], ["mailto:someone@example.com"], ["data:text/plain,hello world"], ["https://h:0/"], ["HTTP://H/"],
        ["https://h/a/b/..", undefined], ["https://h/a/%2e%2E/c"], ["https://[::1]:8080/x"], ["https://h/?a=1&a=2&b=%F0%9F%98%80"],
        ["c", "https://h/a/b"], ["https://h\\a\\b"], ["  https://h/t  "],
    ];
    for (const [input, base] of cases) {
        const mine = new ctx.URL(input, base);
        const node = new URL(input, base);
        for (const key of ["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash", "origin"]) {
            assert.equal(mine[key], node[key], key + " of " + input + (base ? " against " + base : ""));
        }
    }
    for (const bad of [["nope"], ["https://"], ["//x"], ["https://h:99999/"]]) {
        assert.throws(() => new ctx.URL(...bad), (e) => e.code === "ERR_INVALID_URL", "invalid " + bad);
    }
    const u = new ctx.URL("https://h/p?a=1");
    u.searchParams.append("b", "x y");
    u.hash = "top";
    assert.equal(u.href, "https://h/p?a=1&b=x+y#top");
    u.search = "?z=9";
    assert.equal(u.searchParams.get("z"), "9");
    const sp = new ctx.URLSearchParams({ a: "1", "b c": "&=?+" });
    assert.equal(sp.toString(), new URLSearchParams({ a: "1", "b c": "&=?+" }).toString());
    assert.deepEqual([...new ctx.URLSearchParams("a=1&a=2&b=%20+").entries()].map(plain), [...new URLSearchParams("a=1&a=2&b=%20+").entries()]);
});

test("pathToFileURL and fileURLToPath match Node's", () => {
    const { url } = { url: lib.builtins.url() };
    for (const p of ["/work/a.mjs", "/work/a b/c#d?e.js", "/work/100%.txt", "/work/ü/é.js", "/work/dir/", "/work/[eval]", "rel/x.js"]) {
        const node = p.startsWith("/") ? nodePathToFileURL(p).href : nodePathToFileURL(path.posix.resolve("/work", p)).href;
        assert.equal(url.pathToFileURL(p).href, node, p);
        assert.equal(url.fileURLToPath(node), nodeFileURLToPath(node), node);
    }
    assert.throws(() => url.fileURLToPath("https://h/x"), { code: "ERR_INVALID_URL_SCHEME" });
    assert.throws(() => url.fileURLToPath("file:///a%2Fb"), { code: "ERR_INVALID_FILE_URL_PATH" });
});

test("Buffer encodes and decodes like Node's", () => {
    const B = ctx.Buffer;
    const samples = ["", "a", "hi", "héllo wörld", "😀 emoji", "\u0000\u00ff", "x".repeat(1000)];
    for (const s of samples) {
        for (const enc of ["utf8", "hex", "base64", "base64url", "latin1", "ascii", "utf16le"]) {
            const mine = B.from(s, enc === "hex" || enc.startsWith("base64") ? "utf8" : enc);
            const node = Buffer.from(s, enc === "hex" || enc.startsWith("base64") ? "utf8" : enc);
            assert.deepEqual([...mine], [...node], "from " + enc + " " + s.slice(0, 10));
            assert.equal(mine.toString(enc), node.toString(enc), "toString " + enc + " " + s.slice(0, 10));
        }
        const b64 = Buffer.from(s).toString("base64");
        assert.deepEqual([...B.from(b64, "base64")], [...Buffer.from(b64, "base64")]);
        const hex = Buffer.from(s).toString("hex");
        assert.deepEqual([...B.from(hex, "hex")], [...Buffer.from(hex, "hex")]);
    }
    const b = B.alloc(8);
    b.writeUInt32LE(0xdeadbeef, 0);
    b.writeInt16BE(-2, 4);
    assert.equal(b.readUInt32LE(0), 0xdeadbeef);
    assert.equal(b.readInt16BE(4), -2);
    assert.equal(B.concat([B.from("ab"), B.from("cd")]).toString(), "abcd");
    assert.equal(B.from("hello").indexOf("ll"), 2);
    assert.equal(B.from("hello").slice(1, 3).toString(), "el");
    assert.equal(B.byteLength("héllo"), 6);
    assert.ok(B.isBuffer(B.from("x")));
    assert.deepEqual(plain(B.from("ab")), { type: "Buffer", data: [97, 98] });
    assert.equal(lib.show(B.from("hi")), "<Buffer 68 69>");
    assert.equal(new ctx.TextDecoder().decode(new ctx.TextEncoder().encode("ü")), "ü");
});

test("EventEmitter orders, removes and fails like Node's", () => {
    const E = lib.EventEmitter;
    const e = new E();
    const seen = [];
    const f = (x) => seen.push("f" + x);
    e.on("x", f);
    e.prependListener("x", (x) => seen.push("p" + x));
    e.once("x", (x) => seen.push("o" + x));
    assert.equal(e.emit("x", 1), true);
    e.emit("x", 2);
    e.off("x", f);
    e.emit("x", 3);
    assert.deepEqual(seen, ["p1", "f1", "o1", "p2", "f2", "p3"]);
    assert.equal(e.listenerCount("x"), 1);
    assert.equal(e.emit("nothing"), false);
    assert.throws(() => e.emit("error", new Error("bad")), /bad/);
    assert.throws(() => e.emit("error", "text"), { code: "ERR_UNHANDLED_ERROR" });
});
