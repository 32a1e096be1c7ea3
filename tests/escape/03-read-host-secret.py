# attack: read a file on the host by its real path (the daemon's config or grants file)
# why: host paths do not exist inside the guest; only /work is preopened
# expect: error
# must-not-contain: HOST-SECRET-CANARY
print(open('{HOST_SECRET}').read())
