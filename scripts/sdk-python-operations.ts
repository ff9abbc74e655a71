// The check that every operation of the OpenAPI document has a method in the Python SDK
// (sdk/python/), run by `npm run lint` through scripts/sdk-python-types.ts --check. It fails, naming
// the operation and showing the method to add, when:
// - an operation has no method decorated @operation("<operationId>", kind) (a new operation: add
//   one; docs/architecture.md, "How to add an operation");
// - a method names an operation the document does not have, or two methods name one;
// - a method's arguments are not the operation's fields in snake_case (appId, sign and timestamp
//   are the client's; a read's randomStr too, new for every attempt); a field the document added is
//   then missing from the SDK, a removed one still there;
// - its kind (write, read, keyed) is not the operation's in test/helpers/operations.ts, the table the
//   isolation tests hold to the app: a write sent as a read would act twice on a retry;
// - its body does not send the operation its decorator names.
// The methods are read by Python itself (cardprogram._operations.describe); without python3 3.10+
// the decorators are read from the source and the arguments are not checked (it says so).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { OPERATIONS as TABLE } from '../test/helpers/operations.js';
import type { JsonSchema } from './sdk-types.js';

const PACKAGE = join('sdk', 'python');
const RESOURCES = join(PACKAGE, 'cardprogram', 'resources');
const NODE_RESOURCES = join('client', 'src', 'resources');

/** The envelope fields every request has and the client fills in itself. */
export const SIGNED_ENVELOPE = ['appId', 'sign', 'timestamp'];

export const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);

export const pascal = (s: string) => s.replace(/(^|[^A-Za-z0-9])([A-Za-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());

/** The keyword argument of a wire field, as cardprogram._operations.snake writes it: holderId → holder_id, from → from_. */
export function snake(field: string): string {
  const name = field.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
  return PY_KEYWORDS.has(name) ? `${name}_` : name;
}

const DIGITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];

/**
 * A Python module (and client attribute) name for any text: its words in lower snake case
 * ("Login-free page" → login_free_page, "KYC" → kyc, "cardControls" → card_controls), a leading
 * number spelled out digit by digit ("3-D Secure" → three_d_secure, "2FA" → two_fa: a module name
 * cannot start with a digit), a keyword given a trailing underscore (`class_`), and `resource` for
 * text with no ASCII letter or digit.
 */
export function pythonModuleName(text: string): string {
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== '')
    .map((w) => w.toLowerCase());
  const name = words
    .join('_')
    .replace(/^[0-9]+/, (n) => `${[...n].map((d) => DIGITS[Number(d)]).join('_')}_`)
    .replace(/_+/g, '_')
    .replace(/_$/, '');
  if (name === '') return 'resource';
  return PY_KEYWORDS.has(name) ? `${name}_` : name;
}

/**
 * Where the method of an operation of a new group goes: the module named as the Node SDK's resource
 * that sends it (client/src/resources/three-ds.ts → three_ds, client.threeDs → client.three_ds: the
 * two SDKs have one shape), else one named for its tag.
 */
export function newResourceModule(op: Pick<DocOperation, 'path' | 'tag'>, nodeResources = NODE_RESOURCES): string {
  const node = existsSync(nodeResources)
    ? readdirSync(nodeResources)
        .filter((f) => f.endsWith('.ts'))
        .find((f) => readFileSync(join(nodeResources, f), 'utf8').includes(`'${op.path}'`))
    : undefined;
  return pythonModuleName(node ? node.slice(0, -3) : op.tag);
}

export interface DocOperation {
  operationId: string;
  path: string;
  tag: string;
  summary: string;
  body: JsonSchema;
  answer: JsonSchema;
}

