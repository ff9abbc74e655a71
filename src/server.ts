import { existsSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { type LinkServer, startLink } from './card-network/link/listener.js';
import type { Config } from './config.js';
import { partsState } from './config-parts.js';
import { TLS_LISTENERS, tlsFileProblems } from './config-tls.js';
import { problemsError } from './config-vars.js';
import { ensureSandboxAdmin, sandboxAdminFile } from './console/sandbox.js';
import { exampleCurl } from './docs/example-curl.js';
import { ensureDemoMerchant } from './merchants/demo.js';
import { type AcsServer, startAcs } from './three-ds/listener.js';
import { startTsp, type TspServer } from './tokens/listener.js';

export interface Running {
  app: FastifyInstance;
  url: string;
  /** The HTTPS port of merchants' mapped hosts, when HTTPS_PORT is set. */
  httpsPort: number | null;
  /** The port of the metrics listener, when CARDPROGRAM_METRICS_PORT is set. */
  metricsPort: number | null;
  /** The card network link's port, when CARDPROGRAM_NETWORK_PORT is set. */
  networkPort: number | null;
  /** The 3-D Secure ACS's port, when CARDPROGRAM_3DS_PORT is set. */
  acsPort?: number | null;
  /** The wallet tokens' TSP endpoint's port, when CARDPROGRAM_TSP_PORT is set. */
  tspPort?: number | null;
  stop(): Promise<void>;
}

/**
 * The HTTPS listener of merchants' mapped hosts: each TLS handshake picks the certificate of the
 * host the client names (SNI); a name with no certificate, or none, ends the handshake. Requests go
 * to the same app as plain HTTP.
 */
async function listenHttps(app: FastifyInstance, host: string, port: number): Promise<HttpsServer> {
  const server = createHttpsServer(
    {
      SNICallback: (servername, cb) => {
        app.svc.domains.lookup(servername).then(
          (entry) => (entry?.context ? cb(null, entry.context) : cb(new Error(`no certificate for ${servername}`))),
          (err: Error) => cb(err),
        );
      },
      minVersion: 'TLSv1.2',
    },
    (req, res) => app.routing(req, res),
  );
  server.on('tlsClientError', () => undefined); // a failed handshake is the client's problem, not a crash
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/**
 * Builds the app, creates the sandbox demo merchant if needed, listens, and stops on SIGTERM/SIGINT.
 * `readNonceFile`: a process of `serve --processes N` on SQLite, the read-nonce file it shares.
 */
export async function serve(
  config: Config,
  { handleSignals = true, readNonceFile }: { handleSignals?: boolean; readNonceFile?: string } = {},
): Promise<Running> {
  const started = performance.now();
  // The listeners' files again, now: a configuration built without the environment, or a file
  // changed since it was read, still stops the start before anything listens (issue 43.5).
  const problems = [
    ...(config.network.port !== null && config.network.tls ? tlsFileProblems(TLS_LISTENERS.network, config.network.tls) : []),
    ...(config.threeDs.port !== null && config.threeDs.tls ? tlsFileProblems(TLS_LISTENERS.threeDs, config.threeDs.tls) : []),
  ];
  if (problems.length > 0) throw problemsError(problems);
  const app = await buildApp(config, readNonceFile ? { readNonceFile } : {});
  for (const warning of config.warnings ?? []) app.log.warn(warning);
  app.starting = true;
  await app.listen({ port: config.port, host: config.host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  // PORT=0 picks a free port: the default public URL then names the one actually taken.
  if (config.port === 0 && config.publicUrl.endsWith(':0')) app.svc.config.publicUrl = url;
  let https: HttpsServer | null = null;
  if (config.httpsPort !== null) {
    try {
      https = await listenHttps(app, config.host, config.httpsPort);
    } catch (err) {
      await app.close();
      throw err;
    }
    const httpsAddr = https.address();
    // Page links name the port actually taken (HTTPS_PORT=0 picks a free one).
    if (typeof httpsAddr === 'object' && httpsAddr) app.svc.config.httpsPort = httpsAddr.port;
  }
  // Metrics on a port of their own (a private network's scraper): no token there.
  let metricsServer: HttpServer | null = null;
  if (config.metricsPort !== null) {
    metricsServer = createHttpServer((req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics') return res.writeHead(404).end();
      app.svc.metrics.text().then(
        (text) => res.writeHead(200, { 'content-type': app.svc.metrics.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      metricsServer?.once('error', reject);
      metricsServer?.listen(config.metricsPort ?? 0, config.host, () => resolve());
    });
  }
  // The card network link (decisions §12.1): its own listener, stopped before the database closes.
  let link: LinkServer | null = null;
  try {
    link = await startLink(app.svc);
  } catch (err) {
    await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
    https?.close();
    await app.close();
    throw err;
  }
  // The 3-D Secure ACS (decisions §14.1): its own listener for the directory server, stopped with the link.
  let acs: AcsServer | null = null;
  try {
    acs = await startAcs(app.svc);
  } catch (err) {
    await link?.stop();
    await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
    https?.close();
    await app.close();
    throw err;
  }
  // The wallet tokens' TSP endpoint (decisions §15.1): its own listener, stopped with the ACS.
  let tsp: TspServer | null = null;
  try {
    tsp = await startTsp(app.svc);
  } catch (err) {
    await acs?.stop();
    await link?.stop();
    await new Promise<void>((resolve) => (metricsServer ? metricsServer.close(() => resolve()) : resolve()));
    https?.close();
    await app.close();
    throw err;
  }
  const demo = await ensureDemoMerchant(app.svc);
  const admin = await ensureSandboxAdmin(app.svc);
  app.starting = false;
  app.log.info(
    {
      url,
      httpsPort: app.svc.config.httpsPort,
      metricsPort: metricsServer ? (metricsServer.address() as { port: number }).port : null,
      networkPort: link?.port ?? null,
      acsPort: acs?.port ?? null,
      tspPort: tsp?.port ?? null,
      env: config.env,
      database: app.svc.database.dialect,
      // Which optional parts this start runs (src/config-parts.ts).
      parts: partsState(app.svc.config),
      readyMs: Math.round(performance.now() - started),
    },
    'cardprogram ready',
  );
  if (demo) {
    const lines = [
      '',
      `cardprogram sandbox is running at ${url}`,
      `Demo merchant created: appId ${demo.appId}`,
      `Its credentials (secret, webhookSecret) are in ${app.svc.config.dataDir}/demo-merchant.json`,
      `Base URL: ${demo.baseUrl}`,
      'Try a signed request (create a cardholder; it signs a timestamp, so paste it within 5 minutes):',
      `  ${exampleCurl(demo)}`,
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (config.console && config.env === 'sandbox') {
    const lines = [
      `Console: ${app.svc.config.publicUrl}/console`,
      ...(admin || existsSync(sandboxAdminFile(app.svc))
        ? [`  sandbox admin admin@sandbox.test: password and authenticator key in ${sandboxAdminFile(app.svc)}`]
        : []),
      '  the one-time code for a sandbox login: npx cardprogram operator code admin@sandbox.test',
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  let stopping: Promise<void> | undefined;
  const stop = () => {
    // Graceful: stop accepting, let in-flight requests finish, close the database.
    stopping ??= (async () => {
      // The link first: its messages in flight are answered while the database is still open.
      if (link) await link.stop();
      if (acs) await acs.stop();
      if (tsp) await tsp.stop();
      if (https) {
        const closed = new Promise<void>((resolve) => https?.close(() => resolve()));
        https.closeIdleConnections();
        await closed;
      }
      if (metricsServer) await new Promise<void>((resolve) => metricsServer?.close(() => resolve()));
      await app.close();
    })();
    return stopping;
  };
  if (handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        app.log.info({ signal }, 'shutting down');
        stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
    }
  }
  // The request and reply schemas are compiled when first used (src/http/compilers.ts): compiling
  // them all before listening took most of the start-up. Now, in the background, so that the first
  // requests rarely pay for it.
  app.compileSchemas().catch((err) => app.log.error({ err }, 'compiling the request and reply schemas failed'));
  const metricsPort = metricsServer ? (metricsServer.address() as { port: number }).port : null;
  return {
    app,
    url,
    httpsPort: app.svc.config.httpsPort,
    metricsPort,
    networkPort: link?.port ?? null,
    acsPort: acs?.port ?? null,
    tspPort: tsp?.port ?? null,
    stop,
  };
}
