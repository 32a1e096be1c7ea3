"""Native (CPython, no wasm) tests of app.py, plimsoll.py, plimsoll_http.py
and plimsoll_vendor.py.

The componentize-py bindings are replaced by small fakes, so this runs with
any Python 3.10+ and no build:

    python3 guests/python/test_guest.py

The requests tests use the vendored packages (guests/python/build/vendor,
made by vendor.sh, which this runs when they are missing: it fetches the
pinned wheels once), compiled by this Python into plimsoll_vendor's blob
and imported through its finder, ahead of any installed copy.

The end-to-end checks against the real component and host live in the
host's own tests; this file pins the Python-side semantics.
"""

import dataclasses
import importlib
import io
import os
import sys
import types
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
THIS = sys.modules[__name__]


# --- fakes for the generated bindings ---------------------------------------

def _install_fakes():
    cpt = types.ModuleType("componentize_py_types")

    @dataclasses.dataclass
    class Ok:
        value: object

    @dataclasses.dataclass(frozen=True)
    class Err(Exception):
        value: object

    cpt.Ok, cpt.Err = Ok, Err

    broker = types.ModuleType("wit_world.imports.broker")

    @dataclasses.dataclass
    class Request:
        method: str
        path: str
        headers: list
        body: bytes

    @dataclasses.dataclass
    class Response:
        status: int
        headers: list
        body: bytes

    broker.Request, broker.Response = Request, Response
    for name, has_value in [
        ("Denied", True),
        ("BudgetExhausted", False),
        ("RequestTooLarge", False),
        ("ResponseTooLarge", False),
        ("Timeout", False),
        ("Upstream", True),
    ]:
        fields = [("value", str)] if has_value else []
        setattr(broker, "CallError_" + name,
                dataclasses.make_dataclass("CallError_" + name, fields))
    broker.calls = []
    broker.answer = None

    def call(api, req):
        broker.calls.append((api, req))
        if isinstance(broker.answer, BaseException):
            raise broker.answer
        return broker.answer

    broker.call = call

    # Calls by URL: `origin_answer` is a Response, an exception to raise,
    # or a function of (origin, request, timeout_ms) giving either.
    broker.origin_calls = []
    broker.origin_answer = None

    def call_origin(origin, req, timeout_ms):
        broker.origin_calls.append((origin, req, timeout_ms))
        answer = broker.origin_answer
        if callable(answer) and not isinstance(answer, BaseException):
            answer = answer(origin, req, timeout_ms)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    broker.call_origin = call_origin

    imports = types.ModuleType("wit_world.imports")
    imports.broker = broker
    world = types.ModuleType("wit_world")
    world.imports = imports

    class WitWorld:
        pass

    world.WitWorld = WitWorld
    sys.modules.update({
        "componentize_py_types": cpt,
        "wit_world": world,
        "wit_world.imports": imports,
        "wit_world.imports.broker": broker,
    })
    return cpt, broker


Cpt, Broker = _install_fakes()
sys.dont_write_bytecode = True  # leave no __pycache__ beside the sources
sys.path.insert(0, HERE)
app = importlib.import_module("app")
plimsoll = importlib.import_module("plimsoll")
cell_cases = importlib.import_module("cell_cases")


