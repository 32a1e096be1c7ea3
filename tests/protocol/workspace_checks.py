"""Agent workspaces: the real plimsoll-client 0.23.0 and its agent adapters against a running plimsolld.

Run by tests/daemon.rs (`the_real_plimsoll_client_drives_agent_workspaces`,
`..._behind_bwrap`) in the virtualenv `make clients` makes (plimsoll-client
0.23.0 with `anthropic` 1.13.0 and `openai-agents` 0.23.1, the SDKs its
adapters are written against):

    PLIMSOLL_URL=... PLIMSOLL_TOKEN=... [PLIMSOLL_FLOOR=process] python workspace_checks.py

What it covers, all through the client's own classes, no mocks: every
`Workspace` operation (each a `SessionRun{project}` whose step is one of the
client's fixed shell scripts, interpreted by the daemon's shell guest),
`python3`/`node` started from the shell, a timed-out command and hostile shell
text each followed by a working command, `Session.run_project`,
`Session.run_javascript`, a multi-step `Client.run_project`, `CodeExecutor`
JavaScript, the Claude Managed Agents worker's six tools
(`anthropic_worker.PlimsollTools`, each tool's `call`) and the OpenAI Agents
SDK provider (`openai_sandbox.PlimsollSandboxClient`), both driven without a
model.

Every check is an assertion; the script prints one line per check and exits
non-zero at the first that fails. The client verifies every record and the
session chain itself. PLIMSOLL_KEEP_GOING=1 (diagnosis only) reports every
failing check and every section that raised instead of stopping at the first,
and still exits non-zero.
"""

import asyncio
import hashlib
import io
import os
import random
import sys
import tarfile
import tempfile
import traceback
from importlib.metadata import version
from pathlib import Path

import plimsoll_client
from plimsoll_client import Client, SessionEndedError, SoftwareMismatchError, SoftwareRule
from plimsoll_client import _code_tool as code_tool
from plimsoll_client.execution import CodeExecutor
from plimsoll_client.workspace import Workspace, WorkspacePathError

import anthropic
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_functions import aclose_runnable_tool
from agents.sandbox.entries import File
from agents.sandbox.errors import ExecNonZeroError
from agents.sandbox.manifest import Manifest
from agents.sandbox.session.runtime_helpers import WORKSPACE_FINGERPRINT_HELPER
from plimsoll_client.anthropic_worker import TOOL_NAMES, PlimsollTools
from plimsoll_client.openai_sandbox import PlimsollSandboxClient, PlimsollSandboxClientOptions

assert plimsoll_client.__version__ == "0.23.0", plimsoll_client.__version__
assert anthropic.__version__ == "1.13.0", anthropic.__version__
assert version("openai-agents") == "0.23.1", version("openai-agents")

URL = os.environ["PLIMSOLL_URL"]
TOKEN = os.environ["PLIMSOLL_TOKEN"]
FLOOR = os.environ.get("PLIMSOLL_FLOOR", "process")
KEEP_GOING = os.environ.get("PLIMSOLL_KEEP_GOING") == "1"
FAILED = []

MIB = 1 << 20


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail!r}"[:4000], flush=True)
        if not KEEP_GOING:
            sys.exit(1)
        FAILED.append(name)
        return False
    print(f"ok   {name}", flush=True)
    return True


def raises(fn, *exc_types):
    """The exception ``fn()`` raised, if of ``exc_types``; None when it returned."""
    try:
        fn()
    except exc_types as e:
        return e
    return None


async def araises(coro, *exc_types):
    try:
        await coro
    except exc_types as e:
        return e
    return None


c = Client(URL, token=TOKEN, request_timeout=300)


def open_ws():
    return Workspace(c.open_session(minimum_isolation=FLOOR, languages=["python"]))


# -- Describe --------------------------------------------------------------------
def describe():
    info = c.describe()
    check("describe: protocol 4", info.protocol == 4, info)
    check("describe: projects and sessions", info.supports_project and info.supports_sessions, info)
    check(
        "describe: projects run javascript and python",
        info.project_environment.languages == ("javascript", "python"),
        info.project_environment,
    )
    check("describe: no modules", not info.supports_module, info)


# -- Workspace: every operation -----------------------------------------------------
BLOB = random.Random(20261202).randbytes(3_000_000)  # 3 MB: two base64 chunks each way


