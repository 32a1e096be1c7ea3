"""A burst of concurrent `open_session` calls on one MCP connection never
opens more code sessions than the caller's cap (issue #34): over stdio
against `plimsoll mcp`, or over streamable HTTP against plimsolld.

Environment: PLIMSOLL_CAP (the caller's session cap); then either
PLIMSOLL_BIN and PLIMSOLL_MCP_ARGS (stdio: the server is started with
SANDBOX_MAX_SESSIONS_PER_CALLER=PLIMSOLL_CAP), or PLIMSOLL_MCP_URL and
PLIMSOLL_TOKEN (HTTP). Prints `opened N of M` and `all checks passed`.
"""

import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CAP = int(os.environ["PLIMSOLL_CAP"])
BURST = 12
SEEN = []


def transport():
    url = os.environ.get("PLIMSOLL_MCP_URL")
    if url:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        token = os.environ["PLIMSOLL_TOKEN"]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})

        async def note_session(response):
            sid = response.headers.get("mcp-session-id")
            if sid and sid not in SEEN:
                SEEN.append(sid)
                # The MCP session's id (a capability; the daemon never logs it).
                print(f"mcp session {sid}", flush=True)

        client.event_hooks["response"].append(note_session)
        return streamable_http_client(url, http_client=client)
    env = dict(os.environ)
    env["SANDBOX_MAX_SESSIONS_PER_CALLER"] = str(CAP)
    args = ["mcp"] + [a for a in os.environ.get("PLIMSOLL_MCP_ARGS", "").split() if a]
    return stdio_client(StdioServerParameters(command=os.environ["PLIMSOLL_BIN"], args=args, env=env))


async def main():
    async with transport() as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as s:
            await s.initialize()
            results = []

            async def one():
                r = await s.call_tool("open_session", {"language": "python"})
                sc = r.structured_content or {}
                results.append((r.is_error, sc))

            async with anyio.create_task_group() as tg:
                for _ in range(BURST):
                    tg.start_soon(one)
            opened = [sc["session"] for err, sc in results if not err and sc.get("session")]
            refused = [sc for err, sc in results if err]
            print(f"opened {len(opened)} of {BURST}")
            if len(opened) != CAP:
                print(f"FAIL the cap is {CAP}: {results}")
                sys.exit(1)
            codes = {((sc.get("error") or {}).get("code")) for sc in refused}
            if len(refused) != BURST - CAP or not codes <= {"session_limit", "busy", "too_many_sessions"}:
                print(f"FAIL the rest must be refused for the cap: {refused}")
                sys.exit(1)
            # Every session opened works.
            for sid in opened:
                r = await s.call_tool("run_cell", {"session": sid, "code": "1+1"})
                if (r.structured_content or {}).get("result") != "2":
                    print(f"FAIL a session opened in the burst does not run: {r.structured_content}")
                    sys.exit(1)


anyio.run(main)
print("all checks passed")
