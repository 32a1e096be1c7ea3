// The typed errors of a broker call: one class per case of the WIT variant
// `plimsoll:sandbox/broker.call-error`, all subclasses of `CallError`.

/**
 * Why a broker call did not produce a response. Every refusal of the host
 * arrives as an instance of one of the subclasses below; `tag` is the WIT
 * case name (`denied`, `budget-exhausted`, ...), `detail` the case's string
 * for `denied` and `upstream` (undefined for the others).
 */
export class CallError extends Error {
  /**
   * @param {string} tag the `call-error` case name
   * @param {string | undefined} detail the case's string, if it has one
   * @param {string} message a readable summary
   */
  constructor(tag, detail, message) {
    super(message);
    this.name = new.target.name;
    /** The WIT case name. */
    this.tag = tag;
    /** The host's explanation (`denied`, `upstream`), else undefined. */
    this.detail = detail;
  }
}

/** The grant does not allow this call (unknown grant, route, method, path or header). */
export class Denied extends CallError {
  /** @param {string} detail which check refused the call */
  constructor(detail) {
    super("denied", detail, `broker call denied: ${detail}`);
  }
}

/** The run has used its whole call budget. */
export class BudgetExhausted extends CallError {
  constructor() {
    super("budget-exhausted", undefined, "broker call budget exhausted");
  }
}

/** The request body is larger than the request cap (1 MiB). */
export class RequestTooLarge extends CallError {
  constructor() {
    super("request-too-large", undefined, "broker request body too large");
  }
}

/** The upstream answered with more than the grant's response cap. */
export class ResponseTooLarge extends CallError {
  constructor() {
    super("response-too-large", undefined, "broker response body too large");
  }
}

/** The upstream did not answer within the per-call timeout. */
export class Timeout extends CallError {
  constructor() {
    super("timeout", undefined, "broker call timed out");
  }
}

/** The upstream could not be reached or answered with garbage, or the host shed the call. */
export class Upstream extends CallError {
  /** @param {string} detail what went wrong upstream */
  constructor(detail) {
    super("upstream", detail, `broker upstream error: ${detail}`);
  }
}

/**
 * Turns the `call-error` value of a failed host call (`{tag, val}`) into its
 * typed error. A tag this SDK does not know (a newer host) becomes a plain
 * `CallError` carrying the tag, so nothing is lost.
 *
 * @param {{tag: string, val?: unknown}} payload
 * @returns {CallError}
 */
export function callErrorFromPayload(payload) {
  const detail = typeof payload.val === "string" ? payload.val : undefined;
  switch (payload.tag) {
    case "denied":
      return new Denied(detail ?? "");
    case "budget-exhausted":
      return new BudgetExhausted();
    case "request-too-large":
      return new RequestTooLarge();
    case "response-too-large":
      return new ResponseTooLarge();
    case "timeout":
      return new Timeout();
    case "upstream":
      return new Upstream(detail ?? "");
    default:
      return new CallError(String(payload.tag), detail, `broker call failed: ${payload.tag}`);
  }
}

/**
 * If `thrown` is what a failed host call throws (componentize-js throws an
 * error whose `payload` is the `call-error` value), returns its typed error;
 * otherwise returns `thrown` unchanged, so real bugs are never disguised.
 *
 * @param {unknown} thrown
 * @returns {unknown}
 */
export function toCallError(thrown) {
  if (thrown !== null && typeof thrown === "object" && "payload" in thrown) {
    const payload = /** @type {{payload: unknown}} */ (thrown).payload;
    if (payload !== null && typeof payload === "object" && typeof payload.tag === "string") {
      return callErrorFromPayload(/** @type {{tag: string, val?: unknown}} */ (payload));
    }
  }
  return thrown;
}