def workspace_operations():
    ws = open_ws()
    s = ws.session

    # root
    check("workspace root: learned from the sandbox", ws.root == "/work", ws.root)

    # exec: output, cwd and exported variables carried between calls
    o = ws.exec("echo hello; echo oops >&2")
    check(
        "exec: stdout and stderr apart, exit 0",
        (o.stdout, o.stderr, o.exit_code, o.timed_out) == (b"hello\n", b"oops\n", 0, False),
        o,
    )
    check("exec: the first command runs in the root", o.cwd == "/work", o.cwd)
    o = ws.exec("mkdir -p src/pkg && cd src && export GREETING='hi there' SECOND=2 && LOCAL_ONLY=1")
    check("exec: cd is reported", o.exit_code == 0 and o.cwd == "/work/src", o)
    o = ws.exec('pwd; echo "$GREETING/$SECOND/${LOCAL_ONLY:-unset}"')
    check(
        "exec: cwd and exported variables carry over, unexported ones do not",
        o.stdout == b"/work/src\nhi there/2/unset\n" and o.exit_code == 0,
        o,
    )
    o = ws.exec("unset SECOND; cd ..")
    o = ws.exec('pwd; echo "${SECOND:-gone}"; env | grep -c "^GREETING=hi there$"')
    check("exec: unset and cd .. carry over too", o.stdout == b"/work\ngone\n1\n", o)
    o = ws.exec("cat > notes.txt <<'EOF'\nline $HOME `x`\n\tkept\nEOF\ncat notes.txt; wc -l < notes.txt")
    check("exec: a quoted here-document", o.stdout == b"line $HOME `x`\n\tkept\n2\n", o)

    # exit codes
    o = ws.exec("false")
    check("exec: false is exit 1", o.exit_code == 1 and not o.timed_out, o)
    o = ws.exec("(exit 42)")
    check("exec: a subshell's exit status", o.exit_code == 42, o)
    o = ws.exec("cd src; exit 3")
    check("exec: exit N ends the command with N", o.exit_code == 3, o)
    o = ws.exec("pwd")
    check("exec: exit ends the step before the state is saved", o.stdout == b"/work\n", o)
    o = ws.exec("sh -c 'exit 7'")
    check("exec: sh -c passes its exit status", o.exit_code == 7, o)
    o = ws.exec("no_such_command_xyz --flag")
    check(
        "exec: an unknown command is 127, not found",
        o.exit_code == 127 and b"not found" in o.stderr,
        o,
    )
    o = ws.exec("pip install requests")
    check("exec: pip is 127", o.exit_code == 127, o)
    o = ws.exec("mkdir -p tree/a/b && echo x > tree/a/b/f && echo y > tree/g && rm -rf tree; test ! -e tree")
    check("exec: rm -rf of a tree with entries", o.exit_code == 0 and o.stderr == b"", o)
    o = ws.exec("ls /etc/passwd")
    check("exec: nothing of the host exists", o.exit_code != 0 and o.stdout == b"", o)

    # write and read: text, 3 MB of binary through the chunked base64 steps
    ws.write("src/hello.txt", "hello world\nsecond line\n")
    check("write/read: text", ws.read("src/hello.txt") == b"hello world\nsecond line\n", "")
    check("read: an absolute path inside the root", ws.read("/work/src/hello.txt")[:5] == b"hello", "")
    check("read: max_bytes", ws.read("src/hello.txt", max_bytes=5) == b"hello", "")
    calls = s.calls
    ws.write("bin/blob.bin", BLOB)
    check("write: 3 MB of binary in two base64 calls", s.calls == calls + 2, (calls, s.calls))
    back = ws.read("bin/blob.bin", max_bytes=8 * MIB)
    check("read: 3 MB of binary, byte-exact", back == BLOB, (len(back), len(BLOB)))
    o = ws.exec("sha256sum bin/blob.bin; wc -c < bin/blob.bin")
    check(
        "write: the shell sees the same bytes",
        o.stdout.split()[:2] == [hashlib.sha256(BLOB).hexdigest().encode(), b"bin/blob.bin"]
        and o.stdout.split()[2] == b"3000000",
        o,
    )
    ws.write("bin/small.bin", bytes(range(256)))
    check("write/read: every byte value", ws.read("bin/small.bin") == bytes(range(256)), "")
    e = raises(lambda: ws.read("src/missing.txt"), FileNotFoundError)
    check("read: a missing file is FileNotFoundError", e is not None, e)
    e = raises(lambda: ws.read("src"), FileNotFoundError)
    check("read: a directory is FileNotFoundError", e is not None, e)
    e = raises(lambda: ws.read("/etc/passwd"), WorkspacePathError)
    check("read: outside the root is refused by the client", e is not None, e)

    # edit
    ws.write("src/app.py", "x = 1\nprint('a')\nprint('a')\n")
    check("edit: one replacement", ws.edit("src/app.py", "x = 1", "x = 2") == 1, "")
    e = raises(lambda: ws.edit("src/app.py", "print('a')", "print('b')"), ValueError)
    check("edit: an ambiguous old string is refused", e is not None and "2 times" in str(e), e)
    check("edit: replace_all", ws.edit("src/app.py", "print('a')", "print('b')", replace_all=True) == 2, "")
    check("edit: the file", ws.read("src/app.py") == b"x = 2\nprint('b')\nprint('b')\n", ws.read("src/app.py"))

    # glob
    for p in ("g/a.py", "g/b.txt", "g/sub/c.py", "g/sub/deeper/d.py", "g/.hidden.py", "README.md"):
        ws.write(p, "# " + p + "\n")
    got = ws.glob("*.py", "g")
    check("glob: a shell pattern in a directory", got == ["a.py"], got)
    got = ws.glob("sub/*.py", "g")
    check("glob: a pattern with a directory part", got == ["sub/c.py"], got)
    got = ws.glob("*.md")
    check("glob: the root by default, the state directory never listed", got == ["README.md"], got)
    got = ws.glob("**/*.py", "g")
    check(
        "glob: ** matches at every depth",
        got == [".hidden.py", "a.py", "sub/c.py", "sub/deeper/d.py"],
        got,
    )
    got = ws.glob("sub/**", "g")
    check("glob: ** lists files and directories", got == ["sub/c.py", "sub/deeper", "sub/deeper/d.py"], got)
    got = ws.glob("**/*.rs", "g")
    check("glob: ** with no match", got == [], got)
    got = ws.glob("*.nothing")
    check("glob: no match", got == [], got)
    e = raises(lambda: ws.glob("*.py", "no/such/dir"), FileNotFoundError)
    check("glob: a missing directory is FileNotFoundError", e is not None, e)

    # grep: exit 0 (matches), 1 (none), 2 (error)
    got = ws.grep(r"print\('b'\)", "src")
    check("grep: matches as path:line:text", got == "src/app.py:2:print('b')\nsrc/app.py:3:print('b')", got)
    got = ws.grep("hello wor+ld")
    check("grep: the whole tree, ./ stripped, the state directory left out", got == "src/hello.txt:1:hello world", got)
    got = ws.grep("^second", "src/hello.txt")
    check("grep: one file", got == "src/hello.txt:2:second line", got)
    ws.write("big/many.txt", "needle line\n" * 200_000)
    got = ws.grep("needle", "big")
    check(
        "grep: output past the cap is marked",
        got.endswith("\n[output truncated]") and got.startswith("big/many.txt:1:needle line\n"),
        got[:80] + " … " + got[-80:],
    )
    ws.exec("rm big/many.txt && rmdir big")
    got = ws.grep("no-such-text-anywhere")
    check("grep: no match is empty (exit 1)", got == "", got)
    e = raises(lambda: ws.grep("(unclosed", "src"), ValueError)
    check("grep: a bad pattern is ValueError (exit 2)", e is not None, e)
    e = raises(lambda: ws.grep("x", "no_such_dir"), ValueError)
    check("grep: a missing path is ValueError (exit 2)", e is not None, e)

    # persist -> hydrate into a second session
    tar = ws.persist()
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        names = t.getnames()
        blob = t.extractfile(next(m for m in t.getmembers() if m.name.lstrip("./") == "bin/blob.bin")).read()
    check(
        "persist: a tar of the tree without the state directory",
        "./src/hello.txt" in names and "./g/sub/deeper/d.py" in names
        and not any(".plimsoll-shell" in n for n in names)
        and all(not n.startswith("/") and ".." not in n.split("/") for n in names),
        names,
    )
    check("persist: binary files byte-exact in the tar", blob == BLOB, len(blob))
    ws2 = open_ws()
    ws2.hydrate(tar)
    check("hydrate: text files in the second session", ws2.read("src/app.py") == b"x = 2\nprint('b')\nprint('b')\n", "")
    check("hydrate: 3 MB of binary in the second session", ws2.read("bin/blob.bin", max_bytes=8 * MIB) == BLOB, "")
    got = ws2.glob("**/*.py", "g")
    check("hydrate: the tree globs the same", got == [".hidden.py", "a.py", "sub/c.py", "sub/deeper/d.py"], got)
    o = ws2.exec("ls -a .plimsoll-shell")
    check("hydrate: the tar is removed after extraction", b"ws.tar" not in o.stdout, o)
    calls2 = ws2.session.calls
    summary = ws2.close()
    check("close: the second session's summary matches its chain", summary.calls == calls2 and summary.end == "closed", summary)
    return ws


