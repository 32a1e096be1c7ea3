# attack: create files until the host runs out of inodes
# why: the workspace has caps on entries and bytes, checked by the host
# expect: ok, error, disk_exhausted
# limits: workspace_entries=200 wall_time_ms=10000
# must-not-contain: created 5000
n = 0
try:
    for i in range(5000):
        open('/work/f%d' % i, 'w').write('x')
        n += 1
except OSError:
    pass
print('created', n)
