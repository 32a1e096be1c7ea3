"""Every string an MCP tool call carries, set to a marker value the daemon
must refuse: the answers are printed, and the test checks that no marker
is in any of them (issue #34: no body value in any error).

Environment: PLIMSOLL_MCP_URL, PLIMSOLL_TOKEN, PLIMSOLL_MARK.
"""

import json
import os

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ["PLIMSOLL_MCP_URL"]
TOKEN = os.environ["PLIMSOLL_TOKEN"]
M = os.environ["PLIMSOLL_MARK"]

CALLS = [
    ("run_code", {"language": M, "code": "1"}),
    ("run_code", {"language": "python", "code": "1", "guest": M}),
    ("run_code", {"language": "python", "code": "1", "grants": [M]}),
    ("run_code", {"language": "python", "code": "1", M: 1}),
    ("open_session", {"language": M}),
    ("open_session", {"language": "python", "guest": M}),
    ("run_cell", {"session": M, "code": "1"}),
    ("run_cell", {"session": "0" * 32, "code": M}),
    ("close_session", {"session": M}),
    (M, {"language": "python", "code": "1"}),
]


async def main():
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    async with streamable_http_client(URL, http_client=client) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            for name, args in CALLS:
                try:
                    r = await s.call_tool(name, args)
                    out = r.model_dump(mode="json")
                    out.pop("meta", None)
                    print("answer", json.dumps({"error": r.is_error, "answer": out}))
                except MCPError as e:
                    print("answer", json.dumps({"mcp_error": e.error.message}))


anyio.run(main)
print("all calls answered")
