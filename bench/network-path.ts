/**
 * One authorization (0100) through the link, taken apart, in process (issue 42):
 *
 * - the statements it sends to the database (their count, and each by its text), over the real
 *   link (src/card-network/link/listener.ts on loopback, the simulator's client), one message at a time;
 * - the link's own path per message, each step timed alone over the same message, many times: the
 *   decoding, the PAN's keyed hash, the CVV2 (derived and compared), the identity's (content's)
 *   keyed hash, the decision gate, the encoding of the answer and its frame (CPU time, robust to
 *   other work on the machine). Their sum is what the
 *   link itself costs a message, beside the database's work and the verbs'.
 *
 *   npm run bench:network-path                    SQLite
 *   npm run bench:network-path -- --db postgres
 *   npm run bench:network-path -- --messages 500  (200 by default)
 */
import { randomBytes } from 'node:crypto';
import { buildApp } from '../src/app.js';
import { cardByPan, contentHash } from '../src/card-network/card-data.js';
import { DecisionGate } from '../src/card-network/decision-gate.js';
import { linkIdentity } from '../src/card-network/identity.js';
import { LinkClient, transmissionTime } from '../src/card-network/link/client.js';
import { startLink } from '../src/card-network/link/listener.js';
import { presentedCardData } from '../src/cards/verification.js';
import { loadConfig } from '../src/config.js';
import { hmacSign, signingString } from '../src/http/signing.js';
import { answerMti, decode, encode, type IsoMessage, message } from '../src/iso8583/codec.js';
import { frame } from '../src/iso8583/frame.js';
import { childDatabaseUrl } from '../test/helpers/cli.js';
import { arg, filledDatabase } from './filled.js';
import { recordTemplate, replayPostgres, replaySqlite } from './statements-writes.js';

const dbName = arg('db', 'sqlite');
const MESSAGES = Number(arg('messages', '200'));
const ROUNDS = 5000;
/** Clients of the database-alone replay: issue 42's 10 (as many as the service's pool). */
const CLIENTS = 10;
process.env.BENCH_TRADES ??= '200';

