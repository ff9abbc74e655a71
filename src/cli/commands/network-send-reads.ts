import { ConfigError } from '../../config.js';
import type { Services } from '../../context.js';
import { DomainError } from '../../errors.js';
import type { IsoMessage } from '../../iso8583/codec.js';
import { ResponseCode } from '../../iso8583/response-codes.js';
import { paymentsOf } from '../../trades/books.js';
import { tradeById } from '../../trades/by-id.js';
import { TradeStatus, TradeType } from '../../trades/types.js';

export const TYPES = ['purchase', 'cash', 'refund', 'balance', 'clear', 'reverse', 'advice'] as const;
type SendType = (typeof TYPES)[number];

export interface SendOptions {
  card?: string;
  pan?: string;
  expiry?: string;
  cvv?: string;
  /** 3-D Secure (decisions §14.5): the ECI, field 48 subelement 42. */
  eci?: string;
  /** 3-D Secure: the authentication value of the ARes or RReq, field 48 subelement 43. */
  authenticationValue?: string;
  type: SendType;
  amount?: string;
  currency?: string;
  mcc: string;
  acceptor: string;
  original?: string;
  acquirer: string;
  mti?: string;
  host?: string;
  port?: number;
  cert?: string;
  key?: string;
  ca?: string;
  servername?: string;
  timeout: number;
  write?: string;
  json?: boolean;
  /** A clear of an authorization that holds nothing any more (a forced post: the card charged again). */
  force?: boolean;
}

/** What `network send` reads from the database (./network-send.ts): the card, the original a message names, what the link made of it. */

/** The card's PAN, expiry (YYMM) and CVV2 from the vault (never printed), and its id and currency. */
export async function cardFromVault(svc: Services, cardId: string) {
  return svc.database.read(async (db) => {
    const card = await db.selectFrom('cards').selectAll().where('id', '=', cardId).executeTakeFirst();
    if (!card) throw new DomainError('cardNotFound', `no card ${cardId}`);
    const pan = await svc.vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id);
    return {
      id: card.id,
      pan,
      expiry: `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`,
      cvv: await svc.vault.cvv(db, pan, card.expiry_month, card.expiry_year),
      currency: card.currency,
    };
  });
}

/**
 * The original a clear, reverse or refund names: by --original (a STAN sent with this acquirer id,
 * or a trade id), else the card's newest approved one sent with this acquirer id. An authorization
 * (0100) for clear and reverse; a payment (a clearing 0220 or a single message 0200) for refund.
 */
export async function findOriginal(svc: Services, o: SendOptions, cardId: string | null) {
  const refund = o.type === 'refund';
  const rows = await svc.database.read((db) => {
    let q = db
      .selectFrom('network_messages')
      .select(['mti', 'stan', 'transmitted', 'acquirer', 'request', 'trade_id', 'card_id', 'merchant_id', 'created_at'])
      .where('msg_class', '=', refund ? 'financial' : 'authorization')
      .where('response_code', '=', ResponseCode.approved)
      .orderBy('created_at', 'desc');
    if (o.original?.startsWith('trd_')) q = q.where('trade_id', '=', o.original);
    else {
      if (o.original !== undefined) q = q.where('stan', '=', o.original.padStart(6, '0'));
      if (cardId) q = q.where('card_id', '=', cardId);
    }
    return q.limit(200).execute();
  });
  const acquirer = o.acquirer.replace(/^0+/, '');
  const found = rows.find((r) => {
    const processing = (JSON.parse(r.request) as Record<string, string>)['3'] ?? '';
    if (refund ? !/^0[01]/.test(processing) : processing.startsWith('31') || !r.mti.startsWith('01')) return false;
    return o.original?.startsWith('trd_') || r.acquirer.replace(/^0+/, '') === acquirer;
  });
  if (!found) {
    const what = refund ? 'an approved payment (0220 clearing or 0200)' : 'an approved authorization (0100)';
    throw new ConfigError(
      o.original === undefined
        ? `--type ${o.type}: the card has no ${what} sent with acquirer ${o.acquirer}; name one with --original STAN|TRADE_ID`
        : `--original ${o.original}: no ${what} with that ${o.original.startsWith('trd_') ? 'trade' : `STAN from acquirer ${o.acquirer}`}`,
    );
  }
  return { ...found, fields: JSON.parse(found.request) as Record<string, string> };
}

/**
 * A clear of an authorization that holds nothing (cleared already, reversed, expired, voided) is a
 * forced post that charges the card again (issue 43: a second `clear` picked the cleared one and
 * posted 2 × 42.50): refused, naming what became of the hold, unless --force.
 */
export async function refuseEmptyHold(svc: Services, o: SendOptions, orig: { trade_id: string | null; merchant_id: string | null }) {
  const { trade_id: tradeId, merchant_id: merchantId } = orig;
  if (o.force || !tradeId || !merchantId) return;
  return svc.database.read(async (db) => {
    const auth = await tradeById(db, merchantId, tradeId);
    if (!auth || auth.held > 0) return;
    const payments = await paymentsOf(db, merchantId, auth.id);
    const what =
      payments.length > 0
        ? `is cleared already (by ${payments.map((p) => p.id).join(', ')})`
        : auth.trade_status === TradeStatus.voided
          ? 'was voided'
          : 'was released (reversed or expired)';
    throw new ConfigError(
      `--type clear: authorization ${auth.id} holds nothing: it ${what}. A clearing now is a forced post that charges the card again; add --force to send it anyway, or name another with --original`,
    );
  });
}

/**
 * What the link made of the message sent: its stored answer's trade (the payment of a clear, the
 * authorization of a purchase, …), the trade it follows and whether it was a forced post. Null
 * without the database, or when nothing was recorded (a decline records no trade of the list).
 */
export async function madeTrade(svc: Services | null, request: IsoMessage) {
  if (!svc) return null;
  const f = request.fields;
  const rows = await svc.database.read((db) =>
    db
      .selectFrom('network_messages')
      .select(['acquirer', 'trade_id', 'merchant_id', 'answer'])
      .where('stan', '=', f.get(11) ?? '')
      .where('transmitted', '=', f.get(7) ?? '')
      .execute(),
  );
  const acquirer = (f.get(32) ?? '').replace(/^0+/, '');
  const row = rows.find((r) => r.acquirer.replace(/^0+/, '') === acquirer);
  const { trade_id: tradeId, merchant_id: merchantId } = row ?? {};
  if (!row || !tradeId || !merchantId) return null;
  const trade = await svc.database.read((db) => tradeById(db, merchantId, tradeId));
  if (!trade) return null;
  const forced = (JSON.parse(row.answer) as { forced?: boolean }).forced === true;
  return { tradeId: trade.id, tradeType: trade.trade_type, originalId: trade.original_id, forced };
}

const KINDS: Record<number, string> = { [TradeType.authorization]: 'authorization', [TradeType.payment]: 'payment' };

export function madeLine(made: NonNullable<Awaited<ReturnType<typeof madeTrade>>>): string {
  const kind = KINDS[made.tradeType] ?? `tradeType ${made.tradeType}`;
  const of = made.originalId ? ` of ${made.originalId}` : '';
  return `tradeId ${made.tradeId} (${kind}${of}${made.forced ? ', a forced post' : ''})`;
}
