import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BudgetExhausted,
  CallError,
  Denied,
  RequestTooLarge,
  ResponseTooLarge,
  Timeout,
  Upstream,
  callErrorFromPayload,
  toCallError,
} from "../src/errors.js";

const cases = [
  [{ tag: "denied", val: "route not granted" }, Denied, "route not granted"],
  [{ tag: "budget-exhausted" }, BudgetExhausted, undefined],
  [{ tag: "request-too-large" }, RequestTooLarge, undefined],
  [{ tag: "response-too-large" }, ResponseTooLarge, undefined],
  [{ tag: "timeout" }, Timeout, undefined],
  [{ tag: "upstream", val: "connection refused" }, Upstream, "connection refused"],
];

test("every call-error case maps to its class, tag and detail", () => {
  for (const [payload, Class, detail] of cases) {
    const error = callErrorFromPayload(payload);
    assert.ok(error instanceof Class, payload.tag);
    assert.ok(error instanceof CallError);
    assert.ok(error instanceof Error);
    assert.equal(error.tag, payload.tag);
    assert.equal(error.detail, detail);
    assert.equal(error.name, Class.name);
  }
});

test("the message carries the detail", () => {
  assert.match(callErrorFromPayload({ tag: "denied", val: "unknown grant" }).message, /unknown grant/);
});

test("an unknown tag becomes a plain CallError that keeps it", () => {
  const error = callErrorFromPayload({ tag: "rate-limited", val: "slow down" });
  assert.equal(error.constructor, CallError);
  assert.equal(error.tag, "rate-limited");
  assert.equal(error.detail, "slow down");
});

test("toCallError maps a thrown {payload} and leaves anything else alone", () => {
  const thrown = Object.assign(new Error("component error"), { payload: { tag: "timeout" } });
  assert.ok(toCallError(thrown) instanceof Timeout);
  const bug = new TypeError("a bug");
  assert.equal(toCallError(bug), bug);
  assert.equal(toCallError("text"), "text");
  assert.equal(toCallError(null), null);
  const odd = { payload: "not a variant" };
  assert.equal(toCallError(odd), odd);
});