# -- python3 and node started from the shell -------------------------------------------------
def interpreters(ws):
    o = ws.exec("python3 -c 'import sys; print(sys.argv[1:], 6*7)' a 'b c'")
    check("python3 -c with arguments", o.stdout == b"['a', 'b c'] 42\n" and o.exit_code == 0, o)
    o = ws.exec("python3 -c 'import sys; sys.exit(5)'")
    check("python3 -c: sys.exit(5) is 5", o.exit_code == 5, o)
    ws.write("py/tool.py", "import sys\nprint('args', sys.argv[1:])\nsys.exit(5)\n")
    o = ws.exec("python3 py/tool.py x 'y z'")
    check("python3 file.py args: sys.exit(5) is 5", o.stdout == b"args ['x', 'y z']\n" and o.exit_code == 5, o)
    ws.write("py/boom.py", "def f():\n    raise ValueError('boom')\nf()\n")
    o = ws.exec("python3 py/boom.py")
    check(
        "python3: an uncaught exception is exit 1 with the traceback",
        o.exit_code == 1 and b"Traceback (most recent call last)" in o.stderr and b"ValueError: boom" in o.stderr,
        o,
    )
    o = ws.exec("cd py && export FROM_SH=yes && python3 -c 'import os; print(os.getcwd(), os.environ[\"FROM_SH\"])'; cd ..")
    check("python3: the shell's cwd and exported environment", o.stdout == b"/work/py yes\n", o)
    o = ws.exec("python3 -c \"open('py/made.txt', 'w').write('by python')\" && cat py/made.txt")
    check("python3: writes the files the shell reads", o.stdout == b"by python", o)
    o = ws.exec("printf 'one\\ntwo\\n' | python3 -c 'import sys; print(len(sys.stdin.read().split()))'")
    check("python3: stdin from a pipe", o.stdout == b"2\n", o)
    ws.write("js/lib.mjs", "export const answer = 41 + 1;\n")
    ws.write(
        "js/main.mjs",
        "import { answer } from './lib.mjs';\nimport fs from 'node:fs';\n"
        "console.log(answer, process.argv.slice(2).join(','));\n"
        "fs.writeFileSync('js/out.txt', 'by node');\n",
    )
    o = ws.exec("node js/main.mjs a b && cat js/out.txt")
    check("node file.mjs from the shell: an ES-module import, argv, fs", o.stdout == b"42 a,b\nby node" and o.exit_code == 0, o)
    o = ws.exec("node -e 'process.exit(3)'")
    check("node -e: process.exit(3) is 3", o.exit_code == 3, o)
    o = ws.exec("node -e 'throw new Error(\"bad\")'")
    check("node: an uncaught error is exit 1 on stderr", o.exit_code == 1 and b"bad" in o.stderr, o)
    # The shell offers /tmp (agents write scratch files there); the interpreters it
    # starts must see the same /tmp, or `… > /tmp/x && python3 tool.py /tmp/x` breaks.
    o = ws.exec(
        "echo scratch > /tmp/shared.txt && python3 -c \"print(open('/tmp/shared.txt').read().strip())\" && "
        "node -e \"console.log(require('fs').readFileSync('/tmp/shared.txt', 'utf8').trim())\""
    )
    check("python3 and node see the shell's /tmp", o.stdout == b"scratch\nscratch\n" and o.exit_code == 0, o)


