/** Reading the environment's variables (src/config.ts): each bad value is a ConfigError of one line naming it. */

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

export function jsonVar<T>(env: Env, name: string, fallback: T, validate: (v: Record<string, unknown>) => T): T {
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

export function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}
