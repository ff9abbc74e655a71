import type { Database } from '../../src/db/index.js';
import { withTrades } from '../../src/db/trades-table.js';
import { checkLedger } from '../../src/ledger/check.js';
import type { receiver } from '../helpers/receiver.js';

/** What the clients were told, to hold the database to. */
export interface Acknowledged {
  holders: Map<string, string>; // idno -> holderId
  cards: Map<string, string>; // cardId -> holderId
  kyc: Set<string>; // requestNo
  trades: Map<string, { cardId: string; kind: string }>; // tradeId -> ...
}

/**
 * The database against what the clients were told: every acknowledged write stored exactly once and
 * nothing else, every card's balance what its acknowledged operations add up to, the ledger's
 * invariants, and every callback event received. What is wrong is added to `problems`.
 */
export async function compareWithDatabase(
  check: Database,
  acked: Acknowledged,
  expectedAvailable: Map<string, number>,
  received: Awaited<ReturnType<typeof receiver>>['received'],
  problems: string[],
) {
  let lost = 0;
  let extra = 0;
  // An approved KYC request makes a cardholder too: those are checked with the KYC requests below.
  const fromKyc = new Set(
    (await check.db.selectFrom('kyc_requests').select('holder_id').where('holder_id', 'is not', null).execute()).map((k) => k.holder_id),
  );
  // The document number is stored sealed; idno_key, its keyed hash, groups the rows of one document.
  const holders = (await check.db.selectFrom('cardholders').select(['id', 'idno_key']).execute()).filter((h) => !fromKyc.has(h.id));
  const byKey = new Map<string, string[]>();
  for (const h of holders) byKey.set(h.idno_key, [...(byKey.get(h.idno_key) ?? []), h.id]);
  const keyOf = new Map(holders.map((h) => [h.id, h.idno_key]));
  for (const [idno, id] of acked.holders) {
    const key = keyOf.get(id);
    const found = key === undefined ? [] : (byKey.get(key) ?? []);
    if (found.length === 0) {
      lost++;
      problems.push(`cardholder ${id} (idno ${idno}) was acknowledged but is not stored`);
    } else if (found.length > 1 || found[0] !== id) {
      extra++;
      problems.push(`cardholder idno ${idno}: stored as ${found.join(', ')}, acknowledged as ${id}`);
    }
  }
  if (holders.length > acked.holders.size) {
    extra += holders.length - acked.holders.size;
    problems.push(`${holders.length} cardholders stored, ${acked.holders.size} acknowledged`);
  }

  const cards = await check.db.selectFrom('cards').select(['id', 'holder_id', 'available_balance', 'status']).execute();
  for (const c of cards) {
    if (acked.cards.get(c.id) !== c.holder_id) {
      extra++;
      problems.push(`card ${c.id} of ${c.holder_id} is stored but was not acknowledged`);
    }
    const want = expectedAvailable.get(c.id);
    if (want !== undefined && c.available_balance !== want)
      problems.push(`card ${c.id}: available ${c.available_balance}, the acknowledged operations add up to ${want}`);
  }
  for (const id of acked.cards.keys()) {
    if (!cards.some((c) => c.id === id)) {
      lost++;
      problems.push(`card ${id} was acknowledged but is not stored`);
    }
  }

  const trades = await withTrades(check.db).selectFrom('trades').select(['id', 'card_id']).execute();
  const stored = new Set(trades.map((t) => t.id));
  for (const [id, t] of acked.trades) {
    if (!stored.has(id)) {
      lost++;
      problems.push(`${t.kind} ${id} on card ${t.cardId} was acknowledged but is not stored`);
    }
  }
  // A reversal adds a record (returned to the client) and marks the original in place: every stored
  // transaction must be one a client was told of.
  for (const t of trades) {
    if (!acked.trades.has(t.id)) {
      extra++;
      problems.push(`transaction ${t.id} on card ${t.card_id} is stored but no client was told of it`);
    }
  }

  const kycStored = await check.db.selectFrom('kyc_requests').select(['request_no']).execute();
  for (const no of acked.kyc) {
    if (!kycStored.some((k) => k.request_no === no)) {
      lost++;
      problems.push(`KYC request ${no} was acknowledged but is not stored`);
    }
  }
  if (kycStored.length !== acked.kyc.size) {
    extra += Math.max(0, kycStored.length - acked.kyc.size);
    problems.push(`${kycStored.length} KYC requests stored, ${acked.kyc.size} acknowledged`);
  }

  const ledger = await checkLedger(check);
  problems.push(...ledger.problems);

  const events = await check.db.selectFrom('callback_events').select(['id', 'type']).execute();
  const receivedIds = received.map((r) => String(r.headers['webhook-id']));
  const seen = new Set(receivedIds);
  for (const e of events) if (!seen.has(e.id)) problems.push(`callback ${e.type} ${e.id} is marked delivered but never arrived`);
  if (received.some((r) => !r.verified)) problems.push('a callback arrived with a signature that does not verify');
  // Every acknowledged KYC request produced its decision's event.
  const kycEvents = events.filter((e) => e.type === 'kyc.result').length;
  if (kycEvents < acked.kyc.size) problems.push(`${kycEvents} kyc.result events for ${acked.kyc.size} decided KYC requests`);

  return { lost, extra, ledger, events, receivedIds, seen };
}
