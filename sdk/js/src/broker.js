// The broker API over any implementation of the two host functions. The
// seam: `index.js` passes the real host import; tests pass a fake.

import { toCallError } from "./errors.js";
import {
  BrokerResponse,
  normaliseRequest,
  normaliseTimeout,
  requireWellFormed,
} from "./request.js";

/**
 * Calls `hostCall`, returning its response wrapped, or throwing the typed
 * `CallError` for a `call-error`.
 *
 * @param {() => {status: number, headers: Array<[string, string]>, body: Uint8Array}} hostCall
 * @returns {BrokerResponse}
 */
function invoke(hostCall) {
  let response;
  try {
    response = hostCall();
  } catch (thrown) {
    throw toCallError(thrown);
  }
  return new BrokerResponse(response);
}

/**
 * Builds the broker API over `host`, an object with the WIT functions
 * `call(api, req)` and `callOrigin(origin, req, timeoutMs)` as
 * componentize-js binds them (they return the response or throw an error
 * whose `payload` is the `call-error`).
 *
 * @param {{call: Function, callOrigin: Function}} host
 */
export function createBroker(host) {
  /**
   * One call under the grant named `api`.
   *
   * @param {string} api
   * @param {{method: string, path: string, headers?: unknown, body?: unknown}} request
   */
  async function call(api, request) {
    if (typeof api !== "string") {
      throw new TypeError("api must be a grant name (a string)");
    }
    requireWellFormed("api", api);
    const req = normaliseRequest(request);
    return invoke(() => host.call(api, req));
  }

  /**
   * One call to `origin` (`scheme://host[:port]`) under the run's grant for
   * that origin; `options.timeoutMs` shortens the per-call timeout.
   *
   * @param {string} origin
   * @param {{method: string, path: string, headers?: unknown, body?: unknown}} request
   * @param {{timeoutMs?: number}} [options]
   */
  async function callOrigin(origin, request, options = {}) {
    if (typeof origin !== "string") {
      throw new TypeError("origin must be a string such as https://api.example.com");
    }
    requireWellFormed("origin", origin);
    const req = normaliseRequest(request);
    const timeoutMs = normaliseTimeout(options.timeoutMs);
    return invoke(() => host.callOrigin(origin, req, timeoutMs));
  }

  return Object.freeze({
    call,
    callOrigin,
    /** `GET path` under the grant `api`. */
    get: (api, path, options = {}) => call(api, { method: "GET", path, headers: options.headers }),
    /** `POST path` with `body` under the grant `api`. */
    post: (api, path, body, options = {}) =>
      call(api, { method: "POST", path, headers: options.headers, body }),
    /** `PUT path` with `body` under the grant `api`. */
    put: (api, path, body, options = {}) =>
      call(api, { method: "PUT", path, headers: options.headers, body }),
    /** `PATCH path` with `body` under the grant `api`. */
    patch: (api, path, body, options = {}) =>
      call(api, { method: "PATCH", path, headers: options.headers, body }),
    /** `DELETE path` under the grant `api`. */
    delete: (api, path, options = {}) =>
      call(api, { method: "DELETE", path, headers: options.headers }),
  });
}
