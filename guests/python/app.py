"""plimsoll's Python interpreter guest: implements the `interpreter` world.

`eval(code)` runs a cell of Python in one persistent `__main__` namespace,
with notebook-cell semantics: when the cell ends with an expression, its
`repr` is the result. See README.md.

componentize-py runs this module's top level at *build* time and snapshots
the interpreter, so everything imported here is already loaded when a run
starts. Anything that must differ per run (random seeds, the working
directory) is set up lazily by `_per_run_setup`, on the first `eval`.
"""

import ast
import builtins
import importlib
import linecache
import os
import random
import sys
import traceback
import types

try:
    from componentize_py_types import Err

    import wit_world
except ImportError:  # imported by the scientific guest's driver, which has its own export
    Err = None
    wit_world = None

# componentize-py ships no filesystem with the component: the standard
# library exists only at build time, so a module that is not imported here
# cannot be imported by a cell at all. Every module loaded here makes the
# snapshot (and so every fresh instance) bigger: measured on this machine,
# the whole standard library (33 MB component, 28.8 MB heap) costs 7.6 ms
# per fresh run, this list (about 20 MB, 15 MB heap) about 4 ms. So the list
# is what agents' code and benchmark problems actually import; extend it
# here when one is missing. The last lines are what the vendored requests,
# urllib3 and charset_normalizer import (they are imported on demand, see
# `_pack_vendored`; test_guest.py checks that they need nothing else).
_PRELOAD = """
    abc argparse array ast asyncio base64 binascii bisect builtins bz2 calendar cmath codecs
    collections collections.abc colorsys contextlib contextvars copy copyreg csv dataclasses
    datetime decimal difflib dis enum errno fnmatch fractions functools gc getopt glob
    graphlib gzip hashlib heapq hmac html html.entities html.parser inspect io ipaddress
    itertools json keyword linecache locale logging lzma math mimetypes numbers operator os
    os.path pathlib pickle pkgutil platform pprint queue quopri random re reprlib sched secrets
    runpy select shlex shutil signal socket sqlite3 stat statistics string stringprep struct
    subprocess sys tempfile textwrap threading time timeit token tokenize tomllib traceback
    types typing unicodedata unittest urllib urllib.parse urllib.request uuid warnings
    weakref xml xml.dom.minidom xml.etree.ElementTree zipfile zlib zoneinfo
    encodings.idna encodings.utf_16 encodings.utf_32 encodings.latin_1 encodings.ascii
    encodings.cp1252 encodings.unicode_escape encodings.raw_unicode_escape
    plimsoll plimsoll_program
    http.cookiejar http.cookies importlib.metadata
    encodings.utf_16_be encodings.utf_16_le encodings.utf_32_be encodings.utf_32_le
""".split()


def _preload():
    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except BaseException:  # missing in this build (bz2, lzma, ...)
            pass


def _pack_vendored():
    """The vendored packages (requests and its dependencies), compiled into
    the one compressed blob plimsoll_vendor's finder serves them from on
    import; `(index, blob)`. The build copies their sources to `vendor/`
    beside this file (not on the module path).

    This runs at build time before `_preload`: compiling them takes several
    MB at its peak (idna's tables), and wasm memory never shrinks, so the
    snapshot would keep that much freed memory; compiled first, the
    preloaded modules fill it instead.
    """
    import plimsoll_vendor

    vendor = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor")
    if not os.path.isdir(os.path.join(vendor, "requests")):
        raise ImportError("the build put no vendored packages in %s (see guests/python/vendor.sh)" % vendor)
    return plimsoll_vendor.pack(plimsoll_vendor.read_tree(vendor))


if sys.platform == "wasi" and wit_world is not None:  # the small guest's build
    _vendored = _pack_vendored()

if sys.platform == "wasi":  # at build time; a native test run skips it
    _preload()

if sys.platform == "wasi" and wit_world is not None:
    # After the preload, so that no preloaded module finds a vendored one.
    import plimsoll_vendor

    plimsoll_vendor.install(*_vendored)
    del _vendored

# urllib.request, http.client and (vendored) requests reach the run's
# granted APIs through the broker, by URL: see plimsoll_http.py.
import plimsoll_http  # noqa: E402

plimsoll_http.install()


