// @plimsoll/guest: write plimsoll agents in JavaScript or TypeScript.
//
// `broker` makes HTTP calls through the host under the run's grants; the
// host adds the credential, so it never enters guest memory. A refused call
// rejects with a typed `CallError`. Plain `fetch` also works: it goes over
// wasi:http, which the host sends through the same gate (see README.md).

import { call, callOrigin } from "plimsoll:sandbox/broker@0.1.3";
import { createBroker } from "./broker.js";

export {
  BudgetExhausted,
  CallError,
  Denied,
  RequestTooLarge,
  ResponseTooLarge,
  Timeout,
  Upstream,
} from "./errors.js";
export { BrokerResponse } from "./request.js";

/** The broker: HTTP calls made by the host under one of the run's grants. */
export const broker = createBroker({ call, callOrigin });
