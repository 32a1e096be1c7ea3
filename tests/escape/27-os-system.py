# attack: run a shell command with os.system, subprocess and os.fork
# why: WASI has no processes; each attempt raises inside Python
# expect: ok
# must-contain: blocked 3
import os
n = 0
for f in [lambda: os.system('id'), lambda: __import__('subprocess').run(['id']), lambda: os.fork()]:
    try:
        r = f()
        if r not in (None, -1) and r != 127:
            print('LEAK', r)
        else:
            n += 1
    except Exception:
        n += 1
print('blocked', n)
