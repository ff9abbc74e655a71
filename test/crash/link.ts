/**
 * The card network link under SIGKILL (issue 28, "Done when"; decisions §12.6): the real service as
 * a child process with its ISO 8583 listener, a purchase stream (0100 and 0200) over several
 * connections with many messages in flight, and the service killed at random moments of it and
 * started again on the same port and data. The peer reconnects, signs on, and retransmits every
 * message it got no answer for (alternately as sent and with its repeat MTI, 0101/0201); at the end it
 * asks every message once more with its repeat MTI. Afterwards each message's answers must be equal,
 * each approved one must have acted exactly once (one hold, or one payment for an 0200), each declined
 * one not at all, the cards' balances must be what the approvals add up to, and `cardprogram ledger
 * check` must be clean.
 *
 * test/card-network/crash.test.ts runs a short version in `npm test`; `npm run crashtest` the full one.
 */
import { randomInt } from 'node:crypto';
import { LinkClient, transmissionTime } from '../../src/card-network/link/client.js';
import { openDatabase } from '../../src/db/index.js';
import { withTrades } from '../../src/db/trades-table.js';
import { type IsoMessage, message } from '../../src/iso8583/codec.js';
import { holderBody, randomStr } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import type { TestDialect } from '../helpers/db.js';
import { authorizationRequest } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';
import { freePort } from '../helpers/service.js';
import { crashService } from './service.js';
import { signedClient } from './signed-client.js';

export interface LinkCrashOptions {
  dialect: TestDialect;
  /** How many times the service is killed during the stream (and started again). */
  kills: number;
  /** Purchases in the stream (each a unique STAN and RRN); every fourth is an 0200. */
  messages: number;
  connections: number;
  /** Messages in flight over all connections at once. */
  inFlight: number;
  /** Cards the purchases are spread over; each is funded for about 80 % of its purchases, so some decline. */
  cards: number;
  /** CARDPROGRAM_NETWORK_DEADLINE_MS of the service (a loaded machine answers 91 past it). */
  deadlineMs: number;
  log?: (line: string) => void;
}

export interface LinkCrashReport {
  database: string;
  kills: number;
  messages: number;
  /** Final answers by response code. */
  codes: Record<string, number>;
  /** Messages sent again after a connection died under them (or an answer did not come). */
  retransmissions: number;
  /** Answers compared: those of the stream and of the final sweep with the repeat MTI. */
  answers: number;
  /** Answers of 91 (the service could not decide in time): each must have written nothing. */
  timeouts: number;
  problems: string[];
  seconds: number;
}

/** Field 32 of test/helpers/link.ts's authorizationRequest. */
const ACQUIRER = '12345678';
const pad = (n: number, width: number) => String(n).padStart(width, '0');
const repeatOf = (mti: string) => (mti === '0100' ? '0101' : '0201');

interface Sent {
  msg: IsoMessage;
  cardId: string;
  amount: number;
  rrn: string;
  /** Each answer received, its MTI and fields. */
  answers: Array<{ mti: string; fields: Record<string, string>; sweep: boolean }>;
  sends: number;
}

