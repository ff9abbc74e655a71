import { type Command, Option } from 'commander';
import { recordAudit } from '../../audit/trail.js';
import { ROTATABLE, type RotatablePurpose } from '../../cards/vault.js';
import { resealAll } from '../../jobs/keys.js';
import { audited, print, withServices } from '../util.js';

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
        dataKeys: await svc.vault.listKeys(svc.database.db),
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
      const id = await withServices((svc) =>
        svc.database.withTx(async (tx) => {
          const made = await svc.vault.rotate(tx, o.purpose);
          await recordAudit(tx, audited('keys.rotate', made), svc.clock(), null, { purpose: o.purpose, keyId: made });
          return made;
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
      const moved = await withServices((svc) =>
        resealAll(svc, (tx, counts) =>
          recordAudit(tx, audited('keys.reseal', svc.box.keyId), svc.clock(), null, {
            masterKeyId: svc.box.keyId,
            previousMasterKeyIds: svc.box.previousKeyIds,
            // As pairs: a column's own name (…_enc) would be redacted as a key of the record.
            moved: Object.entries(counts).map(([column, values]) => ({ column, values })),
          }),
        ),
      );
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
