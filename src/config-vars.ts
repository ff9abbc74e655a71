/** Reading the environment's variables (src/config.ts): each bad value is a ConfigError of one line naming it. */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Every variable cardprogram reads, the one list: `Env` has these names and no other, so the
 * configuration cannot read a variable missing here (it does not compile), and a `CARDPROGRAM_*`
 * variable set but not listed is warned about at start with the nearest name (a misspelling
 * would otherwise be silently ignored: issue 43.7). Add a new variable here, in its part, in one
 * line; test/config-vars.test.ts also checks that every `CARDPROGRAM_*` name in the code is here.
 */
export const KNOWN_VARIABLES = [
  // The service: listeners, storage, environment.
  'PORT',
  'HOST',
  'HTTPS_PORT',
  'DATABASE_URL',
  'DATABASE_REPLICA_URL',
  'LOG_LEVEL',
  'CARDPROGRAM_ENV',
  'CARDPROGRAM_PUBLIC_URL',
  'CARDPROGRAM_TRUST_PROXY',
  'CARDPROGRAM_DATA_DIR',
  'CARDPROGRAM_MASTER_KEY',
  'CARDPROGRAM_MASTER_KEY_PREVIOUS',
  'CARDPROGRAM_REPLICA_MAX_LAG_MS',
  'CARDPROGRAM_PG_STATEMENT_TIMEOUT_MS',
  'CARDPROGRAM_PG_POOL_SIZE',
  'CARDPROGRAM_PG_POOL_WAIT_MS',
  'CARDPROGRAM_PG_URGENT_POOL_SIZE',
  'CARDPROGRAM_PG_PREPARED',
  'CARDPROGRAM_METRICS_TOKEN',
  'CARDPROGRAM_METRICS_PORT',
  'CARDPROGRAM_CONSOLE',
  'CARDPROGRAM_CONSOLE_HASHES',
  // Merchants' requests.
  'CARDPROGRAM_IDEMPOTENCY_RETENTION_HOURS',
  'CARDPROGRAM_MERCHANT_CACHE_MS',
  'CARDPROGRAM_RATE_LIMIT',
  'CARDPROGRAM_RATE_BURST',
  'CARDPROGRAM_REQUIRE_TIMESTAMP',
  'CARDPROGRAM_DEMO_MERCHANT',
  // Callbacks, KYC, disputes.
  'CARDPROGRAM_WORKER',
  'CARDPROGRAM_WORKER_POLL_MS',
  'CARDPROGRAM_CALLBACK_SLOTS',
  'CARDPROGRAM_CALLBACK_BREAKER_FAILURES',
  'CARDPROGRAM_CALLBACK_MERCHANT_SHARE',
  'CARDPROGRAM_CALLBACK_SLOW_MS',
  'CARDPROGRAM_KYC_PLATFORMS',
  'CARDPROGRAM_KYC_AUTO_DECISION_MS',
  'CARDPROGRAM_DISPUTE_SANDBOX_MS',
  // The card program.
  'CARDPROGRAM_BINS',
  'CARDPROGRAM_FEES',
  'CARDPROGRAM_FX_RATES',
  'CARDPROGRAM_HOLD_DAYS',
  'CARDPROGRAM_REQUIRE_CVV2',
  'CARDPROGRAM_FORCED_POST_MAX',
  'CARDPROGRAM_CARD_DEBT_MAX',
  // The card network link (src/config-network.ts).
  'CARDPROGRAM_NETWORK_PORT',
  'CARDPROGRAM_NETWORK_HOST',
  'CARDPROGRAM_NETWORK_MAX_FRAME',
  'CARDPROGRAM_NETWORK_IDLE_MS',
  'CARDPROGRAM_NETWORK_DEADLINE_MS',
  'CARDPROGRAM_NETWORK_TLS_CA',
  'CARDPROGRAM_NETWORK_TLS_CERT',
  'CARDPROGRAM_NETWORK_TLS_KEY',
  'CARDPROGRAM_NETWORK_CURRENCIES',
  'CARDPROGRAM_NETWORK_MAX_CONNECTIONS',
  'CARDPROGRAM_NETWORK_MAX_PER_ADDRESS',
  'CARDPROGRAM_NETWORK_PEERS',
  // The 3-D Secure access control server (src/config-three-ds.ts, docs/3ds.md).
  'CARDPROGRAM_3DS_PORT',
  'CARDPROGRAM_3DS_HOST',
  'CARDPROGRAM_3DS_TLS_CA',
  'CARDPROGRAM_3DS_TLS_CERT',
  'CARDPROGRAM_3DS_TLS_KEY',
  'CARDPROGRAM_3DS_MAX_CONNECTIONS',
  'CARDPROGRAM_3DS_MAX_PER_ADDRESS',
  'CARDPROGRAM_3DS_REFERENCE_NUMBER',
  'CARDPROGRAM_3DS_OPERATOR_ID',
  'CARDPROGRAM_3DS_DS_URL',
  'CARDPROGRAM_3DS_DS_CERT',
  'CARDPROGRAM_3DS_DS_KEY',
  'CARDPROGRAM_3DS_DS_CA',
  'CARDPROGRAM_3DS_REQUIRED',
  // Wallet tokens: the TSP's endpoint and the per-card limit (src/config-tokens.ts, docs/tokens.md).
  'CARDPROGRAM_TSP_PORT',
  'CARDPROGRAM_TSP_HOST',
  'CARDPROGRAM_TSP_TLS_CA',
  'CARDPROGRAM_TSP_TLS_CERT',
  'CARDPROGRAM_TSP_TLS_KEY',
  'CARDPROGRAM_TSP_MAX_CONNECTIONS',
  'CARDPROGRAM_TSP_MAX_PER_ADDRESS',
  'CARDPROGRAM_TOKENS_PER_CARD',
  // Wallet tokens: where the service tells the TSP of its changes (src/config-tsp.ts, docs/tokens.md).
  'CARDPROGRAM_TSP_URL',
  'CARDPROGRAM_TSP_CLIENT_CERT',
  'CARDPROGRAM_TSP_CLIENT_KEY',
  'CARDPROGRAM_TSP_CA',
  // Not the service's: the test runner's and CI's (known, so that a service they start does not warn).
  'CARDPROGRAM_TEST_DIALECTS',
  'CARDPROGRAM_TEST_LOG_AUDIT',
  'CARDPROGRAM_TEST_LOG_DIR',
  'CARDPROGRAM_TEST_REQUIRE_POSTGRES',
  'CARDPROGRAM_TEST_REQUIRE_PYTHON',
  'CARDPROGRAM_TEST_BUILT',
  'CARDPROGRAM_NODE',
  'CARDPROGRAM_FIXTURE_OUT',
  'CARDPROGRAM_CI_CACHE',
] as const;