def run(world, code):
    """eval `code`; return (ok, value, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            return True, world.eval(code), out.getvalue(), err.getvalue()
        except Cpt.Err as e:
            return False, e.value, out.getvalue(), err.getvalue()


class EvalTests(unittest.TestCase):
    def setUp(self):
        self.w = app.WitWorld()

    def test_trailing_expression(self):
        self.assertEqual(run(self.w, "1+1")[:2], (True, "2"))
        self.assertEqual(run(self.w, "'a'")[:2], (True, "'a'"))

    def test_no_trailing_expression_or_none(self):
        self.assertEqual(run(self.w, "x = 1")[:2], (True, ""))
        self.assertEqual(run(self.w, "None")[:2], (True, ""))
        self.assertEqual(run(self.w, "")[:2], (True, ""))
        self.assertEqual(run(self.w, "# only a comment\n")[:2], (True, ""))

    def test_the_warm_up_runs_the_whole_cell_path(self):
        # `_warm_up` swallows every error (it must change nothing), so a
        # broken throwaway cell would go unnoticed but for this.
        self.assertEqual(app._throwaway_cell("0"), "0")
        self.assertEqual(app._throwaway_cell("x = 2\nx * 3"), "6")

    def test_the_empty_cell_changes_nothing(self):
        # The host's pre-instantiated instances evaluate "" before a run
        # claims them (host/src/warm.rs): no output, no cell number, no
        # names, and the per-run set-up (working directory) left for the
        # first real cell.
        cells, done = app._cells, app._per_run_done
        names = set(app._NS)
        self.assertEqual(run(self.w, ""), (True, "", "", ""))
        self.assertEqual((app._cells, app._per_run_done), (cells, done))
        self.assertEqual(set(app._NS), names)

    def test_multi_statement_cell_with_print(self):
        ok, value, out, _ = run(self.w, "a = [1, 2]\nprint('n', len(a))\nsum(a)")
        self.assertEqual((ok, value, out), (True, "3", "n 2\n"))

    def test_namespace_persists_and_is_main(self):
        run(self.w, "counter = 41\ndef bump():\n    global counter\n    counter += 1")
        run(self.w, "bump()")
        self.assertEqual(run(self.w, "counter")[1], "42")
        self.assertEqual(run(self.w, "__name__")[1], "'__main__'")
        self.assertEqual(run(self.w, "import sys; sys.modules['__main__'].counter")[1], "42")

    def test_dataclass_with_string_annotations(self):
        code = ("from __future__ import annotations\nimport dataclasses\n"
                "@dataclasses.dataclass\nclass P:\n    x: int\n    y: int = 0\nP(1)")
        self.assertEqual(run(self.w, code)[:2], (True, "P(x=1, y=0)"))

    def test_exception_gives_traceback_on_stderr_and_err(self):
        ok, value, out, err = run(self.w, "print('before')\ndef f():\n    1/0\nf()")
        self.assertFalse(ok)
        self.assertEqual(out, "before\n")
        self.assertIn("ZeroDivisionError", value)
        self.assertIn('File "<cell-', value)
        self.assertIn("1/0", value)  # the source line is shown
        self.assertNotIn("app.py", value)  # our own frames are hidden
        self.assertEqual(value, err)
        self.assertEqual(run(self.w, "2*3")[:2], (True, "6"))  # still usable

    def test_syntax_error(self):
        ok, value, _, err = run(self.w, "if x ==\n")
        self.assertFalse(ok)
        self.assertIn("SyntaxError", value)
        self.assertEqual(value, err)

    def test_base_exceptions_are_errors(self):
        for code, name in [("raise SystemExit(3)", "SystemExit"),
                           ("raise KeyboardInterrupt", "KeyboardInterrupt"),
                           ("import sys; sys.exit()", "SystemExit")]:
            ok, value, _, _ = run(self.w, code)
            self.assertFalse(ok, code)
            self.assertIn(name, value)

    def test_repr_that_raises(self):
        code = "class A:\n    def __repr__(self):\n        raise ValueError('bad repr')\nA()"
        ok, value, _, _ = run(self.w, code)
        self.assertFalse(ok)
        self.assertIn("bad repr", value)

    def test_unprintable_exception(self):
        code = ("class E(Exception):\n    def __str__(self):\n        raise RuntimeError\n"
                "raise E()")
        ok, value, _, _ = run(self.w, code)
        self.assertFalse(ok)
        self.assertIn("E", value)

    def test_lone_surrogates_are_escaped(self):
        code = "class A:\n    def __repr__(self):\n        return 'x\\udc80'\nA()"
        ok, value, _, _ = run(self.w, code)
        self.assertTrue(ok)
        value.encode("utf-8")  # must not raise
        self.assertEqual(value, "x\\udc80")
        ok, value, _, _ = run(self.w, "raise ValueError('\\udc81')")
        self.assertFalse(ok)
        value.encode("utf-8")

    def test_network_error_gets_a_hint(self):
        code = ("import socket\ndef boom():\n    raise OSError('no')\n"
                "boom.__code__ = boom.__code__.replace(co_filename='/python/socket.py')\n"
                "boom()")
        ok, value, _, _ = run(self.w, code)
        self.assertFalse(ok)
        self.assertIn("plimsoll", value)
        ok, value, _, _ = run(self.w, "raise OSError('disk')")
        self.assertNotIn("plimsoll", value)


class PlimsollTests(unittest.TestCase):
    def setUp(self):
        Broker.calls.clear()
        Broker.answer = Broker.Response(200, [("Content-Type", "application/json")], b'{"a": 1}')

    def test_get_and_response(self):
        r = plimsoll.get("orders", "/v1/orders/1")
        api, req = Broker.calls[-1]
        self.assertEqual((api, req.method, req.path, req.headers, req.body),
                         ("orders", "GET", "/v1/orders/1", [], b""))
        self.assertEqual(r.status, 200)
        self.assertTrue(r.ok)
        self.assertEqual(r.json(), {"a": 1})
        self.assertEqual(r.text, '{"a": 1}')
        self.assertEqual(r.header("content-type"), "application/json")
        self.assertIsNone(r.header("x-missing"))
        self.assertEqual(r.headers, [("Content-Type", "application/json")])

    def test_text_replaces_bad_utf8(self):
        Broker.answer = Broker.Response(500, [], b"\xffok")
        r = plimsoll.call("orders", "get", "/x")
        self.assertEqual(Broker.calls[-1][1].method, "GET")
        self.assertFalse(r.ok)
        self.assertEqual(r.text, "\ufffdok")

    def test_bodies(self):
        plimsoll.post("a", "/p", {"k": [1]})
        req = Broker.calls[-1][1]
        self.assertEqual(req.body, b'{"k": [1]}')
        self.assertIn(("content-type", "application/json"), req.headers)
        plimsoll.put("a", "/p", [1], headers={"Content-Type": "application/x-custom"})
        req = Broker.calls[-1][1]
        self.assertEqual(req.headers, [("Content-Type", "application/x-custom")])
        plimsoll.patch("a", "/p", "héllo", headers=[("x-a", "1")])
        req = Broker.calls[-1][1]
        self.assertEqual((req.method, req.body, req.headers),
                         ("PATCH", "héllo".encode(), [("x-a", "1")]))
        plimsoll.delete("a", "/p", b"\x00\x01")
        self.assertEqual(Broker.calls[-1][1].body, b"\x00\x01")
        plimsoll.call("a", "POST", "/p", bytearray(b"ba"))
        self.assertEqual(Broker.calls[-1][1].body, b"ba")

    def test_bad_arguments_never_reach_the_broker(self):
        for kwargs in [dict(body=1.5), dict(headers=[("a",)]), dict(headers={"a": 1}),
                       dict(path="/\udc80"), dict(api=None)]:
            args = dict(api="a", method="GET", path="/p")
            args.update(kwargs)
            with self.assertRaises((TypeError, ValueError), msg=kwargs):
                plimsoll.call(**args)
        self.assertEqual(Broker.calls, [])

    def test_errors(self):
        cases = [
            (Broker.CallError_Denied("no route"), plimsoll.Denied),
            (Broker.CallError_BudgetExhausted(), plimsoll.BudgetExhausted),
            (Broker.CallError_RequestTooLarge(), plimsoll.RequestTooLarge),
            (Broker.CallError_ResponseTooLarge(), plimsoll.ResponseTooLarge),
            (Broker.CallError_Timeout(), plimsoll.Timeout),
            (Broker.CallError_Upstream("refused"), plimsoll.UpstreamError),
        ]
        for err, exc_type in cases:
            Broker.answer = Cpt.Err(err)
            with self.assertRaises(exc_type) as cm:
                plimsoll.get("a", "/p")
            self.assertIsInstance(cm.exception, plimsoll.BrokerError)
            self.assertIsNone(cm.exception.__context__)  # no chained Err
        Broker.answer = Cpt.Err(Broker.CallError_Denied("no route"))
        with self.assertRaises(plimsoll.Denied) as cm:
            plimsoll.get("a", "/p")
        self.assertEqual((cm.exception.reason, str(cm.exception)), ("no route", "no route"))
        Broker.answer = Cpt.Err(Broker.CallError_Upstream("refused"))
        with self.assertRaises(plimsoll.UpstreamError) as cm:
            plimsoll.get("a", "/p")
        self.assertEqual(cm.exception.message, "refused")

    def test_public_names_have_docstrings(self):
        for name in plimsoll.__all__:
            self.assertTrue(getattr(plimsoll, name).__doc__, name)


class CompileCellTests(unittest.TestCase):
    """`_compile_cell`'s split is an optimization: it must never change meaning."""

    def assertNoMismatches(self, cells):
        bad = cell_cases.mismatches(app._compile_cell, cells)
        self.assertEqual(bad, [], "%d cells changed meaning" % len(bad))

    def test_tricky_cells(self):
        self.assertNoMismatches(cell_cases.TRICKY_CELLS)

    def test_random_cells_from_tricky_fragments(self):
        self.assertNoMismatches(cell_cases.random_cells(3000))

    def test_the_fast_split_is_taken(self):
        # The common shapes compile from source; a regression to the whole
        # AST path would not be visible otherwise.
        import ast
        calls = []
        real = ast.parse
        ast.parse = lambda *a, **k: calls.append(a[0]) or real(*a, **k)
        try:
            for code in ["x = 1\nx", "def f():\n    return 1\nf()\n",
                         "import os\nif os.sep:\n    print(1)", "1+1"]:
                app._compile_cell(code, "<cell>")
        finally:
            ast.parse = real
        # Only the third cell's tail, `if ...:`, goes through an AST.
        self.assertEqual(calls, ["\nif os.sep:\n    print(1)"])

    def test_tracebacks_point_at_the_right_lines(self):
        ok, value, _, _ = run(app.WitWorld(), "x = 1\n\ny = 2\n(x /\n 0)")
        self.assertFalse(ok)
        self.assertIn("line 4", value)
        self.assertIn("(x /", value)


