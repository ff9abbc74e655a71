import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

export interface TestCert {
  host: string;
  certFile: string;
  keyFile: string;
  cert: string;
  key: string;
}

/** A self-signed certificate (P-256) naming `host`, made with the system's openssl into `dir`. */
export function selfSigned(dir: string, host: string, { days = 2 }: { days?: number } = {}): TestCert {
  const certFile = join(dir, `${host}.crt`);
  const keyFile = join(dir, `${host}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      String(days),
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=DNS:${host}`,
    ],
    { stdio: 'ignore' },
  );
  return { host, certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
}

export interface TestCa {
  certFile: string;
  keyFile: string;
  /**
   * A certificate this CA signs, with subject CN `cn` and the DNS names and IP addresses given: a
   * client certificate (extendedKeyUsage clientAuth) by default, a server's with `usage: 'server'`.
   */
  issue(cn: string, opts?: { dns?: string[]; ip?: string[]; usage?: 'client' | 'server' }): TestCert;
}

/** A certificate authority (P-256, self-signed) made with the system's openssl into `dir`, that signs client (and server) certificates. */
export function certificateAuthority(dir: string, name: string): TestCa {
  const ca = selfSigned(dir, name);
  let n = 0;
  return {
    certFile: ca.certFile,
    keyFile: ca.keyFile,
    issue(cn, { dns = [], ip = [], usage = 'client' } = {}) {
      const base = join(dir, `${name}-client-${++n}`);
      const [certFile, keyFile, csr, ext] = [`${base}.crt`, `${base}.key`, `${base}.csr`, `${base}.ext`];
      const run = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
      run([
        'req',
        '-new',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        csr,
        '-subj',
        `/CN=${cn}`,
      ]);
      const names = [...dns.map((d) => `DNS:${d}`), ...ip.map((a) => `IP:${a}`)];
      const san = names.length ? `subjectAltName=${names.join(',')}\n` : '';
      writeFileSync(ext, `${san}extendedKeyUsage=${usage === 'server' ? 'serverAuth' : 'clientAuth'}\n`);
      run([
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        ca.certFile,
        '-CAkey',
        ca.keyFile,
        '-set_serial',
        String(Date.now() + n),
        '-days',
        '2',
        '-extfile',
        ext,
        '-out',
        certFile,
      ]);
      return { host: cn, certFile, keyFile, cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
    },
  };
}

/**
 * The certificates of a server the service calls over HTTPS (the TSP, the 3-D Secure DS), as in
 * production, in a directory removed after the file's tests: the scheme's private CA (`scheme`, the
 * service's `…_CA`) and the server's certificate from it (for 127.0.0.1 as `serverName`), the CA the
 * server trusts for its callers (`callers`) and the service's client certificate from it, and
 * another CA (`rogue`: a server, or one in the middle, that is not the scheme's).
 */
export function outboundPki(label: string, clientCn: string, serverName: string) {
  const dir = mkdtempSync(join(tmpdir(), `cp-${label}-https-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const scheme = certificateAuthority(dir, `${label}-scheme-ca`);
  const callers = certificateAuthority(dir, `${label}-callers-ca`);
  return {
    scheme,
    callers,
    rogue: certificateAuthority(dir, `${label}-rogue-ca`),
    client: callers.issue(clientCn),
    server: scheme.issue(serverName, { ip: ['127.0.0.1'], usage: 'server' }),
  };
}
