"""The real plimsoll-client 0.23.0 driving a fleet of plimsolld through HAProxy.

Run by tests/cluster.rs in the virtualenv `make clients` makes. It holds
sessions across the test's phases (a node killed, restarted, drained), so
it is driven one JSON command per line on stdin and answers one JSON line
per command on stdout:

    {"op": "open", "n": 30}            -> {"ids": [...]}
    {"op": "cells", "n": 5}            -> {"ok": k, "bad": [...]}    # x counts 1..n in every held session
    {"op": "value"}                    -> {"<id>": outcome}          # each held session's x
    {"op": "close", "ids": [...]}      -> {"<id>": outcome}
    {"op": "runs", "n": 300}           -> {"ok": k, "bad": [...]}
    {"op": "probe", "id": "...", "token": "other"|"own"} -> outcome
    {"op": "quit"}

An outcome is {"ok": "<stdout>"} or {"error": "<class>", "reason": ..., "code": ...}.
Nothing here mocks the daemon or edits the client: the client verifies
every record itself (its chain, its session, its isolation).
"""

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import plimsoll_client
from plimsoll_client import Client, PlimsollError, SessionEndedError
from plimsoll_client._wire import Msg
from plimsoll_client.client import Session

assert plimsoll_client.__version__ == "0.23.0", plimsoll_client.__version__

URL = os.environ["PLIMSOLL_URL"]
TOKEN = os.environ["PLIMSOLL_TOKEN"]
OTHER = os.environ["PLIMSOLL_OTHER_TOKEN"]

own = Client(URL, token=TOKEN, request_timeout=120)
other = Client(URL, token=OTHER, request_timeout=120)
FLOOR = own.describe().isolation
held = {}
counts = {}


def outcome(f):
    try:
        r = f()
        return {"ok": r.stdout.decode("utf-8", "replace")}
    except SessionEndedError as e:
        return {"error": "SessionEndedError", "reason": e.reason, "code": e.code, "detail": e.detail}
    except PlimsollError as e:
        return {"error": type(e).__name__, "code": getattr(e, "code", ""), "message": str(e)}
    except Exception as e:  # the answer must say what went wrong, not crash the driver
        return {"error": type(e).__name__, "message": str(e)}


def pool():
    return ThreadPoolExecutor(max_workers=8)


def op_open(m):
    with pool() as p:
        sessions = list(p.map(lambda _: own.open_session(minimum_isolation=FLOOR, languages=["python"]), range(m["n"])))
    ids = []
    for s in sessions:
        held[s._id] = s
        counts[s._id] = 0
        ids.append(s._id)
    return {"ids": ids}


def op_cells(m):
    def one(sid):
        s = held[sid]
        bad = []
        for _ in range(m["n"]):
            want = counts[sid] + 1
            r = outcome(lambda: s.run_cell("x = globals().get('x', 0) + 1\nx", "python"))
            if r.get("ok") != f"{want}\n":
                bad.append({"id": sid, "want": want, "got": r})
                break
            counts[sid] = want
        return bad

    with pool() as p:
        bad = [b for bs in p.map(one, list(held)) for b in bs]
    return {"ok": sum(1 for sid in held if not any(b["id"] == sid for b in bad)), "bad": bad}


def op_value(m):
    ids = m.get("ids") or list(held)
    with pool() as p:
        got = list(p.map(lambda sid: outcome(lambda: held[sid].run_cell("x", "python")), ids))
    return dict(zip(ids, got))


def op_close(m):
    out = {}
    for sid in m.get("ids") or list(held):
        s = held.pop(sid, None)
        if s is None:
            continue
        try:
            summary = s.close()
            out[sid] = {"ok": summary.end, "calls": summary.calls}
        except SessionEndedError as e:
            out[sid] = {"error": "SessionEndedError", "reason": e.reason}
        except PlimsollError as e:
            out[sid] = {"error": type(e).__name__, "code": getattr(e, "code", "")}
    return out


def op_runs(m):
    def one(i):
        return outcome(lambda: own.run_javascript(f"console.log({i})", minimum_isolation=FLOOR, timeout=30))

    with pool() as p:
        got = list(p.map(one, range(m["n"])))
    bad = [g for i, g in enumerate(got) if g.get("ok") != f"{i}\n"]
    return {"ok": len(got) - len(bad), "bad": bad[:5]}


def op_probe(m):
    c = other if m.get("token") == "other" else own
    fake = Msg({"session": "0" * 64, "sandbox": "wasm", "isolation": FLOOR}, "open")
    return outcome(lambda: Session(c._transport, m["id"], fake, None).run_cell("1", "python"))


OPS = {"open": op_open, "cells": op_cells, "value": op_value, "close": op_close, "runs": op_runs, "probe": op_probe}

print(json.dumps({"ready": FLOOR}), flush=True)
for line in sys.stdin:
    m = json.loads(line)
    if m["op"] == "quit":
        break
    print(json.dumps(OPS[m["op"]](m)), flush=True)
