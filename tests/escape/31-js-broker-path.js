// attack: reach an ungranted route through the broker with .. and encoded slashes
// why: the broker canonicalises and matches templates; the promise rejects with Denied
// expect: ok
// must-contain: denied 3
let n = 0;
for (const p of ['/v1/orders/../admin', '/v1/orders%2f..%2fadmin', '/admin']) {
  try { await plimsoll.get('orders', p); } catch (e) { n++; }
}
'denied ' + n
