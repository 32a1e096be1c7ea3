"""Writes the Python source the scientific guest's snapshot runs.

    python3 make_init.py OUT VENDOR_DIR

It defines the modules `plimsoll`, `plimsoll_vendor`, `plimsoll_http` and
`app` (the Python guest's, from guests/python) and `_plimsoll_driver`
(driver.py) from their sources, then runs `snapshot_init(vendor)`, which
imports the scientific stack and installs the vendored packages (requests
and its dependencies, the `.py` files under VENDOR_DIR, made by
guests/python/vendor.sh; embedded compressed). The sources are embedded
because the snapshot's interpreter sees no host file but the read-only
standard-library zip; the vendored ones are compiled inside the snapshot
(by its CPython, whose bytecode the run's is), not here.
"""

import base64
import pathlib
import sys
import zlib

here = pathlib.Path(__file__).resolve().parent
python = here.parent / "python"
out, vendor_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
modules = [
    ("plimsoll", python / "plimsoll.py"),
    ("plimsoll_vendor", python / "plimsoll_vendor.py"),
    ("plimsoll_http", python / "plimsoll_http.py"),
    ("plimsoll_program", python / "plimsoll_program.py"),
    ("app", python / "app.py"),
    ("_plimsoll_driver", here / "driver.py"),
]
# Each vendored source zlib-compressed and base64-encoded: embedded as
# they are (1.2 MB of string literals), they made the snapshot about 14 MB
# larger, which parsing the init source costs and wasm memory keeps.
vendor = sorted(
    (
        p.relative_to(vendor_dir).as_posix(),
        base64.b64encode(zlib.compress(p.read_bytes(), 9)).decode("ascii"),
    )
    for p in vendor_dir.rglob("*.py")
)
if not any(rel == "requests/__init__.py" for rel, _ in vendor):
    sys.exit("make_init.py: no vendored requests in %s (run guests/python/vendor.sh)" % vendor_dir)
lines = [
    "import sys as _sys, types as _types",
    "def _define(name, source):",
    "    m = _types.ModuleType(name)",
    "    m.__file__ = '/plimsoll/%s.py' % name",
    "    _sys.modules[name] = m",
    "    exec(compile(source, m.__file__, 'exec', dont_inherit=True), m.__dict__)",
]
for name, path in modules:
    lines.append("_define(%r, %r)" % (name, path.read_text(encoding="utf-8")))
lines.append("import base64 as _base64, zlib as _zlib")
# A generator: snapshot_init compiles one source at a time.
lines.append(
    "_sys.modules['_plimsoll_driver'].snapshot_init("
    "(rel, _zlib.decompress(_base64.b64decode(data))) for rel, data in %r)" % (vendor,)
)
lines.append("del _define, _sys, _types, _base64, _zlib")
out.write_text("\n".join(lines) + "\n", encoding="utf-8")
