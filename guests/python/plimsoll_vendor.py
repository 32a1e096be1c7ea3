"""Third-party pure-Python packages (requests and its dependencies) for the
Python guests, served from one compressed blob.

Neither guest has a file system to import them from: the small guest's
component carries none (only what was imported while componentize-py built
it exists at run time), and the scientific guest sees only its read-only
standard-library zip. Importing the packages while the snapshot is made
would work, but every fresh instance pays for the heap they take (about
0.27 ms per MB), used or not. So, in the snapshot, each module's source is
compiled by the guest's own interpreter (code objects are tied to the
CPython version that made them), marshalled and zlib-compressed into one
``bytes`` blob, and a finder on ``sys.meta_path`` turns a module back into
a code object only when it is first imported.

What is guaranteed:

- :func:`pack` compiles every ``.py`` file it is given, in name order, so
  the same sources give the same blob (the builds are reproducible); a
  source that does not compile fails the build, not a run.
- The finder is *appended* to ``sys.meta_path``: a package the interpreter
  can import from its own path (the scientific guest's zip has
  ``charset_normalizer``) wins over the vendored copy.
- A vendored module looks like one imported from files: packages have
  ``__path__``, every module ``__spec__``, ``__loader__`` and ``__file__``
  (``/plimsoll/vendor/requests/__init__.py``; the file does not exist, so
  tracebacks show no source lines for vendored frames).
- Sizes are bounded: at most :data:`MAX_FILE_BYTES` per source and
  :data:`MAX_TOTAL_BYTES` of source in all.
"""

import marshal
import os
import sys
import zlib
from importlib.machinery import ModuleSpec

#: Where vendored modules say they come from (no such directory exists).
PREFIX = "/plimsoll/vendor/"
#: The largest source file :func:`pack` accepts, in bytes.
MAX_FILE_BYTES = 4 << 20
#: The most source :func:`pack` accepts in all, in bytes.
MAX_TOTAL_BYTES = 32 << 20


def module_name(rel):
    """``("requests.api", False)`` for ``"requests/api.py"``,
    ``("requests", True)`` for ``"requests/__init__.py"``, ``None`` for a
    file that is not Python source. Raises ``ValueError`` for a path that
    cannot be a module's."""
    if not rel.endswith(".py"):
        return None
    parts = rel[: -len(".py")].split("/")
    is_pkg = parts[-1] == "__init__"
    if is_pkg:
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        raise ValueError("not a module path: %r" % (rel,))
    return ".".join(parts), is_pkg


def pack(files):
    """Compile and compress ``files`` into ``(index, blob)``.

    ``files`` is an iterable of ``(relative path, source)`` pairs, the path
    with ``/`` separators (``"requests/api.py"``) and the source ``str`` or
    ``bytes``; files that are not ``.py`` are skipped. They are compiled one
    at a time as the iterable yields them (:func:`read_tree` reads each file
    only then), so that no more than one source and its compiler's memory
    are alive at once. ``index`` maps each module name to ``(is_package,
    start, end)``, the slice of ``blob`` that holds its zlib-compressed,
    marshalled code object; ``blob`` has the modules in name order.
    """
    compiled = {}
    total = 0
    for rel, source in files:
        named = module_name(rel)
        if named is None:
            continue
        name, is_pkg = named
        size = len(source)
        if size > MAX_FILE_BYTES:
            raise ValueError("%s is larger than %d bytes" % (rel, MAX_FILE_BYTES))
        total += size
        if total > MAX_TOTAL_BYTES:
            raise ValueError("the vendored sources are larger than %d bytes" % MAX_TOTAL_BYTES)
        if name in compiled:
            raise ValueError("module %s is given twice" % name)
        code = compile(source, PREFIX + rel, "exec", dont_inherit=True)
        del source
        compiled[name] = (is_pkg, zlib.compress(marshal.dumps(code), 9))
        del code
    for name in compiled:
        parent = name.rpartition(".")[0]
        if parent and not (parent in compiled and compiled[parent][0]):
            raise ValueError("%s has no package %s (an __init__.py)" % (name, parent))
    index = {}
    chunks = []
    offset = 0
    for name in sorted(compiled):
        is_pkg, data = compiled[name]
        index[name] = (is_pkg, offset, offset + len(data))
        chunks.append(data)
        offset += len(data)
    return index, b"".join(chunks)


def read_tree(root):
    """Every ``.py`` file under the directory ``root``, as ``(relative path,
    bytes)`` pairs in name order, each read when it is asked for (for
    :func:`pack`)."""
    paths = []
    for top, dirs, names in os.walk(root):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(top, name)
                paths.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    for rel, path in sorted(paths):
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
        yield rel, data


class VendorFinder:
    """A ``sys.meta_path`` finder and loader for the modules in one blob."""

    def __init__(self, index, blob):
        self._index = dict(index)
        self._blob = blob

    def __repr__(self):
        return "<plimsoll_vendor.VendorFinder: %d modules>" % len(self._index)

    def names(self):
        """The vendored modules' names, sorted."""
        return sorted(self._index)

    def find_spec(self, name, path=None, target=None):
        entry = self._index.get(name)
        if entry is None:
            return None
        is_pkg = entry[0]
        where = PREFIX + name.replace(".", "/")
        spec = ModuleSpec(
            name,
            self,
            origin=where + ("/__init__.py" if is_pkg else ".py"),
            is_package=is_pkg,
        )
        spec.has_location = True
        if is_pkg:
            spec.submodule_search_locations = [where]
        return spec

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        exec(self.get_code(module.__spec__.name), module.__dict__)

    def get_code(self, name):
        """The code object of the vendored module ``name``."""
        entry = self._index.get(name)
        if entry is None:
            raise ImportError("%s is not vendored" % name, name=name)
        _, start, end = entry
        return marshal.loads(zlib.decompress(memoryview(self._blob)[start:end]))

    def get_source(self, name):
        return None  # the sources are not kept

    def is_package(self, name):
        entry = self._index.get(name)
        if entry is None:
            raise ImportError("%s is not vendored" % name, name=name)
        return entry[0]

    def invalidate_caches(self):
        pass


def install(index, blob, before_path=False):
    """Append a :class:`VendorFinder` for ``(index, blob)`` to
    ``sys.meta_path`` (replacing one installed before) and return it.

    ``before_path=True`` puts it before the path finder instead, so that
    the vendored copies shadow installed ones (the native tests use it).
    """
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, VendorFinder)]
    finder = VendorFinder(index, blob)
    if before_path:
        at = next(
            (i for i, f in enumerate(sys.meta_path) if getattr(f, "__name__", "") == "PathFinder"),
            len(sys.meta_path),
        )
        sys.meta_path.insert(at, finder)
    else:
        sys.meta_path.append(finder)
    return finder


def installed():
    """The installed :class:`VendorFinder`, or ``None``."""
    for finder in sys.meta_path:
        if isinstance(finder, VendorFinder):
            return finder
    return None
