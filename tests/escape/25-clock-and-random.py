# attack: read the clock and the random source hoping for host secrets
# why: both are allowed and carry nothing of the host: wall clock, monotonic clock and WASI random
# expect: ok
# must-contain: clock ok
import time, random, os
t = time.time(); m = time.monotonic(); r = os.urandom(16)
print('clock ok' if t > 1.6e9 and m >= 0 and len(r) == 16 else 'odd')
