"""Writes the Python source the scientific guest's snapshot runs.

    python3 make_init.py OUT

It defines the modules `plimsoll` and `app` (the Python guest's, from
guests/python) and `_plimsoll_driver` (driver.py) from their sources, then
runs `snapshot_init()`, which imports the scientific stack. The sources are
embedded because the snapshot's interpreter sees no host file but the
read-only standard-library zip.
"""

import pathlib
import sys

here = pathlib.Path(__file__).resolve().parent
python = here.parent / "python"
modules = [
    ("plimsoll", python / "plimsoll.py"),
    ("app", python / "app.py"),
    ("_plimsoll_driver", here / "driver.py"),
]
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
lines.append("_sys.modules['_plimsoll_driver'].snapshot_init()")
lines.append("del _define, _sys, _types")
pathlib.Path(sys.argv[1]).write_text("\n".join(lines) + "\n", encoding="utf-8")
