# attack: call an API the run was not granted
# why: a call names a grant; a name the run does not hold is denied (and traced)
# expect: ok
# must-contain: denied
import plimsoll
try:
    plimsoll.call('admin', 'GET', '/v1/orders/1')
except plimsoll.Denied:
    print('denied')
