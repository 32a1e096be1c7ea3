# attack: reach the interpreter's host glue through __import__, sys.modules and builtins
# why: whatever the module graph exposes is inside the component: the only imports are WASI and the broker, gated by the host
# expect: ok
# must-not-contain: sk-static
# must-not-contain: jwt-signing
import sys, builtins
names = sorted(sys.modules)
found = [n for n in names if 'poll' in n or 'wit' in n or 'broker' in n]
g = [k for k in dir(builtins) if not k.startswith('_')]
print(len(names), found[:10], len(g))
