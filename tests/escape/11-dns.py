# attack: resolve a name (DNS exfiltration)
# why: name lookup is switched off in wasi:sockets; the call fails before any packet
# expect: ok
# must-contain: blocked
import socket
try:
    print('LEAK', socket.getaddrinfo('example.com', 80))
except Exception as e:
    print('blocked', type(e).__name__)
