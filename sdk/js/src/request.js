// Normalising what a caller passes (headers as an object or pairs, body as a
// string or bytes) into the WIT `request` record, and wrapping the WIT
// `response` record.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Largest value of the WIT `option<u32>` timeout. */
const U32_MAX = 0xffffffff;

/**
 * Headers as the WIT record wants them: a list of `[name, value]` pairs.
 * Accepts `undefined`, a plain object `{name: value}`, or any iterable of
 * two-string pairs (an array of pairs, a `Map`, a fetch `Headers`).
 *
 * @param {unknown} headers
 * @returns {Array<[string, string]>}
 */
/**
 * Throws unless `value` is well-formed UTF-16 (no lone surrogates): such a
 * string would reach the host changed (each lone surrogate as U+FFFD), so
 * the path or header sent would not be the one written.
 *
 * @param {string} what
 * @param {string} value
 */
export function requireWellFormed(what, value) {
  const wellFormed =
    typeof value.isWellFormed === "function"
      ? value.isWellFormed()
      : !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value);
  if (!wellFormed) {
    throw new TypeError(`${what} contains a lone surrogate (not valid UTF-8)`);
  }
}

export function normaliseHeaders(headers) {
  if (headers === undefined || headers === null) {
    return [];
  }
  if (typeof headers !== "object") {
    throw new TypeError("headers must be an object or an iterable of [name, value] pairs");
  }
  const entries =
    typeof headers[Symbol.iterator] === "function" ? Array.from(headers) : Object.entries(headers);
  return entries.map((entry) => {
    if (!Array.isArray(entry) || entry.length !== 2) {
      throw new TypeError("each header must be a [name, value] pair");
    }
    const [name, value] = entry;
    if (typeof name !== "string" || typeof value !== "string") {
      throw new TypeError("header names and values must be strings");
    }
    requireWellFormed("a header", name);
    requireWellFormed("a header", value);
    return [name, value];
  });
}

/**
 * A body as the WIT record wants it: bytes. Accepts `undefined` (empty), a
 * string (sent as UTF-8), a `Uint8Array`, an `ArrayBuffer` or any other
 * `ArrayBufferView` (its bytes).
 *
 * @param {unknown} body
 * @returns {Uint8Array}
 */
export function normaliseBody(body) {
  if (body === undefined || body === null) {
    return new Uint8Array(0);
  }
  if (typeof body === "string") {
    return encoder.encode(body);
  }
  if (body instanceof Uint8Array) {
    return body;
  }
  if (body instanceof ArrayBuffer) {
    return new Uint8Array(body);
  }
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }
  throw new TypeError("body must be a string, a Uint8Array, an ArrayBuffer or an ArrayBufferView");
}

/**
 * The WIT `request` record for a caller's request.
 *
 * @param {{method: string, path: string, headers?: unknown, body?: unknown}} request
 * @returns {{method: string, path: string, headers: Array<[string, string]>, body: Uint8Array}}
 */
export function normaliseRequest(request) {
  if (request === null || typeof request !== "object") {
    throw new TypeError("request must be an object {method, path, headers?, body?}");
  }
  const { method, path } = request;
  if (typeof method !== "string" || typeof path !== "string") {
    throw new TypeError("request.method and request.path must be strings");
  }
  requireWellFormed("request.method", method);
  requireWellFormed("request.path", path);
  return {
    method,
    path,
    headers: normaliseHeaders(request.headers),
    body: normaliseBody(request.body),
  };
}

/**
 * The WIT `option<u32>` for a `timeoutMs` option: `undefined` for none.
 *
 * @param {unknown} timeoutMs
 * @returns {number | undefined}
 */
export function normaliseTimeout(timeoutMs) {
  if (timeoutMs === undefined || timeoutMs === null) {
    return undefined;
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > U32_MAX) {
    throw new RangeError("timeoutMs must be an integer from 0 to 4294967295");
  }
  return timeoutMs;
}

/**
 * The upstream's answer: the WIT `response` record plus `text()` and
 * `json()`.
 */
export class BrokerResponse {
  /** @param {{status: number, headers: Array<[string, string]>, body: Uint8Array}} response */
  constructor(response) {
    /** HTTP status code; a 3xx arrives as it is (redirects are not followed). */
    this.status = response.status;
    /** Response headers as `[name, value]` pairs, in the order received. */
    this.headers = response.headers;
    /** Response body bytes. */
    this.body = response.body;
  }

  /** The body decoded as UTF-8 (invalid sequences replaced by U+FFFD). */
  text() {
    return decoder.decode(this.body);
  }

  /** The body parsed as JSON; throws `SyntaxError` if it is not JSON. */
  json() {
    return JSON.parse(this.text());
  }
}
