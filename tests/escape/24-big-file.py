# attack: write one huge file into the workspace
# why: the workspace's byte cap is enforced by the host
# expect: ok, error, disk_exhausted
# limits: workspace_bytes=1048576 wall_time_ms=10000
# must-not-contain: wrote 64
n = 0
try:
    with open('/work/big', 'wb') as f:
        for i in range(64):
            f.write(b'z' * (1 << 20))
            f.flush()
            n += 1
except OSError:
    pass
print('wrote', n)