def _patch_asyncio():
    """Make `asyncio.run` work without sockets.

    The stock selector event loop wakes itself through a socketpair, and the
    sandbox denies sockets, so `asyncio.run` fails in `new_event_loop`. With a
    single thread nothing needs waking: drop the self-pipe. Timers and
    `asyncio.sleep` still work through the poll selector.
    """
    try:
        import asyncio
        from asyncio import unix_events
    except Exception:
        return

    class SandboxEventLoop(unix_events._UnixSelectorEventLoop):
        """A selector event loop without the self-pipe (no sockets here)."""

        def _make_self_pipe(self):
            self._ssock = self._csock = None

        def _close_self_pipe(self):
            pass

        def _write_to_self(self):
            pass

    unix_events._UnixDefaultEventLoopPolicy._loop_factory = SandboxEventLoop
    for mod in (asyncio, unix_events):
        mod.SelectorEventLoop = SandboxEventLoop
        mod.EventLoop = SandboxEventLoop


if sys.platform == "wasi":
    _patch_asyncio()

# The persistent namespace: a real module registered as `__main__`, so that
# pickle, dataclasses, enum and typing can find classes defined in cells.
_main = types.ModuleType("__main__")
_main.__dict__["__builtins__"] = builtins
sys.modules["__main__"] = _main
_NS = _main.__dict__

_THIS_FILE = (lambda: None).__code__.co_filename
_cells = 0
_per_run_done = False
_seeded = False

# Everything above is the snapshot. Move it out of the cyclic collector's
# reach: otherwise the first collections of every run walk (and write the
# GC headers of) the whole preloaded heap, and each page they touch is a
# copy-on-write fault in a fresh instance. Objects a run creates are
# collected as usual.
if sys.platform == "wasi":
    import gc

    gc.collect()
    gc.freeze()


def _reseed():
    """Reseed `random` from this instance's own entropy, once."""
    global _seeded
    if _seeded:
        return
    _seeded = True
    # The snapshot holds the build machine's random state: reseed from the
    # instance's own entropy (wasi:random) so every instance differs.
    try:
        random.seed()
    except Exception:
        pass


def _warm_up():
    """The empty cell: touch the cell machinery, change nothing.

    The host evaluates "" in pre-instantiated instances before any run
    claims them (host/src/warm.rs): it faults in the copy-on-write pages of
    this call path ahead of time, off the run's critical path. So it runs
    a throwaway cell through the same compile/eval/repr/flush path in a
    throwaway namespace, and reseeds `random` (from this instance's own
    entropy, so it is as fresh as doing it later). It counts no cell,
    registers no source and leaves the working directory for the first
    real cell, which also runs `_per_run_setup`.
    """
    _reseed()
    try:
        _throwaway_cell("0")
    except BaseException:
        pass
    _flush_all()


def _throwaway_cell(code):
    """Compile and run `code` as a cell in a namespace of its own; its repr."""
    scratch = {"__builtins__": builtins}
    body, tail = _compile_cell(code, "<warm-up>")
    for stmts in body:
        exec(stmts, scratch)
    return _clean(repr(builtins.eval(tail, scratch)))


def _per_run_setup():
    """Things that must not be frozen into the build-time snapshot."""
    global _per_run_done
    if _per_run_done:
        return
    _per_run_done = True
    _reseed()
    # Relative paths resolve against the workspace, the one preopened dir.
    try:
        os.chdir("/work")
    except Exception:
        pass


def _clean(text):
    """Make `text` encodable as UTF-8 (lone surrogates become `\\udcxx`)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _format_exception(exc, tb):
    try:
        return "".join(traceback.format_exception(type(exc), exc, tb))
    except BaseException:
        try:
            return "%s: <the exception could not be formatted>\n" % type(exc).__name__
        except BaseException:
            return "<an exception that could not be formatted>\n"


_NO_NETWORK_HINT = (
    "\nNote: this sandbox has no network access (no sockets, no DNS). HTTP "
    "calls made with urllib.request, http.client or requests reach the APIs "
    "this run has grants for (the host makes them); so does the broker, e.g.\n"
    "    import plimsoll\n"
    "    plimsoll.get(\"<grant name>\", \"/path\")\n"
)


def _is_network_error(exc):
    """True when `exc` (or an exception it chains from) came from the socket layer."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            tb = exc.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_filename.endswith("/socket.py"):
                    return True
                tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    return False


def _user_tb(tb):
    """Drop this file's own frames from the front of a traceback."""
    while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
        tb = tb.tb_next
    return tb


def _last_line_start(code):
    """Offset of the cell's last line that could begin a top-level statement.

    That is the last line that starts in column 0 with something other than
    a comment or a closing bracket; -1 when there is none, or when the cell
    has a carriage return (the scan counts lines by "\\n" alone). This is
    only a candidate: `_compile_cell` proves it by compiling what comes
    before it on its own.
    """
    if "\r" in code:
        return -1
    end = len(code)
    while True:
        start = code.rfind("\n", 0, end) + 1
        if start < end and code[start] not in " \t\f#)]}":
            return start
        if start == 0:
            return -1
        end = start - 1