# -- Session.run_project and Session.run_javascript --------------------------------------------
def session_payloads(ws):
    s = ws.session
    p = s.run_project(
        {"pr/a.txt": "alpha\n"},
        ["cat pr/a.txt > pr/b.txt", "echo step2 >> pr/b.txt && wc -l < pr/b.txt"],
        ["pr/b.txt", "pr/none.txt"],
    )
    check("Session.run_project: completed, both steps", p.outcome == "completed" and [x.exit_code for x in p.steps] == [0, 0], p)
    check("Session.run_project: the second step's stdout", p.steps[1].stdout == b"2\n", p.steps)
    check("Session.run_project: artifacts present only", [(a.path, a.content) for a in p.artifacts] == [("pr/b.txt", b"alpha\nstep2\n")], p.artifacts)
    check("Session.run_project: the files stay in the session", ws.read("pr/b.txt") == b"alpha\nstep2\n", "")
    p = s.run_project({}, ["test -f pr/a.txt", "false", "echo never > pr/never.txt"], ["pr/never.txt"])
    check("Session.run_project: stops at the first non-zero step", [x.exit_code for x in p.steps] == [0, 1] and p.artifacts == (), p)
    j = s.run_javascript(
        "const fs = require('fs');\n"
        "fs.writeFileSync('js.txt', 'from js');\n"
        "console.log(fs.readFileSync('pr/b.txt', 'utf8').trim().split('\\n').length);\n"
    )
    check("Session.run_javascript: require('fs') over the session's files", j.stdout == b"2\n" and j.exit_code == 0, j)
    check("Session.run_javascript: what it wrote stays", ws.read("js.txt") == b"from js", "")
    a = s.run_cell("kept = 41\nopen('from_cell.txt', 'w').write('cell')\nkept + 1", "python")
    o = ws.exec("cat from_cell.txt && echo shell > from_shell.txt")
    b = s.run_cell("open('from_shell.txt').read().strip(), kept", "python")
    check(
        "cells and the shell share the files, the cell interpreter keeps its state",
        a.stdout == b"42\n" and o.stdout == b"cell" and b.stdout == b"('shell', 41)\n" and not b.interpreter_started,
        (a, o, b),
    )
    # The client's README, as written (Session.run_javascript with require('fs') and /tmp).
    w = s.run_javascript("require('fs').writeFileSync('/tmp/a', '1')")
    r = s.run_javascript("console.log(require('fs').readFileSync('/tmp/a', 'utf8'))")
    check("Session.run_javascript: the client README's /tmp example", (w.exit_code, r.stdout) == (0, b"1\n"), (w, r))


