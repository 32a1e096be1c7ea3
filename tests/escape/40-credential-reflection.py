# attack: make the upstream echo the injected credential back, raw and encoded, in the body and in a header
# why: the broker searches every answer for the call's credential in the forms servers write it (raw, base64/base64url at any alignment, percent, JSON escapes, a JWT's signature) and withholds a match as credential_reflected; an encoded answer it cannot check is withheld too
# expect: ok
# must-contain: withheld 9
# upstream-requests: 9
import plimsoll
n = 0
for mode in ['raw', 'header', 'base64', 'base64url', 'base64-line', 'percent', 'json', 'json-html', 'gzip']:
    try:
        plimsoll.call('orders', 'GET', '/v1/echo/' + mode)
        print('delivered', mode)
    except plimsoll.BrokerError as e:
        if 'credential_reflected' in str(e):
            n += 1
        else:
            print('other error', mode, e)
print('withheld', n)
