// Writes the SDK README's list of callback events (client/README.md, between its two markers) from
// CALLBACK_EVENTS in client/src/types.ts, which the compiler holds to `CallbackEvent['type']`: an
// event added to the SDK's types is listed without anyone remembering to (issue 43.16: the README
// had lost dispute.updated). `npm run build` writes it; `npm run lint` runs this with --check, which
// fails when the README differs. `--readme FILE` works on another file (the tests' copy).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CALLBACK_EVENTS } from '../client/src/types.js';

export const BEGIN = '<!-- callback events: written by scripts/sdk-readme.ts from CALLBACK_EVENTS (npm run build) -->';
export const END = '<!-- end of callback events -->';

/** The README with its list written anew from the events given. */
export function withEventList(readme: string, events: Readonly<Record<string, string>> = CALLBACK_EVENTS): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`the README has no list between "${BEGIN}" and "${END}"`);
  const rows = Object.entries(events).map(([type, when]) => `| \`${type}\` | ${when} |`);
  const list = ['| `type` | sent when |', '|---|---|', ...rows].join('\n');
  return `${readme.slice(0, begin + BEGIN.length)}\n${list}\n${readme.slice(end)}`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const at = process.argv.indexOf('--readme');
  const file = at > 0 ? (process.argv[at + 1] as string) : join('client', 'README.md');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const wanted = withEventList(current);
  if (wanted !== current) {
    if (process.argv.includes('--check')) {
      console.error(`${file}: its list of callback events is not CALLBACK_EVENTS (client/src/types.ts): run npm run build and commit it`);
      process.exit(1);
    }
    writeFileSync(file, wanted);
  }
}
