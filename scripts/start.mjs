// `npm start`: builds what changed since the last build (a check of file times when nothing did),
// then runs `cardprogram serve` in this same process, so a start pays for one Node.js process, not two.
import { build } from './build.mjs';

await build({ ifStale: true });

// npm runs this under `sh -c`, and on SIGTERM npm signals the shell, which dies without passing it
// on: the service was left running with no parent. When the process that started it goes away, the
// service shuts down as on SIGTERM (the same graceful path: requests in flight finish, then exit).
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  process.kill(process.pid, 'SIGTERM');
}, 500);
orphaned.unref();

await import('../bin/cardprogram.js');
