import type { TxCtx } from '../context.js';
import type { SecretBox } from '../crypto/secretbox.js';
import { type EventType, emitEvent, notifyUrlOf } from './outbox.js';

/**
 * A callback event to a merchant's notify URL, when it has one (read in the transaction, as the
 * change it tells of), written in the same transaction (src/callbacks/outbox.ts); none without a URL.
 * The one way a verb writes an event (`npm run lint` refuses `emitEvent` and an inline insert outside
 * src/callbacks/); a one-statement write (src/db/one-statement.ts) takes `eventParts` instead.
 */
export async function notifyMerchant(
  ctx: TxCtx,
  /**
   * `sealWith`: the box that seals the payload of a SEALED_EVENTS type (required for them). `url`: the
   * notify URL when the caller read it in this transaction already (null: none), or the URL the event
   * goes to instead (a `kyc.result`: its request's callbackUrl); else the notify URL is read here.
   */
  event: { merchantId: string; type: EventType; subject: string; body: Record<string, unknown>; sealWith?: SecretBox; url?: string | null },
): Promise<void> {
  const url = event.url !== undefined ? event.url : await notifyUrlOf(ctx.tx, event.merchantId);
  if (!url) return;
  await emitEvent(ctx.tx, { ...event, url, now: ctx.now }, ctx.wake);
}
