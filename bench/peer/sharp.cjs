// The sharp peer of bench/images: the benchmark's two operations with sharp (libvips), the way
// a Node.js service would run them. `sharp` comes from the npm registry (bench/images installs
// it under its cache and sets NODE_PATH).
//
//   node sharp.cjs inprocess FILE ITERATIONS   one JSON line per operation: median ms, size
//   node sharp.cjs server PORT FILE            GET /fit/{n} (fit inside {n}x200) and
//                                              GET /crop/{n} (crop 0x0:400x400, fit {n}x250)
//
// libvips' operation cache is off, so that every call computes its image (cold), as svc's cold
// requests do; sharp's other settings are its defaults (JPEG quality 80, threads per core).
'use strict';
const fs = require('fs');
const http = require('http');
const sharp = require('sharp');

sharp.cache(false);

const operations = {
  fit: (input, n) =>
    sharp(input).rotate().resize(n, 200, { fit: 'inside' }).jpeg({ quality: 80 }),
  crop: (input, n) =>
    sharp(input)
      .rotate()
      .extract({ left: 0, top: 0, width: 400, height: 400 })
      .resize(n, 250, { fit: 'inside' })
      .jpeg({ quality: 80 }),
};

async function inprocess(file, iterations) {
  const input = fs.readFileSync(file);
  for (const [name, op, n] of [
    ['fit 300x200', operations.fit, 300],
    ['crop 0x0:400x400, fit 250x250', operations.crop, 250],
  ]) {
    const first = await op(input, n).toBuffer({ resolveWithObject: true });
    const times = [];
    for (let i = 0; i < iterations; i++) {
      const started = process.hrtime.bigint();
      await op(input, n).toBuffer();
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    times.sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        operation: name,
        ms: times[Math.floor(times.length / 2)],
        width: first.info.width,
        height: first.info.height,
      }),
    );
  }
}

function server(port, file) {
  const input = fs.readFileSync(file);
  http
    .createServer(async (req, res) => {
      const match = /^\/(fit|crop)\/(\d+)$/.exec(req.url);
      if (!match) {
        res.writeHead(404).end();
        return;
      }
      try {
        const out = await operations[match[1]](input, Number(match[2])).toBuffer();
        res.writeHead(200, { 'Content-Type': 'image/jpeg', 'Content-Length': out.length });
        res.end(out);
      } catch (e) {
        res.writeHead(500).end(String(e));
      }
    })
    .listen(port, '127.0.0.1', () => console.log(`listening on ${port}`));
}

const [mode, a, b] = process.argv.slice(2);
if (mode === 'inprocess') {
  inprocess(a, Number(b)).catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else if (mode === 'server') {
  server(Number(a), b);
} else {
  console.error('usage: node sharp.cjs inprocess FILE ITERATIONS | server PORT FILE');
  process.exit(2);
}
