// The sandbox's simulator bodies (src/sandbox/routes.ts): the ledger's inputs (src/ledger/schemas.ts), and the card details read.
import { Type } from 'typebox';
import { CardId } from '../http/fields.js';
import { RandomStr, SignedFields } from '../http/schemas.js';

export {
  AdjustBody,
  AuthorizeBody,
  ClearBody,
  FeeBody,
  InquiryBody,
  RefundBody,
  ReverseBody,
  TransferBody,
  VoidBody,
  WithdrawBody,
} from '../ledger/schemas.js';

export const CardDetailsBody = Type.Object({ ...SignedFields, cardId: CardId, randomStr: RandomStr }, { additionalProperties: false });
