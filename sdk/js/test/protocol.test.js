// The conformance agent's encodings (conformance/protocol.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ProtocolError,
  errorLine,
  hex,
  parseBody,
  parseCommands,
  parseHeaders,
  parseTimeout,
  responseLines,
  unhex,
} from "../conformance/protocol.js";

test("hex round-trips any byte; - is empty", () => {
  const bytes = new Uint8Array([0, 0xff, 0xfe, 0x80, 0xc3, 0x28, 0x0a, 0]);
  assert.equal(hex(bytes), "00fffe80c3280a00");
  assert.deepEqual(unhex("00fffe80c3280a00"), bytes);
  assert.equal(hex(new Uint8Array(0)), "-");
  assert.deepEqual(unhex("-"), new Uint8Array(0));
  assert.throws(() => unhex("ABCD"), ProtocolError);
  assert.throws(() => unhex("abc"), ProtocolError);
});

test("headers and bodies", () => {
  assert.deepEqual(parseHeaders("-"), []);
  assert.deepEqual(parseHeaders("782d61:31,782d62:-"), [
    ["x-a", "1"],
    ["x-b", ""],
  ]);
  assert.throws(() => parseHeaders("782d61"), ProtocolError);
  assert.deepEqual(parseBody("-"), new Uint8Array(0));
  assert.deepEqual(parseBody("hex:00ff"), new Uint8Array([0, 255]));
  const fill = parseBody("fill:1048577:61");
  assert.equal(fill.length, 1048577);
  assert.ok(fill.every((b) => b === 0x61));
  assert.throws(() => parseBody("fill:3"), ProtocolError);
  assert.equal(parseTimeout("-"), undefined);
  assert.equal(parseTimeout("200"), 200);
  assert.throws(() => parseTimeout("2e3"), ProtocolError);
});

test("commands: one per line, fields split on spaces, blank lines skipped", () => {
  const input = new TextEncoder().encode("print 6869\n\nexit 0\n");
  assert.deepEqual(parseCommands(input), [["print", "6869"], ["exit", "0"]]);
});

test("result lines", () => {
  assert.deepEqual(
    responseLines({
      status: 200,
      headers: [
        ["content-type", "text/plain"],
        ["x-conformance-auth", "ok"],
        ["x-conformance-echo", "round trip 1"],
      ],
      body: new Uint8Array(0),
    }),
    ["ok 200 -", "header x-conformance-auth 6f6b", "header x-conformance-echo 726f756e6420747269702031"],
  );
  assert.equal(errorLine({ tag: "denied", detail: "unknown grant" }), "err denied 756e6b6e6f776e206772616e74");
  assert.equal(errorLine({ tag: "upstream", detail: "" }), "err upstream -");
  assert.equal(errorLine({ tag: "timeout", detail: undefined }), "err timeout");
});
