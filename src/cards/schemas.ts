import { type Static, Type } from 'typebox';
import { ControlsSchema, SpendingStateSchema } from '../controls/schemas.js';
import { CARD_STATUSES, STATUS_SOURCES } from '../db/schema.js';
import { CardId, CurrencyCode, HolderId } from '../http/fields.js';
import { Envelope, Money, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

export const CardModelSchema = Type.Object({
  cardId: Type.String(),
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  currency: Type.String(),
  holderId: Type.String(),
  status: StringEnum(CARD_STATUSES, orList(CARD_STATUSES)),
  statusSource: Type.Union([StringEnum(STATUS_SOURCES, orList(STATUS_SOURCES)), Type.Null()], {
    description:
      'who froze or closed the card (null while active); a freeze is lifted only by the same party or the operator (precedence operator > merchant > cardholder). security: the service froze it after 5 CVV2 or expiry mismatches within 24 hours; the merchant or the operator lifts it',
  }),
  statusReason: Type.Union([Type.String({ maxLength: 200 }), Type.Null()], {
    description: 'why, as given by whoever set the status; null while active',
  }),
  availableBalance: Type.Number({ description: 'what can be spent, in major units' }),
  ledgerBalance: Type.Number({ description: 'available plus what authorizations hold, in major units' }),
  debtBalance: Type.Number({
    description:
      'what the cardholder owes, in major units: what forced posts of the card network (advices, late or larger clearings) took beyond the available balance; 0 normally. While above 0, availableBalance is 0; a top-up pays it first (from the merchant’s funding). The card’s net balance is availableBalance − debtBalance',
  }),
  controls: ControlsSchema,
});

/** cardQuery's answer: the card and, for each spending limit that applies to it, what is left now. */
export const CardQueryModelSchema = Type.Object({
  ...CardModelSchema.properties,
  holderControls: Type.Unsafe<Static<typeof ControlsSchema>>({
    ...ControlsSchema,
    description:
      'the cardholder’s controls: each rule the card does not set itself applies from here (cardControlsUpdate with holderId sets them)',
  }),
  spending: Type.Array(SpendingStateSchema, {
    description: 'the spending limits that apply to the card (its own, else its cardholder’s), each with what is spent and left now',
  }),
});

export const CardApplyBody = Type.Object(
  { ...SignedFields, holderId: HolderId, currency: CurrencyCode, controls: Type.Optional(ControlsSchema), randomStr: RandomStr },
  { additionalProperties: false },
);
export const CardQueryBody = Type.Object({ ...SignedFields, cardId: CardId, randomStr: RandomStr }, { additionalProperties: false });
export const CardTopUpBody = Type.Object(
  { ...SignedFields, cardId: CardId, amount: Money, randomStr: RandomStr },
  { additionalProperties: false },
);

/** A status change's reason: short text, no control characters ("" counts as none). */
const StatusReason = Type.String({
  maxLength: 200,
  pattern: '^[^\\u0000-\\u001F\\u007F-\\u009F]*$',
  description: 'must be at most 200 characters, without control characters',
});

/** cardFreeze, cardUnfreeze and cardClose (decisions §11). */
export const CardStatusBody = Type.Object(
  { ...SignedFields, cardId: CardId, reason: Type.Optional(StatusReason), randomStr: RandomStr },
  { additionalProperties: false },
);

export const CardEnvelope = Envelope(CardModelSchema);

export const CardDetailsSchema = Type.Object({
  cardId: Type.String(),
  cardNo: Type.String({ description: 'the full card number' }),
  expiry: Type.String({ description: 'MM/YY' }),
  cvv: Type.String(),
});