# --- calls by URL: plimsoll.call_url and the standard HTTP clients ------------

import http.client  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402

plimsoll_http = importlib.import_module("plimsoll_http")
plimsoll_vendor = importlib.import_module("plimsoll_vendor")
VENDOR = os.path.join(HERE, "build", "vendor")
NO_GRANT = "no grant covers this origin"


def _answer(status=200, headers=(), body=b""):
    return Broker.Response(status, list(headers), body)


def _denied(reason=NO_GRANT):
    return Cpt.Err(Broker.CallError_Denied(reason))


# Each CallError, what http.client raises for it, and text its message has.
_ERROR_CASES = [
    (lambda: Broker.CallError_Denied(NO_GRANT), ConnectionRefusedError, NO_GRANT),
    (lambda: Broker.CallError_BudgetExhausted(), ConnectionRefusedError, "budget"),
    (lambda: Broker.CallError_RequestTooLarge(), OSError, "request cap"),
    (lambda: Broker.CallError_ResponseTooLarge(), OSError, "response cap"),
    (lambda: Broker.CallError_Timeout(), TimeoutError, "in time"),
    (lambda: Broker.CallError_Upstream("connection refused by upstream"), OSError,
     "connection refused by upstream"),
]


class _OriginCase(unittest.TestCase):
    """Resets the fake `call_origin`; by default every call gets 200 "ok"."""

    def setUp(self):
        Broker.origin_calls.clear()
        Broker.origin_answer = _answer(200, [("Content-Type", "text/plain")], b"ok")

    def last(self):
        origin, req, timeout_ms = Broker.origin_calls[-1]
        return origin, req.method, req.path, dict(req.headers), req.body, timeout_ms


