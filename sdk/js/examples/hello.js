// A plimsoll agent in JavaScript: one line, one granted broker call.
//
//   plimsoll run --provider wasm --grants-file grants.json --grant orders target/sdk/js/hello-js.wasm

import { broker, CallError, Denied } from "@plimsoll/guest";

async function main() {
  console.log("hello from JavaScript");
  try {
    const response = await broker.get("orders", "/v1/orders/42");
    console.log(`${response.status} ${response.text()}`);
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
