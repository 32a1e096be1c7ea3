"""Tests of the Python guest's build: its fixed build environment
(deterministic/) and that two builds of the same sources give the same bytes.

    python3 guests/python/test_build.py

Needs a C compiler; the last test runs the real build (componentize-py,
about 25 s) twice, the second time on a tmpfs in a private mount namespace
when this machine allows one. x86_64 Linux only: elsewhere the build is not
fixed, and these tests skip, saying so.
"""

import hashlib
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_EPOCH = 946684800
SUPPORTED = platform.system() == "Linux" and platform.machine() == "x86_64"
WHY_NOT = "the fixed build environment is x86_64 Linux only"


def _compile(tmp):
    cc = os.environ.get("CC", "cc")
    stat = os.path.join(tmp, "fixed-stat")
    clocks = os.path.join(tmp, "fixed-clocks.so")
    subprocess.run(
        [cc, "-O2", "-Wall", "-Werror", "-o", stat, os.path.join(HERE, "deterministic", "fixed-stat.c")],
        check=True,
    )
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", clocks,
         os.path.join(HERE, "deterministic", "fixed-clocks.c"), "-ldl"],
        check=True,
    )
    return stat, clocks


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _python(code, *prefix, env=None):
    """Runs `code` in a fresh python3 under `prefix`; its stdout."""
    out = subprocess.run(
        [*prefix, sys.executable, "-c", code],
        check=True, capture_output=True, text=True, env=env,
    )
    return out.stdout


@unittest.skipUnless(SUPPORTED, WHY_NOT)
class FixedStatTests(unittest.TestCase):
    """fixed-stat rewrites what stat and getdents64 say about files under its root."""

    @classmethod
    def setUpClass(cls):
        cls.tools = tempfile.mkdtemp()
        cls.stat, cls.clocks = _compile(cls.tools)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tools)

    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)

    def under(self, code):
        return _python(code, self.stat, self.root)

    def test_files_under_root_have_fixed_times_device_and_path_inodes(self):
        os.makedirs(os.path.join(self.root, "a", "b"))
        with open(os.path.join(self.root, "a", "b", "f"), "w") as f:
            f.write("12345")
        probe = (
            "import os\n"
            f"r = {self.root!r}\n"
            "for p in ['a/b/f', 'a/b', 'a/../a/b/f']:\n"
            "    s = os.stat(os.path.join(r, p))\n"
            "    print(s.st_ino, s.st_dev, s.st_atime_ns, s.st_mtime_ns, s.st_ctime_ns, s.st_size)\n"
            "fd = os.open(os.path.join(r, 'a/b/f'), os.O_RDONLY)\n"
            "print(os.fstat(fd).st_ino)\n"
            "os.chdir(os.path.join(r, 'a'))\n"
            "print(os.stat('b/f').st_ino, os.lstat('b').st_ino)\n"
        )
        lines = self.under(probe).split("\n")
        f_ino, dev, *times, size = lines[0].split()
        self.assertEqual(times, [str(FIXED_EPOCH * 10**9)] * 3)
        self.assertEqual(size, "5")
        b_ino, b_dev, *_, b_size = lines[1].split()
        self.assertEqual((b_dev, dev, b_size), ("42", "42", "4096"))
        self.assertNotEqual(b_ino, f_ino)
        # One file, however it is named, is one inode: it is its path's.
        self.assertEqual(lines[2].split()[0], f_ino)
        self.assertEqual(lines[3], f_ino)
        self.assertEqual(lines[4].split(), [f_ino, b_ino])
        # The same tree somewhere else gives the same numbers.
        elsewhere = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, elsewhere)
        shutil.copytree(self.root, os.path.join(elsewhere, "copy"))
        again = _python(probe.replace(repr(self.root), repr(os.path.join(elsewhere, "copy"))),
                        self.stat, os.path.join(elsewhere, "copy"))
        self.assertEqual(again.split("\n")[0], lines[0])

    def test_files_outside_root_are_left_alone(self):
        outside = tempfile.NamedTemporaryFile()
        self.addCleanup(outside.close)
        real = os.stat(outside.name)
        seen = self.under(f"import os; s = os.stat({outside.name!r}); print(s.st_ino, s.st_mtime_ns)")
        self.assertEqual(seen.split(), [str(real.st_ino), str(real.st_mtime_ns)])

    def test_directories_are_listed_in_name_order_across_many_reads(self):
        names = [f"entry-with-a-name-long-enough-to-need-several-reads-{i}" for i in range(3000)]
        # Created shuffled, so that neither creation order nor its reverse
        # (what tmpfs lists, by kernel version) is name order.
        shuffled = list(names)
        random.Random(1).shuffle(shuffled)
        for name in shuffled:
            open(os.path.join(self.root, name), "w").close()
        os.mkdir(os.path.join(self.root, "sub"))
        listing = self.under(
            f"import os\nfor e in os.scandir({self.root!r}): print(e.name, e.is_dir(), e.inode())"
        ).split("\n")[:-1]
        got = [line.split()[0] for line in listing]
        self.assertEqual(got, sorted(names + ["sub"]))
        self.assertEqual([line.split()[1] for line in listing].count("True"), 1)
        stat_ino = self.under(f"import os; print(os.stat(os.path.join({self.root!r}, 'sub')).st_ino)")
        self.assertIn(f"sub True {stat_ino.strip()}", listing)
        # And without the tracer, the file system's own order (here, not sorted).
        self.assertNotEqual(os.listdir(self.root), sorted(os.listdir(self.root)))

    def test_the_exit_status_is_the_commands(self):
        for code in (0, 3, 77):
            rc = subprocess.run([self.stat, self.root, sys.executable, "-c", f"raise SystemExit({code})"]).returncode
            self.assertEqual(rc, code)
        rc = subprocess.run([self.stat, self.root, "/nonexistent/command"], capture_output=True).returncode
        self.assertNotEqual(rc, 0)

    def test_fixed_clocks_give_every_process_the_same_time_and_entropy(self):
        env = dict(os.environ, LD_PRELOAD=self.clocks)
        code = "import os, time; print(int(time.time()), os.urandom(16).hex(), time.monotonic() < 2000)"
        first, second = _python(code, env=env), _python(code, env=env)
        self.assertEqual(first, second)
        self.assertTrue(first.startswith(f"{FIXED_EPOCH} "), first)
        self.assertTrue(first.strip().endswith("True"), first)
        self.assertNotEqual(_python(code), _python(code))


