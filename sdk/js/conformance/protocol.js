// The conformance protocol's encodings (conformance/README.md): hex fields,
// `-` for empty, HEADERS and BODY. Pure JavaScript, tested under node.

const decoder = new TextDecoder();

/** A malformed command line: the agent reports it and exits 1. */
export class ProtocolError extends Error {}

/**
 * The bytes of a lowercase-hex field; `-` is empty.
 * @param {string} field
 * @returns {Uint8Array}
 */
export function unhex(field) {
  if (field === "-") {
    return new Uint8Array(0);
  }
  if (!/^(?:[0-9a-f]{2})*$/.test(field)) {
    throw new ProtocolError(`not lowercase hex: ${field.slice(0, 40)}`);
  }
  const bytes = new Uint8Array(field.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = parseInt(field.slice(2 * i, 2 * i + 2), 16);
  }
  return bytes;
}

/**
 * A hex field decoded as UTF-8 text (WIT strings are text).
 * @param {string} field
 */
export function unhexText(field) {
  return decoder.decode(unhex(field));
}

/**
 * The lowercase hex of `bytes`; `-` when empty.
 * @param {Uint8Array} bytes
 */
export function hex(bytes) {
  if (bytes.length === 0) {
    return "-";
  }
  const parts = new Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    parts[i] = (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
  }
  return parts.join("");
}

/**
 * HEADERS: `-` or `NAMEHEX:VALUEHEX,...`, as `[name, value]` pairs.
 * @param {string} field
 * @returns {Array<[string, string]>}
 */
export function parseHeaders(field) {
  if (field === "-") {
    return [];
  }
  return field.split(",").map((pair) => {
    const parts = pair.split(":");
    if (parts.length !== 2) {
      throw new ProtocolError(`bad header field: ${pair.slice(0, 40)}`);
    }
    return [unhexText(parts[0]), unhexText(parts[1])];
  });
}

/**
 * BODY: `-`, `hex:DATA` or `fill:N:BYTEHEX`.
 * @param {string} field
 * @returns {Uint8Array}
 */
export function parseBody(field) {
  if (field === "-") {
    return new Uint8Array(0);
  }
  if (field.startsWith("hex:")) {
    return unhex(field.slice(4));
  }
  const fill = /^fill:(\d+):([0-9a-f]{2})$/.exec(field);
  if (fill) {
    return new Uint8Array(Number(fill[1])).fill(parseInt(fill[2], 16));
  }
  throw new ProtocolError(`bad body field: ${field.slice(0, 40)}`);
}

/**
 * TIMEOUT: decimal milliseconds, or `-` for none.
 * @param {string} field
 * @returns {number | undefined}
 */
export function parseTimeout(field) {
  if (field === "-") {
    return undefined;
  }
  if (!/^\d+$/.test(field)) {
    throw new ProtocolError(`bad timeout: ${field.slice(0, 40)}`);
  }
  return Number(field);
}

/**
 * The lines of the commands (`\n`-terminated); blank lines are skipped.
 * @param {Uint8Array} input
 * @returns {string[][]} each line split into its space-separated fields
 */
export function parseCommands(input) {
  return decoder
    .decode(input)
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => line.split(" "));
}

/**
 * The lines a broker result prints: `ok STATUS BODY` and a `header` line per
 * `x-conformance*` response header, or `err TAG [MESSAGE]`.
 *
 * @param {{status: number, headers: Array<[string, string]>, body: Uint8Array}} response
 * @returns {string[]}
 */
export function responseLines(response) {
  const encoder = new TextEncoder();
  const lines = [`ok ${response.status} ${hex(response.body)}`];
  for (const [name, value] of response.headers) {
    const lower = name.toLowerCase();
    if (lower.startsWith("x-conformance")) {
      lines.push(`header ${lower} ${hex(encoder.encode(value))}`);
    }
  }
  return lines;
}

/**
 * The line of a typed broker error.
 * @param {{tag: string, detail?: string}} error
 */
export function errorLine(error) {
  if (error.tag === "denied" || error.tag === "upstream") {
    return `err ${error.tag} ${hex(new TextEncoder().encode(error.detail ?? ""))}`;
  }
  return `err ${error.tag}`;
}