def _compile_cell(code, filename):
    """Compile a cell into (statements to run in order, trailing expression or None).

    The cell is split at its last top-level line into a head, compiled from
    source, and a tail, usually one line. That split is sound because the
    head is compiled on its own: a head that compiles cannot end inside a
    string, a bracket, a line continuation or a decorator, so the whole
    cell is exactly the head's statements followed by the tail's (a tail
    that would continue the head's last statement, such as `else:`, does
    not compile on its own and falls through). Only the tail is split by
    its AST, when it is not one expression. Parsing the whole cell into an
    AST and compiling that costs half as much again as compiling the
    source in wasm CPython, which is most of the run for a short script.

    Anything else (a cell that does not compile, a `__future__` import in
    the head, whose flags the tail would not get) takes the general path:
    the whole cell through its AST.
    """
    start = _last_line_start(code)
    if start >= 0:
        head = code[:start]
        # Blank lines keep the tail's line numbers those of the cell.
        tail = "\n" * head.count("\n") + code[start:]
        if "__future__" not in head:
            try:
                # An empty head runs nothing: not even an empty module.
                body = (compile(head, filename, "exec", dont_inherit=True),) if head else ()
            except SyntaxError:
                body = None
            if body is not None:
                try:
                    return body, compile(tail, filename, "eval", dont_inherit=True)
                except SyntaxError:
                    pass
                try:
                    tree = ast.parse(tail, filename, "exec")
                except SyntaxError:
                    tree = None  # reported from the whole cell below, as it would be
                # A tail without statements would mean the scan went wrong;
                # the general path is always right.
                if tree is not None and tree.body:
                    rest, last = _split_tree(tree, filename)
                    return body + (rest,), last
    body, last = _split_tree(ast.parse(code, filename, "exec"), filename)
    return (body,), last


def _split_tree(tree, filename):
    """Compile a module's AST into (statements, trailing expression or None)."""
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    body = compile(tree, filename, "exec", dont_inherit=True)
    tail = compile(last, filename, "eval", dont_inherit=True) if last else None
    return body, tail


def _run_cell(code):
    """Run one cell; return the repr of its trailing expression, or ""."""
    global _cells
    _cells += 1
    filename = "<cell-%d>" % _cells
    # Register the source so tracebacks can show the offending lines.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

    try:
        body, tail = _compile_cell(code, filename)
    except BaseException as exc:
        # A SyntaxError (or similar) from parsing: no user frames to show.
        raise _CellError(_format_exception(exc, None), exc) from None

    try:
        for stmts in body:
            exec(stmts, _NS)
        if tail is None:
            return ""
        value = builtins.eval(tail, _NS)
        return "" if value is None else repr(value)
    except BaseException as exc:
        text = _format_exception(exc, _user_tb(exc.__traceback__))
        try:
            if _is_network_error(exc):
                text += _NO_NETWORK_HINT
        except BaseException:
            pass
        raise _CellError(text, exc) from None


class _CellError(Exception):
    """Carries a formatted traceback (and the exception) out of `_run_cell`."""

    def __init__(self, text, exc=None):
        super().__init__(text)
        self.text = text
        self.exc = exc


def _write_stderr(text):
    for stream in (sys.stderr, sys.__stderr__):
        try:
            stream.write(text)
            return
        except BaseException:
            continue


def _flush_all():
    seen = []
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is None or any(stream is s for s in seen):
            continue
        seen.append(stream)
        try:
            stream.flush()
        except BaseException:
            pass


def evaluate(code, after=None):
    """Evaluate `code` in the persistent namespace (see module docs).

    Returns (result, error, exception): the repr of the trailing expression
    ("" when there is none or it is None) and None, or "" and the traceback
    (already written to stderr) with the exception that caused it. `after`,
    if given, runs once the cell did (the scientific guest saves figures
    there); an exception it raises is the cell's. No Python exception
    escapes.
    """
    if not code:
        _warm_up()
        return "", None, None
    error = None
    cause = None
    result = ""
    try:
        _per_run_setup()
        result = _run_cell(code)
        if after is not None:
            after()
    except _CellError as exc:
        error, cause = exc.text, exc.exc
    except BaseException as exc:  # `after`, a bug here, or an error while formatting
        error, cause = _format_exception(exc, exc.__traceback__), exc
    if error is not None:
        _write_stderr(error)
    _flush_all()
    if error is not None:
        return "", _clean(error), cause
    return _clean(result), None, None


if wit_world is not None:

    class WitWorld(wit_world.WitWorld):
        """The `interpreter` world's exports."""

        def eval(self, code: str) -> str:
            """`evaluate(code)`: the result, or `Err(traceback)`."""
            result, error, _ = evaluate(code)
            if error is not None:
                raise Err(error)
            return result
