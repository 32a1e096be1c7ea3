// The JavaScript SDK's conformance agent: speaks the protocol of
// conformance/README.md, making every broker call through the public API of
// @plimsoll/guest and every HTTP request through plain `fetch`.
// Built for world `agent-http` by sdk/js/build.sh.

import { broker, CallError } from "@plimsoll/guest";
import {
  ProtocolError,
  errorLine,
  hex,
  parseBody,
  parseCommands,
  parseHeaders,
  parseTimeout,
  responseLines,
  unhex,
  unhexText,
} from "./protocol.js";
import * as wasi from "./wasi.js";

/** Prints what a broker call produced: its response, or its typed error. */
async function printBrokerResult(promise) {
  let response;
  try {
    response = await promise;
  } catch (e) {
    if (e instanceof CallError) {
      wasi.printLine(errorLine(e));
      return;
    }
    throw e;
  }
  for (const line of responseLines(response)) {
    wasi.printLine(line);
  }
}

/** `fetch URL METHOD BODY` with the standard `fetch`. */
async function doFetch(url, method, body) {
  let line;
  try {
    const init = body.length > 0 ? { method, body } : { method };
    const response = await fetch(url, init);
    const bytes = new Uint8Array(await response.arrayBuffer());
    line = `fetch ${response.status} ${hex(bytes)}`;
  } catch (e) {
    wasi.eprintLine(`fetch failed: ${e}`);
    line = "fetch-err";
  }
  wasi.printLine(line);
}

function fileCommand(action) {
  try {
    return action();
  } catch (e) {
    wasi.eprintLine(`file error: ${e?.payload ?? e}`);
    return "err io";
  }
}

function clockOk() {
  const wall = Date.now();
  const first = performance.now();
  const second = performance.now();
  return wall > 1_600_000_000_000 && second >= first;
}

function randomOk() {
  const a = crypto.getRandomValues(new Uint8Array(16));
  const b = crypto.getRandomValues(new Uint8Array(16));
  const zero = (bytes) => bytes.every((byte) => byte === 0);
  return !zero(a) && !zero(b) && a.some((byte, i) => byte !== b[i]);
}

/** Performs one command; returns false after `exit`. */
async function perform(fields, stdinLength) {
  const [word, ...args] = fields;
  const need = (n) => {
    if (args.length !== n) {
      throw new ProtocolError(`${word} takes ${n} fields, got ${args.length}`);
    }
  };
  switch (word) {
    case "print":
      need(1);
      wasi.printLine(unhex(args[0]));
      break;
    case "eprint":
      need(1);
      wasi.eprintLine(unhex(args[0]));
      break;
    case "stdin":
      wasi.printLine(`stdin ${stdinLength}`);
      break;
    case "env":
      wasi.printLine(`env ${wasi.envCount()}`);
      break;
    case "args":
      wasi.printLine(`args ${wasi.argsCount()}`);
      break;
    case "clock":
      wasi.printLine(clockOk() ? "clock ok" : "clock bad");
      break;
    case "random":
      wasi.printLine(randomOk() ? "random ok" : "random bad");
      break;
    case "write": {
      need(2);
      const [path, data] = [unhexText(args[0]), unhex(args[1])];
      wasi.printLine(fileCommand(() => `wrote ${wasi.writeFile(path, data)}`));
      break;
    }
    case "read": {
      need(1);
      const path = unhexText(args[0]);
      wasi.printLine(fileCommand(() => `read ${hex(wasi.readFile(path))}`));
      break;
    }
    case "call": {
      need(5);
      const [api, method, path, headers, body] = args;
      await printBrokerResult(
        broker.call(unhexText(api), {
          method,
          path: unhexText(path),
          headers: parseHeaders(headers),
          body: parseBody(body),
        }),
      );
      break;
    }
    case "origin": {
      need(6);
      const [origin, timeout, method, path, headers, body] = args;
      await printBrokerResult(
        broker.callOrigin(
          unhexText(origin),
          { method, path: unhexText(path), headers: parseHeaders(headers), body: parseBody(body) },
          { timeoutMs: parseTimeout(timeout) },
        ),
      );
      break;
    }
    case "fetch":
      need(3);
      await doFetch(unhexText(args[0]), args[1], parseBody(args[2]));
      break;
    case "exit":
      need(1);
      if (args[0] !== "0" && args[0] !== "1") {
        throw new ProtocolError(`exit code must be 0 or 1, got ${args[0]}`);
      }
      wasi.exit(Number(args[0]));
      return false;
    default:
      wasi.printLine(`unsupported ${word}`);
  }
  return true;
}

async function main() {
  const input = wasi.readStdin();
  for (const fields of parseCommands(input)) {
    try {
      if (!(await perform(fields, input.length))) {
        return;
      }
    } catch (e) {
      if (e instanceof ProtocolError) {
        wasi.eprintLine(`conformance agent: ${e.message}`);
        wasi.exit(1);
        return;
      }
      throw e;
    }
  }
}

/** The `wasi:cli/run` export. */
export const run = { run: main };
