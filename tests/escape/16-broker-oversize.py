# attack: send a request body larger than the cap
# why: the broker checks request_bytes before anything is sent
# expect: ok
# limits: request_bytes=1024
# must-contain: too large
import plimsoll
try:
    plimsoll.call('orders', 'POST', '/v1/orders', body=b'x' * 4096)
    print('LEAK sent')
except plimsoll.RequestTooLarge:
    print('too large')
