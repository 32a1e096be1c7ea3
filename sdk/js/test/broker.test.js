import assert from "node:assert/strict";
import { test } from "node:test";
import { createBroker } from "../src/broker.js";
import { BrokerResponse } from "../src/request.js";
import { Denied, Timeout } from "../src/errors.js";

/** A stand-in for the host import that records what it was given. */
function fakeHost(answer) {
  const seen = [];
  const respond = (...args) => {
    seen.push(args);
    return answer(...args);
  };
  return { seen, host: { call: respond, callOrigin: respond } };
}

const ok = () => ({ status: 200, headers: [["x-a", "1"]], body: new Uint8Array([0x6f, 0x6b]) });

function componentError(payload) {
  return Object.assign(new Error("component error"), { payload });
}

test("call passes the normalised record and resolves to a BrokerResponse", async () => {
  const { seen, host } = fakeHost(ok);
  const response = await createBroker(host).call("orders", {
    method: "POST",
    path: "/v1/echo",
    headers: { "x-conformance-in": "v" },
    body: "hi",
  });
  assert.ok(response instanceof BrokerResponse);
  assert.equal(response.text(), "ok");
  assert.deepEqual(seen, [
    [
      "orders",
      { method: "POST", path: "/v1/echo", headers: [["x-conformance-in", "v"]], body: new Uint8Array([0x68, 0x69]) },
    ],
  ]);
});

test("a call-error rejects with its typed error", async () => {
  const { host } = fakeHost(() => {
    throw componentError({ tag: "denied", val: "unknown grant" });
  });
  await assert.rejects(createBroker(host).get("nosuch", "/"), (e) => e instanceof Denied && e.detail === "unknown grant");
});

test("any other exception is not disguised", async () => {
  const bug = new RangeError("a host bug");
  const { host } = fakeHost(() => {
    throw bug;
  });
  await assert.rejects(createBroker(host).get("orders", "/"), (e) => e === bug);
});

test("callOrigin passes the origin and the timeout (undefined when not given)", async () => {
  const { seen, host } = fakeHost(ok);
  const broker = createBroker(host);
  await broker.callOrigin("http://127.0.0.1:1", { method: "GET", path: "/a" }, { timeoutMs: 200 });
  await broker.callOrigin("http://127.0.0.1:1", { method: "GET", path: "/b" });
  assert.equal(seen[0][0], "http://127.0.0.1:1");
  assert.equal(seen[0][2], 200);
  assert.equal(seen[1][2], undefined);
  assert.equal(seen.length, 2);
});

test("callOrigin rejects with Timeout", async () => {
  const { host } = fakeHost(() => {
    throw componentError({ tag: "timeout" });
  });
  await assert.rejects(createBroker(host).callOrigin("http://x", { method: "GET", path: "/" }), Timeout);
});

test("the helpers set the method, body and headers", async () => {
  const { seen, host } = fakeHost(ok);
  const broker = createBroker(host);
  await broker.get("a", "/g", { headers: [["x-h", "1"]] });
  await broker.post("a", "/p", "b");
  await broker.put("a", "/u", new Uint8Array([1]));
  await broker.patch("a", "/pa");
  await broker.delete("a", "/d");
  assert.deepEqual(
    seen.map(([, req]) => [req.method, req.path, req.headers.length, req.body.length]),
    [
      ["GET", "/g", 1, 0],
      ["POST", "/p", 0, 1],
      ["PUT", "/u", 0, 1],
      ["PATCH", "/pa", 0, 0],
      ["DELETE", "/d", 0, 0],
    ],
  );
});

test("malformed arguments reject with TypeError before the host is called", async () => {
  const { seen, host } = fakeHost(ok);
  const broker = createBroker(host);
  await assert.rejects(broker.call(42, { method: "GET", path: "/" }), TypeError);
  await assert.rejects(broker.call("a", { method: "GET", path: "/", body: {} }), TypeError);
  await assert.rejects(broker.callOrigin("http://x", { method: "GET", path: "/" }, { timeoutMs: -1 }), RangeError);
  assert.equal(seen.length, 0);
});
