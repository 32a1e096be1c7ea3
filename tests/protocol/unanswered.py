"""A session call that ran but could not be answered (the audit log filled
after the cell ran) comes back as an error carrying an unanswered record that
continues the chain; the real client checks it and keeps the chain, and the
close's summary counts the call. Run by tests/daemon.rs with
PLIMSOLL_URL, PLIMSOLL_TOKEN and PLIMSOLL_FILL (a file on the audit log's
small file system, to fill it)."""

import os
import sys

from plimsoll_client import Client, PlimsollError

c = Client(os.environ["PLIMSOLL_URL"], token=os.environ["PLIMSOLL_TOKEN"], request_timeout=120)
s = c.open_session()
first = s.run_cell("1 + 1", "python")
assert first.stdout == b"2\n", first

fd = os.open(os.environ["PLIMSOLL_FILL"], os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"\0" * 4096)
except OSError:
    pass
os.close(fd)

unanswered = None
refused = None
answered = 0
for _ in range(200):
    try:
        s.run_cell("1", "python")
        answered += 1
    except PlimsollError as e:
        if e.record is not None:
            assert unanswered is None, "two unanswered calls"
            unanswered = e
            continue
        refused = e
        break

assert unanswered is not None, f"no unanswered call (answered {answered}, then {refused!r})"
rec = unanswered.record
assert rec.unanswered == "unavailable" and rec.result_sha256 == "" and unanswered.not_dispatched is None, rec
assert rec.sequence == s.calls, (rec.sequence, s.calls)
assert refused is not None and refused.not_dispatched == "capacity", refused
summary = s.close()
assert summary.calls == s.calls and summary.last_record_sha256 == rec.sha256, (summary, s.calls)
print(f"unanswered call {rec.sequence} kept in the chain; the close counts {summary.calls}")
