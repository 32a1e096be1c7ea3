# attack: reach routes outside the grant with path tricks (.., encoded slashes, double slashes, a query smuggling a path)
# why: the broker canonicalises the path and matches route templates against it; anything non-canonical is denied and traced
# expect: ok
# must-contain: denied 6
import plimsoll
n = 0
for p in ['/v1/orders/../admin', '/v1/orders/%2e%2e/admin', '/v1/orders%2f..%2fadmin', '//v1/orders/1', '/v1/orders/1/../../admin', '/admin?x=/v1/orders/1']:
    try:
        plimsoll.call('orders', 'GET', p)
    except plimsoll.Denied:
        n += 1
print('denied', n)