export async function runLinkCrashTest(opts: LinkCrashOptions): Promise<LinkCrashReport> {
  const log = opts.log ?? (() => undefined);
  const started = Date.now();
  const cleanups: Array<() => unknown> = [];
  try {
    const linkPort = await freePort();
    const { db, port, env, demo, start, kill, selfExits, errorLog } = await crashService(
      opts.dialect,
      {
        CARDPROGRAM_NETWORK_PORT: String(linkPort),
        CARDPROGRAM_NETWORK_HOST: '127.0.0.1',
        CARDPROGRAM_NETWORK_DEADLINE_MS: String(opts.deadlineMs),
        // Every connection comes from 127.0.0.1: above the link's default per-address cap (8), and a
        // reconnection may arrive before the server has seen its predecessor close.
        CARDPROGRAM_NETWORK_MAX_PER_ADDRESS: String(2 * opts.connections),
        CARDPROGRAM_NETWORK_MAX_CONNECTIONS: String(Math.max(64, 2 * opts.connections)),
      },
      cleanups,
    );
    const { send, ok, stats } = signedClient(`http://127.0.0.1:${port}`, demo, errorLog);

    // ---- Cards, funded over HTTP; their numbers from the sandbox's card details ----
    const perCard = Math.ceil(opts.messages / opts.cards);
    const funding = perCard * 2400; // purchases average 30.00: about 80 % of them fit
    const cards = await Promise.all(
      Array.from({ length: opts.cards }, async () => {
        const holder = ok('holderCreate', await send('/api/network/holderCreate.html', holderBody()));
        ok('review', await send('/sandbox/holder/review', { holderId: holder.holderId, auditStatus: 2, randomStr: randomStr() }));
        const card = ok(
          'cardApply',
          await send('/api/network/cardApply.html', { holderId: holder.holderId, currency: 'EUR', randomStr: randomStr() }),
        );
        const cardId = card.model.cardId as string;
        ok('cardTopUp', await send('/api/network/cardTopUp.html', { cardId, amount: funding / 100, randomStr: randomStr() }));
        const details = ok('cardDetails', await send('/sandbox/network/cardDetails', { cardId, randomStr: randomStr() }));
        const { cardNo, expiry, cvv } = details.model as { cardNo: string; expiry: string; cvv: string };
        noteSecret('pan', cardNo);
        noteSecret('cvv', cvv);
        const [mm, yy] = expiry.split('/');
        return { cardId, pan: cardNo, expiry: `${yy}${mm}`, cvv };
      }),
    );

    // ---- The stream: unique STAN and RRN per message, field 7 fixed at its first sending ----
    const sent: Sent[] = Array.from({ length: opts.messages }, (_, i) => {
      const card = cards[i % cards.length] as (typeof cards)[number];
      const amount = 100 + randomInt(5900);
      const rrn = `CR${pad(i, 10)}`;
      const msg = authorizationRequest(card, {
        amount,
        mti: i % 4 === 3 ? '0200' : '0100',
        // The acceptor named by the RRN (no city): each message's records are found by their remark.
        extra: { 7: transmissionTime(), 11: pad(i + 1, 6), 37: rrn, 43: `${rrn.padEnd(38)}DE` },
      });
      return { msg, cardId: card.cardId, amount, rrn, answers: [], sends: 0 };
    });
    let firstAnswers = 0;
    let retransmissions = 0;
    const record = (i: number, answer: IsoMessage, sweep: boolean) => {
      const s = sent[i] as Sent;
      if (s.answers.length === 0) firstAnswers++;
      s.answers.push({ mti: answer.mti, fields: Object.fromEntries([...answer.fields].map(([f, v]) => [String(f), v])), sweep });
    };
    // A failed run stops its peers' reconnecting (the cleanups run first thing after it).
    let over = false;
    cleanups.push(() => {
      over = true;
    });
    const connect = async (): Promise<LinkClient> => {
      for (;;) {
        if (over) throw new Error('the run is over');
        try {
          const client = await LinkClient.connect({ host: '127.0.0.1', port: linkPort, connectTimeoutMs: 2000 });
          const on = await client.ask(message('0800', { 7: transmissionTime(), 11: pad(randomInt(1_000_000), 6), 70: '001' }), 30_000);
          if (on.fields.get(39) === '00') return client;
          client.close();
        } catch {
          // the service is down or starting: try again
        }
        await new Promise((r) => setTimeout(r, 50 + randomInt(100)));
      }
    };
    // The stream's last fifth waits for the last kill, so that every kill falls during the stream.
    const holdFrom = Math.floor(opts.messages * 0.8);
    let killsOver = false;
    /** One connection's share of the stream: `window` messages in flight, those unanswered sent again after a reconnect. */
    const connection = async (queue: number[], window: number) => {
      while (queue.length > 0) {
        const client = await connect();
        let alive = true;
        const lane = async () => {
          while (alive && queue.length > 0) {
            // Held without taking the message, so that what a kill left unanswered is sent again meanwhile.
            if (!killsOver && (queue[0] as number) >= holdFrom) {
              if (client.isClosed()) alive = false;
              else await new Promise((r) => setTimeout(r, 5));
              continue;
            }
            const i = queue.shift() as number;
            const s = sent[i] as Sent;
            // A retransmission goes alternately as sent and with the repeat MTI (decisions §12.6).
            const mti = s.sends % 2 === 1 ? repeatOf(s.msg.mti) : s.msg.mti;
            if (s.sends > 0) retransmissions++;
            s.sends++;
            try {
              record(i, await client.ask({ mti, fields: s.msg.fields }, 60_000), false);
            } catch {
              queue.unshift(i); // unanswered: sent again, on this connection or the next one
              if (client.isClosed()) alive = false;
            }
          }
        };
        await Promise.all(Array.from({ length: window }, lane));
        client.close();
      }
    };

    // ---- The killer: each kill once the stream has gone some random way further ----
    const marks = Array.from({ length: opts.kills }, () => Math.floor(opts.messages * (0.05 + Math.random() * 0.7))).sort((a, b) => a - b);
    const killer = async () => {
      let last = -1;
      try {
        for (let k = 0; k < marks.length; k++) {
          // Past its mark, and further than the last kill (unless all before the held fifth is answered).
          while (firstAnswers < (marks[k] as number) || (firstAnswers <= last && firstAnswers < holdFrom))
            await new Promise((r) => setTimeout(r, 2));
          await new Promise((r) => setTimeout(r, randomInt(15)));
          await kill();
          last = firstAnswers;
          log(`kill ${k + 1}/${opts.kills}: ${firstAnswers} of ${opts.messages} messages answered, ${retransmissions} retransmissions`);
          await start();
        }
      } finally {
        killsOver = true;
      }
    };
    const queues = Array.from({ length: opts.connections }, (_, c) => sent.map((_, i) => i).filter((i) => i % opts.connections === c));
    const window = Math.max(1, Math.floor(opts.inFlight / opts.connections));
    const killing = killer();
    await Promise.all([killing, ...queues.map((q) => connection(q, window))]);

    // What was stored before the sweep: a message answered only 91 must have written nothing (§12.8).
    const check = openDatabase(db.url, db.pgSchema ? { pgSchema: db.pgSchema } : {});
    cleanups.push(() => check.close());
    const storedBeforeSweep = new Set(
      (await check.db.selectFrom('network_messages').select('stan').where('acquirer', '=', ACQUIRER).execute()).map((r) => r.stan),
    );

    // ---- The sweep: every message once more, with its repeat MTI, after the last restart ----
    const sweep = await connect();
    cleanups.push(() => sweep.close());
    /** Asks each of `which` with its repeat MTI, 10 at a time (few enough for a loaded machine to decide within the deadline). */
    const ask = async (which: number[]) => {
      for (let k = 0; k < which.length; k += 10) {
        await Promise.all(
          which.slice(k, k + 10).map(async (i) => {
            const s = sent[i] as Sent;
            record(i, await sweep.ask({ mti: repeatOf(s.msg.mti), fields: s.msg.fields }, 60_000), true);
          }),
        );
      }
    };
    await ask(sent.map((_, i) => i));
    // A message answered only 91 was not decided: it is asked again until it is (a loaded machine).
    for (let round = 0; round < 10; round++)
      await ask(sent.flatMap((s, i) => (s.answers.every((a) => a.fields['39'] === '91') ? [i] : [])));
    sweep.close();
    await kill();

    // ---- The answers against each other, and the database against the answers ----
    const problems: string[] = [
      ...selfExits,
      ...stats.serverErrors.map((e) => `answered with a server error: ${e}`),
      ...errorLog.map((line) => `the service logged: ${line}`),
    ];
    const final = new Map<number, string>();
    let timeouts = 0;
    for (const [i, s] of sent.entries()) {
      const decided = s.answers.filter((a) => a.fields['39'] !== '91');
      timeouts += s.answers.length - decided.length;
      const first = decided[0];
      if (!first) {
        problems.push(`STAN ${s.msg.fields.get(11)}: never decided (${s.answers.length} answers of 91)`);
        continue;
      }
      final.set(i, first.fields['39'] as string);
      const want = JSON.stringify(first.fields);
      for (const a of decided)
        if (JSON.stringify(a.fields) !== want || a.mti !== first.mti)
          problems.push(`STAN ${s.msg.fields.get(11)}: answers differ: ${a.mti} ${JSON.stringify(a.fields)} vs ${first.mti} ${want}`);
      const stream = s.answers.filter((a) => !a.sweep);
      if (stream.length > 0 && stream.every((a) => a.fields['39'] === '91') && storedBeforeSweep.has(s.msg.fields.get(11) as string))
        problems.push(`STAN ${s.msg.fields.get(11)}: answered 91 (nothing written), yet its decision was stored`);
    }
    const stored = await check.db
      .selectFrom('network_messages')
      .select(['msg_class', 'stan', 'response_code', 'trade_id'])
      .where('acquirer', '=', ACQUIRER)
      .execute();
    const byStan = new Map(stored.map((r) => [r.stan, r]));
    const trades = await withTrades(check.db)
      .selectFrom('trades')
      .select(['id', 'card_id', 'trade_type', 'amount', 'held', 'remark', 'original_id'])
      .where('remark', 'like', 'CR%')
      .execute();
    const tradesOf = new Map<string, typeof trades>();
    for (const t of trades) tradesOf.set(t.remark, [...(tradesOf.get(t.remark) ?? []), t]);
    const auths = await check.db.selectFrom('authorizations').select(['id', 'approved']).execute();
    const authById = new Map(auths.map((a) => [a.id, a]));
    const spent = new Map<string, { available: number; ledger: number }>();
    const codes: Record<string, number> = {};
    for (const [i, s] of sent.entries()) {
      const stan = s.msg.fields.get(11) as string;
      const code = final.get(i);
      if (code === undefined) continue;
      codes[code] = (codes[code] ?? 0) + 1;
      const row = byStan.get(stan);
      const mine = tradesOf.get(s.rrn) ?? [];
      const financial = s.msg.mti === '0200';
      if (code !== '00' && code !== '51') problems.push(`STAN ${stan}: answered ${code}`);
      if (!row || row.response_code !== code)
        problems.push(`STAN ${stan}: answered ${code}, stored ${row ? row.response_code : 'nothing'} in network_messages`);
      if (code === '00') {
        const auth = mine.filter((t) => t.trade_type === 150);
        const payments = mine.filter((t) => t.trade_type === 151);
        if (auth.length !== 1 || payments.length !== (financial ? 1 : 0) || mine.length !== auth.length + payments.length)
          problems.push(`STAN ${stan} (${s.msg.mti}) approved: ${auth.length} authorizations, ${payments.length} payments`);
        else if ((auth[0]?.amount ?? 0) !== s.amount || (financial && payments[0]?.original_id !== auth[0]?.id))
          problems.push(`STAN ${stan}: approved for ${s.amount}, recorded ${JSON.stringify(mine)}`);
        const sum = spent.get(s.cardId) ?? { available: 0, ledger: 0 };
        spent.set(s.cardId, { available: sum.available + s.amount, ledger: sum.ledger + (financial ? s.amount : 0) });
      } else {
        if (mine.length > 0) problems.push(`STAN ${stan} declined ${code}, yet recorded ${mine.length} transactions`);
        if (row?.trade_id && authById.get(row.trade_id)?.approved !== 0)
          problems.push(`STAN ${stan} declined: its decline record ${row.trade_id} is not a declined authorization`);
      }
    }
    if (stored.length !== final.size) problems.push(`${stored.length} messages stored, ${final.size} decided`);
    const approvedRows = auths.filter((a) => a.approved === 1).length;
    const declinedRows = auths.length - approvedRows;
    if (approvedRows !== (codes['00'] ?? 0) || declinedRows !== (codes['51'] ?? 0))
      problems.push(`authorizations recorded: ${approvedRows} approved, ${declinedRows} declined; answered ${JSON.stringify(codes)}`);
    const rows = await check.db.selectFrom('cards').select(['id', 'available_balance', 'ledger_balance']).execute();
    for (const c of rows) {
      const sum = spent.get(c.id) ?? { available: 0, ledger: 0 };
      if (c.available_balance !== funding - sum.available || c.ledger_balance !== funding - sum.ledger)
        problems.push(
          `card ${c.id}: available ${c.available_balance}, ledger ${c.ledger_balance}; the approvals add up to ${funding - sum.available}, ${funding - sum.ledger}`,
        );
    }
    const ledger = await runCli(['ledger', 'check'], env);
    if (ledger.code !== 0) problems.push(`ledger check: exit ${ledger.code}\n${ledger.stdout}${ledger.stderr}`);

    return {
      database: opts.dialect.name,
      kills: opts.kills,
      messages: opts.messages,
      codes,
      retransmissions,
      answers: sent.reduce((n, s) => n + s.answers.length, 0),
      timeouts,
      problems,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    for (const fn of cleanups.reverse()) await fn();
  }
}
