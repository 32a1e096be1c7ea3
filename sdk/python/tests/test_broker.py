"""Unit tests of plimsoll_guest on host CPython, without wasm.

The broker's transport is replaced by a fake that behaves like componentize-py's
generated bindings: it returns a response record or raises ``Err`` holding a
``CallError_*`` case object (the same class names the generator emits).

    python3 -m unittest discover -s sdk/python/tests      (or: pytest sdk/python/tests)

build.sh runs them against the real generated bindings (PLIMSOLL_GUEST_BINDINGS).
"""

import io
import os
import sys
import unittest
from contextlib import redirect_stderr
from dataclasses import dataclass
from typing import List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from plimsoll_guest import agent, broker, errors  # noqa: E402


# The generated types: the real ones when PLIMSOLL_GUEST_BINDINGS names the
# output of `componentize-py -d wit -w agent bindings DIR` (build.sh does
# this), so the class names the SDK maps are checked against the generator;
# otherwise stand-ins with the same names and shapes.
BINDINGS = os.environ.get("PLIMSOLL_GUEST_BINDINGS")
if BINDINGS:
    sys.path.insert(0, BINDINGS)
    from componentize_py_types import Err  # noqa: E402
    from wit_world.imports.broker import (  # noqa: E402
        CallError_BudgetExhausted,
        CallError_Denied,
        CallError_RequestTooLarge,
        CallError_ResponseTooLarge,
        CallError_Timeout,
        CallError_Upstream,
    )
else:

    @dataclass(frozen=True)
    class Err(Exception):
        value: object

    @dataclass
    class CallError_Denied:
        value: str

    @dataclass
    class CallError_BudgetExhausted:
        pass

    @dataclass
    class CallError_RequestTooLarge:
        pass

    @dataclass
    class CallError_ResponseTooLarge:
        pass

    @dataclass
    class CallError_Timeout:
        pass

    @dataclass
    class CallError_Upstream:
        value: str


@dataclass
class WitResponse:
    status: int
    headers: List[Tuple[str, str]]
    body: bytes


class FakeTransport:
    """Records each call; answers with ``reply`` or raises ``Err(fail)``."""

    error = Err

    def __init__(self, reply=None, fail=None):
        self.reply = reply or WitResponse(200, [("content-type", "application/json")], b'{"order":"42"}')
        self.fail = fail
        self.calls = []

    def _answer(self):
        if self.fail is not None:
            raise Err(self.fail)
        return self.reply

    def call(self, api, method, path, headers, body):
        self.calls.append(("call", api, method, path, headers, body))
        return self._answer()

    def call_origin(self, origin, method, path, headers, body, timeout_ms):
        self.calls.append(("origin", origin, method, path, headers, body, timeout_ms))
        return self._answer()


class BrokerTest(unittest.TestCase):
    def setUp(self):
        self.t = FakeTransport()
        broker.set_transport(self.t)
        self.addCleanup(broker.set_transport, None)

    def test_call_passes_every_part(self):
        resp = broker.call("orders", method="POST", path="/v1/echo", headers=[("x-a", "1"), ("x-a", "2")], body=b"\x00\xff")
        self.assertEqual(self.t.calls, [("call", "orders", "POST", "/v1/echo", [("x-a", "1"), ("x-a", "2")], b"\x00\xff")])
        self.assertIsInstance(resp, broker.Response)
        self.assertEqual(resp.status, 200)
        self.assertEqual(resp.json(), {"order": "42"})
        self.assertEqual(resp.header("Content-Type"), "application/json")
        self.assertIsNone(resp.header("x-missing"))

    def test_a_lone_surrogate_is_refused_before_the_boundary(self):
        with self.assertRaises(ValueError):
            broker.call("orders", method="GET", path="/v1/\udc80")
        with self.assertRaises(ValueError):
            broker.call("orders", method="GET", path="/v1", headers={"x-a": "\ud800"})
        self.assertEqual(self.t.calls, [])

    def test_headers_as_mapping_and_body_as_str(self):
        broker.call("orders", "PUT", "/v1/x", headers={"x-b": "v"}, body="é")
        self.assertEqual(self.t.calls[0][4:], ([("x-b", "v")], "é".encode("utf-8")))

    def test_helpers_use_their_method(self):
        broker.get("a", "/g")
        broker.post("a", "/p", b"1")
        broker.put("a", "/u", b"2")
        broker.patch("a", "/pa", b"3")
        broker.delete("a", "/d")
        got = [(c[2], c[3], c[5]) for c in self.t.calls]
        self.assertEqual(got, [("GET", "/g", b""), ("POST", "/p", b"1"), ("PUT", "/u", b"2"), ("PATCH", "/pa", b"3"), ("DELETE", "/d", b"")])

    def test_call_origin_passes_timeout(self):
        broker.call_origin("http://127.0.0.1:9", "GET", "/v1/orders/7", timeout_ms=200)
        broker.call_origin("http://127.0.0.1:9", "GET", "/v1/orders/7")
        self.assertEqual([c[6] for c in self.t.calls], [200, None])

    def test_binary_body_kept_and_text_is_lossy(self):
        self.t.reply = WitResponse(200, [], b"\x00\xff\xfe\x80\xc3\x28\x0a\x00")
        resp = broker.get("orders", "/v1/binary")
        self.assertEqual(resp.body, b"\x00\xff\xfe\x80\xc3\x28\x0a\x00")
        self.assertIn("\ufffd", resp.text())

    def test_every_case_maps_to_its_class(self):
        cases = [
            (CallError_Denied("unknown grant"), errors.Denied, "denied", "unknown grant"),
            (CallError_BudgetExhausted(), errors.BudgetExhausted, "budget-exhausted", None),
            (CallError_RequestTooLarge(), errors.RequestTooLarge, "request-too-large", None),
            (CallError_ResponseTooLarge(), errors.ResponseTooLarge, "response-too-large", None),
            (CallError_Timeout(), errors.Timeout, "timeout", None),
            (CallError_Upstream("connection refused"), errors.Upstream, "upstream", "connection refused"),
        ]
        for case, cls, tag, detail in cases:
            with self.subTest(tag=tag):
                for make in (lambda: broker.get("orders", "/x"), lambda: broker.call_origin("http://h", "GET", "/x")):
                    self.t.fail = case
                    with self.assertRaises(cls) as ctx:
                        make()
                    e = ctx.exception
                    self.assertIsInstance(e, broker.CallError)
                    self.assertEqual((e.tag, e.detail), (tag, detail))
                    self.assertIsNone(e.__cause__)
                    self.assertEqual(str(e), tag if detail is None else f"{tag}: {detail}")

    def test_error_classes_are_exported_from_broker(self):
        for name in ("CallError", "Denied", "BudgetExhausted", "RequestTooLarge", "ResponseTooLarge", "Timeout", "Upstream"):
            self.assertIs(getattr(broker, name), getattr(errors, name))

    def test_unknown_case_is_not_guessed(self):
        @dataclass
        class CallError_Teapot:
            pass

        self.t.fail = CallError_Teapot()
        with self.assertRaises(TypeError):
            broker.get("orders", "/x")

    def test_wrong_types_refused_before_calling(self):
        bad = [
            lambda: broker.call(b"orders", "GET", "/x"),
            lambda: broker.call("orders", "GET", "/x", headers=[("a", 1)]),
            lambda: broker.call("orders", "POST", "/x", body=42),
            lambda: broker.call_origin("http://h", "GET", "/x", timeout_ms="5"),
            lambda: broker.call_origin("http://h", "GET", "/x", timeout_ms=True),
        ]
        for make in bad:
            with self.assertRaises(TypeError):
                make()
        with self.assertRaises(ValueError):
            broker.call_origin("http://h", "GET", "/x", timeout_ms=-1)
        self.assertEqual(self.t.calls, [])

    def test_no_transport_outside_a_component(self):
        broker.set_transport(None)
        with self.assertRaises(RuntimeError):
            broker.get("orders", "/x")


