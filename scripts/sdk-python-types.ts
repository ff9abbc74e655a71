// Generates the Python SDK's types (sdk/python/cardprogram/_wire.py) from the service's OpenAPI
// document, as scripts/sdk-types.ts does client/src/wire.ts for the Node SDK: the code tables as
// enums, the same named records as TypedDicts, and for every operation its path, a TypedDict of its
// body (`CardApplyParams`) and the type of what it answers (`CardApplyResult`), so a new operation
// is typed without anyone listing it here. `npm run build` writes the file; `npm run lint` runs this
// with --check, which fails when the committed file differs (a schema changed and the file was not
// regenerated) and then checks that every operation has a method in the Python SDK
// (scripts/sdk-python-operations.ts).
//
// Like the Node generator, it knows the JSON Schema the service's TypeBox schemas produce and throws
// on any other keyword, so a new kind of schema cannot be typed wrongly without notice. The output
// runs on Python 3.10 (no NotRequired: a TypedDict with optional keys is split in two).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openapiDocument } from './openapi-doc.js';
import { checkPythonOperations, operationsOf, PY_KEYWORDS, pascal, SIGNED_ENVELOPE } from './sdk-python-operations.js';
import { find, type JsonSchema, RECORDS, TABLES } from './sdk-types.js';

export const PY_OUT = join('sdk', 'python', 'cardprogram', '_wire.py');

