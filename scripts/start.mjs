// `npm start`: builds what changed since the last build (a check of file times when nothing did),
// then runs `cardprogram serve` in this same process, so a start pays for one Node.js process, not two.
import { build } from './build.mjs';

await build({ ifStale: true });
await import('../bin/cardprogram.js');
