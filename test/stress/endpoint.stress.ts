import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { it } from 'node:test';
import { eachDialect } from '../helpers/dialects.js';
import { holderWithCard, served } from '../races/served.js';

// `npm run stress:endpoint` (issue 32, point 4): authorizations for a merchant whose real-time
// endpoint answers at once, under load, and the share of decisions that reached the endpoint.
// STRESS_SECONDS (default 30) per database; STRESS_CLIENTS concurrent clients (default 100), of which
// STRESS_TOPUP_SHARE (default 0.3) send top-ups (the merchant's hot funding row) instead;
// ENDPOINT_TIMEOUT_MS the endpoint's deadline (default 2000, the service's default); DATABASE_URL
// picks one database.
const seconds = Number(process.env.STRESS_SECONDS ?? 30);
const clients = Number(process.env.STRESS_CLIENTS ?? 100);
const topUpShare = Number(process.env.STRESS_TOPUP_SHARE ?? 0.3);
const timeoutMs = Number(process.env.ENDPOINT_TIMEOUT_MS ?? 2000);
const CARDS = 20;
const ENDPOINT = `
let n = 0;
const server = require('node:http').createServer((req, res) => {
  if (req.url === '/count') return res.end(String(n));
  n++;
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"approved":true}'); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
`;

eachDialect('the merchant’s endpoint under load', (dialect) => {
  it('an endpoint answering at once is asked before its deadline', { timeout: seconds * 1000 * 4 + 120_000 }, async (t) => {
    // The merchant's endpoint in a process of its own, as a merchant's is: it answers at once and
    // counts what it received (read back through /count).
    const endpoint = spawn(process.execPath, ['-e', ENDPOINT], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => endpoint.kill());
    const port = await new Promise<number>((resolve) => endpoint.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    const received = async () => Number(await (await fetch(`http://127.0.0.1:${port}/count`)).text());
    const s = await served(t, dialect);
    const cards: string[] = [];
    for (let i = 0; i < CARDS; i++) cards.push((await holderWithCard(s, 100_000)).cardId);
    await s.must('/api/network/authorizationEndpointUpdate.html', {
      authorizationUrl: `http://127.0.0.1:${port}/authorize`,
      timeoutMs,
    });

    const until = Date.now() + seconds * 1000;
    const codes: Record<string, number> = {};
    let authorizations = 0;
    let topUps = 0;
    const client = async (i: number) => {
      const topUpper = i < Math.round(clients * topUpShare);
      while (Date.now() < until) {
        const cardId = cards[Math.floor(Math.random() * cards.length)] as string;
        if (topUpper) {
          await s.post('/api/network/cardTopUp.html', { cardId, amount: 1 });
          topUps++;
        } else {
          const r = await s.post('/sandbox/network/authorize', { cardId, amount: 0.01 });
          const code = r.status === 200 ? '0' : String(r.body.code);
          codes[code] = (codes[code] ?? 0) + 1;
          authorizations++;
        }
      }
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: clients }, (_, i) => client(i)));
    const elapsed = (Date.now() - started) / 1000;

    const reached = await received();
    const rows = await s.h.db.database.db.selectFrom('authorization_requests').select(['outcome']).execute();
    const outcomes: Record<string, number> = {};
    for (const r of rows) outcomes[String(r.outcome)] = (outcomes[String(r.outcome)] ?? 0) + 1;
    const decisions = rows.length;
    const answered = (outcomes.approved ?? 0) + (outcomes.declined ?? 0);
    const metrics = (await s.h.app.svc.metrics.text())
      .split('\n')
      .filter(
        (l) =>
          (l.startsWith('cardprogram_authorization_endpoint_') && !l.includes('_bucket')) ||
          /^cardprogram_nodejs_eventloop_lag_(mean|p99|max)_seconds /.test(l),
      );
    t.diagnostic(
      `${dialect.name}: ${clients} clients (${Math.round(clients * topUpShare)} topping up) for ${elapsed.toFixed(1)} s, deadline ${timeoutMs} ms: ` +
        `${authorizations} authorizations (${(authorizations / elapsed).toFixed(0)}/s) ${JSON.stringify(codes)}, ${topUps} top-ups; ` +
        `${decisions} endpoint decisions ${JSON.stringify(outcomes)}, the endpoint received ${reached}; ` +
        `answered in time ${((100 * answered) / Math.max(decisions, 1)).toFixed(2)} %, reached ${((100 * Math.min(reached, decisions)) / Math.max(decisions, 1)).toFixed(2)} %`,
    );
    for (const l of metrics) t.diagnostic(l);
    assert.ok(decisions > 0);
    assert.ok(answered / decisions >= Number(process.env.STRESS_MIN_SHARE ?? 0.99), `answered in time: ${answered} of ${decisions}`);
  });
});
