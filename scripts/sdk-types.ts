// Generates the SDK's record types (client/src/wire.ts) from the service's OpenAPI document, so the
// SDK cannot describe a record differently from what the service sends. `npm run build` writes the
// file; `npm run lint` runs this with --check, which fails when the checked-in file differs (a schema
// changed and the file was not regenerated and committed).
//
// The converter knows the JSON Schema the service's TypeBox schemas produce (objects, arrays,
// strings, numbers, integers, booleans, null, enum, const, anyOf) and throws on anything else, so a
// new kind of schema cannot be typed wrongly without notice.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuditStatus } from '../src/codes/audit-status.js';
import { Channel, DeclineReason, TradeStatus, TradeType } from '../src/trades/types.js';
import { openapiDocument } from './openapi-doc.js';

const OUT = join('client', 'src', 'wire.ts');

export interface JsonSchema {
  type?: string;
  description?: string;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  [keyword: string]: unknown;
}

/**
 * The code tables: emitted as the SDK's constants, and a field whose `enum` is exactly a table's codes
 * is typed with the table's name.
 */
export const TABLES = [
  { name: 'TradeType', doc: 'Transaction types of interface §2.1.', table: TradeType },
  { name: 'TradeStatus', doc: 'Transaction statuses of interface §2.1.', table: TradeStatus },
  { name: 'AuditStatus', doc: 'Cardholder audit statuses of interface §3.1.', table: AuditStatus },
  { name: 'DeclineReason', doc: 'Why an authorization was declined (docs/transactions.md).', table: DeclineReason },
  { name: 'Channel', doc: 'How a card was presented for an authorization.', table: Channel },
];

/**
 * The SDK's record types, in order (a later one names an earlier one it contains): where each is
 * found, as an operationId and a path from its 200 response's schema.
 */
