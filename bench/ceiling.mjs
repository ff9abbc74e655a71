// The ceiling of this machine for the HTTP benchmark: a bare node:http server that does the least a
// JSON API can do — read the body, JSON.parse it, answer a JSON body — with no framework, no
// signature, no database. `?size=N` sets the answer's size in bytes, to match the service's answer.
import http from 'node:http';

const cache = new Map();
function reply(size) {
  let body = cache.get(size);
  if (!body) {
    const filler = 'x'.repeat(Math.max(0, size - 40));
    body = Buffer.from(JSON.stringify({ code: '0', msg: 'success', model: filler }).padEnd(size, ' '));
    cache.set(size, body);
  }
  return body;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let parsed;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (typeof parsed !== 'object') {
      res.writeHead(400).end();
      return;
    }
    const size = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('size') ?? 100);
    const body = reply(size);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
});
server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
