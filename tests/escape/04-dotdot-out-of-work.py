# attack: climb out of the workspace with ../ from /work
# why: wasmtime resolves every path beneath the preopen and refuses components that leave it
# expect: ok
# must-contain: blocked
# must-not-contain: LEAK
out = []
for p in ['/work/../etc/passwd', '../../../../etc/passwd', '/work/../../../../etc/passwd', '/work/./../etc/passwd']:
    try:
        out.append('LEAK ' + open(p).read()[:20])
    except OSError:
        out.append('blocked')
print(out)