export const RECORDS = [
  {
    name: 'TradeRecord',
    doc: 'A transaction record (interface §2.1). Amounts are in major units of `currency`.',
    at: ['sandboxAuthorize', 'model'],
  },
  { name: 'TradePage', doc: 'One page of the transaction list (interface 4.1).', at: ['tradeList'] },
  {
    name: 'Authorization',
    doc: 'An authorization, approved or declined: the acceptor the network sent and how the program decided.',
    at: ['tradeQuery', 'model', 'authorization', 'value'],
  },
  {
    name: 'TradeDetail',
    doc: 'One transaction (tradeQuery): its record, and the authorization when it is one.',
    at: ['tradeQuery', 'model'],
  },
  { name: 'Cardholder', doc: 'A cardholder (interface §2.2).', at: ['holderQuery', 'model'] },
  {
    name: 'SpendingLimit',
    doc: 'A spending limit: the most an interval may spend, optionally for some merchant categories only.',
    at: ['cardQuery', 'model', 'controls', 'spendingLimits', 'items'],
  },
  {
    name: 'Controls',
    doc: 'Spending controls of a card or a cardholder (docs/transactions.md, “Spending controls”).',
    at: ['cardQuery', 'model', 'controls'],
  },
  {
    name: 'SpendingState',
    doc: 'A spending limit that applies to a card, with what is spent and left of it now.',
    at: ['cardQuery', 'model', 'spending', 'items'],
  },
  { name: 'Card', doc: 'A card: never its full number.', at: ['cardApply', 'model'] },
  {
    name: 'CardWithSpending',
    doc: 'A card as cardQuery gives it: with each spending limit that applies and what it has left.',
    at: ['cardQuery', 'model'],
  },
  { name: 'ControlsModel', doc: 'The controls of one card or cardholder (cardControlsUpdate).', at: ['cardControlsUpdate', 'model'] },
  {
    name: 'AuthorizationEndpoint',
    doc: 'The merchant’s real-time authorization endpoint (authorizationEndpointUpdate).',
    at: ['authorizationEndpointUpdate', 'model'],
  },
  {
    name: 'FundingBalance',
    doc: 'One funding account of the merchant (merchantBalance).',
    at: ['merchantBalance', 'model', 'balances', 'items'],
  },
  {
    name: 'FundingStatementPage',
    doc: 'A page of the merchant’s funding statement (merchantFundingList).',
    at: ['merchantFundingList', 'model'],
  },
  {
    name: 'FundingMovement',
    doc: 'One movement of a funding account, with the balance after it (merchantFundingList).',
    at: ['merchantFundingList', 'model', 'movements', 'items'],
  },
  { name: 'KycStatus', doc: 'A KYC request and its result (interface 3.2).', at: ['kycQuery', 'model'] },
  { name: 'CardDetails', doc: 'Full card details (sandbox only).', at: ['sandboxCardDetails', 'model'] },
  {
    name: 'DisputeEvidence',
    doc: 'An evidence file of a dispute: its name, what its bytes are, its size and SHA-256.',
    at: ['disputeQuery', 'model', 'evidence', 'items'],
  },
  { name: 'Dispute', doc: 'A dispute (docs/disputes.md).', at: ['disputeQuery', 'model'] },
  { name: 'DisputePage', doc: 'A page of the merchant’s disputes (disputeList).', at: ['disputeList', 'model'] },
  {
    name: 'ThreeDsAuthentication',
    doc: 'A 3-D Secure authentication of one of the merchant’s cards (docs/3ds.md).',
    at: ['threeDsQuery', 'model'],
  },
  {
    name: 'ThreeDsAuthenticationPage',
    doc: 'A page of the merchant’s 3-D Secure authentications (threeDsList).',
    at: ['threeDsList', 'model'],
  },
  {
    name: 'ThreeDsSettings',
    doc: 'The merchant’s 3-D Secure settings: decision endpoint and challenge method.',
    at: ['threeDsSettingsQuery', 'model'],
  },
  {
    name: 'WalletToken',
    doc: 'A wallet token (Apple Pay, Google Pay, Samsung Pay, a card on file) as tokenQuery gives it (docs/tokens.md).',
    at: ['tokenQuery', 'model'],
  },
  { name: 'WalletTokenPage', doc: 'A page of the merchant’s wallet tokens (tokenList).', at: ['tokenList', 'model'] },
  {
    name: 'TokenSettings',
    doc: 'The merchant’s token settings: decision endpoint and step-up methods.',
    at: ['tokenSettingsQuery', 'model'],
  },
  {
    name: 'ThreeDsARes',
    doc: 'The ACS’s answer to an AReq (EMV 3-D Secure), as the sandbox’s DS returns it.',
    at: ['sandboxThreeDsAuthenticate', 'model', 'ares'],
  },
  {
    name: 'SandboxThreeDsAuthentication',
    doc: 'The sandbox’s DS: the ARes, and for a challenge the form that opens it.',
    at: ['sandboxThreeDsAuthenticate', 'model'],
  },
  {
    name: 'SandboxThreeDsCompletion',
    doc: 'A challenge finished in the sandbox without a browser: the authentication, the wrong codes still allowed, the CRes.',
    at: ['sandboxThreeDsComplete', 'model'],
  },
  {
    name: 'SandboxTokenProvisioning',
    doc: 'The sandbox’s TSP: a provisioning’s decision, the token it made and the one-time code asked for (docs/tokens.md).',
    at: ['sandboxTokenProvision', 'model'],
  },
  {
    name: 'SandboxTokenVerification',
    doc: 'A wallet token’s one-time code checked in the sandbox: valid or not, the wrong codes still allowed, the token.',
    at: ['sandboxTokenVerify', 'model'],
  },
];

export function find(doc: Record<string, any>, [operationId, ...path]: string[]): JsonSchema {
  const op = Object.values(doc.paths as Record<string, Record<string, any>>)
    .flatMap((item) => Object.values(item))
    .find((o) => o?.operationId === operationId);
  if (!op) throw new Error(`no operation ${operationId} in the OpenAPI document`);
  let schema = op.responses?.['200']?.content?.['application/json']?.schema as JsonSchema | undefined;
  for (const step of path) {
    // 'value': the member of a nullable union (`anyOf: [X, null]`) that is not null.
    // 'items' of an optional list: the list's items.
    schema =
      step === 'items' ? schema?.items : step === 'value' ? schema?.anyOf?.find((s) => s.type !== 'null') : schema?.properties?.[step];
  }
  if (!schema) throw new Error(`no schema at ${[operationId, ...path].join('.')}`);
  return schema;
}

