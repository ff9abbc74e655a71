import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError, type Env, type VarName } from './config-vars.js';

/**
 * A TLS listener's files, by the variables that name them: its certificate (PEM, the chain after
 * it), its private key, and with `ca` the CA(s) its clients' certificates must chain to (mutual TLS).
 */
export interface TlsVars {
  ca?: VarName;
  cert: VarName;
  key: VarName;
}

/**
 * Every TLS listener of the service, one row each. A new listener (wallet tokens) adds
 * its row here, its variables to KNOWN_VARIABLES (src/config-vars.ts), and reads its files with
 * `tlsFilesVar(env, TLS_LISTENERS.itsName)` where its configuration is read: its files are then
 * checked at start like the link's, and a problem named with its variable and file.
 */
export const TLS_LISTENERS = {
  network: { ca: 'CARDPROGRAM_NETWORK_TLS_CA', cert: 'CARDPROGRAM_NETWORK_TLS_CERT', key: 'CARDPROGRAM_NETWORK_TLS_KEY' },
  threeDs: { ca: 'CARDPROGRAM_3DS_TLS_CA', cert: 'CARDPROGRAM_3DS_TLS_CERT', key: 'CARDPROGRAM_3DS_TLS_KEY' },
  tsp: { ca: 'CARDPROGRAM_TSP_TLS_CA', cert: 'CARDPROGRAM_TSP_TLS_CERT', key: 'CARDPROGRAM_TSP_TLS_KEY' },
} as const satisfies Record<string, TlsVars>;

/**
 * The client certificates the service presents, one row each, read and checked as the listeners'
 * files are (`tlsFilesVar`): the 3-D Secure ACS's to its directory server (the `RReq`), the service's to the wallet tokens' TSP.
 * The CA each of those servers' certificates must chain to, when it is not the system's trust store, is
 * a variable of its own (CARDPROGRAM_TSP_CA, CARDPROGRAM_3DS_DS_CA), read by `caFileVar`.
 */
export const TLS_CLIENTS = {
  threeDsDirectory: { cert: 'CARDPROGRAM_3DS_DS_CERT', key: 'CARDPROGRAM_3DS_DS_KEY' },
  /** The wallet tokens' TSP, told of each change the service makes (decisions §15.1, src/tokens/tsp-calls.ts). */
  tsp: { cert: 'CARDPROGRAM_TSP_CLIENT_CERT', key: 'CARDPROGRAM_TSP_CLIENT_KEY' },
} as const satisfies Record<string, TlsVars>;

/** The files of a listener's row: paths, `ca` when the row has one. */
export type TlsFiles<V extends TlsVars = TlsVars> = { cert: string; key: string } & (V extends { ca: VarName } ? { ca: string } : unknown);

const ROLES = ['ca', 'cert', 'key'] as const;

