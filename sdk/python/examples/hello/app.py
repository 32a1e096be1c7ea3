"""A minimal plimsoll agent in Python: print a line, make one granted call,
handle the typed error if the host refuses it.

Build:  sdk/python/build.sh            (-> target/sdk/python/hello.wasm)
Run:    plimsoll run --provider wasm --grants-file grants.json --grant orders \\
            target/sdk/python/hello.wasm
"""

import sys

from plimsoll_guest import agent, broker


def main() -> int:
    print("hello from a Python agent")
    try:
        resp = broker.get("orders", "/v1/orders/42")
    except broker.Denied as e:
        print(f"the grant does not allow it: {e.detail}", file=sys.stderr)
        return 1
    except broker.CallError as e:  # budget, size, timeout, upstream
        print(f"the call failed: {e}", file=sys.stderr)
        return 1
    print(f"order 42: {resp.status} {resp.text()}")
    return 0


Run = agent.command(main)