# -- a timed-out command and hostile text, each followed by a working one ----------------------
def limits(ws):
    o = ws.exec("while true; do :; done", timeout=1)
    check("exec: a timed-out command is 124 and timed out", o.timed_out and o.exit_code == 124, o)
    o = ws.exec('echo alive "$GREETING"; pwd')
    check("exec: works after a timeout, state kept", o.stdout == b"alive hi there\n/work\n" and o.exit_code == 0, o)

    o = ws.exec("cd src && export AFTER_CAP=1 && yes | head -c 3000000; yes | head -c 3000000 >&2; echo done")
    check(
        "exec: output past the cap is cut and flagged, the command runs on",
        o.exit_code == 0 and o.stdout_truncated and o.stderr_truncated and 0 < len(o.stdout) < 3_000_000 and o.cwd == "/work/src",
        (o.exit_code, len(o.stdout), len(o.stderr), o.stdout_truncated, o.stderr_truncated, o.cwd),
    )
    o = ws.exec('pwd; echo "$AFTER_CAP"; cd ..')
    check("exec: the state after a cut command is saved", o.stdout == b"/work/src\n1\n", o)

    def hostile(name, command, *, want_exit=None, want_stdout=None):
        try:
            o = ws.exec(command)
        except Exception as e:  # noqa: BLE001 - reported as the check's detail
            check(f"hostile: {name} ends as an outcome of its step", False, f"{type(e).__name__}: {e}")
            o = None
        if o is not None:
            if want_exit is None:
                check(f"hostile: {name} ends as an outcome of its step", o.exit_code != 0,
                      (o.exit_code, o.timed_out, o.stdout[:200], o.stderr[:300]))
            else:
                check(f"hostile: {name}", o.exit_code == want_exit and (want_stdout is None or o.stdout == want_stdout),
                      (o.exit_code, o.stdout[:200], o.stderr[:300]))
        o = ws.exec("cat src/hello.txt | head -n 1")
        check(f"hostile: {name}, then a working command and the files", o.stdout == b"hello world\n" and o.exit_code == 0, o)

    hostile("a 4 MiB command of ((((", "(" * (4 * MIB))
    hostile("200,000 nested subshells", "( " * 200_000 + "true" + " )" * 200_000)
    hostile("200,000 parentheses read as arithmetic", "(" * 200_000 + "1" + ")" * 200_000)
    hostile("a variable doubled without end", "x=a; while :; do x=$x$x; done")
    hostile("unbounded recursion", "f(){ f; }; f")
    hostile("a fork-bomb function", "f(){ f|f; }; f")
    hostile("yes | head -n 3", "yes | head -n 3", want_exit=0, want_stdout=b"y\ny\ny\n")


# -- Client.run_project: a fresh sandbox, any steps -------------------------------------------
def client_projects():
    p = c.run_project(
        {"data.txt": "3\n", "lib/x.sh": "echo sourced\n"},
        ["echo one > one.txt && . lib/x.sh", "cat data.txt > two.txt; false", "echo never > three.txt"],
        ["two.txt", "three.txt", "one.txt", "missing.txt"],
        minimum_isolation=FLOOR,
    )
    check("Client.run_project: completed, stops at the first non-zero step",
          p.outcome == "completed" and [x.exit_code for x in p.steps] == [0, 1], p)
    check("Client.run_project: one report per step that ran, stdout", p.steps[0].stdout == b"sourced\n", p.steps)
    check(
        "Client.run_project: artifacts in request order, absent ones omitted",
        [(a.path, a.content) for a in p.artifacts] == [("two.txt", b"3\n"), ("one.txt", b"one\n")],
        p.artifacts,
    )
    p = c.run_project({}, ["ls one.txt"], minimum_isolation=FLOOR)
    check("Client.run_project: every run is a fresh sandbox", p.steps[0].exit_code != 0, p.steps)
    p = c.run_project(
        {"main.py": "import helper, sys\nprint(helper.v, sys.argv[1:])\n", "helper.py": "v = 7\n"},
        ["python3 main.py --x"],
        minimum_isolation=FLOOR,
    )
    check("Client.run_project: python3 main.py", p.steps[0].stdout == b"7 ['--x']\n", p.steps)
    p = c.run_project(
        {"main.js": "const lib = require('./lib.js');\nconsole.log(lib.f());\n", "lib.js": "module.exports = { f: () => 'cjs' };\n"},
        ["node main.js"],
        minimum_isolation=FLOOR,
    )
    check("Client.run_project: node main.js with require (CommonJS)", p.steps[0].stdout == b"cjs\n" and p.steps[0].exit_code == 0, p.steps)


