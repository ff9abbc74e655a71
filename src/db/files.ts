import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Private files: the data directory is 0700 and what it holds 0600. Why: the SQLite file holds
 * every cardholder and card (sealed, but beside the sandbox's master key), `master.key` is the key
 * itself, `demo-merchant.json` a merchant secret; another local user must read none of them.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates a directory 0700 (a new one only: an operator's existing directory is not changed, only warned about). */
export function makePrivateDir(dir: string): void {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * Creates the SQLite file 0600 before SQLite opens it (SQLite would create it with the umask's
 * 0644). SQLite gives its -wal and -shm files the database file's mode, so they are 0600 too.
 */
export function createPrivateFile(file: string): void {
  makePrivateDir(dirname(file));
  if (!existsSync(file)) closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
}

/** The paths that must not be readable by others, with the mode they should have. */
export function privatePaths(dataDir: string, sqliteFile: string | null): Array<{ path: string; mode: number }> {
  const paths = [
    { path: dataDir, mode: PRIVATE_DIR_MODE },
    { path: join(dataDir, 'master.key'), mode: PRIVATE_FILE_MODE },
    { path: join(dataDir, 'demo-merchant.json'), mode: PRIVATE_FILE_MODE },
  ];
  if (sqliteFile !== null) {
    for (const suffix of ['', '-wal', '-shm']) paths.push({ path: `${sqliteFile}${suffix}`, mode: PRIVATE_FILE_MODE });
  }
  return paths;
}

/** One line per existing path whose mode gives group or others more than it should. */
export function widePermissions(dataDir: string, sqliteFile: string | null): string[] {
  const lines: string[] = [];
  for (const { path, mode } of privatePaths(dataDir, sqliteFile)) {
    if (!existsSync(path)) continue;
    const actual = statSync(path).mode & 0o777;
    if ((actual & ~mode) !== 0) {
      lines.push(
        `${path} has mode ${actual.toString(8).padStart(4, '0')}, wider than ${mode.toString(8).padStart(4, '0')}: other users may read it (chmod ${mode.toString(8)} ${path})`,
      );
    }
  }
  return lines;
}
