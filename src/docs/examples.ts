/**
 * A copyable example body for every operation in the API reference, built from the operation's
 * own request schema: each required field takes the sample below for its name (the values of
 * docs/getting-started.md and the interface's samples), else the first value its schema allows.
 * test/openapi.test.ts ("… gives every operation an example body the service accepts as valid")
 * sends every example, signed, and checks that none is refused as invalid.
 */

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

const SAMPLES: Record<string, unknown> = {
  appId: 'mch_0123456789abcdef',
  sign: '534fe99247af6aa210b5ad738f1f5610867bc53c25d01daa2e0e0a30e95a5665',
  randomStr: 'Zx9Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7Kl0Mn',
  holderId: 'hld_7Hq2Lm8Np4Rt6Vb1Cd3Fg5Hj',
  cardId: 'card_7Hq2Lm8Np4Rt6Vb1Cd3Fg5Hj',
  toCardId: 'card_3Fg5Hj7Kl0MnZx9Kq2Lm8Np4',
  tradeId: 'trd_Kq2Lm8Np4Rt6Vb1Cd3Fg5Hj7',
  disputeId: 'dsp_Lm8Np4Rt6Vb1Cd3Fg5Hj7Kq2',
  tokenId: 'tok_Rt6Vb1Cd3Fg5Hj7Kq2Lm8Np4',
  requestNo: 'REQ-2026-0001',
  cardNo: '4242420000000000',
  amount: 25,
  currency: 'EUR',
  beginDate: '2026-11-01',
  endDate: '2026-11-21',
  start: 0,
  maxSize: 30,
  mobile: '+4915112345678',
  firstName: b64('Erika'),
  lastName: b64('Mustermann'),
  email: 'erika@example.com',
  dateOfBirth: '1990-04-12',
  dob: '1990-04-12',
  nationality: 'DE',
  countryCode: 'DE',
  country: 'DE',
  sex: 2,
  gender: 2,
  town: b64('Berlin'),
  city: 'Berlin',
  state: 'Berlin',
  address: b64('Unter den Linden 1'),
  postCode: '10117',
  zipCode: '10117',
  idnoType: 2,
  idno: 'C01X00T47',
  number: 'C01X00T47',
  validUntil: '2031-04-12',
  ipAddress: '203.0.113.7',
  auditStatus: 2,
  remark: 'Coffee',
  callbackUrl: 'https://merchant.example/kyc',
  kycPlatform: 'SUMSUB',
  authorizationUrl: 'https://merchant.example/authorize',
  mcc: '5411',
  acsTransID: '3f2c8a6e-4b1d-4c7a-9e5f-2a8b6d0c1e47',
  decisionUrl: 'https://merchant.example/3ds-decision',
  challengeMethod: 'otp',
  cvv2: '123',
  expiry: '2911',
  walletProvider: 'apple_pay',
  code: '123456',
};

/** Where a field of the same name is plain text (KYC data), not Base64 as in holderCreate. */
const SAMPLES_AT: Record<string, unknown> = {
  'individualInfo.firstName': 'Erika',
  'individualInfo.lastName': 'Mustermann',
  'individualInfo.address.address': 'Unter den Linden 1',
  controls: { spendingLimits: [{ amount: 200, interval: 'daily' }], blockedMccs: ['7995'], channels: ['ecommerce', 'pos'] },
};

/**
 * Optional fields an example still shows, because the operation needs one of two: an address
 * placement (KYC), a card or its number (the list), a card or a cardholder (cardControlsUpdate);
 * where a paged read starts (`after`, the funding statement); and the card data a sandbox
 * authorization may carry (`cvv2`, `expiry`: checked and counted, decisions §12.13).
 */
const SHOWN_OPTIONAL = new Set(['individualInfo.address', 'cardId', 'after', 'cvv2', 'expiry']);

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  anyOf?: JsonSchema[];
}

function isSchema(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null;
}

function valueFor(name: string, schema: JsonSchema, path: string): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum.includes(SAMPLES[name]) ? SAMPLES[name] : schema.enum[0];
  if (path in SAMPLES_AT) return SAMPLES_AT[path];
  if (schema.type === 'object' && schema.properties) return fieldsOf(schema, path);
  if (name in SAMPLES) return SAMPLES[name];
  if (schema.anyOf?.[0]) return valueFor(name, schema.anyOf[0], path);
  switch (schema.type) {
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return schema.items ? [valueFor(name, schema.items, path)] : [];
    default:
      return 'text';
  }
}

function fieldsOf(schema: JsonSchema, prefix: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const required = new Set(schema.required ?? []);
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const path = prefix ? `${prefix}.${name}` : name;
    if (name === 'sign' || !isSchema(prop) || !(required.has(name) || SHOWN_OPTIONAL.has(path))) continue;
    out[name] = valueFor(name, prop, path);
  }
  return out;
}

/** The example body of a request schema: its required fields, with `sign` last as a reader writes it. */
export function exampleOf(schema: unknown): Record<string, unknown> {
  if (!isSchema(schema) || !schema.properties) return {};
  const out = fieldsOf(schema, '');
  if ('sign' in schema.properties) out.sign = SAMPLES.sign;
  return out;
}
