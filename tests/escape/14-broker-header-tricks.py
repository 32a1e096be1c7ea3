# attack: override the credential or smuggle a request through headers
# why: the broker owns Authorization, Host and hop-by-hop headers; a guest that sets them is denied before anything is sent
# expect: ok
# must-contain: refused 4
import plimsoll
n = 0
for h in [{'Authorization': 'Bearer mine'}, {'Host': 'evil.example'}, {'Transfer-Encoding': 'chunked'}, {'X-A': 'b\r\nInjected: 1'}]:
    try:
        plimsoll.call('orders', 'GET', '/v1/orders/1', headers=h)
    except plimsoll.BrokerError:
        n += 1
    except ValueError:
        n += 1
print('refused', n)
