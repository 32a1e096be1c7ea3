// attack: use fetch or XMLHttpRequest to reach the upstream
// why: neither exists; the only way out is plimsoll.call, gated by the broker
// expect: ok
// must-contain: undefined undefined
[typeof fetch, typeof XMLHttpRequest].join(' ')
