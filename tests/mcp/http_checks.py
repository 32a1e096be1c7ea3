"""plimsolld's `/mcp` (streamable HTTP) driven by the official Python MCP
SDK (`mcp` 2.3.0).

Environment: PLIMSOLL_MCP_URL, PLIMSOLL_TOKEN (a caller with `code:run`),
PLIMSOLL_OTHER_TOKEN (another caller), PLIMSOLL_SECRET (the credential the
daemon's `orders` grant injects). Prints `ok   <name>` per check and `all
checks passed` at the end; any failure exits non-zero.
"""

import json
import os
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ["PLIMSOLL_MCP_URL"]
TOKEN = os.environ["PLIMSOLL_TOKEN"]
OTHER = os.environ["PLIMSOLL_OTHER_TOKEN"]
SECRET = os.environ["PLIMSOLL_SECRET"]
NOSCOPE = os.environ["PLIMSOLL_NOSCOPE_TOKEN"]


def check(name, cond, detail=""):
    if not cond:
        print(f"FAIL {name}: {detail}")
        sys.exit(1)
    print(f"ok   {name}")


def st(result):
    return result.structured_content or {}


def connect(token):
    return streamable_http_client(URL, http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}))


async def main():
    # Without a token, or with a wrong one: the REST API's 401, before MCP.
    async with httpx2.AsyncClient() as h:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        r = await h.post(URL, json=body, headers=accept)
        check("no token: 401 unauthorized", r.status_code == 401 and r.json()["code"] == "unauthorized", (r.status_code, r.text[:200]))
        r = await h.post(URL, json=body, headers={**accept, "Authorization": "Bearer wrong"})
        check("wrong token: 401", r.status_code == 401, r.status_code)
        r = await h.post(URL, json=body, headers={**accept, "Authorization": f"Bearer {NOSCOPE}"})
        check("a caller without code:run: 403", r.status_code == 403 and r.json()["code"] == "forbidden", r.status_code)
        big = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_code", "arguments": {"language": "python", "code": "#" * (100 << 20)}}}
        try:
            r = await h.post(URL, content=json.dumps(big), headers={**accept, "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
            seen = r.status_code
        except (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError):
            # The daemon answered 413 and closed while the client was still
            # sending: the body was never read.
            seen = "closed"
        check("a 100 MiB body: refused unread (413, or closed mid-send)", seen in (413, "closed"), seen)
        r = await h.post(URL, content=json.dumps([body] * 10000), headers={**accept, "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        check("a batch of 10,000 calls: refused, typed", 400 <= r.status_code < 500, r.status_code)
        # An MCP session belongs to the caller that opened it, for every
        # method: another caller's token with its id is 404, like an
        # unknown id.
        mine = {**accept, "Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        r = await h.post(URL, json=body, headers=mine)
        sid = r.headers.get("mcp-session-id")
        check("raw: initialize names a session", r.status_code == 200 and sid, (r.status_code, dict(r.headers)))
        theirs = {**accept, "Authorization": f"Bearer {OTHER}", "Content-Type": "application/json", "Mcp-Session-Id": sid}
        listing = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}
        r = await h.post(URL, json=listing, headers=theirs)
        check("raw: another caller's session id is 404 (POST)", r.status_code == 404 and r.json()["code"] == "unknown_session", r.status_code)
        r = await h.get(URL, headers=theirs)
        check("raw: another caller's session id is 404 (GET stream)", r.status_code == 404, r.status_code)
        r = await h.delete(URL, headers=theirs)
        check("raw: another caller cannot end it (DELETE)", r.status_code == 404, r.status_code)
        r = await h.post(URL, json=listing, headers={**theirs, "Mcp-Session-Id": "not-a-session"})
        check("raw: an unknown session id is 404 the same", r.status_code == 404 and r.json()["code"] == "unknown_session", r.status_code)
        r = await h.delete(URL, headers={**mine, "Mcp-Session-Id": sid})
        check("raw: its caller ends it", r.status_code < 300, r.status_code)

    async with connect(TOKEN) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            names = sorted(t.name for t in (await s.list_tools()).tools)
            check("http: the seven tools", names == ["close_session", "fork_session", "open_session", "resume_session", "run_cell", "run_code", "snapshot_session"], names)
            r = await s.call_tool("run_code", {"language": "python", "code": "print(6*7)"})
            check("http: python runs", st(r).get("stdout") == "42\n" and st(r)["isolation"]["tier"] == "process", st(r))
            r = await s.call_tool("run_code", {"language": "javascript", "code": "1+1"})
            check("http: javascript runs", st(r).get("result") == "2", st(r))
            g = await s.call_tool(
                "run_code",
                {"language": "python", "code": "import plimsoll\nr = plimsoll.get('orders', '/v1/orders/7')\nprint(r.status)", "grants": ["orders"]},
            )
            check("http: a grant call", st(g).get("stdout") == "200\n", st(g))
            check("http: the credential is nowhere in the answer", SECRET not in json.dumps(g.model_dump(mode="json")), "")
            t = await s.call_tool("run_code", {"language": "javascript", "code": "for(;;){}", "timeout_ms": 300})
            check("http: an endless loop ends timeout", t.is_error and st(t).get("status") in ("timeout", "cpu_exhausted"), st(t))
            o = await s.call_tool("open_session", {"language": "python"})
            sid = st(o).get("session")
            await s.call_tool("run_cell", {"session": sid, "code": "x = 20"})
            b = await s.call_tool("run_cell", {"session": sid, "code": "x * 2 + 2"})
            check("http: a session keeps its state", st(b).get("result") == "42", st(b))
            try:
                await s.call_tool("run_code", {"language": "cobol", "code": "1"})
                code = "answered"
            except MCPError as e:
                code = e.error.code
            check("http: malformed arguments are an MCP error", code == -32602, code)
            r = await s.call_tool("run_code", {"language": "python", "code": "'alive'"})
            check("http: the server keeps serving", st(r).get("result") == "'alive'", st(r))
            with anyio.move_on_after(1.0) as scope:
                await s.call_tool("run_code", {"language": "javascript", "code": "for(;;){}", "timeout_ms": 9000})
            check("http: a long run is canceled", scope.cancelled_caught, "")
            r = await s.call_tool("run_code", {"language": "javascript", "code": "'after'"})
            check("http: serving after the cancel", st(r).get("result") == '"after"', st(r))

    # Another caller cannot reach the first caller's session.
    async with connect(OTHER) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            r = await s.call_tool("run_cell", {"session": sid, "code": "x"})
            check("http: another caller's session is not_found", r.is_error and st(r)["error"]["code"] == "not_found", st(r))


anyio.run(main)
print("all checks passed")
