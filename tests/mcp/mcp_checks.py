"""`plimsoll mcp` driven by the official Python MCP SDK (`mcp` on PyPI,
pinned in the Makefile's `clients`), over stdio.

Environment: PLIMSOLL_BIN (the `plimsoll` binary), PLIMSOLL_MCP_ARGS
(extra arguments, space-separated), PLIMSOLL_STATE_DIR, PLIMSOLL_GUESTS_DIR.
The script starts its own loopback upstream (it counts the requests and
records the Authorization headers it saw), writes the grants file for it,
and checks, printing `ok   <name>` per check and `all checks passed` at
the end. Any failure exits non-zero.
"""

import http.server
import json
import os
import sys
import tempfile
import threading
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

SECRET = "sk-mcp-" + "7f3a9c" * 6
BIN = os.environ["PLIMSOLL_BIN"]
EXTRA = [a for a in os.environ.get("PLIMSOLL_MCP_ARGS", "").split() if a]


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    print(f"ok   {name}")


class Upstream(http.server.BaseHTTPRequestHandler):
    hits = 0
    auth = []

    def do_GET(self):
        Upstream.hits += 1
        Upstream.auth.append(self.headers.get("Authorization", ""))
        body = json.dumps({"order": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
threading.Thread(target=upstream.serve_forever, daemon=True).start()
tmp = tempfile.mkdtemp()
grants = os.path.join(tmp, "grants.json")
with open(grants, "w") as f:
    json.dump(
        {
            "profiles": {
                "orders": {
                    "base_url": f"http://127.0.0.1:{upstream.server_address[1]}",
                    "allow": ["GET /v1/orders/*"],
                    "token": {"type": "static", "env": "ORDERS_TOKEN"},
                    "max_calls": 100000,
                }
            }
        },
        f,
    )


def server(args):
    env = dict(os.environ)
    env["ORDERS_TOKEN"] = SECRET
    env["PLIMSOLL_LOG"] = "warn"
    return StdioServerParameters(command=BIN, args=["mcp", *args], env=env)


def everything(result):
    return json.dumps(result.model_dump(mode="json"))


def structured(result):
    return result.structured_content or {}


async def main_checks():
    args = ["--provider", "wasm", "--grants-file", grants, *EXTRA]
    async with stdio_client(server(args)) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            names = sorted(t.name for t in tools)
            check("tools: the seven", names == ["close_session", "fork_session", "open_session", "resume_session", "run_cell", "run_code", "snapshot_session"], names)
            rc = next(t for t in tools if t.name == "run_code")
            langs = rc.input_schema["properties"]["language"]["enum"]
            check("tools: the languages present", "python" in langs and "javascript" in langs, langs)
            check("tools: a description a model can act on", "sandbox" in (rc.description or ""), rc.description)

            r = await s.call_tool("run_code", {"language": "python", "code": "print(6*7)"})
            st = structured(r)
            check("run_code python: ok", not r.is_error and st.get("status") == "ok", st)
            check("run_code python: stdout", st.get("stdout") == "42\n", st)
            check("run_code python: tier and run id", st["isolation"]["tier"] == "process" and len(st["run_id"]) == 32, st)
            check("run_code python: text for the model", "42" in r.content[0].text and "isolation: process" in r.content[0].text, r.content)

            r = await s.call_tool("run_code", {"language": "javascript", "code": "1+1"})
            check("run_code javascript: the trailing value", structured(r).get("result") == "2", structured(r))

            r = await s.call_tool(
                "run_code",
                {"language": "python", "code": "import os\nos.makedirs('out', exist_ok=True)\nopen('out/note.txt','w').write('hello')\nopen('out/fig.png','wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(64))\nopen('out/blob.bin','wb').write(bytes(range(256)) * 100)\n'done'"},
            )
            kinds = sorted(type(c).__name__ for c in r.content)
            check("artifacts: an image, a link and inline text", "ImageContent" in kinds and "ResourceLink" in kinds and "artifact note.txt" in r.content[0].text, kinds)
            link = next(c for c in r.content if type(c).__name__ == "ResourceLink")
            res = await s.read_resource(link.uri)
            check("artifacts: the link reads back", len(res.contents) == 1 and len(res.contents[0].blob) > 0, res)

            # The shell guest: a workspace for an MCP agent, with python3
            # inside it (another guest, never a host process).
            check("tools: the shell is offered", "sh" in langs, langs)
            r = await s.call_tool("run_code", {"language": "sh", "code": "mkdir -p d && cd d && printf 'b\\na\\n' > f && sort f | tr '\\n' , && python3 -c 'print(6*7)'"})
            st = structured(r)
            check("run_code sh: pipes and python3 inside", not r.is_error and st.get("stdout") == "a,b,42\n", st)
            r = await s.call_tool("run_code", {"language": "sh", "code": "curl https://example.com"})
            st = structured(r)
            check("run_code sh: no host program", st.get("exit_code") == 127 and "not found" in st.get("stderr", ""), st)
            o = await s.call_tool("open_session", {"language": "sh"})
            shid = structured(o).get("session")
            check("session sh: opened", not o.is_error and isinstance(shid, str), structured(o))
            await s.call_tool("run_cell", {"session": shid, "code": "mkdir -p w && cd w && export N=7"})
            b = await s.call_tool("run_cell", {"session": shid, "code": "echo $N $(pwd)"})
            check("session sh: cwd and exports carry over", structured(b).get("stdout") == "7 /work/w\n", structured(b))
            await s.call_tool("close_session", {"session": shid})

            # A session that keeps state, and belongs to this connection.
            o = await s.call_tool("open_session", {"language": "python"})
            sid = structured(o).get("session")
            check("session: opened", not o.is_error and isinstance(sid, str) and len(sid) >= 32, structured(o))
            a = await s.call_tool("run_cell", {"session": sid, "code": "x = 41"})
            b = await s.call_tool("run_cell", {"session": sid, "code": "x + 1"})
            check("session: keeps its state", structured(b).get("result") == "42", (structured(a), structured(b)))
            e = await s.call_tool("run_cell", {"session": sid, "code": "raise KeyError('k')"})
            again = await s.call_tool("run_cell", {"session": sid, "code": "x"})
            check("session: an exception keeps it", e.is_error and structured(again).get("result") == "41", structured(again))
            # Snapshot, resume, fork: the state comes back exactly, and the
            # copies are the connection's own sessions.
            snap = await s.call_tool("snapshot_session", {"session": sid})
            snap_id = structured(snap).get("snapshot")
            check("snapshot: taken", not snap.is_error and isinstance(snap_id, str) and len(snap_id) == 64, structured(snap))
            res = await s.call_tool("resume_session", {"snapshot": snap_id})
            rid = structured(res).get("session")
            back = await s.call_tool("run_cell", {"session": rid, "code": "x"})
            check("snapshot: resumed with its state", not res.is_error and structured(back).get("result") == "41", (structured(res), structured(back)))
            fk = await s.call_tool("fork_session", {"session": sid, "count": 2})
            forks = [x["session"] for x in structured(fk).get("sessions", [])]
            check("snapshot: forked twice", not fk.is_error and len(forks) == 2, structured(fk))
            await s.call_tool("run_cell", {"session": forks[0], "code": "x = 1"})
            other = await s.call_tool("run_cell", {"session": forks[1], "code": "x"})
            check("snapshot: forks share nothing", structured(other).get("result") == "41", structured(other))
            nope = await s.call_tool("resume_session", {"snapshot": "0" * 64})
            check("snapshot: an unknown id is refused", nope.is_error and structured(nope)["error"]["code"] == "unknown_snapshot", structured(nope))
            for extra in [rid] + forks:
                await s.call_tool("close_session", {"session": extra})
            c = await s.call_tool("close_session", {"session": sid})
            check("session: closed", structured(c).get("closed") is True, structured(c))
            gone = await s.call_tool("run_cell", {"session": sid, "code": "x"})
            check("session: gone after close", gone.is_error and structured(gone)["error"]["code"] == "not_found", structured(gone))

            # Hostile cells end in their typed outcomes.
            t = await s.call_tool("run_code", {"language": "python", "code": "while True:\n    pass", "timeout_ms": 500})
            check("hostile: an endless loop ends timeout", t.is_error and structured(t).get("status") in ("timeout", "cpu_exhausted"), structured(t))
            m = await s.call_tool("run_code", {"language": "python", "code": "s = 'x' * 10**10"})
            check("hostile: a memory bomb ends memory_exhausted", m.is_error and structured(m).get("status") in ("memory_exhausted", "error"), structured(m))
            j = await s.call_tool("run_code", {"language": "javascript", "code": "let a = []; while (true) a.push(new Array(1e6).fill(1));"})
            check("hostile: a JavaScript memory bomb", j.is_error and structured(j).get("status") in ("memory_exhausted", "error", "timeout", "cpu_exhausted"), structured(j))

            # A grant call reaches the real upstream with the credential the
            # host injected; the credential is in no tool result.
            before = Upstream.hits
            g = await s.call_tool(
                "run_code",
                {"language": "python", "code": "import plimsoll\nr = plimsoll.get('orders', '/v1/orders/7')\nprint(r.status, r.json()['order'])", "grants": ["orders"]},
            )
            check("grant: the upstream answered", structured(g).get("stdout") == "200 /v1/orders/7\n", structured(g))
            check("grant: the host injected the credential", Upstream.hits == before + 1 and Upstream.auth[-1] == f"Bearer {SECRET}", Upstream.auth[-1:])
            check("grant: the credential is nowhere in the answer", SECRET not in everything(g), "")
            refl = await s.call_tool(
                "run_code",
                {"language": "javascript", "code": "plimsoll.get('orders', '/v1/orders/x').status", "grants": ["nope"]},
            )
            check("grant: an unknown profile is refused", refl.is_error and SECRET not in everything(refl), structured(refl))

            # Progress while a run is in flight.
            notes = []

            async def on_progress(progress, total, message):
                notes.append((progress, message))

            p = await s.call_tool(
                "run_code",
                {"language": "python", "code": "import time\ntime.sleep(2.5)\n'slept'", "timeout_ms": 9000},
                progress_callback=on_progress,
            )
            check("progress: notes while the run is in flight", structured(p).get("result") == "'slept'" and len(notes) >= 1, (notes, structured(p)))

            # Cancellation stops the run: the upstream stops being called.
            loop = "import plimsoll\nwhile True:\n    plimsoll.get('orders', '/v1/orders/1')"
            start = Upstream.hits
            with anyio.move_on_after(2.0):
                await s.call_tool("run_code", {"language": "python", "code": loop, "grants": ["orders"], "timeout_ms": 60000})
            check("cancel: the run had started", Upstream.hits > start, Upstream.hits - start)
            await anyio.sleep(0.5)
            settled = Upstream.hits
            await anyio.sleep(1.5)
            check("cancel: the run stopped", Upstream.hits == settled, (settled, Upstream.hits))
            after = await s.call_tool("run_code", {"language": "javascript", "code": "'still serving'"})
            check("cancel: the server keeps serving", structured(after).get("result") == '"still serving"', structured(after))

            # Unknown tools and malformed arguments are MCP errors; the
            # server keeps serving.
            for name, tool, args_ in [
                ("unknown tool", "rm_rf", {}),
                ("wrong type", "run_code", {"language": 5, "code": "1"}),
                ("unknown field", "run_code", {"language": "python", "code": "1", "evil": True}),
                ("missing field", "run_cell", {"code": "1"}),
                ("code over the cap", "run_code", {"language": "python", "code": "#" * (2 << 20)}),
            ]:
                try:
                    r = await s.call_tool(tool, args_)
                    code = ("answered", r.is_error)
                except MCPError as e:
                    code = e.error.code
                check(f"bad call: {name} is an invalid-params error", code == -32602, code)
            r = await s.call_tool("run_code", {"language": "python", "code": "'alive'"})
            check("bad calls: the server keeps serving", structured(r).get("result") == "'alive'", structured(r))

    # A connection's close closes its sessions: a second connection cannot
    # use the first one's session id.
    async with stdio_client(server(args)) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            o = await s.call_tool("open_session", {"language": "javascript"})
            sid = structured(o)["session"]
    async with stdio_client(server(args)) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("run_cell", {"session": sid, "code": "1"})
            check("sessions belong to their connection", r.is_error and structured(r)["error"]["code"] == "not_found", structured(r))

    # Without a provider: the tools are listed, and every call answers the
    # disabled refusal with the way to opt in; nothing runs.
    async with stdio_client(server(["--grants-file", grants])) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            check("disabled: the tools are listed", len(tools) == 7, [t.name for t in tools])
            r = await s.call_tool("run_code", {"language": "python", "code": "print(1)"})
            st = structured(r)
            check("disabled: refused", r.is_error and st.get("status") == "refused", st)
            check("disabled: says how to opt in", "SANDBOX_PROVIDER" in r.content[0].text or "--provider" in r.content[0].text, r.content[0].text)


anyio.run(main_checks)
print("all checks passed")
