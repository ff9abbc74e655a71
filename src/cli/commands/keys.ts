import { type Command, Option } from 'commander';
import { resealAll } from '../../crypto/reseal.js';
import { print, withServices } from '../util.js';

/** `keys rotate-pan`, `keys reseal`, `keys list`: the encryption keys at rest (docs/operations.md). */
export function keyCommands(program: Command): void {
  const keys = program.command('keys').description('encryption keys at rest: PAN data keys and the master key');
  keys
    .command('list')
    .description('the data keys (ids and versions, never the keys) and the master key id')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const out = await withServices(async (svc) => ({
        masterKeyId: svc.box.keyId,
        dataKeys: await svc.vault.listKeys(svc.database.db),
      }));
      print(!!o.json, out, () => [`master key ${out.masterKeyId}`, ...out.dataKeys.map((k) => `${k.id}  ${k.createdAt}`)].join('\n'));
    });
  keys
    .command('rotate')
    .description('add a new version of a data key: new cards are encrypted under it, existing ones keep theirs')
    .addOption(new Option('--purpose <purpose>', 'which key').choices(['pan']).default('pan'))
    .option('--json', 'print JSON')
    .action(async (o: { purpose: 'pan'; json?: boolean }) => {
      const id = await withServices((svc) => svc.vault.rotate(svc.database.db, o.purpose));
      print(!!o.json, { id }, () => `new data key ${id}; running services use it within a minute`);
    });
  keys
    .command('reseal')
    .description(
      're-encrypt every stored secret under CARDPROGRAM_MASTER_KEY (after a rotation; older keys in CARDPROGRAM_MASTER_KEY_PREVIOUS)',
    )
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const moved = await withServices((svc) => resealAll(svc));
      const total = Object.values(moved).reduce((a, b) => a + b, 0);
      print(
        !!o.json,
        { moved },
        () =>
          `${total} value(s) re-sealed under the current master key${
            total
              ? `: ${Object.entries(moved)
                  .filter(([, n]) => n)
                  .map(([c, n]) => `${c} ${n}`)
                  .join(', ')}`
              : ''
          }`,
      );
    });
}
