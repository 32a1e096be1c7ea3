# attack: call the upstream with urllib (plain HTTP, no grant)
# why: the only way out is the broker, and urllib has no socket to use
# expect: ok
# must-contain: blocked
import urllib.request
try:
    urllib.request.urlopen('http://{UPSTREAM}/v1/orders/1', timeout=2).read()
    print('LEAK')
except Exception as e:
    print('blocked', type(e).__name__)