const KNOWN = new Set(['type', 'description', 'enum', 'const', 'anyOf', 'items', 'properties', 'required', 'additionalProperties']);
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
const upperSnake = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
const isIdentifier = (s: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(s) && !PY_KEYWORDS.has(s);
/** A Python literal for a JSON value (strings as JSON writes them: valid Python too). */
const literal = (v: unknown) => (v === true ? 'True' : v === false ? 'False' : v === null ? 'None' : JSON.stringify(v));
const docString = (text: string) => `"""${text.replaceAll('\\', '\\\\').replaceAll('"""', '\\"\\"\\"')}"""`;
const comment = (text: string) => text.replace(/\s+/g, ' ').trim();

interface Named {
  name: string;
  key: string;
}

/** The definitions of _wire.py in order, each after those it names. */
class Emitter {
  readonly out: string[] = [];
  private readonly records: Array<Named & { schema: JsonSchema }> = [];
  private readonly objects: Named[] = [];
  private readonly aliases: Named[] = [];
  private readonly taken = new Set<string>();

  /** The key two schemas share when they are the same type (a field's own description aside). */
  private static key({ description: _d, ...rest }: JsonSchema): string {
    return JSON.stringify(rest);
  }

  private unique(name: string): string {
    let candidate = name;
    for (let i = 2; this.taken.has(candidate); i++) candidate = `${name}${i}`;
    this.taken.add(candidate);
    return candidate;
  }

  /** A named record (RECORDS): the same name as in the Node SDK. */
  record(name: string, doc: string, schema: JsonSchema): void {
    if (schema.type !== 'object') throw new Error(`${name} is not an object`);
    this.taken.add(name);
    // A record that is an earlier one plus fields (cardQuery's card) extends it, as in wire.ts.
    const base = this.records.find(
      (r) =>
        Object.keys(r.schema.properties ?? {}).length > 0 &&
        Object.entries(r.schema.properties ?? {}).every(([k, v]) => JSON.stringify(schema.properties?.[k]) === JSON.stringify(v)),
    );
    this.typedDict(name, doc, schema, base?.name, new Set(Object.keys(base?.schema.properties ?? {})), true);
    this.records.push({ name, key: Emitter.key(schema), schema });
  }

  /** A top-level alias or TypedDict for an operation's body or answer. */
  named(name: string, doc: string, schema: JsonSchema): void {
    const same = this.sameAs(schema);
    if (same || schema.type !== 'object') {
      this.taken.add(name);
      this.out.push(`${name} = ${same ?? this.typeOf(schema, name)}\n${docString(doc)}`);
      return;
    }
    this.taken.add(name);
    this.typedDict(name, doc, schema, undefined, new Set(), false);
    this.objects.push({ name, key: Emitter.key(schema) });
  }

  private sameAs(schema: JsonSchema): string | undefined {
    const key = Emitter.key(schema);
    return (this.records.find((r) => r.key === key) ?? this.objects.find((o) => o.key === key))?.name;
  }

  /** The Python type of a schema; `hint` names an object or an enum met inside it. */
  typeOf(schema: JsonSchema, hint: string, aliasEnums = false, where = hint): string {
    for (const keyword of Object.keys(schema)) {
      if (!KNOWN.has(keyword) && !RULES.has(keyword)) throw new Error(`cannot type the keyword "${keyword}" in ${JSON.stringify(schema)}`);
    }
    const same = this.sameAs(schema);
    if (same) return same;
    if (schema.anyOf) {
      const members = schema.anyOf.map((s, i) =>
        this.typeOf(s, schema.anyOf && schema.anyOf.length > 2 ? `${hint}${i}` : hint, aliasEnums, where),
      );
      return [...new Set(members)].join(' | ');
    }
    if (schema.const !== undefined) return `Literal[${literal(schema.const)}]`;
    if (schema.enum) {
      const values = schema.enum;
      const table = TABLES.find((t) => {
        const codes = Object.values(t.table) as unknown[];
        return codes.length === values.length && codes.every((c) => values.includes(c));
      });
      if (table) return `${table.name}Value`;
      const text = `Literal[${values.map(literal).join(', ')}]`;
      const key = JSON.stringify(values);
      const alias = this.aliases.find((a) => a.key === key);
      if (alias) return alias.name;
      if (!aliasEnums || values.length < 2) return text;
      const name = this.unique(hint);
      this.out.push(`${name} = ${text}${schema.description ? `\n${docString(schema.description)}` : ''}`);
      this.aliases.push({ name, key });
      return name;
    }
    switch (schema.type) {
      case 'string':
        return 'str';
      case 'number':
        return 'float';
      case 'integer':
        return 'int';
      case 'boolean':
        return 'bool';
      case 'null':
        return 'None';
      case 'array':
        if (!schema.items) throw new Error('an array without items');
        return `list[${this.typeOf(schema.items, `${hint}Item`, aliasEnums, `An item of ${where}`)}]`;
      case 'object': {
        if (!schema.properties || Object.keys(schema.properties).length === 0) {
          const extra = schema.additionalProperties;
          return typeof extra === 'object' && extra !== null
            ? `dict[str, ${this.typeOf(extra as JsonSchema, `${hint}Value`)}]`
            : 'dict[str, Any]';
        }
        const name = this.unique(hint);
        this.typedDict(name, schema.description ?? where, schema, undefined, new Set(), aliasEnums);
        this.objects.push({ name, key: Emitter.key(schema) });
        return name;
      }
      default:
        throw new Error(`cannot type ${JSON.stringify(schema)}`);
    }
  }

  /**
   * A TypedDict: its own fields (those of `base` left out), required ones in one part and optional
   * ones in another (3.10 has no NotRequired); a part with a key Python cannot name (`from`) is
   * written in the functional form.
   */
  private typedDict(name: string, doc: string, schema: JsonSchema, base: string | undefined, inherited: Set<string>, aliasEnums: boolean) {
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {})
      .filter(([key]) => !inherited.has(key))
      .map(([key, prop]) => ({
        key,
        required: required.has(key),
        // A field named as its record (KycStatus.kycStatus) gives its enum the name KycStatusValue.
        type: this.typeOf(prop, pascal(key) === name ? `${name}Value` : `${name}${pascal(key)}`, aliasEnums, `The \`${key}\` of ${name}.`),
        doc: prop.description,
      }));
    const must = fields.filter((f) => f.required);
    const may = fields.filter((f) => !f.required);
    const parent = base ?? 'TypedDict';
    const body = (part: typeof fields) => part.map((f) => `${f.doc ? `    #: ${comment(f.doc)}\n` : ''}    ${f.key}: ${f.type}`).join('\n');
    const functional = (part: typeof fields, partName: string, total: boolean) =>
      `${partName} = TypedDict(\n    "${partName}",\n    {\n${part
        .map((f) => `${f.doc ? `        # ${comment(f.doc)}\n` : ''}        ${JSON.stringify(f.key)}: ${f.type},`)
        .join('\n')}\n    },${total ? '' : '\n    total=False,'}\n)`;
    const head = `class ${name}`;
    const docLine = `    ${docString(doc || name)}`;
    if (fields.some((f) => !isIdentifier(f.key))) {
      const parts: string[] = base ? [base] : [];
      if (must.length) {
        this.out.push(functional(must, `_${name}Required`, true));
        parts.push(`_${name}Required`);
      }
      if (may.length) {
        this.out.push(functional(may, `_${name}Optional`, false));
        parts.push(`_${name}Optional`);
      }
      this.out.push(`${head}(${parts.join(', ')}):\n${docLine}`);
      return;
    }
    if (must.length && may.length) {
      this.out.push(`class _${name}Required(${parent}):\n${body(must)}`);
      this.out.push(`${head}(_${name}Required, total=False):\n${docLine}\n\n${body(may)}`);
    } else if (may.length) {
      this.out.push(`${head}(${parent}, total=False):\n${docLine}\n\n${body(may)}`);
    } else {
      this.out.push(`${head}(${parent}):\n${docLine}${must.length ? `\n\n${body(must)}` : ''}`);
    }
  }
}

export function generatePython(doc: Record<string, any>): string {
  const e = new Emitter();
  const head = [
    '# Generated by scripts/sdk-python-types.ts from the service’s OpenAPI document (npm run build); do not edit.',
    '# npm run lint fails when this file differs from what the document gives.',
    '"""The service’s records, code tables and operations, as the OpenAPI document describes them."""',
    '',
    'import enum',
    'from typing import Any, Literal, TypedDict',
  ];
  for (const { name, doc: text, table } of TABLES) {
    const values = Object.values(table) as Array<string | number>;
    const numeric = values.every((v) => typeof v === 'number');
    const members = Object.entries(table).map(([key, value]) => `    ${upperSnake(key)} = ${literal(value)}`);
    e.out.push(`class ${name}(${numeric ? 'enum.IntEnum' : 'str, enum.Enum'}):\n    ${docString(text)}\n\n${members.join('\n')}`);
    e.out.push(`${name}Value = Literal[${values.map(literal).join(', ')}]`);
  }
  // A record found inside another (FundingMovement in FundingStatementPage) is written first, so the
  // other names it.
  const records = RECORDS.map((r) => ({ ...r, schema: find(doc, r.at) }));
  const written = new Set<string>();
  const write = (r: (typeof records)[number]) => {
    if (written.has(r.name)) return;
    written.add(r.name);
    for (const inner of records) if (inner !== r && !written.has(inner.name) && contains(r.schema, inner.schema)) write(inner);
    e.record(r.name, r.doc, r.schema);
  };
  for (const r of records) write(r);
  const ops = operationsOf(doc);
  for (const op of ops) {
    const body: JsonSchema = {
      ...op.body,
      properties: Object.fromEntries(Object.entries(op.body.properties ?? {}).filter(([k]) => !SIGNED_ENVELOPE.includes(k))),
      required: (op.body.required ?? []).filter((k) => !SIGNED_ENVELOPE.includes(k)),
    };
    e.named(`${pascal(op.operationId)}Params`, `The body of ${op.operationId} (${op.path}) without appId, sign and timestamp.`, body);
    e.named(`${pascal(op.operationId)}Result`, `What ${op.operationId} answers: ${op.summary}.`, op.answer);
  }
  // Requests the service sends the merchant (its authorization endpoint), signed as callbacks are.
  for (const [event, item] of Object.entries((doc.webhooks ?? {}) as Record<string, Record<string, any>>)) {
    for (const op of Object.values(item)) {
      const body = op.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
      const answer = op.responses?.['200']?.content?.['application/json']?.schema as JsonSchema | undefined;
      if (body) e.named(pascal(event), `${op.summary ?? event}: what the service sends.`, body);
      if (answer) e.named(`${pascal(event)}Answer`, `What the merchant answers to ${event}.`, answer);
    }
  }
  e.out.push(
    [
      '#: Every operation of the OpenAPI document: its path. A resource method sends its operation by this id',
      '#: (scripts/sdk-python-operations.ts checks that each has exactly one method).',
      'OPERATIONS: dict[str, str] = {',
      ...ops.map((op) => `    ${JSON.stringify(op.operationId)}: ${JSON.stringify(op.path)},`),
      '}',
    ].join('\n'),
  );
  return `${[head.join('\n'), ...e.out].join('\n\n\n')}\n`;
}

/** Whether `inner` is `outer` or appears anywhere inside it (a field's own description aside). */
function contains(outer: JsonSchema, inner: JsonSchema): boolean {
  const key = (s: JsonSchema) => {
    const { description: _d, ...rest } = s;
    return JSON.stringify(rest);
  };
  const target = key(inner);
  const walk = (s: JsonSchema | undefined): boolean =>
    s !== undefined && (key(s) === target || Object.values(s.properties ?? {}).some(walk) || walk(s.items) || (s.anyOf ?? []).some(walk));
  return Object.values(outer.properties ?? {}).some(walk);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const doc = await openapiDocument();
  const text = generatePython(doc);
  const current = existsSync(PY_OUT) ? readFileSync(PY_OUT, 'utf8') : '';
  if (process.argv.includes('--check')) {
    let failed = false;
    if (text !== current) {
      console.error(`${PY_OUT} is not what the OpenAPI document gives: run npm run build and commit it`);
      failed = true;
    }
    const problems = await checkPythonOperations(doc);
    for (const p of problems) console.error(p);
    if (failed || problems.length > 0) process.exit(1);
  } else if (text !== current) {
    writeFileSync(PY_OUT, text);
  }
}