# -- CodeExecutor: JavaScript --------------------------------------------------------------------
def code_executor():
    ex = CodeExecutor(c, minimum_isolation=FLOOR, timeout=30)
    p = ex.execute_code(
        # The script is .plimsoll/code.mjs and the caller's files are in the work
        # directory: as with node, a relative specifier resolves from the script.
        "import { shout } from '../lib.mjs';\n"
        "import { suffix } from '/work/util/two.mjs';\n"
        "import fs from 'node:fs';\n"
        "const d = await Promise.resolve(fs.readFileSync('data.txt', 'utf8'));\n"
        "fs.writeFileSync('out.txt', shout(d) + suffix);\n"
        "console.log(6 * 7);\n",
        language="javascript",
        files={
            "lib.mjs": "import { bang } from './util/two.mjs';\nexport function shout(s) { return bang(s.toUpperCase()); }\n",
            "util/two.mjs": "export const bang = (s) => s + '!';\nexport const suffix = '?';\n",
            "data.txt": "abc",
        },
        artifacts=["out.txt"],
    )
    check("CodeExecutor javascript: completed", p.outcome == "completed" and len(p.steps) == 1, p)
    check("CodeExecutor javascript: stdout, exit 0", p.steps[0].stdout == b"42\n" and p.steps[0].exit_code == 0, p.steps)
    check("CodeExecutor javascript: relative and absolute ES-module imports, a file artifact",
          [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"ABC!?")], p.artifacts)
    p = ex.execute_code("throw new TypeError('nope');", language="javascript")
    check("CodeExecutor javascript: an uncaught error is exit 1", p.steps[0].exit_code == 1 and b"TypeError" in p.steps[0].stderr, p.steps)
    tool = code_tool.run(ex, ("python", "javascript"), code_tool.MAX_OUTPUT_CHARS, "console.log(1 + 1)", "javascript", None)
    check("code tool: javascript runs", tool["ran"] is True and tool["exit_code"] == 0 and tool["stdout"] == "2\n", tool)
    # A caller that pins the software Describe states for projects gets every
    # project it can send: CodeExecutor's two steps and shell steps alike.
    identity = c.describe().project_environment.software_identity
    pinned = CodeExecutor(c, minimum_isolation=FLOOR, timeout=30, software=SoftwareRule.exact(identity))
    ran = {}
    for language, code in (("python", "print(1)"), ("javascript", "console.log(1)")):
        try:
            ran[language] = pinned.execute_code(code, language=language).steps[0].stdout
        except SoftwareMismatchError as e:
            ran[language] = f"refused: {e}"
    ran["shell"] = c.run_project({}, ["echo 1"], minimum_isolation=FLOOR, software=SoftwareRule.exact(identity)).steps[0].stdout
    check(
        "CodeExecutor: a rule of Describe's project identity admits its python and javascript steps",
        ran == {"python": b"1\n", "javascript": b"1\n", "shell": b"1\n"},
        (identity, ran),
    )


# -- Claude Managed Agents: the worker's six tools, without a model ----------------------------
class Ctx:
    """What the tools read of a Managed Agents tool context: the session ID and the
    worker's workdir (its skills/ are staged into the sandbox at open)."""

    def __init__(self, session_id, workdir):
        self.session_id = session_id
        self.workdir = workdir


