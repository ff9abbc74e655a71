import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