class CallUrlTests(_OriginCase):
    def test_the_url_is_split_into_origin_and_path(self):
        cases = [
            ("https://api.example.com/v1/x?y=1#frag", "https://api.example.com", "/v1/x?y=1"),
            ("HTTP://API.Example.COM", "http://api.example.com", "/"),
            ("http://api.example.com:8080?q", "http://api.example.com:8080", "/?q"),
            ("https://api.example.com:443/a", "https://api.example.com:443", "/a"),
            ("http://[::1]:8080/a", "http://[::1]:8080", "/a"),
            ("https://bücher.example/a", "https://xn--bcher-kva.example", "/a"),
        ]
        for url, origin, path in cases:
            r = plimsoll.call_url("get", url)
            self.assertEqual(self.last()[:3], (origin, "GET", path), url)
            self.assertEqual(r.text, "ok")

    def test_timeouts(self):
        for timeout, ms in [(None, None), (2, 2000), (0.0001, 1), (0, 1), (1.5, 1500),
                            (10**10, 2**32 - 1), (float("inf"), 2**32 - 1)]:
            plimsoll.call_url("GET", "https://a.example/", timeout=timeout)
            self.assertEqual(self.last()[5], ms, timeout)
        for bad in [-1, float("nan"), "1", True]:
            with self.assertRaises((TypeError, ValueError)):
                plimsoll.call_url("GET", "https://a.example/", timeout=bad)

    def test_body_and_headers_as_for_call(self):
        plimsoll.call_url("POST", "https://a.example/p", {"k": 1}, {"X-A": "1"})
        _, method, _, headers, body, _ = self.last()
        self.assertEqual((method, body), ("POST", b'{"k": 1}'))
        self.assertEqual(headers, {"X-A": "1", "content-type": "application/json"})

    def test_refused_urls_never_reach_the_host(self):
        for url, text in [
            ("https://user:secret@a.example/", "user information"),
            ("https://user@a.example/", "user information"),
            ("ftp://a.example/", "only http:// and https://"),
            ("file:///etc/passwd", "only http:// and https://"),
            ("/relative/path", "only http:// and https://"),
            ("https:///no-host", "no host"),
            ("https://a.example/a b", "space"),
            ("https://a.example/\nx", "control"),
            ("https://a.example:99999/", "ort"),
        ]:
            with self.assertRaises(ValueError, msg=url) as cm:
                plimsoll.call_url("GET", url)
            self.assertIn(text, str(cm.exception), url)
            self.assertNotIn("secret", str(cm.exception))
        with self.assertRaises(TypeError):
            plimsoll.call_url("GET", b"https://a.example/")
        self.assertEqual(Broker.origin_calls, [])

    def test_errors_are_those_of_call(self):
        Broker.origin_answer = _denied()
        with self.assertRaises(plimsoll.Denied) as cm:
            plimsoll.call_url("GET", "https://nowhere.example/")
        self.assertEqual(cm.exception.reason, NO_GRANT)
        self.assertIsNone(cm.exception.__context__)
        for make, _, _ in _ERROR_CASES:
            Broker.origin_answer = Cpt.Err(make())
            with self.assertRaises(plimsoll.BrokerError):
                plimsoll.call_url("GET", "https://a.example/")

    def test_scientific_guest_door_frames(self):
        frames = []

        def door(frame):
            frames.append(json.loads(frame))
            return json.dumps({"status": 201, "headers": [["a", "b"]], "body": "aGk="}).encode()

        host = types.ModuleType("_host")
        host.call = door
        saved = plimsoll._broker
        sys.modules["_host"], plimsoll._broker = host, None
        try:
            r = plimsoll.call_url("put", "https://a.example:8443/x?y", b"hi", timeout=0.25)
            plimsoll.call("orders", "GET", "/o")
        finally:
            plimsoll._broker = saved
            del sys.modules["_host"]
        self.assertEqual((r.status, r.headers, r.body), (201, [("a", "b")], b"hi"))
        self.assertEqual(frames[0], {
            "op": "call", "origin": "https://a.example:8443", "timeout_ms": 250,
            "method": "PUT", "path": "/x?y", "headers": [], "body": "aGk=",
        })
        self.assertEqual(frames[1], {
            "op": "call", "api": "orders", "method": "GET", "path": "/o",
            "headers": [], "body": "",
        })


