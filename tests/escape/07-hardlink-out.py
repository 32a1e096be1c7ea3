# attack: hard-link a host file into /work
# why: link targets resolve beneath the preopen too; there is no host path to name
# expect: ok
# must-contain: blocked
# must-not-contain: LEAK
import os
try:
    os.link('/etc/passwd', '/work/h')
    print('LEAK', open('/work/h').read()[:20])
except OSError:
    print('blocked')
