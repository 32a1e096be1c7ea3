"""plimsoll's SDK conformance agent for Python (conformance/README.md).

It reads its whole stdin, one command a line, and performs each through the
SDK's public API (``plimsoll_guest.broker``) or the standard library, printing
exactly what the protocol says. World ``agent``: there is no HTTP client over
``wasi:http``, so ``fetch`` is answered ``unsupported fetch``.
"""

import os
import sys
import time

from plimsoll_guest import agent, broker


def out(line: str) -> None:
    """Writes one protocol line to stdout."""
    sys.stdout.buffer.write(line.encode("ascii") + b"\n")


def unhex(field: str) -> bytes:
    """A protocol field: lowercase hex, or ``-`` for empty."""
    return b"" if field == "-" else bytes.fromhex(field)


def hexed(data: bytes) -> str:
    """Bytes as a protocol field."""
    return data.hex() if data else "-"


def text(field: str) -> str:
    """A hex field holding UTF-8 text (grant names, paths, header names and values)."""
    return unhex(field).decode("utf-8")


def headers(field: str) -> list:
    """``HEADERS``: ``-`` or ``NAMEHEX:VALUEHEX`` pairs separated by commas."""
    if field == "-":
        return []
    pairs = []
    for item in field.split(","):
        name, value = item.split(":", 1)
        pairs.append((text(name), text(value)))
    return pairs


def body(field: str) -> bytes:
    """``BODY``: ``-``, ``hex:DATA`` or ``fill:N:BYTEHEX``."""
    if field == "-":
        return b""
    kind, _, rest = field.partition(":")
    if kind == "hex":
        return unhex(rest)
    if kind == "fill":
        count, byte = rest.split(":", 1)
        return unhex(byte) * int(count)
    raise ValueError(f"unknown body form {kind!r}")


def report(result) -> None:
    """Prints a call's outcome: the response, or the typed error."""
    if isinstance(result, broker.CallError):
        if result.detail is None:
            out(f"err {result.tag}")
        else:
            out(f"err {result.tag} {hexed(result.detail.encode('utf-8'))}")
        return
    out(f"ok {result.status} {hexed(result.body)}")
    for name, value in result.headers:
        if name.lower().startswith("x-conformance"):
            out(f"header {name.lower()} {hexed(value.encode('utf-8'))}")


def do_call(args: list):
    api, method, path, hdrs, data = args
    try:
        return broker.call(text(api), method=method, path=text(path), headers=headers(hdrs), body=body(data))
    except broker.CallError as e:
        return e


def do_origin(args: list):
    origin, timeout, method, path, hdrs, data = args
    try:
        return broker.call_origin(
            text(origin),
            method=method,
            path=text(path),
            headers=headers(hdrs),
            body=body(data),
            timeout_ms=None if timeout == "-" else int(timeout),
        )
    except broker.CallError as e:
        return e


def do_write(args: list) -> None:
    path, data = args
    payload = unhex(data)
    try:
        with open(text(path), "wb") as f:
            f.write(payload)
    except OSError:
        out("err io")
        return
    out(f"wrote {len(payload)}")


def do_read(args: list) -> None:
    (path,) = args
    try:
        with open(text(path), "rb") as f:
            data = f.read()
    except OSError:
        out("err io")
        return
    out(f"read {hexed(data)}")


def do_clock() -> None:
    wall = time.time()
    first = time.monotonic()
    second = time.monotonic()
    ok = wall > 1_600_000_000 and second >= first
    out("clock ok" if ok else "clock bad")


def do_random() -> None:
    a, b = os.urandom(16), os.urandom(16)
    ok = a != b and any(a) and any(b)
    out("random ok" if ok else "random bad")


def perform(word: str, args: list, stdin_len: int) -> None:
    """Performs one command (all but ``exit``)."""
    if word == "print":
        sys.stdout.buffer.write(unhex(args[0]) + b"\n")
    elif word == "eprint":
        sys.stdout.flush()
        sys.stderr.buffer.write(unhex(args[0]) + b"\n")
        sys.stderr.flush()
    elif word == "stdin":
        out(f"stdin {stdin_len}")
    elif word == "env":
        out(f"env {len(os.environ)}")
    elif word == "args":
        out(f"args {max(len(sys.argv) - 1, 0)}")
    elif word == "clock":
        do_clock()
    elif word == "random":
        do_random()
    elif word == "write":
        do_write(args)
    elif word == "read":
        do_read(args)
    elif word == "call":
        report(do_call(args))
    elif word == "origin":
        report(do_origin(args))
    else:  # `fetch` included: world `agent` has no wasi:http client
        out(f"unsupported {word}")


def main() -> None:
    data = sys.stdin.buffer.read()
    for raw in data.split(b"\n"):
        line = raw.decode("ascii", errors="replace").strip()
        if not line:
            continue
        word, *args = line.split(" ")
        if word == "exit":
            sys.stdout.flush()
            sys.stderr.flush()
            sys.exit(int(args[0]))
        try:
            perform(word, args, len(data))
        except (ValueError, TypeError, IndexError) as e:
            # A malformed command is the test's bug, not a case: say so on
            # both streams so the failure is visible.
            print(f"malformed {word}: {e}", file=sys.stderr)
            out(f"malformed {word}")
        sys.stdout.flush()


Run = agent.command(main)
