# attack: reach the network with urllib, http.client, requests and a raw socket: a route outside the grant, an origin no grant names, credentials in the URL, a smuggled Host header, a plain TCP connection
# why: urllib, http.client and requests go through the broker by origin (every check of plimsoll.call), so each of these is refused before anything is sent; there is no socket to use
# expect: ok
# must-contain: blocked 6 of 6
# must-contain: no grant covers this origin
# must-contain: no route of the grant matches
import http.client, socket, urllib.request
import requests

def via_http_client():
    c = http.client.HTTPConnection('{UPSTREAM}'.split(':')[0], int('{UPSTREAM}'.split(':')[1]), timeout=2)
    c.request('GET', '/v1/admin', headers={'Host': 'internal.example'})
    return c.getresponse().read()

attempts = [
    lambda: urllib.request.urlopen('http://{UPSTREAM}/v1/admin', timeout=2).read(),
    lambda: urllib.request.urlopen('http://127.0.0.1:9/v1/orders/1', timeout=2).read(),
    lambda: requests.get('http://user:secret@{UPSTREAM}/v1/orders/1', timeout=2),
    lambda: requests.get('http://{UPSTREAM}/v1/orders/%2e%2e/admin', timeout=2),
    via_http_client,
    lambda: socket.create_connection(('{UPSTREAM}'.split(':')[0], int('{UPSTREAM}'.split(':')[1])), timeout=2),
]
blocked = 0
for f in attempts:
    try:
        f()
        print('LEAK')
    except BaseException as e:
        blocked += 1
        print(type(e).__name__, e)
print('blocked %d of %d' % (blocked, len(attempts)))