class AgentTest(unittest.TestCase):
    def run_quietly(self, main):
        err = io.StringIO()
        with redirect_stderr(err):
            code = agent.run_main(main)
        return code, err.getvalue()

    def test_exit_codes(self):
        def exits(value):
            def main():
                sys.exit(value)
            return main

        self.assertEqual(self.run_quietly(lambda: None), (0, ""))
        self.assertEqual(self.run_quietly(lambda: 0), (0, ""))
        self.assertEqual(self.run_quietly(exits(0))[0], 0)
        self.assertEqual(self.run_quietly(exits(None))[0], 0)
        self.assertEqual(self.run_quietly(exits(1))[0], 1)
        self.assertEqual(self.run_quietly(exits(3))[0], 1)
        self.assertEqual(self.run_quietly(exits("bad input")), (1, "bad input\n"))

    def test_uncaught_exception_is_exit_1_with_traceback(self):
        def main():
            raise KeyError("boom")

        code, err = self.run_quietly(main)
        self.assertEqual(code, 1)
        self.assertIn("KeyError: 'boom'", err)

    def test_uncaught_call_error_names_the_case(self):
        broker.set_transport(FakeTransport(fail=CallError_Denied("route not granted")))
        self.addCleanup(broker.set_transport, None)
        code, err = self.run_quietly(lambda: broker.get("orders", "/v1/admin"))
        self.assertEqual(code, 1)
        self.assertIn("plimsoll_guest.errors.Denied: denied: route not granted", err)

    def test_short_writes_are_completed(self):
        # Inside a component sys.stdout is a TextIOWrapper straight over a raw
        # file whose writes a WASI stream may cut short.
        class Choppy(io.RawIOBase):
            def __init__(self):
                self.data = bytearray()

            def writable(self):
                return True

            def write(self, b):
                n = min(len(b), 7)
                self.data += bytes(b[:n])
                return n

        def unbuffered(raw):
            return io.TextIOWrapper(raw, encoding="utf-8", write_through=True)

        lost = Choppy()
        print("x" * 100, file=unbuffered(lost))
        self.assertLess(len(lost.data), 101)  # what the SDK guards against

        out, err = Choppy(), Choppy()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = unbuffered(out), unbuffered(err)
        try:
            def main():
                print("y" * 1000)
                sys.stdout.buffer.write(b"\x00" * 1000)
                print("z" * 1000, file=sys.stderr)
                sys.exit(1)

            code = agent.run_main(main)
        finally:
            sys.stdout, sys.stderr = saved
        self.assertEqual(code, 1)
        self.assertEqual(bytes(out.data), b"y" * 1000 + b"\n" + b"\x00" * 1000)
        self.assertEqual(bytes(err.data), b"z" * 1000 + b"\n")

    def test_command_builds_a_run_class(self):
        ran = []
        Run = agent.command(lambda: ran.append(1))
        self.assertEqual(Run.__name__, "Run")
        Run().run()
        self.assertEqual(ran, [1])
        Failing = agent.command(lambda: 1)
        with self.assertRaises(Exception) as ctx:
            Failing().run()
        self.assertIsNone(ctx.exception.value)  # `Err(None)`: wasi:cli/run's error
        with self.assertRaises(TypeError):
            agent.command("main")


if __name__ == "__main__":
    unittest.main()