export type VarName = (typeof KNOWN_VARIABLES)[number];

/** The environment as the configuration sees it: the known variables only. */
export type Env = { readonly [K in VarName]?: string | undefined };

/** Edits (insert, delete, substitute, swap two neighbours) from one name to another. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((up[j] as number) + 1, (row[j - 1] as number) + 1, (up[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The known variable nearest to a name (fewest edits; the first listed on a tie), and how many edits away. */
export function nearestVariable(name: string): { name: VarName; edits: number } {
  let best: VarName = KNOWN_VARIABLES[0];
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of KNOWN_VARIABLES) {
    const d = distance(name, known);
    if (d < bestDistance) [best, bestDistance] = [known, d];
  }
  return { name: best, edits: bestDistance };
}

/**
 * One warning per `CARDPROGRAM_*` variable set that cardprogram does not read, naming the nearest
 * known one: a misspelled console switch (CONSOL for CONSOLE) would otherwise leave it off without a word.
 */
export function unknownVariables(env: Record<string, string | undefined>): string[] {
  const known = new Set<string>(KNOWN_VARIABLES);
  return Object.keys(env)
    .filter((name) => name.startsWith('CARDPROGRAM_') && !known.has(name))
    .sort()
    .map((name) => {
      const nearest = nearestVariable(name);
      // A slip of a few letters is a misspelling; further off, the nearest name is only a pointer.
      const slip = nearest.edits <= Math.max(2, Math.floor(name.length / 6));
      return `${name} is not a variable cardprogram reads (ignored): ${slip ? `did you mean ${nearest.name}?` : `the nearest known is ${nearest.name} (README, Configuration, has them all)`}`;
    });
}

/** The problems found, as one error: a single one as it is, several counted and listed one a line (issue 30.7). */
export function problemsError(problems: readonly string[]): ConfigError {
  return new ConfigError(
    problems.length === 1
      ? (problems[0] as string)
      : `${problems.length} configuration problems:\n${problems.map((p) => `- ${p}`).join('\n')}`,
  );
}

export function jsonVar<T>(env: Env, name: VarName, fallback: T, validate: (v: Record<string, unknown>) => T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} must be a JSON object`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`${name} must be a JSON object`);
  try {
    return validate(parsed as Record<string, unknown>);
  } catch (err) {
    throw new ConfigError(`${name}: ${(err as Error).message}`);
  }
}

export function intVar(env: Env, name: VarName, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}