class HttpClientTests(_OriginCase):
    def test_the_standard_names_are_replaced(self):
        self.assertIs(http.client.HTTPConnection, plimsoll_http.HTTPConnection)
        self.assertIs(http.client.HTTPSConnection, plimsoll_http.HTTPSConnection)
        self.assertTrue(hasattr(urllib.request, "HTTPSHandler"))
        plimsoll_http.install()  # idempotent
        self.assertEqual(sum(type(f).__name__ == "RequestsHook" for f in sys.meta_path), 1)

    def test_request_and_a_genuine_response(self):
        Broker.origin_answer = _answer(
            201,
            [("Content-Type", "application/json"), ("X-Multi", "1"), ("X-Multi", "2"),
             ("Content-Length", "999"), ("Transfer-Encoding", "chunked"), ("Connection", "close"),
             ("Bad Name", "x"), ("X-Inject", "a\r\nSet-Cookie: evil=1"), ("X-Tab", "a\tb")],
            b'{"id": 7}',
        )
        conn = http.client.HTTPConnection("api.example.com", 8080, timeout=2.5)
        conn.connect()  # nothing to do
        conn.request("POST", "/v1/items?x=1", body='{"a": "é"}',
                     headers={"Content-Type": "application/json", "X-Num": 5})
        self.assertEqual(self.last(), (
            "http://api.example.com:8080", "POST", "/v1/items?x=1",
            {"Content-Type": "application/json", "X-Num": "5"}, '{"a": "é"}'.encode("latin-1"), 2500,
        ))
        resp = conn.getresponse()
        self.assertIsInstance(resp, http.client.HTTPResponse)
        self.assertEqual((resp.status, resp.reason, resp.version), (201, "Created", 11))
        self.assertEqual(resp.getheader("content-type"), "application/json")
        self.assertEqual(resp.msg.get_all("X-Multi"), ["1", "2"])
        self.assertEqual(resp.headers["Content-Length"], "9")  # the body's, not upstream's
        self.assertIsNone(resp.getheader("Transfer-Encoding"))
        self.assertIsNone(resp.getheader("Connection"))
        self.assertIsNone(resp.getheader("Bad Name"))
        self.assertIsNone(resp.getheader("Set-Cookie"))
        self.assertEqual(resp.getheader("X-Inject"), "aSet-Cookie: evil=1")
        self.assertEqual(resp.getheader("X-Tab"), "a\tb")
        self.assertEqual(resp.read(3), b'{"i')
        self.assertEqual(resp.read(), b'd": 7}')
        self.assertTrue(resp.isclosed())
        # The connection is reusable.
        Broker.origin_answer = _answer(204)
        conn.request("DELETE", "/v1/items/7")
        resp = conn.getresponse()
        self.assertEqual((resp.status, resp.read()), (204, b""))
        self.assertEqual(len(Broker.origin_calls), 2)
        conn.close()

    def test_https_and_default_ports(self):
        for make, origin in [
            (lambda: http.client.HTTPSConnection("API.example.com"), "https://api.example.com"),
            (lambda: http.client.HTTPSConnection("api.example.com:443"), "https://api.example.com"),
            (lambda: http.client.HTTPSConnection("api.example.com", 8443, context=None),
             "https://api.example.com:8443"),
            (lambda: http.client.HTTPConnection("[::1]:81"), "http://[::1]:81"),
            (lambda: http.client.HTTPConnection("api.example.com:80"), "http://api.example.com"),
        ]:
            conn = make()
            conn.request("GET", "")
            conn.getresponse().read()
            self.assertEqual(self.last()[:3], (origin, "GET", "/"))

    def test_put_request_piece_by_piece(self):
        conn = http.client.HTTPSConnection("a.example")
        conn.set_debuglevel(0)
        conn.putrequest("PATCH", "/p", skip_host=True, skip_accept_encoding=True)
        conn.putheader("X-A", "1", "2")
        conn.putheader(b"X-B", b"b")
        conn.endheaders(b"he")
        conn.send(b"ll")
        conn.send(io.BytesIO(b"o "))
        conn.send([b"wor", b"ld"])
        self.assertEqual(Broker.origin_calls, [])  # made by getresponse
        self.assertEqual(conn.getresponse().read(), b"ok")
        _, method, path, headers, body, timeout_ms = self.last()
        self.assertEqual((method, path, body, timeout_ms), ("PATCH", "/p", b"hello world", None))
        self.assertEqual(headers, {"X-A": "1, 2", "X-B": "b"})

    def test_state_errors_as_in_http_client(self):
        conn = http.client.HTTPConnection("a.example")
        with self.assertRaises(http.client.ResponseNotReady):
            conn.getresponse()
        with self.assertRaises(http.client.CannotSendHeader):
            conn.putheader("X-A", "1")
        with self.assertRaises(http.client.CannotSendRequest):
            conn.send(b"GET / HTTP/1.1\r\n\r\n")
        conn.request("GET", "/")
        with self.assertRaises(http.client.CannotSendRequest):
            conn.request("GET", "/")
        conn.getresponse()
        with self.assertRaises(ValueError):
            conn.putrequest("GET", "/")
            conn.putheader("X-A", "a\nb")
        conn.close()
        with self.assertRaises(http.client.InvalidURL):
            conn.request("GET", "/a b")
        conn.close()
        with self.assertRaises(http.client.InvalidURL):  # a proxy's absolute URL
            conn.request("GET", "http://other.example/")
        conn.close()
        with self.assertRaises(UnicodeEncodeError):
            conn.request("POST", "/", body="\u20ac")
        conn.close()
        self.assertEqual(len(Broker.origin_calls), 1)

    def test_tunnels_and_user_information_are_refused(self):
        with self.assertRaises(RuntimeError):
            http.client.HTTPSConnection("proxy.example", 3128).set_tunnel("a.example")
        with self.assertRaises(http.client.InvalidURL) as cm:
            http.client.HTTPConnection("user:secret@a.example")
        self.assertIn("user information", str(cm.exception))
        self.assertNotIn("secret", str(cm.exception))
        with self.assertRaises(http.client.InvalidURL):
            http.client.HTTPConnection("a.example:notaport")
        self.assertEqual(Broker.origin_calls, [])

    def test_errors_are_socket_errors_with_the_reason(self):
        for make, exc_type, text in _ERROR_CASES:
            Broker.origin_answer = Cpt.Err(make())
            conn = http.client.HTTPSConnection("a.example", timeout=1)
            with self.assertRaises(exc_type) as cm:
                conn.request("GET", "/x")
            self.assertIn(text, str(cm.exception))
            self.assertIn("https://a.example", str(cm.exception))
            self.assertIsInstance(cm.exception.__cause__, plimsoll.BrokerError)
            # The connection is idle again.
            Broker.origin_answer = _answer()
            conn.request("GET", "/x")
            self.assertEqual(conn.getresponse().status, 200)
        Broker.origin_answer = _denied()
        conn = http.client.HTTPConnection("a.example")
        conn.putrequest("GET", "/")
        conn.endheaders()
        with self.assertRaises(ConnectionRefusedError):
            conn.getresponse()

    def test_the_socket_default_timeout(self):
        saved = socket.getdefaulttimeout()
        socket.setdefaulttimeout(3)
        try:
            conn = http.client.HTTPConnection("a.example")
            conn.request("GET", "/")
        finally:
            socket.setdefaulttimeout(saved)
        self.assertEqual(self.last()[5], 3000)

    def test_request_body_bound(self):
        big = b"x" * (plimsoll_http.MAX_BODY_BYTES + 1)
        conn = http.client.HTTPConnection("a.example")
        with self.assertRaises(OSError) as cm:
            conn.request("POST", "/", body=iter([big[:10], big[10:]]))
        self.assertIsInstance(cm.exception.__cause__, plimsoll.RequestTooLarge)
        conn.putrequest("POST", "/")
        conn.endheaders(big[:-1])
        with self.assertRaises(OSError):
            conn.send(b"yy")
        self.assertEqual(Broker.origin_calls, [])


