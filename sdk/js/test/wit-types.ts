// Type-level checks that src/index.d.ts agrees with `jco types` of the WIT
// (generated/ by build.sh; run by its `tsc -p tsconfig.json`). Not a node test.

import type * as wit from "../generated/interfaces/plimsoll-sandbox-broker.js";
import type {
  Broker,
  BrokerResponse,
  BudgetExhausted,
  CallErrorTag,
  Denied,
  RequestInit,
  RequestTooLarge,
  ResponseTooLarge,
  Timeout,
  Upstream,
} from "../src/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

/** Every `call-error` case has a tag, and no tag is made up. */
export type TagsMatch = Assert<Equal<CallErrorTag, wit.CallError["tag"]>>;

/** Each error class has its case's tag. */
export type ClassTags = Assert<
  Equal<
    [Denied["tag"], BudgetExhausted["tag"], RequestTooLarge["tag"], ResponseTooLarge["tag"], Timeout["tag"], Upstream["tag"]],
    ["denied", "budget-exhausted", "request-too-large", "response-too-large", "timeout", "upstream"]
  >
>;

/** `detail` is the case's string where the WIT case carries one. */
export type Details = Assert<
  Equal<
    [Denied["detail"], Upstream["detail"]],
    [Extract<wit.CallError, { tag: "denied" }>["val"], Extract<wit.CallError, { tag: "upstream" }>["val"]]
  >
>;

/** A `BrokerResponse` is a WIT `response` (and more). */
export type ResponseFits = Assert<BrokerResponse extends wit.Response ? true : false>;

/** A WIT `request` record is accepted as it is. */
export type RequestFits = Assert<wit.Request extends RequestInit ? true : false>;

/** `callOrigin`'s timeout has the WIT's type. */
export type TimeoutFits = Assert<
  Equal<NonNullable<Parameters<Broker["callOrigin"]>[2]>["timeoutMs"] | undefined, Parameters<typeof wit.callOrigin>[2]>
>;
