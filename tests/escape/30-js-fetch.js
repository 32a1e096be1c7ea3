// attack: use fetch to reach a route outside the grant, an origin no grant names, a path trick, or carry credentials in the URL; or find XMLHttpRequest
// why: fetch goes through the broker by origin, with every check of plimsoll.call: each of these is refused before anything is sent, and there is no XMLHttpRequest
// expect: ok
// must-contain: no grant covers this origin
// must-contain: no route of the grant matches
// must-contain: XMLHttpRequest=undefined
// must-not-contain: SENT
const out = [];
for (const url of [
    "http://{UPSTREAM}/v1/admin",
    "http://127.0.0.1:9/v1/orders/1",
    "http://{UPSTREAM}/v1/orders/%2e%2e/admin",
    "http://user:secret@{UPSTREAM}/v1/orders/1",
    "HTTP://{UPSTREAM}:/v1/admin",
]) {
    try {
        const r = await fetch(url, { headers: { "x-forwarded-for": "10.0.0.1" } });
        out.push("SENT " + r.status);
    } catch (e) {
        out.push(e.name + ": " + (e.cause ? e.cause.name + " " + e.cause.reason : e.message));
    }
}
out.push("XMLHttpRequest=" + typeof XMLHttpRequest);
out.join("\n")
