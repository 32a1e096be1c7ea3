# attack: open a TCP connection to the upstream directly, bypassing the broker
# why: wasi:sockets is linked with TCP, UDP and name lookup switched off
# expect: ok
# must-contain: blocked
# must-not-contain: LEAK
import socket
host, port = '{UPSTREAM}'.split(':')
try:
    s = socket.create_connection((host, int(port)), timeout=2)
    print('LEAK connected')
except Exception as e:
    print('blocked', type(e).__name__)
