import type { FastifyInstance, FastifyReply } from 'fastify';
import Fastify from 'fastify';

/**
 * The API reference at /docs: Scalar's renderer (@scalar/fastify-api-reference, bundled in the
 * package, nothing from a CDN) on a page of our own, reading /openapi.json. Its CSP allows scripts
 * from this origin only (no inline script: the page's set-up is /docs/reference.js) and requests to
 * this origin only; inline styles are allowed because the renderer sets them at run time. Its
 * request client is hidden: a request needs a signature the browser cannot make.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>cardprogram API reference</title>
  </head>
  <body>
    <div id="reference"></div>
    <script src="/docs/scalar.js"></script>
    <script src="/docs/reference.js"></script>
  </body>
</html>
`;

const SETTINGS = {
  url: '/openapi.json',
  // Nothing from another origin: no web fonts, no telemetry, no proxy, no hosted AI or MCP helpers.
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  hideClientButton: true,
  hideTestRequestButton: true,
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
  defaultOpenAllTags: true,
  // The request examples as curl commands: the example body, ready to copy.
  defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
  theme: 'default',
};

const SETUP = `Scalar.createApiReference('#reference', ${JSON.stringify(SETTINGS)});\n`;

let bundle: Promise<string> | undefined;

/**
 * The renderer's browser bundle, as the package serves it. Loaded on the first request for it, not
 * at start-up: it is 5 MB of JavaScript the service itself never runs.
 */
function scalarBundle(): Promise<string> {
  bundle ??= (async () => {
    const { default: scalar } = await import('@scalar/fastify-api-reference');
    const source = Fastify({ logger: false });
    // Its routes exist only with a document to show; this one is never fetched.
    await source.register(scalar, { routePrefix: '/reference', configuration: { url: '/openapi.json' } });
    const res = await source.inject({ method: 'GET', url: '/reference/js/scalar.js' });
    await source.close();
    if (res.statusCode !== 200) throw new Error(`the API reference bundle answered ${res.statusCode}`);
    return res.body;
  })();
  bundle.catch(() => {
    bundle = undefined;
  });
  return bundle;
}

export async function apiReferenceRoutes(app: FastifyInstance): Promise<void> {
  const hide = { schema: { hide: true } };
  const page = async (_req: unknown, reply: FastifyReply) =>
    reply.header('content-security-policy', CSP).header('x-content-type-options', 'nosniff').type('text/html; charset=utf-8').send(PAGE);
  app.get('/docs', hide, page);
  app.get('/docs/', hide, page);
  app.get('/docs/reference.js', hide, async (_req, reply) =>
    reply.header('x-content-type-options', 'nosniff').type('application/javascript; charset=utf-8').send(SETUP),
  );
  app.get('/docs/scalar.js', hide, async (_req, reply) =>
    reply
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'public, max-age=86400')
      .type('application/javascript; charset=utf-8')
      .send(await scalarBundle()),
  );
}
