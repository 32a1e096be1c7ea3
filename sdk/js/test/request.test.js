import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BrokerResponse,
  normaliseBody,
  normaliseHeaders,
  normaliseRequest,
  normaliseTimeout,
} from "../src/request.js";

test("headers: none, an object, pairs, a Map, a Headers", () => {
  assert.deepEqual(normaliseHeaders(undefined), []);
  assert.deepEqual(normaliseHeaders({ "x-a": "1", "x-b": "2" }), [
    ["x-a", "1"],
    ["x-b", "2"],
  ]);
  assert.deepEqual(normaliseHeaders([["x-a", "1"], ["x-a", "2"]]), [
    ["x-a", "1"],
    ["x-a", "2"],
  ]);
  assert.deepEqual(normaliseHeaders(new Map([["x-a", "1"]])), [["x-a", "1"]]);
  assert.deepEqual(normaliseHeaders(new Headers({ "X-A": "1" })), [["x-a", "1"]]);
});

test("headers: anything else is a TypeError", () => {
  assert.throws(() => normaliseHeaders("x-a: 1"), TypeError);
  assert.throws(() => normaliseHeaders([["x-a"]]), TypeError);
  assert.throws(() => normaliseHeaders([["x-a", 1]]), TypeError);
  assert.throws(() => normaliseHeaders({ "x-a": 1 }), TypeError);
});

test("body: none, text as UTF-8, bytes as they are", () => {
  assert.deepEqual(normaliseBody(undefined), new Uint8Array(0));
  assert.deepEqual(normaliseBody("é"), new Uint8Array([0xc3, 0xa9]));
  const bytes = new Uint8Array([0, 255, 0]);
  assert.equal(normaliseBody(bytes), bytes);
  assert.deepEqual(normaliseBody(new Uint8Array([1, 2, 3, 4]).buffer), new Uint8Array([1, 2, 3, 4]));
  const view = new DataView(new Uint8Array([9, 8, 7, 6]).buffer, 1, 2);
  assert.deepEqual(normaliseBody(view), new Uint8Array([8, 7]));
});

test("body: anything else is a TypeError", () => {
  assert.throws(() => normaliseBody({ a: 1 }), TypeError);
  assert.throws(() => normaliseBody(42), TypeError);
});

test("request: the WIT record, method and path required", () => {
  assert.deepEqual(normaliseRequest({ method: "post", path: "/v1/echo", body: "b" }), {
    method: "post",
    path: "/v1/echo",
    headers: [],
    body: new Uint8Array([0x62]),
  });
  assert.throws(() => normaliseRequest({ path: "/" }), TypeError);
  assert.throws(() => normaliseRequest(null), TypeError);
});

test("timeout: none or a u32", () => {
  assert.equal(normaliseTimeout(undefined), undefined);
  assert.equal(normaliseTimeout(0), 0);
  assert.equal(normaliseTimeout(4294967295), 4294967295);
  assert.throws(() => normaliseTimeout(-1), RangeError);
  assert.throws(() => normaliseTimeout(1.5), RangeError);
  assert.throws(() => normaliseTimeout(4294967296), RangeError);
  assert.throws(() => normaliseTimeout("100"), RangeError);
});

test("response: text() is lossy UTF-8, json() parses", () => {
  const response = new BrokerResponse({
    status: 200,
    headers: [["content-type", "application/json"]],
    body: new TextEncoder().encode('{"order":"42"}'),
  });
  assert.equal(response.status, 200);
  assert.deepEqual(response.json(), { order: "42" });
  const binary = new BrokerResponse({ status: 200, headers: [], body: new Uint8Array([0x61, 0xff]) });
  assert.equal(binary.text(), "a\ufffd");
  assert.throws(() => binary.json(), SyntaxError);
});

test("a lone surrogate is refused, never sent changed", () => {
  assert.throws(() => normaliseRequest({ method: "GET", path: "/v1/\uD800" }), TypeError);
  assert.throws(() => normaliseHeaders([["x-a", "b\uDC00"]]), TypeError);
  assert.doesNotThrow(() => normaliseRequest({ method: "GET", path: "/v1/\u{1F600}" }));
});
