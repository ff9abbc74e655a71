import { TradeStatus, TradeType } from '../trades/types.js';
import type { LinkClass } from './identity.js';

/**
 * One vocabulary for the link's reports (decisions §12.13): the clearing file's import
 * (src/card-network/clearing-file.ts) and the day's settlement (./settlement.ts) name what a network
 * message posted by the record it produced, with this one function, so that the same movement has
 * the same name in both:
 *
 * - `cleared`: a payment (151) posted by a clearing (0220) or a single message (0200);
 * - `refunded`: money a clearing or an 0200 paid, returned to the card (a refund record, 151/10):
 *   an 0220 refund, and a reversal (0400/0420) of an 0200, of an 0220 or of a cleared authorization;
 * - `reversed`: an authorization's hold returned (a reversal record, 150/2): a reversal of an 0100/0120.
 */
export const MOVEMENTS = ['cleared', 'refunded', 'reversed'] as const;
export type Movement = (typeof MOVEMENTS)[number];

/** What a message of this class posted, by the record it produced; null: no money moved (a reversal that had nothing to return). */
export function movementOf(msgClass: LinkClass, trade: { trade_type: number; trade_status: number }): Movement | null {
  if (trade.trade_type === TradeType.payment) {
    if (trade.trade_status === TradeStatus.refund) return 'refunded';
    // A reversal answered with the payment itself returned nothing.
    return msgClass === 'financial' ? 'cleared' : null;
  }
  if (trade.trade_type === TradeType.authorization && trade.trade_status === TradeStatus.reversal) return 'reversed';
  return null;
}
