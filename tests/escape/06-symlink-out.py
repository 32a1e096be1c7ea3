# attack: plant a symlink in /work pointing at /etc/passwd, then read through it
# why: wasmtime refuses to create absolute or escaping symlinks, and never follows one out of the preopen
# expect: ok
# must-contain: blocked
# must-not-contain: LEAK
import os
res = []
for target in ['/etc/passwd', '../../../../etc/passwd', '{HOST_SECRET}']:
    try:
        os.symlink(target, '/work/l')
        try:
            res.append('LEAK ' + open('/work/l').read()[:20])
        except OSError:
            res.append('blocked read')
        os.remove('/work/l')
    except OSError:
        res.append('blocked create')
print(res)
