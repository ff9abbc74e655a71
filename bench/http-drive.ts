// One operation driven by autocannon with freshly signed requests, for the HTTP benchmark.
import autocannon from 'autocannon';

export const quick = process.argv.includes('--quick');
export const DURATION_S = quick ? 1 : Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = 50;
export const FILL_TRADES = quick ? 100 : Number(process.env.BENCH_TRADES ?? 10_000);

export interface Operation {
  name: string;
  path: string;
  /** Whether the operation takes a randomStr (KYC submission is keyed by its requestNo instead). */
  randomStr: boolean;
  body: (n: number) => Record<string, unknown>;
}

export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export type Signer = (body: Record<string, unknown>, withRandomStr: boolean) => string;

export async function drive(base: string, op: Operation, sign: Signer, query = '', seconds = DURATION_S): Promise<Measured> {
  let n = Math.floor(Math.random() * 1e9);
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: `${op.path}${query}`,
        headers: { 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: sign(op.body(n++), op.randomStr) }),
      },
    ],
  });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}
