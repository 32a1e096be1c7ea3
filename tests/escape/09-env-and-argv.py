# attack: read the environment and argv for secrets and host paths
# why: the WASI context is built with an empty environment and no arguments (the scientific guest's is a fixed, guest-side list: HOME=/work, MPLBACKEND=Agg, …, the same in every run)
# expect: ok
# must-not-contain: CARGO
# must-not-contain: 'PATH'
# must-not-contain: RUST
# must-not-contain: /root
# must-not-contain: {HOST_WORK}
# must-not-contain: sk-static
import os, sys
print(dict(os.environ), sys.argv, sys.executable)
