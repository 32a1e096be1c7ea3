# attack: call past the run's broker budget
# why: the envelope's broker_calls is counted by the host; the call after the last one allowed raises BudgetExhausted
# expect: ok
# limits: broker_calls=3
# must-contain: exhausted after 3
# upstream-requests: 3
import plimsoll
n = 0
try:
    while n < 10:
        plimsoll.call('orders', 'GET', '/v1/orders/%d' % n)
        n += 1
except plimsoll.BudgetExhausted:
    print('exhausted after', n)
