// An after-hook as a JavaScript module: marks the sku in the payload only.
module.exports = async (event) => ({ data: { ...event.data, sku: `${event.data.sku} (seen by node)` } });
