import { type Command, Option } from 'commander';
import { resealAll, rotateDataKey } from '../../jobs/keys.js';
import { runVerb } from '../../runner.js';
import { ROTATABLE, type RotatablePurpose } from '../../vault/pan-vault.js';
import { audited, cliOperator, print, withServices } from '../util.js';

/** `keys rotate-pan`, `keys reseal`, `keys list`: the encryption keys at rest (docs/operations.md). */
export function keyCommands(program: Command): void {
  const keys = program.command('keys').description('encryption keys at rest: PAN data keys and the master key');
  keys
    .command('list')
    .description('the data keys (ids and versions, never the keys; the current one of each purpose marked) and the master key id')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const out = await withServices(async (svc) => ({
        masterKeyId: svc.box.keyId,
        previousMasterKeyIds: svc.box.previousKeyIds,
        dataKeys: await svc.database.read((db) => svc.vault.listKeys(db)),
      }));
      print(!!o.json, out, () =>
        [
          `master key ${out.masterKeyId}  (current: seals and opens)`,
          ...out.previousMasterKeyIds.map((id) => `master key ${id}  (previous: opens only, until keys reseal)`),
          ...out.dataKeys.map((k) => `${k.id}  ${k.createdAt}${k.current ? '  (current)' : ''}`),
        ].join('\n'),
      );
    });
  keys
    .command('rotate')
    .description(
      'add a new version of a data key: pan, new cards are encrypted under it; 3ds, new authentication values and one-time codes are made with it (docs/3ds.md); existing ones keep theirs',
    )
    .addOption(new Option('--purpose <purpose>', 'which key').choices([...ROTATABLE]).default('pan'))
    .option('--json', 'print JSON')
    .action(async (o: { purpose: RotatablePurpose; json?: boolean }) => {
      // In the audit trail with who and which key ids, in the rotation's transaction; never a key.
      const { keyId: id } = await withServices((svc) =>
        runVerb(svc, rotateDataKey, {
          input: { purpose: o.purpose },
          actor: cliOperator(),
          audit: audited('keys.rotate', (made: { keyId: string }) => made.keyId),
        }),
      );
      print(!!o.json, { id }, () => `new data key ${id}; running services use it within a minute`);
    });
  keys
    .command('reseal')
    .description(
      're-encrypt every stored secret under CARDPROGRAM_MASTER_KEY (after a rotation; older keys in CARDPROGRAM_MASTER_KEY_PREVIOUS)',
    )
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      // In the audit trail with who, the key ids and what moved, in the reseal's transaction.
      const resealed = await withServices((svc) =>
        runVerb(svc, resealAll, { input: {}, actor: cliOperator(), audit: audited('keys.reseal', svc.box.keyId) }),
      );
      const moved = Object.fromEntries(resealed.moved.map((m) => [m.column, m.values]));
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