/** Every operation of the document, in its order: its body and what it answers (the envelope's model, or the bare body of 4.1 and 4.2). */
export function operationsOf(doc: Record<string, any>): DocOperation[] {
  const ops: DocOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const op of Object.values(item)) {
      if (!op?.operationId) continue;
      const body = op.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
      const whole = op.responses?.['200']?.content?.['application/json']?.schema as JsonSchema | undefined;
      if (!body || !whole) throw new Error(`${op.operationId} has no JSON body or 200 answer`);
      const enveloped = whole.properties?.success !== undefined && whole.properties?.model !== undefined;
      ops.push({
        operationId: op.operationId,
        path,
        tag: op.tags?.[0] ?? '',
        summary: op.summary ?? op.operationId,
        body,
        answer: enveloped ? (whole.properties?.model as JsonSchema) : whole,
      });
    }
  }
  return ops;
}

interface PyMethod {
  operation: string;
  kind: string;
  method: string;
  params?: string[];
  required?: string[];
  sends?: boolean;
  file: string;
  line: number;
}

/** The Python methods tied to operations: asked of Python, else read from the decorators. */
function pythonMethods(): { methods: PyMethod[]; problems: string[]; argumentsChecked: boolean } {
  const python = process.env.PYTHON || 'python3';
  const probe = spawnSync(python, ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 3)'], { encoding: 'utf8' });
  if (probe.error === undefined && probe.status === 0) {
    const res = spawnSync(python, ['-c', 'import json, cardprogram._operations as o; print(json.dumps(o.describe()))'], {
      encoding: 'utf8',
      cwd: PACKAGE,
      env: { ...process.env, PYTHONPATH: '.', PYTHONDONTWRITEBYTECODE: '1' },
    });
    if (res.status !== 0)
      return { methods: [], problems: [`the Python SDK (${PACKAGE}) does not import:\n${res.stderr}`], argumentsChecked: true };
    const methods = (JSON.parse(res.stdout) as PyMethod[]).map((m) => ({ ...m, file: relative(process.cwd(), m.file) }));
    return { methods, problems: [], argumentsChecked: true };
  }
  const methods: PyMethod[] = [];
  for (const name of readdirSync(RESOURCES).filter((f) => f.endsWith('.py'))) {
    const file = join(RESOURCES, name);
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      const m = /^\s*@operation\(\s*"(\w+)"\s*,\s*"(\w+)"\s*\)/.exec(line);
      const def = /^\s*def (\w+)/.exec(lines.slice(i + 1).find((l) => /^\s*def /.test(l)) ?? '');
      if (m?.[1] && m[2])
        methods.push({ operation: m[1], kind: m[2], method: `${name.slice(0, -3)}.${def?.[1] ?? '?'}`, file, line: i + 1 });
    });
  }
  return { methods, problems: [], argumentsChecked: false };
}

const pyType = (s: JsonSchema | undefined): string => {
  if (!s) return 'Any';
  if (s.anyOf) return s.anyOf.map(pyType).join(' | ');
  if (s.enum) return `Literal[${s.enum.map((v) => JSON.stringify(v)).join(', ')}]`;
  return { string: 'str', number: 'float', integer: 'int', boolean: 'bool', null: 'None', array: 'list' }[s.type ?? ''] ?? 'dict';
};

/** The kind a retry needs, from the table the isolation tests hold to the app. */
function tableKind(op: DocOperation): string | undefined {
  const row = TABLE.find((o) => o.operation === op.operationId);
  if (!row) return undefined;
  if (row.kind === 'read') return 'read';
  return op.body.properties?.randomStr ? 'write' : 'keyed';
}

/** The fields a method takes as arguments: the body's, less what the client fills in. */
function argumentsOf(op: DocOperation, kind: string): Map<string, string> {
  const own = kind === 'read' ? [...SIGNED_ENVELOPE, 'randomStr'] : SIGNED_ENVELOPE;
  return new Map(
    Object.keys(op.body.properties ?? {})
      .filter((f) => !own.includes(f))
      .map((f) => [snake(f), f]),
  );
}

