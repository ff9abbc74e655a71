import { Type } from 'typebox';
import { DISPUTE_REASONS, DISPUTE_STATUSES } from '../db/schema-disputes.js';
import { CardId, DateText, Id, TradeId } from '../http/fields.js';
import { Envelope, Money, orList, RandomStr, SignedFields, StringEnum } from '../http/schemas.js';

/** What an evidence file may be (decisions §13.2), recognised by its first bytes (src/disputes/evidence.ts). */
export const EVIDENCE_TYPES = ['application/pdf', 'image/png', 'image/jpeg'] as const;
export type EvidenceType = (typeof EVIDENCE_TYPES)[number];
/** At most this many decoded bytes a file (5 MB). */
export const MAX_EVIDENCE_BYTES = 5 * 1024 * 1024;
/** At most this many files on a dispute. */
export const MAX_EVIDENCE_FILES = 10;
/** A dispute's explanation, at most this many characters. */
export const MAX_EXPLANATION = 2000;

const body = <P extends Parameters<typeof Type.Object>[0]>(props: P) =>
  Type.Object({ ...SignedFields, ...props, randomStr: RandomStr }, { additionalProperties: false });

export const DisputeId = Id('disputeId');

const Reason = StringEnum(DISPUTE_REASONS, `must be ${orList(DISPUTE_REASONS)}`);
const Explanation = Type.String({
  maxLength: MAX_EXPLANATION,
  description: `must be at most ${MAX_EXPLANATION} characters: what the cardholder says happened (sealed at rest; the sandbox decides by it: winning_evidence wins, losing_evidence loses)`,
});
const DisputeAmount = Type.Number({
  description: 'must be the amount disputed in the card currency, major units, at most what was cleared less refunds and earlier disputes',
});

export const EvidenceFile = Type.Object(
  {
    fileName: Type.String({
      pattern: '^[A-Za-z0-9][A-Za-z0-9 ._()-]{0,99}$',
      description: 'must be 1 to 100 letters, digits, spaces, dots, hyphens, underscores or parentheses, starting with a letter or digit',
    }),
    contentType: StringEnum(EVIDENCE_TYPES, `must be ${orList(EVIDENCE_TYPES)}; the file’s first bytes must say the same`),
    data: Type.String({
      minLength: 4,
      // 5 MB decoded is at most this much Base64.
      maxLength: Math.ceil(MAX_EVIDENCE_BYTES / 3) * 4,
      description: 'must be the file in Base64 (standard alphabet, with padding), at most 5 MB decoded',
    }),
  },
  { additionalProperties: false },
);

const Evidence = Type.Array(EvidenceFile, {
  maxItems: MAX_EVIDENCE_FILES,
  description: `must be a list of at most ${MAX_EVIDENCE_FILES} files (PDF, PNG or JPEG)`,
});

export const DisputeCreateBody = body({
  tradeId: TradeId,
  reason: Reason,
  amount: Type.Optional(DisputeAmount),
  explanation: Type.Optional(Explanation),
  evidence: Type.Optional(Evidence),
});

export const DisputeUpdateBody = body({
  disputeId: DisputeId,
  reason: Type.Optional(Reason),
  amount: Type.Optional(DisputeAmount),
  explanation: Type.Optional(Explanation),
  evidence: Type.Optional(
    Type.Array(EvidenceFile, {
      maxItems: MAX_EVIDENCE_FILES,
      description: `must be a list of at most ${MAX_EVIDENCE_FILES} files (PDF, PNG or JPEG): added to the dispute’s`,
    }),
  ),
  removeEvidence: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 100, description: 'must be the fileName of one of the dispute’s files' }), {
      maxItems: MAX_EVIDENCE_FILES,
      description: `must be a list of at most ${MAX_EVIDENCE_FILES} file names to remove (before those added)`,
    }),
  ),
});

/** Submit, withdraw and query name only the dispute. */
export const DisputeRefBody = body({ disputeId: DisputeId });

export const DisputeListBody = body({
  cardId: Type.Optional(CardId),
  status: Type.Optional(StringEnum(DISPUTE_STATUSES, `must be ${orList(DISPUTE_STATUSES)}`)),
  from: Type.Optional(DateText('must be the first day of creation written yyyy-MM-dd')),
  to: Type.Optional(DateText('must be the last day of creation written yyyy-MM-dd')),
  start: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'must be a whole number ≥ 0: the index of the first dispute' }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'must be a whole number from 1 to 100 (default 30)' })),
});

const nullableDate = (description: string) => Type.Union([Type.String({ description }), Type.Null()]);

export const EvidenceInfoSchema = Type.Object({
  fileName: Type.String(),
  contentType: StringEnum(EVIDENCE_TYPES, 'what the file’s first bytes say it is'),
  size: Type.Integer({ description: 'bytes, decoded' }),
  sha256: Type.String({ description: 'lowercase hex SHA-256 of the decoded file' }),
});

export const DisputeRecordSchema = Type.Object({
  disputeId: Type.String(),
  tradeId: Type.String({ description: 'the disputed transaction (a cleared purchase, tradeType 151)' }),
  cardId: Type.String(),
  cardNo: Type.String({ description: 'first 6 and last 4 digits, the rest *' }),
  reason: StringEnum(DISPUTE_REASONS, orList(DISPUTE_REASONS)),
  amount: Money,
  currency: Type.String(),
  status: StringEnum(DISPUTE_STATUSES, `${orList(DISPUTE_STATUSES)} (docs/disputes.md)`),
  explanation: Type.String({ description: 'what the cardholder says happened ("" none)' }),
  evidence: Type.Array(EvidenceInfoSchema),
  clearingDate: Type.String({ description: 'the clearing’s business date, yyyy-MM-dd' }),
  deadline: Type.String({ description: 'the last day a submission is accepted, yyyy-MM-dd (UTC): 120 days after the clearing' }),
  provisionalCredit: Type.Number({ description: 'what the submission credited the card provisionally, major units (0: none)' }),
  outcomeAmount: Type.Union([Type.Number(), Type.Null()], { description: 'what the network paid back on a won dispute; null until won' }),
  createdAt: Type.String({ description: 'ISO 8601' }),
  submittedAt: nullableDate('ISO 8601; null until submitted'),
  decidedAt: nullableDate('ISO 8601; null until won, lost, expired or withdrawn'),
});

export const DisputeEnvelope = Envelope(DisputeRecordSchema);

export const DisputePageSchema = Type.Object({
  total: Type.Integer({ description: 'disputes matching the filters' }),
  disputes: Type.Array(DisputeRecordSchema),
});

/** The sandbox network's decision, at once (`/sandbox/dispute/decide`). */
export const DisputeDecideBody = body({
  disputeId: DisputeId,
  outcome: StringEnum(['won', 'lost'] as const, 'must be won or lost'),
  amount: Type.Optional(
    Type.Number({ description: 'must be what the network pays back on a won dispute, major units (default: the whole amount)' }),
  ),
});
