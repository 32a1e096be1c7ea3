"""Native (CPython, no wasm) tests of app.py and plimsoll.py.

The componentize-py bindings are replaced by small fakes, so this runs with
any Python 3.10+ and no build:

    python3 guests/python/test_guest.py

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


if __name__ == "__main__":
    unittest.main(module=THIS)