async def anthropic_tools():
    with tempfile.TemporaryDirectory() as workdir:
        skill = Path(workdir, "skills", "demo")
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("# demo\n")
        (skill / "run.sh").write_text("#!/bin/sh\necho skill ran \"$@\"\n")
        (skill / "run.sh").chmod(0o755)
        tools = PlimsollTools(c, minimum_isolation=FLOOR)
        ts = {t.name: t for t in tools.tools(Ctx("sesn_workspace_checks", workdir))}
        check("anthropic: six tools by the SDK's names", tuple(ts) == TOOL_NAMES, list(ts))

        out = await ts["bash"].call({"command": "echo hi && pwd"})
        check("anthropic bash: output", out == "hi\n/work\n", out)
        check("anthropic: one session, owned by the Managed Agents session", tools.open_sessions == ["sesn_workspace_checks"], tools.open_sessions)
        out = await ts["bash"].call({"command": "cat skills/demo/SKILL.md && sh skills/demo/run.sh a"})
        check("anthropic: the worker's skills are staged", out == "# demo\nskill ran a\n", out)
        out = await ts["bash"].call({"command": "cd skills && export K=v"})
        out = await ts["bash"].call({"command": "pwd; echo $K"})
        check("anthropic bash: cd and export persist", out == "/work/skills\nv\n", out)
        await ts["bash"].call({"command": "cd /work"})
        e = await araises(ts["bash"].call({"command": "echo partial; ls nope"}), ToolError)
        check("anthropic bash: a non-zero exit is a ToolError with the output", e is not None and "partial" in str(e), e)
        e = await araises(ts["bash"].call({"command": "while :; do :; done", "timeout_ms": 1000}), ToolError)
        check("anthropic bash: timeout_ms ends the command", e is not None and "timed out" in str(e), e)

        out = await ts["write"].call({"file_path": "notes/a.txt", "content": "one\ntwo\nthree\n"})
        check("anthropic write", out == "wrote 14 bytes to notes/a.txt", out)
        out = await ts["read"].call({"file_path": "/work/notes/a.txt"})
        check("anthropic read: whole file, absolute path", out == "one\ntwo\nthree\n", out)
        out = await ts["read"].call({"file_path": "notes/a.txt", "view_range": [2, 3]})
        check("anthropic read: view_range", out == "two\nthree", out)
        e = await araises(ts["read"].call({"file_path": "notes/none.txt"}), ToolError)
        check("anthropic read: a missing file is a ToolError", e is not None, e)
        out = await ts["edit"].call({"file_path": "notes/a.txt", "old_string": "two", "new_string": "TWO"})
        check("anthropic edit", out == "edited notes/a.txt (1 replacement(s))", out)
        out = await ts["glob"].call({"pattern": "**/*.txt"})
        check("anthropic glob: **", out == "notes/a.txt", out)
        out = await ts["glob"].call({"pattern": "*.sh", "path": "skills/demo"})
        check("anthropic glob: in a directory", out == "skills/demo/run.sh", out)
        out = await ts["grep"].call({"pattern": "^TW", "path": "notes"})
        check("anthropic grep", out == "notes/a.txt:2:TWO", out)
        out = await ts["grep"].call({"pattern": "absent-text"})
        check("anthropic grep: no matches", out == "no matches", out)

        out = await ts["bash"].call({"restart": True})
        check("anthropic bash: restart", out == "bash session restarted", out)
        e = await araises(ts["read"].call({"file_path": "notes/a.txt"}), ToolError)
        check("anthropic bash: restart opened a fresh sandbox", e is not None, e)
        out = await ts["bash"].call({"command": "ls skills/demo"})
        check("anthropic bash: the fresh sandbox has the skills again", out == "SKILL.md\nrun.sh\n", out)
        await aclose_runnable_tool(ts["bash"])
        check("anthropic: leaving the bash tool closes the session", tools.open_sessions == [], tools.open_sessions)