def _route(table):
    """A fake call_origin answering from {(origin, path): Response or Err}."""
    def answer(origin, req, timeout_ms):
        return table.get((origin, req.path), _denied())
    return answer


class UrllibTests(_OriginCase):
    def test_urlopen_get_and_post(self):
        Broker.origin_answer = _answer(200, [("Content-Type", "application/json")], b'{"a": 1}')
        with urllib.request.urlopen("https://api.example.com/v1/a?b=2", timeout=4) as r:
            self.assertEqual((r.status, r.reason, r.read()), (200, "OK", b'{"a": 1}'))
            self.assertEqual(r.headers["content-type"], "application/json")
            self.assertEqual(r.url, "https://api.example.com/v1/a?b=2")
        origin, method, path, headers, body, timeout_ms = self.last()
        self.assertEqual((origin, method, path, body, timeout_ms),
                         ("https://api.example.com", "GET", "/v1/a?b=2", b"", 4000))
        self.assertIn("Python-urllib", headers["User-Agent"])
        self.assertNotIn("Authorization", headers)
        req = urllib.request.Request("http://api.example.com:8000/v1/a", data=b"k=v",
                                     headers={"Accept": "text/plain"}, method="PUT")
        urllib.request.urlopen(req).read()
        origin, method, path, headers, body, timeout_ms = self.last()
        self.assertEqual((origin, method, path, body, timeout_ms),
                         ("http://api.example.com:8000", "PUT", "/v1/a", b"k=v", None))
        self.assertEqual(headers["Accept"], "text/plain")

    def test_http_errors(self):
        Broker.origin_answer = _answer(404, [("Content-Type", "text/plain")], b"no such item")
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen("https://api.example.com/v1/missing")
        self.assertEqual(cm.exception.code, 404)
        self.assertEqual(cm.exception.read(), b"no such item")
        Broker.origin_answer = _answer(503)
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen("https://api.example.com/")
        self.assertEqual(cm.exception.code, 503)

    def test_redirects_are_followed_one_call_each(self):
        Broker.origin_answer = _route({
            ("https://a.example", "/old"): _answer(302, [("Location", "/new")]),
            ("https://a.example", "/new"): _answer(301, [("Location", "https://b.example/final")]),
            ("https://b.example", "/final"): _answer(200, [], b"here"),
        })
        with urllib.request.urlopen("https://a.example/old") as r:
            self.assertEqual((r.read(), r.url), (b"here", "https://b.example/final"))
        self.assertEqual([(o, q.path) for o, q, _ in Broker.origin_calls], [
            ("https://a.example", "/old"), ("https://a.example", "/new"),
            ("https://b.example", "/final")])

    def test_a_redirect_to_an_ungranted_origin_fails(self):
        Broker.origin_answer = _route({
            ("https://a.example", "/go"): _answer(302, [("Location", "https://evil.example/x")]),
        })
        with self.assertRaises(urllib.error.URLError) as cm:
            urllib.request.urlopen("https://a.example/go")
        self.assertIsInstance(cm.exception.reason, ConnectionRefusedError)
        self.assertIn(NO_GRANT, str(cm.exception))
        self.assertIn("https://evil.example", str(cm.exception))
        self.assertEqual(len(Broker.origin_calls), 2)

    def test_errors_are_url_errors(self):
        for make, exc_type, text in _ERROR_CASES:
            Broker.origin_answer = Cpt.Err(make())
            with self.assertRaises(urllib.error.URLError) as cm:
                urllib.request.urlopen("http://a.example/", timeout=1)
            self.assertIsInstance(cm.exception.reason, exc_type)
            self.assertIn(text, str(cm.exception))
            self.assertIsInstance(cm.exception.reason.__cause__, plimsoll.BrokerError)

    def test_user_information_is_never_sent(self):
        with self.assertRaises(http.client.InvalidURL) as cm:
            urllib.request.urlopen("https://user:secret@a.example/")
        self.assertNotIn("secret", str(cm.exception))
        self.assertEqual(Broker.origin_calls, [])

    def test_an_opener_with_an_https_context(self):
        opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=None))
        self.assertEqual(opener.open("https://a.example/").read(), b"ok")
        # The handler installed where CPython has no ssl (and so no
        # HTTPSHandler of its own), as in the small guest.
        opener = urllib.request.build_opener(plimsoll_http.HTTPSHandler(context=None))
        self.assertEqual(opener.open("https://b.example:444/p").read(), b"ok")
        self.assertEqual(self.last()[:3], ("https://b.example:444", "GET", "/p"))


def _vendored():
    """The vendored packages' directory, made by vendor.sh if missing."""
    if not os.path.isdir(os.path.join(VENDOR, "requests")):
        subprocess.run([os.path.join(HERE, "vendor.sh"), VENDOR], check=True)
    return VENDOR


