import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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
