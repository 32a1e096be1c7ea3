// Agent-written JavaScript, as plimsoll runs it in QuickJS.
const orders = [{ sku: "A-1", qty: 3 }, { sku: "B-7", qty: 1 }, { sku: "A-1", qty: 2 }];
const bySku = {};
for (const o of orders) bySku[o.sku] = (bySku[o.sku] || 0) + o.qty;
console.log("units by sku:", JSON.stringify(bySku));
let denied;
try {
  await plimsoll.get("orders", "/v1/orders/1");
} catch (e) {
  denied = e.name; // no grant attached to this run: the broker says no
}
console.log("broker without a grant:", denied);
bySku