const KNOWN = new Set(['type', 'description', 'enum', 'const', 'anyOf', 'items', 'properties', 'required', 'additionalProperties']);
// Rules a value satisfies: they narrow no TypeScript type.
const RULES = new Set([
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'minItems',
  'maxItems',
  'uniqueItems',
  'format',
]);

const named: Array<{ name: string; schema: JsonSchema }> = [];
const sameSet = (a: unknown[], b: unknown[]) => a.length === b.length && a.every((v) => b.includes(v));

function typeOf(schema: JsonSchema, indent: string): string {
  for (const keyword of Object.keys(schema)) {
    if (!KNOWN.has(keyword) && !RULES.has(keyword)) throw new Error(`cannot type the keyword "${keyword}" in ${JSON.stringify(schema)}`);
  }
  // A schema is a named record whatever its own description says (a field describes its use).
  const bare = ({ description: _d, ...rest }: JsonSchema) => JSON.stringify(rest);
  const same = named.find((n) => bare(n.schema) === bare(schema));
  if (same) return same.name;
  if (schema.anyOf) return schema.anyOf.map((s) => typeOf(s, indent)).join(' | ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) {
    const table = TABLES.find((t) => sameSet(Object.values(t.table), schema.enum ?? []));
    return table ? `${table.name}Value` : schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  }
  switch (schema.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
      return schema.type;
    case 'integer':
      return 'number';
    case 'array': {
      if (!schema.items) throw new Error('an array without items');
      const item = typeOf(schema.items, indent);
      return /[ |]/.test(item) ? `Array<${item}>` : `${item}[]`;
    }
    case 'object':
      return `{\n${members(schema, `${indent}  `)}${indent}}`;
    default:
      throw new Error(`cannot type ${JSON.stringify(schema)}`);
  }
}

function members(schema: JsonSchema, indent: string): string {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {})
    .map(([key, prop]) => {
      const doc = prop.description ? `${indent}/** ${prop.description.replaceAll('*/', '* /')} */\n` : '';
      return `${doc}${indent}${key}${required.has(key) ? '' : '?'}: ${typeOf(prop, indent)};\n`;
    })
    .join('');
}

function generate(doc: Record<string, any>): string {
  const out = [
    '// Generated by scripts/sdk-types.ts from the service’s OpenAPI document (npm run build); do not edit.',
    '// npm run lint fails when this file differs from what the document gives.',
    '',
  ];
  for (const { name, doc: comment, table } of TABLES) {
    out.push(`/** ${comment} */`, `export const ${name} = ${JSON.stringify(table)} as const;`);
    out.push(`export type ${name}Value = (typeof ${name})[keyof typeof ${name}];`, '');
  }
  for (const { name, doc: comment, at } of RECORDS) {
    const schema = find(doc, at);
    if (schema.type !== 'object') throw new Error(`${name} is not an object`);
    // A record that is an earlier one plus fields (cardQuery's card: the card and its spending) extends it.
    const base = named.find(
      (n) =>
        Object.keys(n.schema.properties ?? {}).length > 0 &&
        Object.entries(n.schema.properties ?? {}).every(([k, v]) => JSON.stringify(schema.properties?.[k]) === JSON.stringify(v)),
    );
    const own = base
      ? {
          ...schema,
          properties: Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([k]) => !(k in (base.schema.properties ?? {})))),
        }
      : schema;
    out.push(`/** ${comment} */`, `export interface ${name}${base ? ` extends ${base.name}` : ''} {`, `${members(own, '  ')}}`, '');
    named.push({ name, schema });
  }
  return out.join('\n');
}

// Run as a script (npm run build, npm run lint); scripts/sdk-python-types.ts imports the tables above.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generate(await openapiDocument());
  // Formatted as the repository's formatter writes the file, so the check compares like with like.
  const res = spawnSync(join('node_modules', '.bin', 'biome'), ['format', `--stdin-file-path=${OUT}`], { input: text, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`biome format failed: ${res.stderr}`);
  const formatted = res.stdout;
  const current = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
  if (formatted === current) process.exit(0);
  if (process.argv.includes('--check')) {
    console.error(`${OUT} is not what the OpenAPI document gives: run npm run build and commit it`);
    process.exit(1);
  }
  writeFileSync(OUT, formatted);
}
