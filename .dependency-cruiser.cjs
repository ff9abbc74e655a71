// The import rules of docs/architecture.md ("Layers"), checked by `npm run lint` (lint:imports) and
// by test/import-rules.test.ts, which also proves that each rule fails on a planted violation.
//
// Parsed with swc: dependency-cruiser reads TypeScript through the `typescript` package's API,
// which TypeScript 7 no longer ships.

/** Folders whose files are verbs (and their helpers), except each one's routes.ts and schemas.ts. */
const DOMAINS =
  '(audit|console|merchants|holders|kyc|cards|controls|ledger|trades|domains|callbacks|idempotency|page|card-network|authorization-endpoint|sandbox|disputes|three-ds|tokens)';

/**
 * Besides each domain's schemas.ts, the tables of the interface's codes (trade types and statuses;
 * the audit statuses and countries in src/codes/) are wire format: the schemas build their enums and
 * descriptions from them; so are the EMV 3-D Secure messages (three-ds/emv-messages.ts), which the
 * answers' schemas are built of.
 */
const CODES = '(schemas|types|emv-messages)';

/**
 * The layers, top to bottom: a module may import from its own layer and the layers below it, never
 * from one above. A module is in the first layer one of whose patterns matches its path.
 */
const LAYERS = [
  { name: 'entry points', paths: ['^src/cli/', '^src/server\\.ts$', '^src/cluster\\.ts$'] },
  // src/jobs/: the periodic jobs' registry (handed to the reaper and the worker by app.ts) and the keys' jobs.
  { name: 'assembly', paths: ['^src/app\\.ts$', '^src/services\\.ts$', '^src/jobs/'] },
  {
    name: 'transports',
    paths: [
      // routes.ts, or a group of routes of one transport (routes-*.ts: the console's pages, with their kit).
      `^src/${DOMAINS}/(routes|routes-[a-z]+)\\.ts$`,
      '^src/docs/',
      '^src/http/(?!(schemas|fields|signing|signature-detail|decline-detail)\\.ts$)',
      // The card network link: bytes <-> messages, a transport like the HTTP routes (src/card-network/link/:
      // listener, dispatch by MTI, admission, the client `network send` uses); the message classes it
      // calls are domain files of src/card-network/.
      '^src/card-network/link/',
      // The 3-D Secure ACS's listener for the directory server: a transport of its own (src/three-ds/listener.ts).
      '^src/three-ds/listener\\.ts$',
      // The wallet tokens' endpoint for the TSP: a transport of its own (src/tokens/listener.ts).
      '^src/tokens/listener\\.ts$',
    ],
  },
  { name: 'domains', paths: [`^src/${DOMAINS}/(?!${CODES}\\.ts$)`, '^src/(context|runner)\\.ts$'] },
  {
    name: 'wire format',
    paths: [
      '^src/[^/]+/schemas\\.ts$',
      `^src/${DOMAINS}/${CODES}\\.ts$`,
      '^src/http/(fields|signing|signature-detail|decline-detail)\\.ts$',
      '^src/operation-input\\.ts$',
      // The code tables every layer names (src/codes/: the cardholder audit status, the countries).
      '^src/codes/',
    ],
  },
  {
    name: 'foundation',
    // outbound.ts: the one POST to the servers the operator names (the TSP, the 3-D Secure DS).
    paths: [
      '^src/(config|config-[a-z-]+|errors|dates|canonical-json|metrics|outbound)\\.ts$',
      '^src/(money|crypto|db|iso8583|vault|directories)/',
    ],
  },
];

/**
 * Verbs that still see HTTP, each allowed only the one import listed. Empty since issue 18's verb
 * work (one verb runner; the demo's curl lines moved to src/docs/example-curl.ts): keep it so.
 */
const KNOWN_HTTP_IN_VERBS = [];

/**
 * The modules that may import src/db/trades-table.ts, and so query `trades` at all (the table is not
 * in the general `DB` type): its home, src/trades (every read), and the ledger's writer of trade
 * rows. Partitioning and the covering indexes are then known in one place (issue 27.3).
 */
const TRADES_HOME = ['^src/trades/', '^src/ledger/trade-rows\\.ts$'];

const HTTP = ['^src/http/', '(^|/)node_modules/(fastify|fastify-plugin|@fastify/)'];

const above = (i) => LAYERS.slice(0, i).flatMap((l) => l.paths);

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycle, type-only imports included: a module and what it imports form a tree.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'verb-without-http',
      comment: 'A verb (a domain file other than routes.ts, routes-*.ts and schemas.ts) never sees HTTP: no src/http, no Fastify.',
      severity: 'error',
      from: {
        path: `^src/${DOMAINS}/`,
        pathNot: [
          `^src/${DOMAINS}/(routes|routes-[a-z]+|schemas)\\.ts$`,
          // The ACS's HTTP listener is a transport (LAYERS), not a verb: it reads bodies as the API does.
          '^src/three-ds/listener\\.ts$',
          '^src/tokens/listener\\.ts$',
          ...KNOWN_HTTP_IN_VERBS.map((k) => k.from),
        ],
      },
      to: { path: HTTP },
    },
    ...KNOWN_HTTP_IN_VERBS.map((known) => ({
      name: 'verb-without-http',
      comment: 'A verb on the list above: nothing of HTTP but the one import it is allowed for now (issue 18).',
      severity: 'error',
      from: { path: known.from },
      to: { path: HTTP, pathNot: known.to },
    })),
    {
      name: 'trades-in-its-home',
      comment: "Only src/trades and the ledger's writer (trade-rows.ts) query `trades`: others ask src/trades (src/db/trades-table.ts).",
      severity: 'error',
      from: { path: '^src/', pathNot: [...TRADES_HOME, '^src/db/trades-table\\.ts$'] },
      to: { path: '^src/db/trades-table\\.ts$' },
    },
    {
      name: 'client-without-server',
      comment: 'The SDK is its own package: it imports no server code.',
      severity: 'error',
      from: { path: '^client/' },
      to: { path: '^src/' },
    },
    {
      name: 'layer-known',
      comment: 'Every module of src/ is in a layer: a new top-level file or folder is added to LAYERS (and to docs/architecture.md).',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.flatMap((l) => l.paths) },
      to: {},
    },
    ...LAYERS.slice(1).map((layer, j) => ({
      name: `layer-${layer.name.replaceAll(' ', '-')}`,
      comment: `A module of the ${layer.name} layer imports nothing from a layer above it (docs/architecture.md, "Layers").`,
      severity: 'error',
      from: { path: layer.paths, pathNot: above(j + 1) },
      to: { path: above(j + 1) },
    })),
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
