// A server-side subscription's handler as an async JavaScript function: passes the event on to
// the receiver at RECEIVER, and fails while the receiver refuses it (so that it is delivered
// again).
module.exports = async function (event) {
  console.log('jsOrders got', event.data.Order.node.text);
  const res = await fetch(process.env.RECEIVER, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ data: event.data, context: event.context }),
  });
  if (!res.ok) {
    throw new Error(`the receiver answered ${res.status}`);
  }
};
