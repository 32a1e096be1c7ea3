# attack: read the process environment through /proc/self/environ
# why: no /proc exists in the guest's filesystem view
# expect: error
# must-not-contain: PATH=
open('/proc/self/environ').read()
