# Agent-written Python, as plimsoll runs it: no network, no host files,
# a fresh interpreter instance, everything captured.
import json, statistics, collections

orders = [{"sku": "A-1", "qty": 3}, {"sku": "B-7", "qty": 1}, {"sku": "A-1", "qty": 2}]
by_sku = collections.Counter()
for o in orders:
    by_sku[o["sku"]] += o["qty"]
print("units by sku:", json.dumps(by_sku, sort_keys=True))
print("mean order size:", statistics.mean(o["qty"] for o in orders))

try:
    open("/etc/passwd").read()
except OSError as e:
    print("host files are out of reach:", type(e).__name__)
try:
    import socket
    socket.create_connection(("127.0.0.1", 22), timeout=1)
except OSError as e:
    print("the network is out of reach:", type(e).__name__)

with open("/work/out/summary.json", "w") as f:
    json.dump(by_sku, f)