# -- OpenAI Agents SDK: the sandbox provider, without a model ------------------------------------
# Known client bug in plimsoll-client 0.23.0, not worked around in the daemon:
# PlimsollSandboxSession.running() calls `self._workspace.session.ended()`, but
# Session.ended is a property (TypeError once started). So these checks never
# call running(), nor resume(), whose restore path calls it.
async def openai_provider():
    client = PlimsollSandboxClient(c)
    options = PlimsollSandboxClientOptions(minimum_isolation=FLOOR)
    manifest = Manifest(entries={"seed/hello.txt": File(content=b"seeded\n")})
    sess = await client.create(manifest=manifest, options=options)
    check("openai create: the manifest root is the daemon's work directory", sess.state.manifest.root == "/work", sess.state.manifest.root)
    await sess.start()
    got = (await sess.read(Path("/work/seed/hello.txt"))).read()
    check("openai start: the manifest's file is written", got == b"seeded\n", got)

    r = await sess.exec("echo hi; pwd")
    check("openai exec: sh -lc text", (r.stdout, r.stderr, r.exit_code) == (b"hi\n/work\n", b"", 0), r.__dict__)
    r = await sess.exec("printf", "%s|", "a b", "c", shell=False)
    check("openai exec: argv, shlex-joined", r.stdout == b"a b|c|" and r.ok(), r.__dict__)
    r = await sess.exec("exit 4")
    check("openai exec: the exit code", r.exit_code == 4, r.__dict__)

    data = random.Random(7).randbytes(100_000)
    await sess.write(Path("/work/docs/a.bin"), io.BytesIO(data))
    got = (await sess.read(Path("/work/docs/a.bin"))).read()
    check("openai write/read: binary, byte-exact", got == data, len(got))
    await sess.mkdir("/work/newdir")
    await sess.mkdir("/work/deep/er/dir", parents=True)
    e = await araises(sess.mkdir("/work/x/y"), ExecNonZeroError)
    check("openai mkdir: without parents a missing parent fails", e is not None, e)
    entries = await sess.ls("/work")
    names = {Path(x.path).name: x for x in entries}
    check("openai ls: ls -la parsed", {"docs", "newdir", "deep", "seed"} <= set(names) and names["docs"].is_dir(),
          sorted(names))
    entries = await sess.ls("/work/docs")
    check("openai ls: a file's size", [(x.path, x.size, x.is_dir()) for x in entries] == [("/work/docs/a.bin", len(data), False)],
          entries)
    await sess.mv("/work/docs/a.bin", "/work/docs/b.bin")
    got = [x.path for x in await sess.ls("/work/docs")]
    check("openai mv", got == ["/work/docs/b.bin"], got)
    e = await araises(sess.mv("/work/newdir", "/work/other"), ExecNonZeroError)
    check("openai mv: a directory source is refused", e is not None, e)
    check("openai same_file: one path", await sess.same_file("/work/docs/b.bin", "/work/docs/../docs/b.bin") is True, "")
    check("openai same_file: two files", await sess.same_file("/work/docs/b.bin", "/work/seed/hello.txt") is False, "")
    await sess.write(Path("/work/docs/gone.txt"), io.BytesIO(b"x"))
    await sess.rm("/work/docs/gone.txt")
    e = await araises(sess.rm("/work/deep", recursive=True), ExecNonZeroError)
    check("openai rm: recursive, a tree with entries (rm -rf --)", e is None, e)
    e = await araises(sess.rm("/work/newdir"), ExecNonZeroError)
    check("openai rm: a directory without recursive fails", e is not None, e)
    names = sorted(Path(x.path).name for x in await sess.ls("/work"))
    check("openai rm", "deep" not in names and "newdir" in names, names)
    got = sorted(Path(x.path).name for x in await sess.ls("/work/docs"))
    check("openai rm: the file", got == ["b.bin"], got)

    # The SDK installs its shell helpers under /tmp/openai-agents/bin with its own
    # script (set -eu, trap, a quoted here-document, chmod 0555, mv) and runs them.
    installed = await sess._inner._ensure_runtime_helper_installed(WORKSPACE_FINGERPRINT_HELPER)
    r = await sess.exec(str(installed), "/work", "v1", "/work/.fingerprint.json", "digest", ".plimsoll-shell", shell=False)
    check(
        "openai: the SDK's runtime helper installs and runs (workspace fingerprint)",
        r.ok() and r.stdout.startswith(b'{"fingerprint":"') and (await sess.read(Path("/work/.fingerprint.json"))).read() == r.stdout,
        r.__dict__,
    )
    await sess.rm("/work/.fingerprint.json")

    tar = (await sess.persist_workspace()).read()
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        names = t.getnames()
    check("openai persist_workspace: a tar", "./docs/b.bin" in names and not any(".plimsoll-shell" in n for n in names), names)
    other = await client.create(options=options)
    await other.start()
    await other.hydrate_workspace(io.BytesIO(tar))
    got = (await other.read(Path("/work/docs/b.bin"))).read()
    check("openai hydrate into a new session", got == data, len(got))
    r = await other.exec("cat seed/hello.txt && test -d newdir")
    check("openai hydrate: the tree", r.stdout == b"seeded\n" and r.ok(), r.__dict__)

    for name, s in (("first", sess), ("second", other)):
        await client.delete(s)
        ended = s._inner.workspace.session.ended  # a property: see the note above
        check(f"openai delete: the {name} session is closed", ended is not None and ended.reason == "closed", ended)
    e = raises(lambda: sess._inner.workspace.exec("true"), SessionEndedError)
    check("openai delete: a later call is refused", e is not None, e)


SECTIONS = [
    ("describe", describe),
    ("workspace", None),  # these share the first session, in order
    ("client projects", client_projects),
    ("CodeExecutor", code_executor),
    ("anthropic", lambda: asyncio.run(anthropic_tools())),
    ("openai", lambda: asyncio.run(openai_provider())),
]


def run_section(name, fn):
    if not KEEP_GOING:
        return fn()
    try:
        return fn()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - diagnosis mode reports and moves on
        print(f"FAIL section {name} raised:\n{traceback.format_exc()}", flush=True)
        FAILED.append(f"section {name}")
        return None


for name, fn in SECTIONS:
    if fn is not None:
        run_section(name, fn)
        continue
    ws = run_section("workspace operations", workspace_operations)
    if ws is None:
        continue
    for sub, f in (("interpreters", interpreters), ("session payloads", session_payloads), ("limits", limits)):
        run_section(sub, lambda f=f: f(ws))
    def close_first():
        calls = ws.session.calls
        last = ws.session.last_record_sha256
        summary = ws.close()
        check("close: the summary matches the chain", summary.calls == calls and summary.last_record_sha256 == last
              and summary.end == "closed", (summary, calls))
    run_section("close", close_first)

if FAILED:
    print(f"{len(FAILED)} failed: {FAILED}", flush=True)
    sys.exit(1)
print("all checks passed")
