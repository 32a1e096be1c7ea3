# attack: write one huge file into the workspace
# why: the workspace's byte cap is enforced by the host (measured every 50 ms, so a fast guest overshoots by what it writes in that time: SECURITY.md; 256 MiB is far past any such overshoot)
# expect: ok, error, disk_exhausted
# limits: workspace_bytes=1048576 wall_time_ms=10000
# must-not-contain: wrote 256
n = 0
try:
    with open('/work/big', 'wb') as f:
        for i in range(256):
            f.write(b'z' * (1 << 20))
            f.flush()
            n += 1
except OSError:
    pass
print('wrote', n)
