import type { Services } from '../context.js';
import { parseDate } from '../dates.js';
import type { DisputeReason } from '../db/schema.js';
import { DomainError } from '../errors.js';
import { toMajor, toMinor } from '../money/currency.js';
import { runVerb } from '../runner.js';
import { messagesOfTrade } from '../trades/network-reads.js';
import { recordDisputeOutcome } from './outcome.js';
import { queryDispute } from './query.js';

/**
 * The card network's dispute system (decisions §13.4, docs/disputes.md "The network side"): the
 * day's submitted disputes out as JSON lines, the outcomes in as JSON lines.
 */

/** The network's reason code for each reason (Visa's numbering). */
export const NETWORK_REASONS: Record<DisputeReason, string> = {
  fraudulent: '10.4',
  not_received: '13.1',
  duplicate: '12.6.1',
  canceled: '13.7',
  not_as_described: '13.3',
  credit_not_processed: '13.6',
  other: '13.5',
};

/** One line of the export. */
export interface ExportedDispute {
  disputeId: string;
  tradeId: string;
  /** Field 37 of the original's message; null for a transaction that came through no network message (the sandbox's). */
  rrn: string | null;
  /** Field 32. */
  acquirer: string | null;
  pan: string;
  amount: number;
  currency: string;
  networkReason: string;
  reason: DisputeReason;
  explanation: string;
  evidence: Array<{ fileName: string; contentType: string; size: number; sha256: string }>;
  submittedAt: string;
}

const DAY_MS = 86_400_000;

/** The disputes submitted on a UTC day and still waiting for the network's outcome, oldest first. */
export async function exportDisputes(svc: Services, date: string): Promise<ExportedDispute[]> {
  const day = parseDate(date);
  if (!day) throw new DomainError('validation', 'date: must be a real date written yyyy-MM-dd');
  return svc.database.read(async (db) => {
    const rows = await db
      .selectFrom('disputes')
      .select(['id', 'merchant_id'])
      .where('status', '=', 'submitted')
      .where('submitted_at', '>=', day.getTime())
      .where('submitted_at', '<', day.getTime() + DAY_MS)
      .orderBy('submitted_at')
      .orderBy('id')
      .execute();
    const out: ExportedDispute[] = [];
    for (const r of rows) {
      const d = await queryDispute(db, svc.box, r.merchant_id, r.id, svc.clock());
      const messages = await messagesOfTrade(db, d.tradeId);
      // The clearing's message first (its RRN names the presentment), else the authorization's.
      const message = messages.find((m) => m.trade_id === d.tradeId) ?? messages[0];
      const fields = message ? (JSON.parse(message.request) as Record<string, string>) : {};
      out.push({
        disputeId: d.disputeId,
        tradeId: d.tradeId,
        rrn: fields['37'] ?? null,
        acquirer: message?.acquirer ?? null,
        pan: d.cardNo,
        amount: d.amount,
        currency: d.currency,
        networkReason: NETWORK_REASONS[d.reason],
        reason: d.reason,
        explanation: d.explanation,
        evidence: d.evidence,
        submittedAt: d.submittedAt ?? '',
      });
    }
    return out;
  });
}

/** What one line of an import did. */
export interface ImportLine {
  line: number;
  disputeId: string | null;
  outcome: 'applied' | 'duplicate' | 'refused';
  detail: string;
}

const NETWORK = { kind: 'network', peer: 'dispute-import' } as const;

/**
 * Posts an outcome file: one JSON object a line, `{disputeId, outcome: "won"|"lost", amount,
 * decidedAt}` (`amount` in major units, what the network pays back on a won dispute; `decidedAt`
 * ISO 8601). Each line is its own transaction through recordDisputeOutcome, recorded in the audit
 * trail with the network as its actor; importing a file again applies nothing twice (`duplicate`).
 */
export async function importOutcomes(svc: Services, text: string): Promise<ImportLine[]> {
  const out: ImportLine[] = [];
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    if (raw.trim() === '') continue;
    const line = i + 1;
    let disputeId: string | null = null;
    try {
      const o = parseLine(raw);
      disputeId = o.disputeId;
      const row = await svc.database.read((db) =>
        db.selectFrom('disputes').select(['currency', 'status', 'outcome_amount']).where('id', '=', o.disputeId).executeTakeFirst(),
      );
      if (!row) throw new DomainError('disputeNotFound', 'disputeId: dispute not found');
      if (row.status === o.outcome) {
        // Imported before: nothing to apply, and nothing for the audit trail (the verb would say the same).
        out.push({
          line,
          disputeId,
          outcome: 'duplicate',
          detail: `${o.outcome} ${toMajor(Number(row.outcome_amount ?? 0), row.currency)} ${row.currency}`,
        });
        continue;
      }
      const amount = o.outcome === 'won' && o.amount !== undefined ? toMinor(o.amount, row.currency) : undefined;
      const r = await runVerb(svc, recordDisputeOutcome, {
        input: { disputeId: o.disputeId, outcome: o.outcome, amount, decidedAt: o.decidedAt },
        actor: NETWORK,
        audit: { action: 'dispute.outcome', target: o.disputeId },
      });
      out.push({ line, disputeId, outcome: r.result, detail: `${r.status} ${r.amount} ${r.currency}` });
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      out.push({ line, disputeId, outcome: 'refused', detail: err.message });
    }
  }
  return out;
}

function parseLine(raw: string): { disputeId: string; outcome: 'won' | 'lost'; amount?: number; decidedAt?: number } {
  let o: unknown;
  try {
    o = JSON.parse(raw);
  } catch {
    throw new DomainError('validation', 'line: must be one JSON object');
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw new DomainError('validation', 'line: must be one JSON object');
  const { disputeId, outcome, amount, decidedAt } = o as Record<string, unknown>;
  if (typeof disputeId !== 'string' || disputeId.length === 0 || disputeId.length > 64)
    throw new DomainError('validation', 'disputeId: must be a disputeId');
  if (outcome !== 'won' && outcome !== 'lost') throw new DomainError('validation', 'outcome: must be won or lost');
  if (amount !== undefined && typeof amount !== 'number') throw new DomainError('validation', 'amount: must be a number, major units');
  if (outcome === 'lost' && typeof amount === 'number' && amount !== 0)
    throw new DomainError('validation', 'amount: a lost dispute pays nothing back (0 or absent)');
  let at: number | undefined;
  if (decidedAt !== undefined) {
    at = typeof decidedAt === 'string' ? Date.parse(decidedAt) : Number.NaN;
    if (Number.isNaN(at)) throw new DomainError('validation', 'decidedAt: must be an ISO 8601 time');
  }
  return {
    disputeId,
    outcome,
    ...(typeof amount === 'number' && outcome === 'won' ? { amount } : {}),
    ...(at === undefined ? {} : { decidedAt: at }),
  };
}

/** An export line as text (a JSON line). */
export const exportLine = (d: ExportedDispute): string => JSON.stringify(d);
/** An import line as text: `line disputeId outcome detail`. */
export const importLineText = (l: ImportLine): string =>
  `${String(l.line).padStart(4)}  ${(l.disputeId ?? '-').padEnd(34)}  ${l.outcome.padEnd(9)}  ${l.detail}`;
