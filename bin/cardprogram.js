#!/usr/bin/env node
// The compiled CLI (npm ci builds it through the prepare script; `npm run build` rebuilds it).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/index.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('cardprogram: dist/ is missing; run `npm run build` (npm ci does it for you)\n');
  process.exit(2);
}
await import(entry.href);
