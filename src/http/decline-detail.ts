import { Type } from 'typebox';
import { DeclineReason, type DeclineReasonValue } from '../trades/types.js';

/**
 * What a declined sandbox authorization answers besides the bare code and message: the declined
 * authorization's id, to read it back with tradeQuery, and why it was declined.
 */
export const DeclineDetailSchema = Type.Object(
  {
    tradeId: Type.String({
      description:
        'the declined authorization’s id (dcl_…, or the id your authorization endpoint was told when it was asked): read it with tradeQuery',
    }),
    declineReason: Type.Unsafe<DeclineReasonValue>({
      type: 'string',
      enum: Object.values(DeclineReason),
      description: 'why it was declined (docs/transactions.md, "Authorization decisions")',
    }),
  },
  { description: 'on a declined sandbox authorization (2724, 2725, 2728, 2729, 2731, 2732, 2733, 2734): its id and reason' },
);
