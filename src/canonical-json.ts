// A pure helper shared by the signature check (src/http/signing.ts) and the verbs that fingerprint
// their own input (src/kyc/submit.ts): the verbs must not import src/http.

/** RFC 8785 JSON canonicalisation for the values JSON.parse can produce. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    return JSON.stringify(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('non-finite number');
    // ECMAScript number serialisation is the one RFC 8785 prescribes; -0 is written as 0.
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined)
      .sort(compareCodeUnits);
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  throw new TypeError(`cannot canonicalise ${typeof value}`);
}

/** Sort by UTF-16 code units, as RFC 8785 requires (the default sort does exactly that). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