@unittest.skipUnless(SUPPORTED, WHY_NOT)
class ReproducibleBuildTests(unittest.TestCase):
    """Two builds of the same sources give the same bytes."""

    def test_two_builds_give_the_same_bytes(self):
        with tempfile.TemporaryDirectory() as tmp:
            first, second = os.path.join(tmp, "first.wasm"), os.path.join(tmp, "second.wasm")
            subprocess.run(["bash", os.path.join(HERE, "build.sh"), first], check=True)
            # The second on another file system (tmpfs: other inode numbers,
            # another listing order, other times) when a private mount
            # namespace is allowed here.
            scratch = os.path.join(tmp, "scratch")
            os.mkdir(scratch)
            namespace = ["unshare", "--user", "--map-root-user", "--mount"]
            if subprocess.run([*namespace, "true"], capture_output=True).returncode == 0:
                subprocess.run(
                    [*namespace, "sh", "-c", 'mount -t tmpfs tmpfs "$1" && shift && exec "$@"', "-",
                     scratch, "bash", os.path.join(HERE, "build.sh"), second],
                    check=True, env=dict(os.environ, PLIMSOLL_PYTHON_BUILD_SCRATCH=scratch),
                )
            else:
                print("note: no private mount namespace here; the second build uses the same file system",
                      file=sys.stderr)
                subprocess.run(["bash", os.path.join(HERE, "build.sh"), second], check=True,
                               env=dict(os.environ, PLIMSOLL_PYTHON_BUILD_SCRATCH=scratch))
            self.assertEqual(_sha256(first), _sha256(second), "two builds of the same sources differ")


if __name__ == "__main__":
    unittest.main()
