// A plimsoll agent in TypeScript: one line, one granted broker call.
//
//   plimsoll run --provider wasm --grants-file grants.json --grant orders target/sdk/js/hello-ts.wasm

import { broker, CallError, Denied, type BrokerResponse } from "@plimsoll/guest";

interface Order {
  order: string;
}

async function main(): Promise<void> {
  console.log("hello from TypeScript");
  try {
    const response: BrokerResponse = await broker.get("orders", "/v1/orders/42");
    const order = response.json<Order>();
    console.log(`${response.status} order ${order.order}`);
  } catch (e) {
    if (e instanceof Denied) {
      console.error(`the grant does not allow this call: ${e.detail}`);
    } else if (e instanceof CallError) {
      console.error(`the broker refused (${e.tag}): ${e.message}`);
    } else {
      throw e;
    }
  }
}

/** The `wasi:cli/run` export: plimsoll runs it once. */
export const run = { run: main };
