// The Node.js worker of svc's JavaScript handlers (`runtime/src/functions/node/mod.rs`).
//
// Reads one request per line on standard input: {"module": path, "env": {...}, "event": {...}}.
// Loads the module once and keeps it; calls its handler with the event; writes one answer line,
// marked, on standard output: {"ok": true, "response": value, "logs": [...]} or
// {"ok": false, "error": text, "logs": [...]}. Requests are answered one at a time.
'use strict';

const readline = require('readline');
const util = require('util');
const { pathToFileURL } = require('url');

const MARK = '\u001esvc:';
const loaded = new Map();
let logs = null;

// What the handler writes through `console` is the invocation's logs.
for (const level of ['log', 'info', 'warn', 'error', 'debug']) {
  console[level] = (...args) => {
    const line = util.format(...args);
    if (logs) {
      logs.push(line);
    } else {
      process.stderr.write(line + '\n');
    }
  };
}

function handlerOf(mod) {
  if (typeof mod === 'function') return mod;
  if (mod && typeof mod.default === 'function') return mod.default;
  if (mod && mod.default && typeof mod.default.default === 'function') return mod.default.default;
  return null;
}

async function load(path) {
  if (loaded.has(path)) return loaded.get(path);
  let mod;
  if (path.endsWith('.mjs')) {
    mod = await import(pathToFileURL(path).href);
  } else {
    try {
      mod = require(path);
    } catch (e) {
      // An ES module in a `.js` file.
      if (e && (e.code === 'ERR_REQUIRE_ESM' || e instanceof SyntaxError)) {
        mod = await import(pathToFileURL(path).href);
      } else {
        throw e;
      }
    }
  }
  const handler = handlerOf(mod);
  if (!handler) {
    throw new Error(`${path} exports no function: write \`module.exports = event => …\` or \`export default event => …\``);
  }
  loaded.set(path, handler);
  return handler;
}

function text(e) {
  if (e instanceof Error) return e.message || String(e);
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e);
  } catch (_) {
    return String(e);
  }
}

function answer(reply) {
  let line;
  try {
    line = JSON.stringify(reply);
  } catch (e) {
    line = JSON.stringify({ ok: false, error: `The function's result is not JSON: ${text(e)}`, logs: reply.logs });
  }
  process.stdout.write(MARK + line + '\n');
}

const queue = [];
let busy = false;

async function run(request) {
  logs = [];
  const saved = {};
  for (const [key, value] of Object.entries(request.env || {})) {
    saved[key] = process.env[key];
    process.env[key] = value;
  }
  let reply;
  try {
    const handler = await load(request.module);
    const value = await handler(request.event);
    reply = { ok: true, response: value === undefined ? null : value, logs };
  } catch (e) {
    reply = { ok: false, error: text(e), logs };
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
  logs = null;
  answer(reply);
}

async function next() {
  if (busy) return;
  busy = true;
  while (queue.length > 0) {
    await run(queue.shift());
  }
  busy = false;
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch (_) {
    return;
  }
  queue.push(request);
  next();
});
