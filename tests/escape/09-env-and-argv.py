# attack: read the environment and argv for secrets and host paths
# why: the WASI context is built with an empty environment and no arguments
# expect: ok
# must-not-contain: CARGO
# must-not-contain: PATH
# must-not-contain: HOME
# must-not-contain: sk-static
import os, sys
print(dict(os.environ), sys.argv, sys.executable)
