import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import {
  type TspActivationCodeRequest,
  TspActivationCodeRequestSchema,
  type TspNotifyRequest,
  TspNotifyRequestSchema,
  type TspProvisionRequest,
  TspProvisionRequestSchema,
  type TspVerifyRequest,
  TspVerifyRequestSchema,
} from './schemas.js';

/** An element's name as the TSP wrote it: `device.name`, `walletReasonCodes[1]`. */
function elementOf(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((name, seg) => (/^\d+$/.test(seg) ? `${name}[${seg}]` : name ? `${name}.${seg}` : seg), '');
}

/** The rule of the schema at a schemaPath (`#/properties/device/properties/type`): its description. */
function ruleAt(root: TSchema, schemaPath: string): string | null {
  let node: unknown = root;
  for (const seg of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) {
    node = (node as Record<string, unknown> | undefined)?.[seg];
  }
  const description = (node as { description?: unknown } | undefined)?.description;
  return typeof description === 'string' ? description : null;
}

type Checked<T> = { value: T } | { detail: string };

/**
 * A TSP body checked against its schema (strictly: an element this interface does not define is
 * refused). The refusal names the first element at fault and its rule, as the 400's `detail`:
 * `walletRiskScore: must be a whole number from 0 to 9`.
 */
function checker<T>(schema: TSchema): (body: unknown) => Checked<T> {
  const check = Compile(schema);
  return (body) => {
    if (check.Check(body)) return { value: body as T };
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return { detail: 'body: must be a JSON object' };
    const errors = [...check.Errors(body)];
    const extra = errors.find((e) => e.keyword === 'additionalProperties');
    if (extra) {
      const names = (extra.params as { additionalProperties?: string[] }).additionalProperties ?? [];
      const at = elementOf(extra.instancePath);
      return { detail: `${at ? `${at}.` : ''}${names[0] ?? '?'}: is not an element of this request` };
    }
    const missing = errors.find((e) => e.keyword === 'required');
    if (missing) {
      const names = (missing.params as { requiredProperties?: string[] }).requiredProperties ?? [];
      const at = elementOf(missing.instancePath);
      return { detail: `${at ? `${at}.` : ''}${names[0] ?? '?'}: is required` };
    }
    const first = errors.find((e) => e.keyword !== 'boolean') ?? errors[0];
    if (!first) return { detail: 'body: is not a valid request' };
    const rule = ruleAt(schema, first.schemaPath) ?? first.message;
    return { detail: `${elementOf(first.instancePath) || 'body'}: ${rule}` };
  };
}

export const checkProvision = checker<TspProvisionRequest>(TspProvisionRequestSchema);
export const checkActivationCode = checker<TspActivationCodeRequest>(TspActivationCodeRequestSchema);
export const checkVerify = checker<TspVerifyRequest>(TspVerifyRequestSchema);
export const checkNotify = checker<TspNotifyRequest>(TspNotifyRequestSchema);
