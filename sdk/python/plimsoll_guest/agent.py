"""The agent's entry point: turn a plain ``main()`` into the `wasi:cli/run` export.

componentize-py exports `wasi:cli/run` by instantiating a class named ``Run``
found in the app module and calling its ``run()``. :func:`command` builds that
class around your ``main``::

    from plimsoll_guest import agent

    def main():
        print("hello")

    Run = agent.command(main)

``main`` runs when the host runs the component, not at build time. Its end
decides the run's exit code the way a CPython script's does: returning (or
``sys.exit(0)``/``sys.exit(None)``) is exit 0; ``sys.exit(1)``, any other
non-zero code, ``sys.exit("message")`` (printed to stderr) or an uncaught
exception (its traceback printed to stderr) is exit 1 — `wasi:cli/run`
carries success or failure only. Standard output and error are flushed in
every case, so nothing printed before the end is lost.

Inside a component CPython runs unbuffered (componentize-py sets
``PYTHONUNBUFFERED``), so ``sys.stdout`` writes straight to a raw file whose
writes a WASI stream may cut short (at 64 KiB); CPython does not retry, and
the rest of a large ``print`` would vanish. Before calling ``main`` the SDK
puts a ``BufferedWriter``, which writes until done, under each such stream,
line-buffered so every printed line still leaves at once.
"""

import io
import sys
import traceback
from typing import Callable, Optional

from . import _bindings

__all__ = ["command", "run_main"]


def command(main: Callable[[], Optional[int]]) -> type:
    """Returns the ``Run`` class componentize-py exports, calling ``main``.

    Assign it to ``Run`` at the top level of the app module.
    """
    if not callable(main):
        raise TypeError("agent.command needs a callable main")

    class Run:
        """The `wasi:cli/run` export: runs ``main`` once."""

        def run(self) -> None:
            """Called by the host; raises the bindings' ``Err`` on failure."""
            if run_main(main) != 0:
                raise _bindings.Err(None)

    Run.__qualname__ = Run.__name__ = "Run"
    return Run


def run_main(main: Callable[[], Optional[int]]) -> int:
    """Calls ``main`` as CPython runs a script and returns the exit code (0 or 1).

    Never raises: ``SystemExit`` and uncaught exceptions become the code, and
    stdout and stderr are flushed before it returns.
    """
    _complete_writes()
    try:
        code = _exit_code(main())
    except SystemExit as e:
        code = _exit_code(e.code)
    except BaseException:  # the whole run is over: report, never trap
        traceback.print_exc()
        code = 1
    _flush()
    return code


def _exit_code(value: object) -> int:
    if value is None or value == 0:
        return 0
    if isinstance(value, int):
        return 1
    print(value, file=sys.stderr)  # sys.exit("message"), as CPython does
    return 1


# The streams replaced by _complete_writes, kept alive: closing one (as its
# finalizer would) would close the raw file the new stream writes to.
_replaced: list = []


def _complete_writes() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        raw = getattr(stream, "buffer", None)
        if isinstance(raw, io.RawIOBase):
            _replaced.append(stream)
            wrapped = io.TextIOWrapper(
                io.BufferedWriter(raw),
                encoding=stream.encoding,
                errors=stream.errors,
                line_buffering=True,
            )
            setattr(sys, name, wrapped)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream must not turn exit 0 into a trap
            pass
