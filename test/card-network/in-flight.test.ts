import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { it } from 'node:test';
import { MAX_IN_FLIGHT } from '../../src/card-network/link/listener.js';
import { decode, encode } from '../../src/iso8583/codec.js';
import { frame } from '../../src/iso8583/frame.js';
import { RESPONSE_CODES } from '../../src/iso8583/response-codes.js';
import { build, randomStr } from '../helpers/app.js';
import { balances, fundedCard } from '../helpers/cards.js';
import { eachDialect } from '../helpers/dialects.js';
import { authorizationRequest, cardSecrets, linkOf, Peer } from '../helpers/link.js';

/**
 * Issue 39, point 4: at most 256 messages of one connection are being decided at any moment,
 * counted exactly. Before, the bound was checked after a whole chunk had been split: one 64 KiB
 * read of ~290 authorizations started them all. Seen from outside: the gauge
 * cardprogram_network_messages_in_flight, scraped while a slow merchant endpoint holds every
 * decision open for 200 ms.
 */

const MESSAGES = 600;

eachDialect('network link: messages in flight on one connection', (dialect) => {
  it('one write of 600 authorizations: never more than 256 decided at once, the rest wait; every one answered once, in protocol', async (t) => {
    const h = await build(t, dialect);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);

    // The merchant's real-time endpoint approves, after 200 ms: a decision is in flight that long.
    let asked = 0;
    const endpoint = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        asked++;
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"approved":true}'), 200);
      });
    });
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
    t.after(
      () =>
        new Promise<void>((resolve) => {
          endpoint.closeAllConnections();
          endpoint.close(() => resolve());
        }),
    );
    const set = await h.call('/api/network/authorizationEndpointUpdate.html', {
      authorizationUrl: `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/authorize`,
      timeoutMs: 5000,
      randomStr: randomStr(),
    });
    assert.equal(set.status, 200, JSON.stringify(set.body));
    // Time enough for every message to be decided, not answered 91: this test counts, it does not race.
    h.app.svc.config.network = { ...h.app.svc.config.network, deadlineMs: 60_000 };
    const link = await linkOf(t, h);
    const peer = await Peer.open(t, link.port);

    let max = 0;
    let sampling = true;
    t.after(() => {
      sampling = false;
    });
    const sampler = (async () => {
      while (sampling) {
        const text = await h.app.svc.metrics.text();
        max = Math.max(max, Number(/^cardprogram_network_messages_in_flight (\d+)/m.exec(text)?.[1] ?? 0));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    const requests = Array.from({ length: MESSAGES }, () => authorizationRequest(card, { amount: 1 }));
    const bytes = Buffer.concat(requests.map((r) => frame(encode(r))));
    assert.ok(65536 / (bytes.length / MESSAGES) > 1.1 * MAX_IN_FLIGHT, 'one read of the socket (64 KiB) holds more than 256 frames');
    peer.writeRaw(bytes);

    const answers = new Map<string, string[]>();
    for (let i = 0; i < MESSAGES; i++) {
      const answer = decode(await peer.next());
      const stan = answer.fields.get(11) as string;
      answers.set(stan, [...(answers.get(stan) ?? []), `${answer.mti} ${answer.fields.get(39)}`]);
    }
    sampling = false;
    await sampler;

    assert.ok(max <= MAX_IN_FLIGHT, `${max} messages were being decided at once`);
    assert.equal(max, MAX_IN_FLIGHT, 'the bound was reached (the sampling saw the load)');
    const got = requests.map((r) => answers.get(r.fields.get(11) as string) ?? []);
    assert.deepEqual(
      got.map((a) => a.length),
      requests.map(() => 1),
      'each answered once',
    );
    // In protocol: an 0110 with a code of the table. Approved normally; on a machine loaded enough to
    // keep 256 decisions waiting past the endpoint's 5 s, or the database pool's, 05, 91 or 96.
    assert.deepEqual(
      got.filter(([a]) => !(a?.startsWith('0110 ') && a.slice(5) in RESPONSE_CODES)),
      [],
    );
    const approved = got.filter(([a]) => a === '0110 00').length;
    assert.ok(approved > 0);
    assert.ok(asked >= approved);
    assert.equal(Math.round((await balances(h, cardId)).available * 100), 10_000 - approved, 'what was approved is held, nothing else');
  });
});
