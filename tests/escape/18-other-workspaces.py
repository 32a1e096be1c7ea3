# attack: look for other runs' workspaces next to this one, and for the host's workspace root
# why: each run has its own preopened directory; its parent is not reachable and host paths do not exist
# expect: ok
# must-contain: blocked 3
import os
n = 0
for p in ['/work/..', '{HOST_WORK}', '/dev/shm']:
    try:
        entries = os.listdir(p)
        if any(e not in ('work',) for e in entries):
            print('LEAK', p, entries[:5])
        else:
            n += 1
    except OSError:
        n += 1
print('blocked', n)