class VendorTests(unittest.TestCase):
    def test_pack_and_finder(self):
        files = [
            ("pkg/__init__.py", "from . import mod\nVALUE = mod.X + 1\n"),
            ("pkg/mod.py", "X = 41\n"),
            ("pkg/sub/__init__.py", b"# -*- coding: latin-1 -*-\nS = '\xe9'\n"),
            ("pkg/data.txt", "skipped"),
        ]
        index, blob = plimsoll_vendor.pack(files)
        self.assertEqual(plimsoll_vendor.pack(reversed(files)), (index, blob))  # deterministic
        self.assertEqual(sorted(index), ["pkg", "pkg.mod", "pkg.sub"])
        finder = plimsoll_vendor.VendorFinder(index, blob)
        sys.meta_path.append(finder)
        try:
            pkg = importlib.import_module("pkg")
            sub = importlib.import_module("pkg.sub")
        finally:
            sys.meta_path.remove(finder)
            for name in ("pkg", "pkg.mod", "pkg.sub"):
                sys.modules.pop(name, None)
        self.assertEqual((pkg.VALUE, sub.S), (42, "é"))
        self.assertEqual(pkg.__file__, "/plimsoll/vendor/pkg/__init__.py")
        self.assertEqual(pkg.__path__, ["/plimsoll/vendor/pkg"])
        self.assertEqual(pkg.mod.__file__, "/plimsoll/vendor/pkg/mod.py")
        self.assertEqual(pkg.mod.__spec__.parent, "pkg")
        self.assertIs(pkg.__loader__, finder)
        self.assertFalse(hasattr(pkg.mod, "__path__"))

    def test_pack_refuses_what_cannot_be_a_package(self):
        for files in [[("pkg/mod.py", "")], [("a/b-c.py", "")], [("x.py", "def (")]]:
            with self.assertRaises((ValueError, SyntaxError), msg=files):
                plimsoll_vendor.pack(files)

    def test_a_real_package_on_the_path_wins(self):
        index, blob = plimsoll_vendor.pack([("json/__init__.py", "VENDORED = True\n")])
        finder = plimsoll_vendor.VendorFinder(index, blob)
        self.assertIsNotNone(finder.find_spec("json"))
        sys.meta_path.append(finder)
        saved = sys.modules.pop("json")
        try:
            self.assertFalse(hasattr(importlib.import_module("json"), "VENDORED"))
        finally:
            sys.meta_path.remove(finder)
            sys.modules["json"] = saved


class RequestsTests(_OriginCase):
    """The vendored requests, compiled by this Python into a blob and
    imported through plimsoll_vendor's finder (ahead of any installed copy)."""

    @classmethod
    def setUpClass(cls):
        names = ("requests", "urllib3", "idna", "charset_normalizer", "certifi")
        for name in list(sys.modules):
            if name.split(".")[0] in names:
                del sys.modules[name]
        index, blob = plimsoll_vendor.pack(plimsoll_vendor.read_tree(_vendored()))
        plimsoll_vendor.install(index, blob, before_path=True)
        global requests
        import requests

    def test_requests_is_the_vendored_one_and_patched(self):
        for mod in (requests, sys.modules["urllib3"], sys.modules["idna"], sys.modules["certifi"]):
            self.assertTrue(mod.__file__.startswith("/plimsoll/vendor/"), mod.__file__)
        self.assertEqual(requests.__version__, "2.34.2")
        self.assertTrue(requests.adapters.HTTPAdapter._plimsoll_gate)
        self.assertIs(requests.sessions.HTTPAdapter, requests.adapters.HTTPAdapter)
        self.assertTrue(requests.certs.where().startswith("/plimsoll/vendor/certifi/"))
        s = requests.Session()
        self.assertIsInstance(s.get_adapter("https://a.example/"), requests.adapters.HTTPAdapter)

    def test_get_with_params_headers_and_timeout(self):
        Broker.origin_answer = _answer(
            200, [("Content-Type", "application/json; charset=utf-8"), ("X-A", "1"), ("x-a", "2")],
            b'{"name": "caf\xc3\xa9"}')
        r = requests.get("https://API.example.com/v1/items", params={"q": "a b", "n": 2},
                         headers={"Accept": "application/json"}, timeout=2)
        origin, method, path, headers, body, timeout_ms = self.last()
        self.assertEqual((origin, method, path, body, timeout_ms),
                         ("https://api.example.com", "GET", "/v1/items?q=a+b&n=2", b"", 2000))
        self.assertEqual(headers["Accept"], "application/json")
        self.assertIn("python-requests", headers["User-Agent"])
        self.assertNotIn("Authorization", headers)
        self.assertEqual((r.status_code, r.reason, r.ok), (200, "OK", True))
        self.assertEqual(r.json(), {"name": "café"})
        self.assertEqual(r.text, '{"name": "café"}')
        self.assertEqual(r.encoding, "utf-8")
        self.assertIsInstance(r.headers, requests.structures.CaseInsensitiveDict)
        self.assertEqual(r.headers["x-a"], "1, 2")
        self.assertEqual(r.headers["content-length"], str(len(r.content)))
        self.assertEqual(r.url, "https://api.example.com/v1/items?q=a+b&n=2")
        self.assertEqual(r.request.method, "GET")
        self.assertEqual(r.history, [])

    def test_bodies(self):
        requests.post("https://a.example/j", json={"k": [1]})
        _, method, _, headers, body, _ = self.last()
        self.assertEqual((method, json.loads(body)), ("POST", {"k": [1]}))
        self.assertEqual(headers["Content-Type"], "application/json")
        requests.put("https://a.example/f", data={"a": "é"})
        self.assertEqual(self.last()[4], b"a=%C3%A9")
        requests.patch("https://a.example/s", data="é")
        self.assertEqual(self.last()[4], "é".encode())
        requests.post("https://a.example/g", data=(c for c in [b"ab", b"cd"]))
        self.assertEqual(self.last()[4], b"abcd")
        requests.post("https://a.example/u", files={"f": ("a.txt", b"data")})
        self.assertIn(b"data", self.last()[4])
        requests.delete("https://a.example/d")
        self.assertEqual(self.last()[1], "DELETE")

    def test_http_errors_are_responses(self):
        Broker.origin_answer = _answer(404, [("Content-Type", "text/plain")], b"missing")
        r = requests.get("https://a.example/x")
        self.assertEqual((r.status_code, r.reason, r.text, r.ok), (404, "Not Found", "missing", False))
        with self.assertRaises(requests.HTTPError):
            r.raise_for_status()

    def test_redirects_are_followed_by_requests(self):
        Broker.origin_answer = _route({
            ("https://a.example", "/old"): _answer(301, [("Location", "https://b.example/new")]),
            ("https://b.example", "/new"): _answer(200, [], b"moved"),
        })
        r = requests.get("https://a.example/old")
        self.assertEqual((r.status_code, r.text, r.url), (200, "moved", "https://b.example/new"))
        self.assertEqual([h.status_code for h in r.history], [301])
        self.assertEqual(len(Broker.origin_calls), 2)
        r = requests.get("https://a.example/old", allow_redirects=False)
        self.assertEqual((r.status_code, r.headers["location"]), (301, "https://b.example/new"))

    def test_a_redirect_to_an_ungranted_origin_fails(self):
        Broker.origin_answer = _route({
            ("https://a.example", "/go"): _answer(302, [("Location", "https://evil.example/")]),
        })
        with self.assertRaises(requests.exceptions.ConnectionError) as cm:
            requests.get("https://a.example/go")
        self.assertIn(NO_GRANT, str(cm.exception))
        self.assertIn("https://evil.example", str(cm.exception))

    def test_errors(self):
        for make, exc_type, text in _ERROR_CASES:
            Broker.origin_answer = Cpt.Err(make())
            want = (requests.exceptions.ReadTimeout if exc_type is TimeoutError
                    else requests.exceptions.ConnectionError)
            with self.assertRaises(want) as cm:
                requests.get("https://a.example/", timeout=1)
            self.assertIn(text, str(cm.exception))
            self.assertIsInstance(cm.exception.__cause__, plimsoll.BrokerError)
            self.assertIsNotNone(cm.exception.request)
        self.assertTrue(issubclass(requests.exceptions.ReadTimeout, requests.exceptions.Timeout))

    def test_timeouts(self):
        for timeout, ms in [(None, None), (3, 3000), ((1, 2.5), 3500), ((1, None), None),
                            (requests.adapters.TimeoutSauce(total=4), 4000),
                            (requests.adapters.TimeoutSauce(connect=1, read=1), 2000)]:
            requests.get("https://a.example/", timeout=timeout)
            self.assertEqual(self.last()[5], ms, timeout)

    def test_user_information_is_never_sent(self):
        with self.assertRaises(requests.exceptions.InvalidURL) as cm:
            requests.get("https://user:secret@a.example/")
        self.assertIn("user information", str(cm.exception))
        self.assertNotIn("secret", str(cm.exception))
        self.assertEqual(Broker.origin_calls, [])

    def test_adapters_mounted_by_hand_and_streaming(self):
        from requests.adapters import HTTPAdapter
        s = requests.Session()
        s.mount("https://", HTTPAdapter(max_retries=3))
        Broker.origin_answer = _answer(200, [], b"x" * 10000)
        r = s.get("https://a.example/big", stream=True)
        self.assertEqual(sum(len(c) for c in r.iter_content(4096)), 10000)
        r = s.get("https://a.example/big", stream=True)
        self.assertEqual(r.raw.read(5), b"xxxxx")
        import pickle
        self.assertIs(type(pickle.loads(pickle.dumps(s)).get_adapter("https://a")), HTTPAdapter)

    def test_content_encoding_is_decoded_as_requests_does(self):
        import gzip
        Broker.origin_answer = _answer(200, [("Content-Encoding", "gzip")], gzip.compress(b"plain"))
        self.assertEqual(requests.get("https://a.example/").content, b"plain")

    def test_unknown_encodings_are_guessed(self):
        Broker.origin_answer = _answer(200, [("Content-Type", "application/octet-stream")],
                                       "naïve café".encode("utf-8"))
        r = requests.get("https://a.example/")
        self.assertIsNone(r.encoding)
        self.assertEqual(r.text, "naïve café")


