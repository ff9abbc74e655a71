import type { Services } from '../context.js';
import { type LinkAnswer, type LinkClass, type LinkIdentity, LinkReplay, originalMessage, storedAnswer } from '../network/link.js';
import { ForcedPostNotSupported, linkClear, linkRefund } from '../network/link-financial.js';
import { runVerb } from '../runner.js';
import { failureCode } from './authorization.js';
import { cardByPan, contentHash, storedCopy } from './card-data.js';

/**
 * A financial advice (0220, or its repeat 0221, decisions §12.4): processing `00`/`01` clears the
 * approved 0100 field 90 names (field 4: the cleared amount); processing `20` refunds field 4 of
 * the payment an earlier 0220 (or 0200) named in field 90 produced. Without such an original it
 * would be a forced post (§12.7): not yet supported, `12`. Exactly once under its own identity
 * (class financial, 32, 11, 7).
 */
export async function financialAdvice(svc: Services, mti: string, fields: Map<number, string>): Promise<LinkAnswer> {
  const acquirer = fields.get(32);
  const transmitted = fields.get(7);
  const processing = fields.get(3);
  const stan = fields.get(11) as string;
  const f4 = fields.get(4);
  if (!acquirer || !transmitted || !processing || !f4) return { code: '30' };
  const kind = processing.slice(0, 2);
  if (!['00', '01', '20'].includes(kind) || processing.slice(2) !== '0000') return { code: '12' };
  const db = svc.database.db;
  const identity: LinkIdentity = { msgClass: 'financial', acquirer, stan, transmitted };
  const hash = await contentHash(svc, fields);
  const stored = await storedAnswer(db, identity, hash);
  if (stored) return stored;

  const f90 = fields.get(90);
  if (!f90) return { code: '12' };
  const originalMti = f90.slice(0, 4);
  const refund = kind === '20';
  const accepted = refund ? ['0200', '0201', '0220', '0221'] : ['0100', '0101'];
  if (!accepted.includes(originalMti)) return { code: '12' };
  const originalClass: LinkClass = refund ? 'financial' : 'authorization';
  const original = await originalMessage(db, originalClass, {
    stan: f90.slice(4, 10),
    transmitted: f90.slice(10, 20),
    acquirer: f90.slice(20, 31),
  });
  if (original?.code !== '00' || !original.tradeId || !original.cardId || !original.merchantId) return { code: '12' };
  const pan = fields.get(2);
  if (pan !== undefined && (await cardByPan(svc, pan))?.id !== original.cardId) return { code: '12' };
  const amount = Number(f4);
  if (amount === 0) return { code: '13' };

  try {
    return await runVerb(svc, refund ? linkRefund : linkClear, {
      input: {
        record: { identity, contentHash: hash, mti, request: storedCopy(fields) },
        tradeId: original.tradeId,
        cardId: original.cardId,
        amount,
      },
      actor: `network:${acquirer}`,
      merchantId: original.merchantId,
    });
  } catch (err) {
    if (err instanceof LinkReplay) return (await storedAnswer(db, identity, hash)) ?? { code: '96' };
    if (err instanceof ForcedPostNotSupported) return { code: '12' };
    const code = failureCode(err);
    if (code === '96')
      svc.log.error({ err: { name: (err as Error).name, message: (err as Error).message }, stan }, 'network link: financial advice failed');
    return { code };
  }
}
