// The agent's stdio, files, environment and exit, straight over WASI 0.2
// (StarlingMonkey has no byte-exact stdio or file API of its own).

import { getArguments, getEnvironment } from "wasi:cli/environment@0.2.12";
import { exit as wasiExit } from "wasi:cli/exit@0.2.12";
import { getStderr } from "wasi:cli/stderr@0.2.12";
import { getStdin } from "wasi:cli/stdin@0.2.12";
import { getStdout } from "wasi:cli/stdout@0.2.12";
import { getDirectories } from "wasi:filesystem/preopens@0.2.12";

/** `blocking-write-and-flush` takes at most 4096 bytes a call. */
const WRITE_CHUNK = 4096;
const READ_CHUNK = 65536n;
const encoder = new TextEncoder();

// Fetched on first use: no host function may be called while the component
// is pre-initialized (wizer), which runs the module's top level.
let stdout;
let stderr;

/** Everything on stdin, until it closes. */
export function readStdin() {
  const stream = getStdin();
  const chunks = [];
  let total = 0;
  for (;;) {
    let chunk;
    try {
      chunk = stream.blockingRead(READ_CHUNK);
    } catch (e) {
      if (e?.payload?.tag === "closed") {
        break;
      }
      throw e;
    }
    chunks.push(chunk);
    total += chunk.length;
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return all;
}

function writeAll(stream, bytes) {
  for (let at = 0; at < bytes.length; at += WRITE_CHUNK) {
    stream.blockingWriteAndFlush(bytes.subarray(at, at + WRITE_CHUNK));
  }
}

/** Writes `bytes` (a Uint8Array or a string) and `\n` to stdout, flushed. */
export function printLine(bytes) {
  stdout ??= getStdout();
  writeAll(stdout, typeof bytes === "string" ? encoder.encode(bytes) : bytes);
  writeAll(stdout, encoder.encode("\n"));
}

/** Writes `bytes` (a Uint8Array or a string) and `\n` to stderr, flushed. */
export function eprintLine(bytes) {
  stderr ??= getStderr();
  writeAll(stderr, typeof bytes === "string" ? encoder.encode(bytes) : bytes);
  writeAll(stderr, encoder.encode("\n"));
}

/** How many environment variables the agent sees. */
export function envCount() {
  return getEnvironment().length;
}

/** How many arguments follow the program name. */
export function argsCount() {
  return Math.max(0, getArguments().length - 1);
}

/** The preopened directory holding `path` and the path relative to it. */
function resolve(path) {
  for (const [dir, root] of getDirectories()) {
    const prefix = root.endsWith("/") ? root : `${root}/`;
    if (path.startsWith(prefix)) {
      return [dir, path.slice(prefix.length)];
    }
  }
  throw new Error(`no preopen holds ${path}`);
}

/** Creates or truncates the file `path` and writes `data`; returns the bytes written. */
export function writeFile(path, data) {
  const [dir, rel] = resolve(path);
  const file = dir.openAt({}, rel, { create: true, truncate: true }, { write: true });
  let at = 0;
  while (at < data.length) {
    const n = Number(file.write(data.subarray(at), BigInt(at)));
    if (n === 0) {
      throw new Error(`no progress writing ${path}`);
    }
    at += n;
  }
  return at;
}

/** The whole content of the file `path`. */
export function readFile(path) {
  const [dir, rel] = resolve(path);
  const file = dir.openAt({}, rel, {}, { read: true });
  const chunks = [];
  let total = 0;
  for (;;) {
    const [chunk, end] = file.read(READ_CHUNK, BigInt(total));
    chunks.push(chunk);
    total += chunk.length;
    if (end || chunk.length === 0) {
      break;
    }
  }
  const all = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return all;
}

/** Ends the run with exit code 0 or 1 (all `wasi:cli/exit` carries). */
export function exit(code) {
  wasiExit(code === 0 ? { tag: "ok" } : { tag: "err" });
}
