# attack: read the host's /etc/passwd by absolute path
# why: the WASI filesystem has exactly one preopen, /work; there is no /etc to open
# expect: error
# must-contain: FileNotFoundError
# must-not-contain: root:x:0
open('/etc/passwd').read()
