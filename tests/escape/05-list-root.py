# attack: list / to learn about the host
# why: / is not a real directory in the guest: only /work exists under it
# expect: ok, error
# must-not-contain: 'etc'
# must-not-contain: 'proc'
# must-not-contain: 'home'
import os
print(os.listdir('/'))
