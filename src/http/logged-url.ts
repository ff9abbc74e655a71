/**
 * What of a URL reaches the log (issue 7f54402, issue 26.1). A page or set-up link's token is a
 * credential until it is spent, and what an operator searches the console for may be a card
 * number, an e-mail or a document: none of it is logged, nor put into a URL the browser is sent to
 * next (a login page's `next`), which a proxy in front of the service logs in its turn.
 */

/** Query parameters whose values never reach the log: a page or set-up link's token, what an operator searched for. */
const SECRET_PARAMS = new Set(['token', 'q', 'actor', 'target']);

/** A card number's shape: 13 to 19 digits, alone or split by single separators. */
const PAN_LIKE = /\d(?:[\s.\-_/+,:]?\d){12,18}/u;

/** How deep URLs inside URLs are followed (next=/console/login?next=/console/search?q=…). */
const MAX_DEPTH = 4;

/**
 * %XX sequences decoded, and + read as a space, as often as they change the text (a value encoded
 * twice hides its `?` and `q=` once). Lenient: a malformed % is kept as it is, never a reason to
 * stop looking.
 */
function decodedForLog(text: string): string {
  let s = text;
  for (let i = 0; i < MAX_DEPTH + 1; i++) {
    const d = s.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (d === s) return s;
    s = d;
  }
  return s;
}

const isSecretName = (rawName: string) => SECRET_PARAMS.has(decodedForLog(rawName).trim().toLowerCase());

/**
 * One query parameter's value as logged: a URL inside it (`next=/console/search?q=…`) logged with
 * its own secrets redacted, and anything shaped like a card number replaced.
 */
function loggedValue(raw: string, depth: number): string {
  const value = decodedForLog(raw);
  if (value.includes('?') && depth < MAX_DEPTH) {
    const inner = redactUrl(value, depth + 1);
    if (inner !== value) return PAN_LIKE.test(inner) ? '[redacted]' : encodeURIComponent(inner);
  }
  return PAN_LIKE.test(value) ? '[redacted]' : raw;
}

function redactUrl(url: string, depth: number): string {
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  // A card number typed into a path (a mistaken /console/cards/<PAN>) is logged no more than in a
  // query. Most paths hold neither a % nor such digits: one test, and they are logged as they are.
  const loggedPath =
    path.includes('%') || PAN_LIKE.test(path)
      ? path
          .split('/')
          .map((segment) => (PAN_LIKE.test(decodedForLog(segment)) ? '[redacted]' : segment))
          .join('/')
      : path;
  if (at < 0) return loggedPath;
  const [query = '', fragment] = url.slice(at + 1).split('#', 2);
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=');
    const rawName = eq < 0 ? part : part.slice(0, eq);
    if (isSecretName(rawName)) return `${rawName}=[redacted]`;
    if (PAN_LIKE.test(decodedForLog(rawName))) return '[redacted]';
    return eq < 0 ? part : `${rawName}=${loggedValue(part.slice(eq + 1), depth)}`;
  });
  const loggedFragment = fragment === undefined ? '' : `#${PAN_LIKE.test(decodedForLog(fragment)) ? '[redacted]' : fragment}`;
  return `${loggedPath}?${parts.join('&')}${loggedFragment}`;
}

/**
 * A URL as logged: the values of SECRET_PARAMS replaced, whatever way their names are written
 * (`?%71=` is read as `q=` by the router, so names are decoded before they are compared), also
 * inside a parameter that holds a URL (`next`, however often encoded), and any value shaped like
 * a card number replaced wherever it is. Used for the request's URL and a reply's Location.
 */
export function redactedUrl(url: string): string {
  try {
    return redactUrl(url, 0);
  } catch {
    // Never a reason for a request to fail (a serializer's error would be a 500): the path alone.
    return `${url.split('?', 1)[0]?.replace(/\d{13,}/g, '[redacted]') ?? ''}?[unloggable]`;
  }
}

/**
 * A URL to come back to after a login: the path and its harmless parameters, without a search
 * term, token, actor or target (never put into `next`, so never into the login page's URL, its
 * log line, or a proxy's).
 */
export function returnUrl(url: string, fallback = '/console'): string {
  const at = url.indexOf('?');
  const path = at < 0 ? url : url.slice(0, at);
  // A query hidden in the path by encoding (%3F), or a card number anywhere: not worth keeping.
  if (decodedForLog(path).includes('?') || PAN_LIKE.test(decodedForLog(path))) return fallback;
  if (at < 0) return url;
  const kept = url
    .slice(at + 1)
    .split('#', 1)[0]
    ?.split('&')
    .filter((part) => {
      const name = part.split('=', 1)[0] ?? '';
      const value = decodedForLog(part);
      return part !== '' && !isSecretName(name) && !PAN_LIKE.test(value) && !value.includes('?');
    });
  return kept && kept.length > 0 ? `${path}?${kept.join('&')}` : path;
}
