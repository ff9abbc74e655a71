// One way per concern (docs/architecture.md, "One way per concern"), checked by `npm run lint`
// (lint:one-way): the rules an import graph cannot state. Each rule fails on a violation planted in a
// tree of its own (test/one-way.test.ts). `--root DIR` checks another tree.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const args = process.argv.slice(2);
const root = resolve(args[0] === '--root' && args[1] ? args[1] : join(import.meta.dirname, '..'));

/** The domain folders (src/<folder>/): what a runner of jobs is handed, never imports. */
const DOMAINS =
  'audit|console|merchants|holders|kyc|cards|controls|ledger|trades|domains|page|card-network|authorization-endpoint|sandbox|disputes|three-ds|jobs';

/**
 * The direct audit records that are not a run's own (src/runner.ts's `audit` option), each with why
 * it cannot be one (docs/architecture.md, "One way per concern"). A new one is refused until it is
 * listed here and there.
 */
const AUDIT_OUTSIDE_RUNNER: Record<string, string> = {
  'src/cards/verification.ts':
    "a security freeze inside another verb's run (an authorization), recorded only when the 5th mismatch freezes",
  'src/console/login.ts': 'a failed login: recorded while the run refuses, its actor the e-mail tried',
  'src/console/login-throttle.ts': "a throttled window's summary, recorded when a later attempt ends the window",
  'src/console/accounts.ts': "an operator's own act (set-up, login, lock-out), recorded only when it happened, in the run that decides it",
};

/**
 * The statements on `database.db` outside src/db/: each is not a read that `svc.database.read` could
 * run (docs/architecture.md, "One way per concern": Reads). A new one is refused until listed here and there.
 */
const DB_OUTSIDE_READ: Record<string, string> = {
  'src/services.ts': "the replica's fallback to the primary (svc.reads()), and the data keys made at start-up",
  'src/trades/routes.ts': 'compares svc.reads() with the primary, to know whether the replica is in use (no statement)',
  'src/idempotency/keys.ts': "the runner's idempotency: a key taken by another run, its stored answer read back",
  'src/idempotency/read-nonces-pg.ts': "the read-nonce store's own statements (it writes)",
  'src/ledger/check.ts': "the ledger check's read-only REPEATABLE READ snapshot on PostgreSQL, a transaction of its own",
  'src/directories/merchants.ts':
    "the merchant directory's cache fill: one statement, no snapshot to share, asked from within reads (a batch would wait on itself)",
  'src/directories/domains.ts':
    "the domain directory's cache fill: one statement, no snapshot to share (on SQLite a read batch of its own cost a BEGIN and a COMMIT for each fill)",
  'src/three-ds/results.ts': "the RReq's delivery to the DS: leases and attempts in single statements, as the callback worker's",
  'src/tokens/tsp-calls.ts': "the token changes' delivery to the TSP: leases and attempts, as the callback worker's",
};

/**
 * The transactions opened outside the runner (src/runner.ts, `runVerb`): infrastructure that keeps its
 * own (docs/architecture.md, "One way per concern": Transactions), each with why.
 */
const TX_OUTSIDE_RUNNER: Record<string, string> = {
  'src/idempotency/keys.ts': "the runner's `once`: the key, the effect and the sealed answer commit together",
  'src/idempotency/read-nonces-pg.ts': "the read-nonce store's buckets",
  'src/http/rate-limit.ts': "the rate limiter's buckets",
  'src/callbacks/claim.ts': "the callback worker's leases (bookkeeping, durable: false)",
  'src/callbacks/record.ts': "the callback worker's attempt records (bookkeeping, durable: false)",
  'src/console/login-throttle.ts': "the reaper's pass over ended login windows: each window's delete with its summary record",
  'src/holders/identity.ts': 'a start-up step after the migrations, before the services exist: rows written before identities were sealed',
  'src/kyc/email.ts': 'a start-up step after the migrations, before the services exist: KYC e-mails written before they were sealed',
  'src/ledger/check.ts': "the ledger check's read-only snapshot on PostgreSQL",
  'src/tokens/tsp-calls.ts':
    "the token changes' delivery to the TSP: a call's lease, then its outcome with its attempt record (bookkeeping, as the callback worker's)",
};

/**
 * The runs that still name their actor with a label, each because the label is stored in its own
 * form (the typed actor's would differ: docs/architecture.md, "One way per concern": Actor).
 */
const LABEL_ACTORS: Record<string, string> = {
  'src/cli/commands/network-exceptions.ts': "`cli:<user>`, stored as the exception's decided_by",
  'src/cli/commands/review.ts': "`cli:<user>`, stored as the debt settlement's actor",
};

