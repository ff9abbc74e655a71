// Disputes in tests: evidence files (real, minimal ones and the attacks of issue 29), a cleared
// purchase to dispute, and the calls of the dispute operations.
import assert from 'node:assert/strict';
import { deflateSync } from 'node:zlib';
import type { Harness, TestMerchant } from './app.js';
import { randomStr } from './app.js';
import { fundedCard, ok } from './cards.js';

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A real PNG of width × height grey pixels (the IDAT of a huge one is a small compressed run: a bomb). */
export function png(width = 1, height = 1, idat?: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // greyscale
  const rows = idat ?? deflateSync(Buffer.alloc((width + 1) * height));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', rows),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A minimal JPEG: SOI, a frame header of width × height, EOI. */
export function jpeg(width = 1, height = 1): Buffer {
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x0b, 0x08, 0, 0, 0, 0, 0x01, 0x01, 0x11, 0x00]);
  sof.writeUInt16BE(height, 5);
  sof.writeUInt16BE(width, 7);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), Buffer.from([0xff, 0xe0, 0x00, 0x04, 0x4a, 0x46]), sof, Buffer.from([0xff, 0xd9])]);
}

/** A minimal PDF; `pad` bytes of filler inside it make it as large as a test needs. */
export function pdf(pad = 0): Buffer {
  return Buffer.concat([Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\n%'), Buffer.alloc(pad, 0x41), Buffer.from('\ntrailer <<>>\n%%EOF\n')]);
}

export const file = (fileName: string, contentType: string, bytes: Buffer) => ({ fileName, contentType, data: bytes.toString('base64') });

/** A zip archive's first bytes (a local file header): what a zip bomb starts with. */
export const zip = () => Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0]), deflateSync(Buffer.alloc(1_000_000))]);

/** A card with `topUp` on it and a cleared purchase of `amount`: the purchase's tradeId. */
export async function clearedPurchase(
  h: Harness,
  opts: { topUp?: number; amount?: number; businessDate?: string; merchant?: TestMerchant; cardId?: string } = {},
): Promise<{ cardId: string; tradeId: string; authId: string }> {
  const cardId =
    opts.cardId ?? (await fundedCard(h, { topUp: opts.topUp ?? 100, ...(opts.merchant ? { merchant: opts.merchant } : {}) })).cardId;
  const day = opts.businessDate ? { businessDate: opts.businessDate } : {};
  const auth = await ok(h, '/sandbox/network/authorize', { cardId, amount: opts.amount ?? 40, ...day }, opts.merchant);
  const payment = await ok(h, '/sandbox/network/clear', { tradeId: auth.tradeId, ...day }, opts.merchant);
  return { cardId, tradeId: payment.tradeId as string, authId: auth.tradeId as string };
}

export const DISPUTE = {
  create: '/api/network/disputeCreate.html',
  update: '/api/network/disputeUpdate.html',
  submit: '/api/network/disputeSubmit.html',
  withdraw: '/api/network/disputeWithdraw.html',
  query: '/api/network/disputeQuery.html',
  list: '/api/network/disputeList.html',
  decide: '/sandbox/dispute/decide',
} as const;

/** A dispute operation that must succeed: its model. */
export async function disputeOk(h: Harness, op: keyof typeof DISPUTE, body: Record<string, unknown>, merchant?: TestMerchant) {
  const res = await h.call(DISPUTE[op], { randomStr: randomStr(), ...body }, merchant ? { merchant } : {});
  assert.equal(res.status, 200, `${op} ${JSON.stringify(body).slice(0, 300)} → ${JSON.stringify(res.body)}`);
  return res.body.model;
}

/** A dispute operation that must be refused with this status and code: its message. */
export async function disputeRefused(
  h: Harness,
  op: keyof typeof DISPUTE,
  body: Record<string, unknown>,
  status: number,
  code: string,
  merchant?: TestMerchant,
): Promise<string> {
  const res = await h.call(DISPUTE[op], { randomStr: randomStr(), ...body }, merchant ? { merchant } : {});
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  return res.body.msg as string;
}

/** The merchant's EUR funding balance, minor units. */
export async function fundingOf(h: Harness): Promise<number> {
  const row = await h.db.database.db
    .selectFrom('merchant_balances')
    .select('available')
    .where('merchant_id', '=', h.merchant.appId)
    .where('currency', '=', 'EUR')
    .executeTakeFirstOrThrow();
  return Number(row.available);
}
