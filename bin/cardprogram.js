#!/usr/bin/env node
// The CLI, bundled into one file (npm ci builds it through the prepare script; `npm run build` rebuilds it).
import { existsSync } from 'node:fs';
import module from 'node:module';

// Node 22.1+ keeps compiled modules on disk between starts (start-up is mostly module loading);
// Node 20 has no such cache and goes on without it.
module.enableCompileCache?.();

const entry = new URL('../dist/cardprogram.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('cardprogram: dist/ is missing; run `npm run build` (npm ci does it for you)\n');
  process.exit(2);
}
await import(entry.href);
