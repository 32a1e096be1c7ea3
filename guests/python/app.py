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

from componentize_py_types import Err

import wit_world

# componentize-py ships no filesystem with the component: the standard
# library exists only at build time, so a module that is not imported here
# cannot be imported by a cell at all. So we load (nearly) the whole standard
# library into the snapshot, and `import json` in a cell is a dictionary
# lookup. Left out: what cannot work in the sandbox or only serves developers
# at a terminal (GUI, debuggers, profilers, package installers, servers and
# mail/FTP clients), plus pure-Python twins of C modules that are never used.
_SKIP_TOP = frozenset(
    """
    __hello__ __phello__ _pyrepl _ios_support _android_support _apple_support
    _aix_support _osx_support _pydatetime _pydecimal _pyio _py_abc
    antigravity this idlelib tkinter turtle turtledemo test lib2to3
    ensurepip venv pydoc pydoc_data webbrowser pdb bdb cProfile profile pstats
    trace tracemalloc compileall py_compile modulefinder pyclbr tabnanny zipapp
    rlcompleter readline getpass cmd pty tty curses multiprocessing
    smtplib imaplib poplib ftplib xmlrpc socketserver wsgiref mailbox
    """.split()
)
# Packages whose submodules are loaded lazily by the package itself (codecs,
# email, ...) or commonly imported by name (xml.etree.ElementTree, ...).
_WALK = (
    "asyncio collections compression concurrent email encodings html http "
    "importlib.resources json logging pathlib re sqlite3 string tomllib "
    "unittest urllib xml zipfile zoneinfo dbm"
).split()
# Submodules never worth loading (or that run code when imported).
_SKIP_SUB = ("__main__", "http.server", "idlelib", ".test", "asyncio.windows",
             "encodings.mbcs", "encodings.oem", "unittest.__main__")


def _preload():
    import pkgutil

    def load(name):
        try:
            return importlib.import_module(name)
        except BaseException:  # missing in this build (ssl, ctypes, ...)
            return None

    for name in sorted(sys.stdlib_module_names):
        if name not in _SKIP_TOP:
            load(name)
    for name in _WALK:
        pkg = load(name)
        path = getattr(pkg, "__path__", None)
        if path is None:
            continue
        for info in pkgutil.walk_packages(path, name + ".", onerror=lambda _: None):
            sub = info.name
            if not any(bad in sub for bad in _SKIP_SUB):
                load(sub)
    load("plimsoll")


if sys.platform == "wasi":  # at build time; a native test run skips it
    _preload()


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


def _per_run_setup():
    """Things that must not be frozen into the build-time snapshot."""
    global _per_run_done
    if _per_run_done:
        return
    _per_run_done = True
    # The snapshot holds the build machine's random state: reseed from the
    # run's own entropy (wasi:random) so every instance differs.
    try:
        random.seed()
    except Exception:
        pass
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
    "\nNote: this sandbox has no network access (no sockets, no DNS). Reach "
    "HTTP APIs through the broker instead, e.g.\n"
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


def _run_cell(code):
    """Run one cell; return the repr of its trailing expression, or ""."""
    global _cells
    _cells += 1
    filename = "<cell-%d>" % _cells
    # Register the source so tracebacks can show the offending lines.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

    try:
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec", dont_inherit=True)
        tail = compile(last, filename, "eval", dont_inherit=True) if last else None
    except BaseException as exc:
        # A SyntaxError (or similar) from parsing: no user frames to show.
        raise _CellError(_format_exception(exc, None)) from None

    try:
        exec(body, _NS)
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
        raise _CellError(text) from None


class _CellError(Exception):
    """Carries a formatted traceback out of `_run_cell`."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


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


class WitWorld(wit_world.WitWorld):
    """The `interpreter` world's exports."""

    def eval(self, code: str) -> str:
        """Evaluate `code` in the persistent namespace (see module docs).

        Returns the repr of the trailing expression ("" when there is none or
        it is None); raises `Err(traceback)` when the cell raised, after
        writing the traceback to stderr. No Python exception escapes.
        """
        error = None
        result = ""
        try:
            _per_run_setup()
            result = _run_cell(code)
        except _CellError as exc:
            error = exc.text
        except BaseException as exc:  # a bug here, or an error while formatting
            error = _format_exception(exc, exc.__traceback__)
        if error is not None:
            _write_stderr(error)
        _flush_all()
        if error is not None:
            raise Err(_clean(error))
        return _clean(result)