function stub(op: DocOperation, kind: string, file: string): string {
  const required = new Set(op.body.required ?? []);
  const fields = [...argumentsOf(op, kind)].map(([arg, field]) => ({ arg, field, required: required.has(field) && field !== 'randomStr' }));
  const args = [...fields.filter((f) => f.required), ...fields.filter((f) => !f.required)]
    .map(
      (f) =>
        `${f.arg}: ${f.required ? pyType(op.body.properties?.[f.field]) : `Optional[${pyType(op.body.properties?.[f.field])}] = None`}`,
    )
    .join(', ');
  const body = fields.map((f) => `"${f.field}": ${f.arg}`).join(', ');
  return [
    `  Add it to ${file}:`,
    '',
    `    @operation("${op.operationId}", "${kind}")`,
    `    def ${snake(op.operationId)}(self${args ? `, *, ${args}` : ''}) -> ${pascal(op.operationId)}Result:`,
    `        """${op.summary.replace(/\.$/, '')}."""`,
    `        return self._call("${op.operationId}", {${body}})`,
    '',
    '  with a test in sdk/python/tests/ and a line in sdk/python/README.md (docs/architecture.md, "How to add an operation").',
  ].join('\n');
}

/** Every way the Python SDK and the document disagree; empty when they agree. */
export async function checkPythonOperations(doc: Record<string, any>): Promise<string[]> {
  const ops = operationsOf(doc);
  const { methods, problems, argumentsChecked } = pythonMethods();
  if (problems.length > 0) return problems;
  const out: string[] = [];
  for (const op of ops) {
    const mine = methods.filter((m) => m.operation === op.operationId);
    const kind = tableKind(op);
    if (kind === undefined) {
      out.push(
        `operation ${op.operationId} is not in test/helpers/operations.ts OPERATIONS: add it there (its kind says how the SDKs retry it)`,
      );
    }
    if (mine.length === 0) {
      const sibling = methods.find((m) => ops.find((o) => o.operationId === m.operation)?.tag === op.tag);
      const module = sibling ? '' : newResourceModule(op);
      const file = sibling ? sibling.file : `${RESOURCES}/${module}.py (a new resource, attached in _client.py as client.${module})`;
      out.push(`operation ${op.operationId} (POST ${op.path}) has no method in the Python SDK.\n${stub(op, kind ?? 'write', file)}`);
      continue;
    }
    if (mine.length > 1) {
      out.push(
        `operation ${op.operationId} has ${mine.length} methods (${mine.map((m) => m.method).join(', ')}): one sends it, the others call that one`,
      );
    }
    for (const m of mine) {
      const where = `${m.file}:${m.line} ${m.method} (${op.operationId})`;
      if (kind !== undefined && m.kind !== kind)
        out.push(`${where} is declared "${m.kind}" but the operation is a ${kind}: @operation("${op.operationId}", "${kind}")`);
      if (!argumentsChecked) continue;
      if (m.sends === false) out.push(`${where} does not send its operation: its body must call self._call("${op.operationId}", {…})`);
      const wanted = argumentsOf(op, m.kind);
      const params = new Set(m.params ?? []);
      const required = new Set(op.body.required ?? []);
      for (const [arg, field] of wanted) {
        if (!params.has(arg)) {
          const type = pyType(op.body.properties?.[field]);
          const optional = !required.has(field) || field === 'randomStr';
          out.push(
            `${where} takes no argument for the field ${field}: add \`${arg}: ${optional ? `Optional[${type}] = None` : type}\` and "${field}": ${arg} to the body it sends`,
          );
        }
      }
      for (const p of params) {
        if (!wanted.has(p))
          out.push(
            `${where} has the argument ${p}, which is no field of ${op.operationId}${p === 'random_str' ? ' (a read gets a new randomStr for every attempt)' : ''}`,
          );
        else if ((m.required ?? []).includes(p) && !required.has(wanted.get(p) ?? '')) {
          out.push(`${where} requires ${p}, but the field ${wanted.get(p)} is optional: give it a default`);
        }
      }
    }
  }
  for (const m of methods) {
    if (!ops.some((o) => o.operationId === m.operation)) {
      out.push(
        `${m.file}:${m.line} ${m.method} is decorated @operation("${m.operation}"), which the OpenAPI document does not have: remove it or name the right operation`,
      );
    }
  }
  if (!argumentsChecked)
    console.error(
      `python3 (3.10 or later) not found: the Python SDK's methods were found by their decorators; their arguments were not checked`,
    );
  return out;
}
