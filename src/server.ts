import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { ensureDemoMerchant, exampleCurl } from './merchants/demo.js';

export interface Running {
  app: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/** Builds the app, creates the sandbox demo merchant if needed, listens, and stops on SIGTERM/SIGINT. */
export async function serve(config: Config, { handleSignals = true } = {}): Promise<Running> {
  const started = performance.now();
  const app = await buildApp(config);
  await app.listen({ port: config.port, host: config.host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  // PORT=0 picks a free port: the default public URL then names the one actually taken.
  if (config.port === 0 && config.publicUrl.endsWith(':0')) app.svc.config.publicUrl = url;
  const demo = await ensureDemoMerchant(app.svc);
  app.log.info(
    { url, env: config.env, database: app.svc.database.dialect, readyMs: Math.round(performance.now() - started) },
    'cardprogram ready',
  );
  if (demo) {
    const lines = [
      '',
      `cardprogram sandbox is running at ${url}`,
      `Demo merchant created: appId ${demo.appId}`,
      `Its credentials (secret, webhookSecret) are in ${app.svc.config.dataDir}/demo-merchant.json`,
      `Base URL: ${demo.baseUrl}`,
      'Try a signed request (create a cardholder):',
      `  ${exampleCurl(demo)}`,
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  let stopping: Promise<void> | undefined;
  const stop = () => {
    // Graceful: stop accepting, let in-flight requests finish, close the database.
    stopping ??= app.close();
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
  return { app, url, stop };
}