interface Rule {
  name: string;
  /** Why: the one way, and where it is. */
  why: string;
  /** The files the rule looks at (paths from the root, with /). */
  applies: (file: string) => boolean;
  /** What breaks it in a file's text. */
  breaks: RegExp;
}

const RULES: Rule[] = [
  {
    name: 'events-through-notifyMerchant',
    why: 'a callback event is written by notifyMerchant (src/callbacks/merchant-event.ts), or by eventParts in a one-statement write; never inline',
    applies: (f) => !f.startsWith('src/callbacks/'),
    breaks: /insertInto\(\s*['"]callback_events['"]|insert\s+into\s+callback_events\b|\b(emitEvent|notifyUrlOf)\b/i,
  },
  {
    name: 'audit-through-the-runner',
    why: "an audit record is the runner's `audit` option (runVerb, signedWrite); the exceptions are listed in scripts/one-way.ts and docs/architecture.md",
    applies: (f) => !f.startsWith('src/audit/') && f !== 'src/runner.ts' && !(f in AUDIT_OUTSIDE_RUNNER),
    breaks: /\brecordAudit\b|insertInto\(\s*['"]audit_events['"]|insert\s+into\s+audit_events\b/i,
  },
  {
    name: 'reads-through-database-read',
    why: 'outside a transaction a read is svc.database.read((db) => query(db, …)), using only that db; database.db only where scripts/one-way.ts lists why',
    applies: (f) => !f.startsWith('src/db/') && !(f in DB_OUTSIDE_READ),
    breaks: /\bdatabase\.db\b/,
  },
  {
    name: 'transactions-through-the-runner',
    why: 'a change runs in the runner (runVerb, signedWrite); the infrastructure that keeps its own transactions is listed in scripts/one-way.ts',
    applies: (f) => !f.startsWith('src/db/') && f !== 'src/runner.ts' && !(f in TX_OUTSIDE_RUNNER),
    breaks: /\.withTx\(|\bdatabase\.write\(|\.transaction\(\)/,
  },
  {
    name: 'contexts-from-the-runner',
    why: "a verb's context is made by the runner only (runVerb; runPrecheck for a pre-check's reads): never by hand",
    applies: (f) => f !== 'src/runner.ts',
    breaks: /afterCommit:\s*\(\)\s*=>/,
  },
  {
    name: 'typed-actor',
    why: 'a run names its actor typed (Actor, src/context.ts: operator, merchant, network, cardholder, system), never a label; the few stored labels are listed in scripts/one-way.ts',
    applies: (f) => !(f in LABEL_ACTORS),
    // A string right after `actor:` outside an input (a card's status event keeps its own `actor`, a StatusActor).
    breaks: /^(?!.*\binput:).*\bactor:\s*['"`]/,
  },
  {
    name: 'jobs-handed-over',
    why: 'the reaper, the callback worker and the foundation are handed their jobs (src/jobs/periodic.ts, from src/app.ts): they import no domain',
    applies: (f) =>
      f === 'src/http/reaper.ts' || f === 'src/http/worker.ts' || f.startsWith('src/callbacks/') || f.startsWith('src/crypto/'),
    breaks: new RegExp(`from\\s+['"]\\.\\./(\\.\\./)*(${DOMAINS})/`),
  },
  {
    name: 'network-messages-once',
    why: 'a card network message acts once through onceByIdentity (src/card-network/once.ts): no message class catches a lost claim (LinkReplay) itself',
    applies: (f) => f !== 'src/card-network/once.ts' && f !== 'src/card-network/identity.ts',
    breaks: /\bLinkReplay\b/,
  },
  {
    name: 'endpoint-asked-in-one-place',
    why: "a merchant's authorization endpoint is asked by src/authorization-endpoint/verdict.ts (askForVerdict: metrics, deadline, retries), for the link and the sandbox alike",
    applies: (f) => !f.startsWith('src/authorization-endpoint/'),
    breaks: /\baskEndpoint\b/,
  },
];

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const problems: string[] = [];
for (const path of sources(join(root, 'src'))) {
  const file = relative(root, path).split('\\').join('/');
  const lines = readFileSync(path, 'utf8').split('\n');
  for (const rule of RULES) {
    if (!rule.applies(file)) continue;
    lines.forEach((line, i) => {
      // A comment may name what it must not do.
      if (/^\s*(\/\/|\*|\/\*)/.test(line)) return;
      if (rule.breaks.test(line)) problems.push(`${file}:${i + 1}: ${rule.name}: ${rule.why}\n    ${line.trim()}`);
    });
  }
}
if (problems.length) {
  console.error(`${problems.length} line(s) break a one-way rule:\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(
  'one way per concern: reads, transactions, contexts, actors, events, audit records, periodic jobs, network messages once, the endpoint asked in one place',
);
