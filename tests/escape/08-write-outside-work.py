# attack: write files outside /work (/tmp, /, /etc)
# why: nothing outside /work is preopened, so there is nowhere else to write
# expect: ok
# must-contain: blocked 3
res = 0
for p in ['/tmp/x', '/x', '/etc/x']:
    try:
        open(p, 'w').write('x')
    except OSError:
        res += 1
print('blocked', res)