const { db: isolated, env, cards: cardIds, demo, cleanup } = await filledDatabase(dbName, 'network-path', 'silent');
try {
  const app = await buildApp(loadConfig({ ...env, CARDPROGRAM_NETWORK_PORT: '0', CARDPROGRAM_NETWORK_HOST: '127.0.0.1' }), {
    logger: false,
  });
  const svc = app.svc;
  const call = async (url: string, body: Record<string, unknown>) => {
    const signed: Record<string, unknown> = { ...body, appId: demo.appId, randomStr: randomBytes(16).toString('hex') };
    signed.sign = hmacSign(demo.secret, signingString(signed));
    const res = await app.inject({ method: 'POST', url, payload: signed });
    return res.json() as { model?: Record<string, unknown> };
  };
  const cards: Array<{ pan: string; expiry: string; cvv: string }> = [];
  for (const cardId of cardIds.slice(0, 20)) {
    const model = (await call('/sandbox/network/cardDetails', { cardId })).model as
      | { cardNo: string; expiry: string; cvv: string }
      | undefined;
    const status =
      ((await call('/api/network/cardQuery.html', { cardId })).model as { status?: string; currency?: string } | undefined) ?? {};
    if (!model || status.status !== 'active' || (status.currency ?? 'EUR') !== 'EUR') continue;
    await call('/api/network/cardTopUp.html', { cardId, amount: 500 });
    const [mm, yy] = model.expiry.split('/');
    cards.push({ pan: model.cardNo, expiry: `${yy}${mm}`, cvv: model.cvv });
  }
  if (cards.length === 0) throw new Error('no active EUR card');
  let stan = 0;
  const purchase = (card: (typeof cards)[number]): IsoMessage => {
    stan++;
    return message('0100', {
      2: card.pan,
      3: '000000',
      4: '000000000001',
      7: transmissionTime(),
      11: String(stan % 1_000_000).padStart(6, '0'),
      12: '120000',
      13: '1125',
      14: card.expiry,
      18: '5411',
      22: '810',
      32: '10000001',
      37: 'BENCH0000001',
      41: 'BENCH001',
      42: 'BENCHACCEPTOR01',
      43: `${'Bench Store'.padEnd(25)}${'Berlin'.padEnd(13)}DE`,
      48: `92${String(card.cvv.length).padStart(2, '0')}${card.cvv}`,
      49: '978',
    });
  };

  // 1. Statements per authorization, over the link.
  const link = await startLink(svc);
  if (!link) throw new Error('the link did not start');
  const client = await LinkClient.connect({ host: '127.0.0.1', port: link.port });
  for (let i = 0; i < 20; i++) await client.ask(purchase(cards[i % cards.length] as (typeof cards)[number]), 10_000);
  const byText = new Map<string, number>();
  let statements = 0;
  svc.database.onStatement = (text) => {
    statements++;
    const key = text.replace(/\s+/g, ' ').slice(0, 110);
    byText.set(key, (byText.get(key) ?? 0) + 1);
  };
  let approved = 0;
  const started = performance.now();
  for (let i = 0; i < MESSAGES; i++) {
    const answer = await client.ask(purchase(cards[i % cards.length] as (typeof cards)[number]), 10_000);
    if (answer.fields.get(39) === '00') approved++;
  }
  const sequentialMs = (performance.now() - started) / MESSAGES;
  svc.database.onStatement = undefined;
  // 3's templates: each card's authorization recorded twice, what differs between the two a fresh value on each replay.
  const templates = [];
  for (const c of cards) {
    const send = async () => {
      const answer = await client.ask(purchase(c), 10_000);
      if (answer.fields.get(39) !== '00') throw new Error(`not approved: ${answer.fields.get(39)}`);
    };
    templates.push(await recordTemplate(svc.database, send, true));
  }
  client.close();
  await link.stop();
  process.stdout.write(
    `[${dbName}] ${MESSAGES} authorizations one at a time (${approved} approved): ${(statements / MESSAGES).toFixed(2)} statements each, ${sequentialMs.toFixed(2)} ms each\n`,
  );
  for (const [text, n] of [...byText].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${(n / MESSAGES).toFixed(2)} × ${text}\n`);

  // 2. The link's own path, each step alone over one message.
  const card = cards[0] as (typeof cards)[number];
  const request = purchase(card);
  const bytes = encode(request);
  const fields = request.fields;
  const db = svc.database.db;
  const row = await cardByPan(svc, db, card.pan);
  if (!row) throw new Error('card not found');
  const time = async (fn: () => unknown) => {
    for (let i = 0; i < 500; i++) await fn();
    // CPU time, not wall-clock: on a machine shared with other work the process waits for a core.
    const t0 = process.cpuUsage();
    for (let i = 0; i < ROUNDS; i++) await fn();
    const used = process.cpuUsage(t0);
    return (used.user + used.system) / ROUNDS;
  };
  const answer: IsoMessage = { mti: answerMti('0100'), fields: new Map([...fields, [38, 'A00001'], [39, '00']]) };
  const steps: Array<[string, number]> = [
    ['decode (frame → fields)', await time(() => decode(bytes))],
    ["PAN's keyed hash (vault.hash)", await time(() => svc.vault.hash(db, card.pan))],
    [
      'CVV2 (derived, compared) and expiry',
      await time(() => presentedCardData(svc, db, row, { expiry: card.expiry, cvv2: card.cvv }, card.pan)),
    ],
    [
      "identity and content's keyed hash",
      await time(() => {
        linkIdentity('authorization', '10000001', fields.get(11) as string, fields.get(7) as string);
        return contentHash(svc, db, fields);
      }),
    ],
    [
      'decision gate (enter, close)',
      await time(() => {
        const gate = new DecisionGate();
        gate.enter(Date.now(), Date.now() + 1000);
        return gate.close();
      }),
    ],
    ['encode and frame the answer', await time(() => frame(encode(answer)))],
  ];
  const sum = steps.reduce((s, [, us]) => s + us, 0);
  process.stdout.write(`[${dbName}] the link's own path, per message (µs of CPU, each step alone, ${ROUNDS} rounds):\n`);
  for (const [name, us] of steps) process.stdout.write(`  ${us.toFixed(1).padStart(7)}  ${name}\n`);
  process.stdout.write(`  ${sum.toFixed(1).padStart(7)}  sum\n`);
  await app.close();

  // 3. The database alone: the same statements, replayed without the service (issue 42).
  const per = templates[0]?.length ?? 0;
  if (dbName === 'postgres') {
    const r = await replayPostgres(childDatabaseUrl(isolated), templates, 1000, CLIENTS);
    process.stdout.write(
      `[postgres] the database alone, an authorization's ${per} statements replayed: ${(r.us1 / 1000).toFixed(2)} ms one at a time; ${r.perSecond50}/s from ${CLIENTS} clients, PostgreSQL's CPU ${r.backendCpuMs.toFixed(3)} ms an authorization\n`,
    );
  } else {
    const r = replaySqlite(isolated.url.slice('file:'.length), templates, 3000);
    process.stdout.write(
      `[sqlite] the database alone, an authorization's ${per} statements replayed on one thread (groups of 30 under one commit): ${(r.us1 / 1000).toFixed(3)} ms an authorization, ${r.perSecond}/s\n`,
    );
  }
} finally {
  await cleanup();
}