/** A list written for people: "A", "A and B", "A, B and C". */
const listed = (names: string[]) => (names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`);

/**
 * Reads a listener's TLS variables: null when none is set; the files when all are and each is what
 * its variable says (a certificate, a private key, the certificate's own key, a CA that parses).
 * Otherwise a ConfigError with one line per problem, each naming the variable and the file, so that
 * a wrong file stops the start before anything listens (issue 43.5), listed with the other problems.
 */
export function tlsFilesVar<V extends TlsVars>(env: Env, vars: V): TlsFiles<V> | null {
  const roles = ROLES.filter((role) => vars[role] !== undefined);
  const name = (role: (typeof ROLES)[number]) => vars[role] as VarName;
  const set = roles.filter((role) => env[name(role)]?.trim());
  if (set.length === 0) return null;
  if (set.length < roles.length) {
    const missing = roles.filter((role) => !set.includes(role)).map(name);
    throw new ConfigError(
      `${listed(roles.map(name))} go together: ${listed(set.map(name))} ${set.length === 1 ? 'is' : 'are'} set, ${listed(missing)} ${missing.length === 1 ? 'is' : 'are'} not (set ${roles.length === 2 ? 'both' : 'all three'}, or none)`,
    );
  }
  const files = Object.fromEntries(roles.map((role) => [role, env[name(role)]?.trim() as string])) as TlsFiles<V>;
  const problems = tlsFileProblems(vars, files);
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return files;
}

/**
 * What is wrong with a listener's files, one line each naming the variable and the file; empty when
 * TLS can use them. Also called just before listening (src/server.ts), for a configuration built
 * without the environment.
 */
export function tlsFileProblems(vars: TlsVars, files: { ca?: string; cert: string; key: string }, now = Date.now()): string[] {
  const problems: string[] = [];
  const read = (name: VarName, file: string) => readFile(name, file, problems);
  const ca = vars.ca && files.ca !== undefined ? { name: vars.ca, file: files.ca, text: read(vars.ca, files.ca) } : null;
  const cert = { name: vars.cert, file: files.cert, text: read(vars.cert, files.cert) };
  const key = { name: vars.key, file: files.key, text: read(vars.key, files.key) };

  const caCerts = ca?.text != null ? certificates(ca.name, ca.file, ca.text, problems) : null;
  const chain = cert.text !== null ? certificates(cert.name, cert.file, cert.text, problems) : null;
  const leaf = chain?.[0];
  if (leaf) {
    if (Date.parse(leaf.validTo) <= now) problems.push(`${cert.name}: the certificate in ${cert.file} expired on ${leaf.validTo}`);
    else if (Date.parse(leaf.validFrom) > now)
      problems.push(`${cert.name}: the certificate in ${cert.file} is not valid before ${leaf.validFrom}`);
  }
  const privateKey = key.text !== null ? privateKeyOf(key.name, key.file, key.text, problems) : null;
  if (leaf && privateKey && !leaf.checkPrivateKey(privateKey)) {
    problems.push(`${key.name}: ${key.file} is not the key of the certificate in ${cert.file} (${cert.name}): their public keys differ`);
  }
  // What OpenSSL itself may still refuse (a key too weak for its security level, …), once each file is what it should be.
  if (problems.length === 0 && cert.text !== null && key.text !== null && (ca === null || caCerts !== null)) {
    try {
      createSecureContext({ cert: cert.text, key: key.text, ...(ca?.text ? { ca: ca.text } : {}) });
    } catch (err) {
      const names = [ca?.name, cert.name, key.name].filter((n) => n !== undefined);
      problems.push(
        `${listed(names)}: TLS cannot use ${listed([ca?.file, cert.file, key.file].filter((f) => f !== undefined))}: ${(err as Error).message}`,
      );
    }
  }
  return problems;
}

/**
 * The CA(s) a server the service calls must chain to (CARDPROGRAM_TSP_CA: a scheme's private CA, not
 * the system's trust store): the file named by `name`, when set, read and checked at start as the
 * listeners' CAs are (a file that is missing, unreadable or holds no certificate that parses is a
 * ConfigError naming the variable and the file); null when unset.
 */
export function caFileVar(env: Env, name: VarName): string | null {
  const file = env[name]?.trim();
  if (!file) return null;
  const problems: string[] = [];
  const text = readFile(name, file, problems);
  const parsed = text !== null ? certificates(name, file, text, problems) : null;
  if (parsed) {
    try {
      createSecureContext({ ca: text as string });
    } catch (err) {
      problems.push(`${name}: TLS cannot use ${file}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems.join('\n'));
  return file;
}

/** A file's text, or null after naming the problem (its variable, the file, and why). */
function readFile(name: VarName, file: string, problems: string[]): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `no file ${file}`
        : code === 'EACCES'
          ? `cannot read ${file} (permission denied)`
          : code === 'EISDIR'
            ? `${file} is a directory, not a file`
            : `cannot read ${file} (${(err as Error).message})`;
    problems.push(`${name}: ${why}`);
    return null;
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----/g;

/** What a file that is not what it should be holds instead, for the message. */
function holds(text: string): string {
  const labels = [...new Set([...text.matchAll(PEM_BLOCK)].map((m) => m[1] as string))];
  if (labels.length === 0)
    return 'it has no -----BEGIN line; a DER file converts with openssl x509 -inform DER, a DER key with openssl pkey -inform DER';
  return `it holds ${listed(labels.map((l) => (/PRIVATE KEY$/.test(l) ? 'a private key' : `a ${l.toLowerCase()}`)))}`;
}

/** Every certificate of a PEM file (a chain, or a CA bundle), or null after naming the problem. */
function certificates(name: VarName, file: string, text: string, problems: string[]): X509Certificate[] | null {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    problems.push(`${name}: ${file} is not a PEM certificate (${holds(text)})`);
    return null;
  }
  const parsed: X509Certificate[] = [];
  for (const [i, block] of blocks.entries()) {
    try {
      parsed.push(new X509Certificate(block));
    } catch {
      problems.push(
        `${name}: ${file}: ${blocks.length > 1 ? `certificate ${i + 1} of ${blocks.length}` : 'the certificate'} does not parse`,
      );
      return null;
    }
  }
  return parsed;
}

/** The private key of a PEM file, or null after naming the problem. */
function privateKeyOf(name: VarName, file: string, text: string, problems: string[]): KeyObject | null {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text)) {
    problems.push(
      `${name}: ${file} is encrypted (a passphrase-protected key): the service cannot ask for a passphrase; decrypt it (openssl pkey -in ${file} -out ${file}.plain, readable by the service only) and name that file`,
    );
    return null;
  }
  if (!/-----BEGIN ([A-Z0-9]+ )?PRIVATE KEY-----/.test(text)) {
    problems.push(`${name}: ${file} is not a PEM private key (${holds(text)})`);
    return null;
  }
  try {
    return createPrivateKey(text);
  } catch (err) {
    problems.push(`${name}: ${file}: the private key does not parse (${(err as Error).message})`);
    return null;
  }
}
