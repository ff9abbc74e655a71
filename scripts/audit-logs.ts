// The scan after the suite (test/helpers/log-audit.ts): fails if a card number, CVV, merchant or
// webhook secret or page token appears in anything the suite's services logged, answered in error,
// or sent as a redirect's Location (a console redirect's next once carried a search's card number),
// as written or percent-decoded.
import { SANDBOX_BINS } from '../src/config.js';
import { scanLogs } from '../test/helpers/log-audit.js';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: audit-logs.ts DIR');
  process.exit(2);
}
const result = scanLogs(dir, Object.values(SANDBOX_BINS));
const mb = (result.bytes / 1_048_576).toFixed(1);
console.log(
  `secrets audit: ${result.files} log files (${mb} MB) scanned for ${result.secrets} secrets the tests were handed and for secrets' shapes: ${result.findings.length} found`,
);
for (const f of result.findings.slice(0, 20)) console.log(`  ${f.kind} in ${f.file}:${f.line}: …${f.excerpt}…`);
// Nothing collected means the wiring broke, not that the logs are clean.
if (result.files === 0 || result.secrets === 0) console.log('secrets audit: nothing was collected; the audit itself is broken');
process.exit(result.findings.length || result.files === 0 || result.secrets === 0 ? 1 : 0);
