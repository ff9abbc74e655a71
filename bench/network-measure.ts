// What the network benchmark measures beside throughput and latency, robust to a loaded machine:
// the CPU time a process used (its own counters in /proc, not wall-clock), PostgreSQL's backends
// of one service (by their application_name), and a process's resident memory.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';

/** Clock ticks a second (/proc's unit), from getconf; 100 on Linux when it cannot be asked. */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU a process used so far (all its threads), in ms; null when it is gone or not readable. */
export function cpuMs(pid: number | undefined): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command (field 2) may hold spaces: the fields after it start past its closing ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the state (field 3).
    return ((Number(rest[11]) + Number(rest[12])) * 1000) / TICKS;
  } catch {
    return null;
  }
}

/** Resident memory of a process now (VmRSS), in MB. */
export function rssMb(pid: number | undefined): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/**
 * The CPU of a set of processes over an interval: `start()` reads each one's counter, `stop()` the
 * counters again, and the sum of the differences (a process that appeared meanwhile counts whole).
 */
export async function cpuOver(pids: () => Promise<number[]>) {
  const before = new Map<number, number>();
  for (const pid of await pids()) {
    const ms = cpuMs(pid);
    if (ms !== null) before.set(pid, ms);
  }
  return async () => {
    let total = 0;
    for (const pid of await pids()) {
      const ms = cpuMs(pid);
      if (ms !== null) total += ms - (before.get(pid) ?? 0);
    }
    return total;
  };
}

/**
 * PostgreSQL's backends serving one application_name (the service's connections, set in its
 * DATABASE_URL): their pids, readable in /proc when the server runs on this machine.
 */
export function backendsOf(url: string, applicationName: string): () => Promise<number[]> {
  return async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const res = await client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [applicationName]);
      return res.rows.map((r) => r.pid);
    } finally {
      await client.end();
    }
  };
}