class VendoredNeedsTests(unittest.TestCase):
    """The small guest has only the standard-library modules `app._PRELOAD`
    loads at build time: the vendored packages, imported and used, must
    need no others (but those whose absence they handle)."""

    OPTIONAL = ("encodings.", "_codecs_", "_multibytecodec", "netrc")

    def test_no_module_beyond_the_preloaded_ones(self):
        script = r"""
import importlib, json, sys
sys.path.insert(0, %(here)r)
sys.dont_write_bytecode = True
import test_guest
for name in test_guest.app._PRELOAD:
    try:
        importlib.import_module(name)
    except BaseException:
        pass
before = set(sys.modules)
vendor = test_guest.plimsoll_vendor
finder = vendor.install(*vendor.pack(vendor.read_tree(%(vendor)r)), before_path=True)
B = test_guest.Broker
B.origin_answer = B.Response(200, [("content-type", "application/octet-stream")],
                             "déjà vu, ça va".encode("latin-1") * 20)
import requests
r = requests.post("https://a.example/x", json={"a": 1}, timeout=1)
r.text, r.apparent_encoding
requests.Session().get("https://a.example/y", stream=True).iter_content(10)
import urllib.request
urllib.request.urlopen("https://a.example/z").read()
tops = {n.split(".")[0] for n in finder.names()}
print(json.dumps(sorted(n for n in set(sys.modules) - before if n.split(".")[0] not in tops)))
""" % {"here": HERE, "vendor": _vendored()}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        out = done.stdout
        extra = [n for n in json.loads(out.splitlines()[-1])
                 if not n.startswith(self.OPTIONAL) and n != "plimsoll_vendor"]
        self.assertEqual(extra, [], "add them to app._PRELOAD")


if __name__ == "__main__":
    unittest.main(module=THIS)
