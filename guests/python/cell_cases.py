"""Cells that `app._compile_cell` must compile exactly as CPython would.

`_compile_cell` splits a cell at its last top-level line to avoid parsing
the whole cell into an AST (guests/python/app.py says why that is sound).
This file holds the check that it changes no meaning: every cell below, and
thousands of random concatenations of them, must behave the same through
`_compile_cell` as through the reference (the whole cell through its AST):
the same value, output, names, error and error lines.

It runs in two places: natively from `test_guest.py`, and inside the real
component (CPython 3.14 in wasm) from `tests/python.rs`, which runs this
file as a script; then it prints `cell split: N cells, 0 mismatches`, or
the first mismatches, and raises.
"""

import io
import random
from contextlib import redirect_stdout

# Cells whose split at the last top-level line is easy to get wrong: strings,
# brackets and continuations across lines, clauses that continue a compound
# statement, semicolons, comments, decorators, future imports, soft keywords,
# errors at known lines. Each is also a fragment for the random cells below.
TRICKY_CELLS = [
    "x = 1\nx + 1",
    "x = 1\nx + 1\n# a comment in column 0\n\n   \n",
    "import os; os.sep",
    "a = 1\nb = 2; a + b",
    "a = 1\nb = 2;",
    "def f():\n    return 3\nf()",
    "if True:\n    y = 1\nelse:\n    y = 2\ny",
    "if False:\n    y = 1\nelse:\n    y = 2",
    "if False:\n    y = 1\nelif True:\n    y = 3",
    "s = '''\nabc\n1+1\n'''\nlen(s)",
    "s = '''\nabc\n1+1\n'''",
    "s = '''\n(x)\n'''",
    't = """\n#\n)\nq\n"""',
    "print(\n    1,\n)",
    "x = [\n1,\n2\n]\nx",
    "x = [\n1,\n2]",
    "x = (\n  1\n)\nx",
    "class S:\n    @staticmethod\n    def g():\n        return 7\nS.g()",
    "@staticmethod\ndef g(): pass\ntype(g).__name__",
    "try:\n    1/0\nexcept ZeroDivisionError:\n    r = 'caught'\nr",
    "try:\n    pass\nfinally:\n    z = 5",
    "x = 1 + \\\n2\nx",
    "x = 1 + \\\n2",
    "x = 1 # \\\ny = 2\nx + y",
    "from __future__ import annotations\ndef h(a: int): pass\nh.__annotations__",
    "from __future__ import annotations\nimport dataclasses\n"
    "@dataclasses.dataclass\nclass P:\n    x: int\nP(1)",
    "from __future__ import annotations\nv: undefined_name = 1",
    "*a, b = [1, 2, 3]\n*a, b",
    "for i in range(3):\n    pass\ni",
    "x = 5\nx if x > 3 else 0",
    "1/0",
    "a = 1\n\n\nb = a / 0",
    "a = 1\n\n\n(a /\n 0)",
    "a = 1\n\n\nprint(a,\n      1 / 0)",
    "x = 1\n  y = 2",
    "match = 3\nmatch",
    "match [1]:\n    case [v]:\n        w = v\nw",
    "class C:\n    pass\nC.__name__",
    "'doc'\nx = 1\n__doc__",
    "'doc'",
    "x = 1\r\nx",
    "x = 2\rx",
    "# c\n#d",
    "x = '#'\nx",
    "def f():\n    return 1\n# col 0\n    # indented\nf()",
    "v = 3\nf'''{v\n}'''",
    "v = 3\nf'''{v}\n'''",
    "yield 1",
    "await x",
    "global q\nq = 1\nq",
    "dm = 1\ndel dm\n'deleted'",
    "x = 1;",
    "1 +\n1",
    "a = 1\n1 +",
    "if x ==\n",
    "lambda: 0\n0",
    "else:\n    pass",
    "x = 1\nelse:\n    pass",
    "while False:\n    pass\nelse:\n    e = 'else'\ne",
    "with open('/dev/null') as fh:\n    pass\nfh.closed",
    "x = 3\n[i for i in\n range(x)]",
    "x = 3\n{k: k\n for k in range(x)}",
    "n = 0\nwhile n < 3:\n    n += 1\n\n\nn",
    "\n\n\n2 + 2\n\n",
    "\x0cx = 4\nx",
    "x = 4\n\x0cx",
    "raise ValueError('at line 1')",
    "x = 1\nraise ValueError('at line 2')",
]


def reference_compile(code, filename):
    """What `_compile_cell` must agree with: the whole cell through its AST."""
    import ast
    tree = ast.parse(code, filename, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", dont_inherit=True)
    return (body,), (compile(last, filename, "eval", dont_inherit=True) if last else None)


def outcome(compile_cell, code):
    """Compile and run `code` in a fresh namespace; everything observable."""
    import warnings
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    out = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            stmts, tail = compile_cell(code, "<cell>")
        except SyntaxError as e:
            return ("syntax", type(e).__name__, e.msg, e.lineno, e.offset)
    try:
        with redirect_stdout(out):
            for s in stmts:
                exec(s, ns)
            value = None if tail is None else repr(eval(tail, ns))
    except BaseException as e:
        tb, lines = e.__traceback__, []
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == "<cell>":
                lines.append(tb.tb_lineno)
            tb = tb.tb_next
        return ("raised", type(e).__name__, str(e), lines, out.getvalue())
    if value is not None and " at 0x" in value:
        value = value.split(" at 0x")[0]
    names = sorted(k for k in ns if k != "__builtins__")
    return ("ok", value, out.getvalue(), names, ns.get("__doc__"))



def random_cells(n, seed=20261130):
    """`n` random concatenations of 2 to 4 tricky cells, reproducibly."""
    rng = random.Random(seed)
    for _ in range(n):
        parts = rng.sample(TRICKY_CELLS, rng.randint(2, 4))
        sep = rng.choice(["\n", "\n\n", "\n# c\n", "\n    \n", ""])
        yield sep.join(parts)


def mismatches(compile_cell, cells):
    """The cells on which `compile_cell` and the reference disagree."""
    return [(code, outcome(compile_cell, code), outcome(reference_compile, code))
            for code in cells
            if outcome(compile_cell, code) != outcome(reference_compile, code)]


if __name__ == "__main__":
    import sys
    cells = TRICKY_CELLS + list(random_cells(int(sys.argv[1]) if len(sys.argv) > 1 else 3000))
    bad = mismatches(sys.modules["app"]._compile_cell, cells)
    print("cell split: %d cells, %d mismatches" % (len(cells), len(bad)))
    for code, got, want in bad[:5]:
        print("cell %r\n  split:     %r\n  reference: %r" % (code, got, want))
    if bad:
        raise AssertionError("the cell split changed the meaning of %d cells" % len(bad))
