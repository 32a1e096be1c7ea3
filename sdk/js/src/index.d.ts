// Types of @plimsoll/guest. build.sh checks them against `jco types` of
// plimsoll's WIT (test/wit-types.ts), so they cannot drift from the host.

/** Request headers: `{name: value}`, or `[name, value]` pairs (an array, a `Map`, a `Headers`). */
export type HeadersInit = Readonly<Record<string, string>> | Iterable<readonly [string, string]>;

/** A request body: a string (sent as UTF-8) or bytes. */
export type BodyInit = string | Uint8Array | ArrayBuffer | ArrayBufferView;

/** One HTTP request to make under a grant. */
export interface RequestInit {
  /** `GET`, `PUT`, `POST`, `DELETE` or `PATCH` (case-insensitive); anything else is denied. */
  method: string;
  /** Canonical absolute path, optionally with a query: `/v1/orders/42?expand=items`. */
  path: string;
  /** Extra headers; they pass the grant's allow-list (`authorization`, `cookie`, ... are refused). */
  headers?: HeadersInit;
  /** The body; at most 1 MiB. */
  body?: BodyInit;
}

/** Options of the helpers `get`, `post`, `put`, `patch` and `delete`. */
export interface HelperOptions {
  /** Extra request headers. */
  headers?: HeadersInit;
}

/** Options of `callOrigin`. */
export interface CallOriginOptions {
  /** Shortens the per-call timeout (milliseconds); it never lengthens it. */
  timeoutMs?: number;
}

/** The upstream's answer: the WIT `response` record plus body decoders. */
export declare class BrokerResponse {
  /** HTTP status code; a 3xx arrives as it is (redirects are not followed). */
  readonly status: number;
  /** Response headers as `[name, value]` pairs, in the order received. */
  readonly headers: Array<[string, string]>;
  /** Response body bytes. */
  readonly body: Uint8Array;
  /** The body decoded as UTF-8 (invalid sequences replaced by U+FFFD). */
  text(): string;
  /** The body parsed as JSON; throws `SyntaxError` if it is not JSON. */
  json<T = unknown>(): T;
}

/** The WIT name of a `call-error` case. */
export type CallErrorTag =
  | "denied"
  | "budget-exhausted"
  | "request-too-large"
  | "response-too-large"
  | "timeout"
  | "upstream";

/** Why a broker call did not produce a response; the base of the six typed errors. */
export declare class CallError extends Error {
  /** The WIT case name of the error. */
  readonly tag: CallErrorTag;
  /** The host's explanation for `denied` and `upstream`; undefined otherwise. */
  readonly detail: string | undefined;
}

/** The grant does not allow this call (unknown grant, route, method, path or header). */
export declare class Denied extends CallError {
  readonly tag: "denied";
  /** Which check refused the call (never echoes the path or a header value). */
  readonly detail: string;
}

/** The run has used its whole call budget. */
export declare class BudgetExhausted extends CallError {
  readonly tag: "budget-exhausted";
  readonly detail: undefined;
}

/** The request body is larger than the request cap (1 MiB). */
export declare class RequestTooLarge extends CallError {
  readonly tag: "request-too-large";
  readonly detail: undefined;
}

/** The upstream answered with more than the grant's response cap. */
export declare class ResponseTooLarge extends CallError {
  readonly tag: "response-too-large";
  readonly detail: undefined;
}

/** The upstream did not answer within the per-call timeout. */
export declare class Timeout extends CallError {
  readonly tag: "timeout";
  readonly detail: undefined;
}

/** The upstream could not be reached or answered with garbage, or the host shed the call. */
export declare class Upstream extends CallError {
  readonly tag: "upstream";
  /** What went wrong upstream. */
  readonly detail: string;
}

/**
 * The broker: HTTP calls made by the host under one of the run's grants.
 * Every method resolves to a `BrokerResponse` or rejects with a `CallError`
 * subclass (a `TypeError`/`RangeError` for malformed arguments).
 */
export interface Broker {
  /** One call under the grant named `api`. */
  call(api: string, request: RequestInit): Promise<BrokerResponse>;
  /** One call to `origin` (`scheme://host[:port]`) under the run's one grant for that origin. */
  callOrigin(origin: string, request: RequestInit, options?: CallOriginOptions): Promise<BrokerResponse>;
  /** `GET path` under the grant `api`. */
  get(api: string, path: string, options?: HelperOptions): Promise<BrokerResponse>;
  /** `POST path` with `body` under the grant `api`. */
  post(api: string, path: string, body?: BodyInit, options?: HelperOptions): Promise<BrokerResponse>;
  /** `PUT path` with `body` under the grant `api`. */
  put(api: string, path: string, body?: BodyInit, options?: HelperOptions): Promise<BrokerResponse>;
  /** `PATCH path` with `body` under the grant `api`. */
  patch(api: string, path: string, body?: BodyInit, options?: HelperOptions): Promise<BrokerResponse>;
  /** `DELETE path` under the grant `api`. */
  delete(api: string, path: string, options?: HelperOptions): Promise<BrokerResponse>;
}

/** The broker of this run. */
export declare const broker: Broker;
