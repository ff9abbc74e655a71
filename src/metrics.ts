import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/** The card network link's figures of one instance (Metrics.networkFigures). */
export interface NetworkFigures {
  /** Answers sent, by answer MTI and field 39. */
  messages: Array<{ mti: string; code: string; n: number }>;
  /** Arrival to answer, every MTI: how many, the mean, and the histogram bound (seconds) p50 and p99 fall under (Infinity: above the last). */
  decisions: { count: number; meanSeconds: number | null; p50: number | null; p99: number | null };
  connections: number;
  signedOn: number;
}

/**
 * What the service tells a monitoring system (docs/operations.md, "Metrics"), in Prometheus' text
 * format at GET /metrics. One registry per service (tests build many in one process); the parts of
 * the service record into it through the typed methods below, and the gauges that describe state
 * (queue age, pool use) are read from their source when scraped.
 */
export class Metrics {
  readonly registry = new Registry();

  private readonly requests = new Counter({
    name: 'cardprogram_http_requests_total',
    help: 'HTTP requests answered, by operation, result code ("0" on success, "none" for a failure without the error envelope, such as /metrics refusing its token) and HTTP status',
    labelNames: ['operation', 'code', 'status'] as const,
    registers: [this.registry],
  });

  private readonly latency = new Histogram({
    name: 'cardprogram_http_request_duration_seconds',
    help: 'Time from a request’s arrival to its answer, by operation',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  private readonly authorizations = new Counter({
    name: 'cardprogram_authorizations_total',
    help: 'Authorizations decided, by decision and decline reason ("" when approved); replays not counted',
    labelNames: ['decision', 'reason'] as const,
    registers: [this.registry],
  });

  private readonly deliveries = new Counter({
    name: 'cardprogram_callback_deliveries_total',
    help: 'Callback delivery attempts, by outcome: delivered, retry (failed, to be tried again) or failed (given up)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly sweepFailures = new Counter({
    name: 'cardprogram_sweep_failures_total',
    help: 'Rows a periodic pass failed on (recorded and skipped; the next pass tries them again), by pass: hold_expiry, dispute_expiry, reap_*',
    labelNames: ['job'] as const,
    registers: [this.registry],
  });

  private readonly rateLimited = new Counter({
    name: 'cardprogram_rate_limited_total',
    help: 'Signed requests refused by the per-merchant rate limit (1009)',
    registers: [this.registry],
  });

  private readonly transactions = new Histogram({
    name: 'cardprogram_db_transaction_duration_seconds',
    help: 'Time of a verb’s database transaction, commit included',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  private readonly groups = new Histogram({
    name: 'cardprogram_sqlite_group_commit_size',
    help: 'Transactions committed together by one SQLite commit (group commit)',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
    registers: [this.registry],
  });

  private readonly endpointAsks = new Counter({
    name: 'cardprogram_authorization_endpoint_asked_total',
    help: 'Authorizations for which a merchant’s authorization endpoint was to be asked (the rules approved them)',
    registers: [this.registry],
  });

  private readonly endpointResults = new Counter({
    name: 'cardprogram_authorization_endpoint_results_total',
    help: 'What became of each ask: answered (in time, readable or not), timeout_before_sending (the deadline passed before the request was sent: claim, pre-check, DNS, connection), timeout_waiting (sent, no answer by the deadline), error (refused connection, blocked address)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  private readonly endpointSendDelay = new Histogram({
    name: 'cardprogram_authorization_endpoint_send_delay_seconds',
    help: 'Time from an authorization’s arrival to its request being on the wire to the merchant’s endpoint, by phase: claim (its randomStr claimed), rules (the pre-check read), connect (DNS and connection, until the request was written)',
    labelNames: ['phase'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  private readonly networkMessages = new Counter({
    name: 'cardprogram_network_messages_total',
    help: 'Card network link answers sent, by answer MTI and response code (field 39)',
    labelNames: ['mti', 'code'] as const,
    registers: [this.registry],
  });

  private readonly networkLatency = new Histogram({
    name: 'cardprogram_network_decision_duration_seconds',
    help: 'Time from a card network message’s arrival to its answer, by answer MTI',
    labelNames: ['mti'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5],
    registers: [this.registry],
  });

  private readonly forcedPosts = new Counter({
    name: 'cardprogram_network_forced_posts_total',
    help: 'Forced posts of the card network (decisions §12.7: advices, clearings above or without a hold, refunds without an original), by card currency',
    labelNames: ['currency'] as const,
    registers: [this.registry],
  });

  private readonly forcedPostsAmount = new Counter({
    name: 'cardprogram_network_forced_posts_amount_total',
    help: 'What forced posts of the card network moved, in minor units of the card currency',
    labelNames: ['currency'] as const,
    registers: [this.registry],
  });

  private readonly threeDsOutcomes = new Counter({
    name: 'cardprogram_3ds_authentications_total',
    help: '3-D Secure authentications answered by an ARes, by transStatus (Y, N, U, C) and transStatusReason ("" without one)',
    labelNames: ['status', 'reason'] as const,
    registers: [this.registry],
  });

  private readonly threeDsLatency = new Histogram({
    name: 'cardprogram_3ds_areq_duration_seconds',
    help: 'Time from an AReq’s arrival to its ARes (the merchant’s decision endpoint included)',
    buckets: [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  private readonly threeDsErrors = new Counter({
    name: 'cardprogram_3ds_errors_total',
    help: '3-D Secure messages answered by an Erro, by errorCode (101, 102, 201, 202, 203, 204, 404)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });

  private readonly threeDsChallenges = new Histogram({
    name: 'cardprogram_3ds_challenge_duration_seconds',
    help: 'Time from a challenge’s ARes (C) to its outcome, by transStatus',
    labelNames: ['status'] as const,
    buckets: [5, 10, 20, 30, 60, 120, 180, 300, 600],
    registers: [this.registry],
  });

  private readonly threeDsConnectionsRefused = new Counter({
    name: 'cardprogram_3ds_connections_refused_total',
    help: 'Connections to the ACS closed at once: beyond CARDPROGRAM_3DS_MAX_CONNECTIONS or CARDPROGRAM_3DS_MAX_PER_ADDRESS, or while stopping',
    labelNames: ['why'] as const,
    registers: [this.registry],
  });

  private readonly threeDsResults = new Counter({
    name: 'cardprogram_3ds_results_total',
    help: 'Tries to send a challenge’s result to the DS (RReq), by outcome: sent (an RRes), retry (failed, to be tried again), failed (given up: an Erro, or 24 hours of failures); counted where the pass runs (the service with its worker, or cardprogram worker)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly threeDsAuthorizationRefusals = new Counter({
    name: 'cardprogram_3ds_authorization_refusals_total',
    help: 'Authorizations declined for 3-D Secure (decisions §14.5), by reason (authentication_failed: a value refused; authentication_required: none, CARDPROGRAM_3DS_REQUIRED) and where they came from (link, sandbox)',
    labelNames: ['reason', 'via'] as const,
    registers: [this.registry],
  });

  /** One try of the results sender (src/three-ds/results.ts). */
  threeDsResult(outcome: 'sent' | 'retry' | 'failed'): void {
    this.threeDsResults.inc({ outcome });
  }

  /** An authorization declined authentication_failed or authentication_required (src/ledger/authorize.ts), once committed. */
  threeDsAuthorizationRefusal(reason: 'authentication_failed' | 'authentication_required', via: 'link' | 'sandbox'): void {
    this.threeDsAuthorizationRefusals.inc({ reason, via });
  }

  /** An AReq answered with an ARes (src/three-ds/areq.ts). */
  threeDsAuthentication(status: string, reason: string, seconds: number): void {
    this.threeDsOutcomes.inc({ status, reason });
    this.threeDsLatency.observe(seconds);
  }

  /** A message answered with an Erro. */
  threeDsError(code: string): void {
    this.threeDsErrors.inc({ code });
  }

  /** A challenge ended (src/three-ds/finish.ts), this long after its ARes. */
  threeDsChallenge(status: string, seconds: number): void {
    this.threeDsChallenges.observe({ status }, seconds);
  }

  threeDsConnectionRefused(why: 'capacity' | 'per_address' | 'stopping'): void {
    this.threeDsConnectionsRefused.inc({ why });
  }

  private readonly tokenProvisionings = new Counter({
    name: 'cardprogram_token_provisionings_total',
    help: 'Wallet-token provisioning requests decided (decisions §15.3), by decision (approve, require_authentication, decline) and reason ("" for approve); a repeated requestId is not counted again',
    labelNames: ['decision', 'reason'] as const,
    registers: [this.registry],
  });

  private readonly tokenProvisionLatency = new Histogram({
    name: 'cardprogram_token_provision_duration_seconds',
    help: 'Time from a provisioning request’s arrival to its answer (the merchant’s token decision endpoint included)',
    buckets: [0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });

  private readonly tspRequests = new Counter({
    name: 'cardprogram_tsp_requests_total',
    help: 'Requests of the TSP endpoint, by path (provision, activation-code, verify, notify, other) and HTTP status',
    labelNames: ['path', 'status'] as const,
    registers: [this.registry],
  });

  private readonly tspConnectionsRefused = new Counter({
    name: 'cardprogram_tsp_connections_refused_total',
    help: 'Connections to the TSP endpoint closed at once: beyond CARDPROGRAM_TSP_MAX_CONNECTIONS or CARDPROGRAM_TSP_MAX_PER_ADDRESS, or while stopping',
    labelNames: ['why'] as const,
    registers: [this.registry],
  });

  /** A provisioning request decided (src/tokens/provision.ts), once committed, with its time. */
  tokenProvisioning(decision: string, reason: string, seconds: number): void {
    this.tokenProvisionings.inc({ decision, reason });
    this.tokenProvisionLatency.observe(seconds);
  }

  /** A request of the TSP endpoint answered (src/tokens/listener.ts). */
  tspRequest(path: string, status: number): void {
    this.tspRequests.inc({ path, status: String(status) });
  }

  tspConnectionRefused(why: 'capacity' | 'per_address' | 'stopping'): void {
    this.tspConnectionsRefused.inc({ why });
  }

  private readonly verificationFailures = new Counter({
    name: 'cardprogram_verification_failures_total',
    help: 'CVV2 and expiry mismatches counted against cards (decisions §12.13), by kind (cvv2, expiry) and where presented (link, sandbox, 3ds, tsp)',
    labelNames: ['kind', 'via'] as const,
    registers: [this.registry],
  });

  private readonly securityFreezes = new Counter({
    name: 'cardprogram_cards_frozen_security_total',
    help: 'Cards frozen with source security after 5 card verification failures within 24 hours (decisions §12.13), by where the last was presented',
    labelNames: ['via'] as const,
    registers: [this.registry],
  });

  private readonly linkRefused = new Counter({
    name: 'cardprogram_network_connections_refused_total',
    help: 'Card network link connections closed by its caps (decisions §12.13), by reason: total (CARDPROGRAM_NETWORK_MAX_CONNECTIONS), per_address (CARDPROGRAM_NETWORK_MAX_PER_ADDRESS), handshake_timeout (TLS not finished within 10 s), peer_not_allowed (a certificate not in CARDPROGRAM_NETWORK_PEERS), evicted (the oldest connection still in its TLS handshake, closed to make room for a new one)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly linkHandshakeFailures = new Counter({
    name: 'cardprogram_network_handshake_failures_total',
    help: 'Card network link TLS handshakes refused, by reason: certificate (none, or not signed by CARDPROGRAM_NETWORK_TLS_CA), protocol (not TLS, or a TLS error)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** What the card network link's gauges read: its open connections, signed-on peers and messages being decided (src/card-network/link/listener.ts). */
  private link: { connections(): number; signedOn(): number; inFlight?(): number } = { connections: () => 0, signedOn: () => 0 };

  constructor() {
    const link = () => this.link;
    new Gauge({
      name: 'cardprogram_network_connections',
      help: 'Open connections of the card network link',
      registers: [this.registry],
      collect() {
        this.set(link().connections());
      },
    });
    new Gauge({
      name: 'cardprogram_network_signed_on_peers',
      help: 'Connections of the card network link signed on (0800, field 70 001) and not signed off',
      registers: [this.registry],
      collect() {
        this.set(link().signedOn());
      },
    });
    new Gauge({
      name: 'cardprogram_network_messages_in_flight',
      help: 'Card network link messages being decided now, over all connections (at most 256 per connection; the rest wait unread)',
      registers: [this.registry],
      collect() {
        this.set(link().inFlight?.() ?? 0);
      },
    });
    // Process CPU and memory, GC, and event-loop lag (nodejs_eventloop_lag_seconds and its percentiles).
    collectDefaultMetrics({ register: this.registry, prefix: 'cardprogram_' });
  }

  request(operation: string, code: string, status: number, seconds: number): void {
    this.requests.inc({ operation, code, status: String(status) });
    this.latency.observe({ operation }, seconds);
  }

  /** A forced post committed (src/ledger/forced.ts): `amount` in minor units of `currency`. */
  forcedPost(currency: string, amount: number): void {
    this.forcedPosts.inc({ currency });
    this.forcedPostsAmount.inc({ currency }, amount);
  }

  /** A card verification failure committed (src/cards/verification.ts). */
  cardVerificationFailure(kind: string, via: string): void {
    this.verificationFailures.inc({ kind, via });
  }

  /** A card frozen by `security` (src/cards/verification.ts). */
  securityFreeze(via: string): void {
    this.securityFreezes.inc({ via });
  }

  authorization(approved: boolean, reason: string | null): void {
    this.authorizations.inc({ decision: approved ? 'approved' : 'declined', reason: reason ?? '' });
  }

  delivery(outcome: 'delivered' | 'retry' | 'failed'): void {
    this.deliveries.inc({ outcome });
  }

  /** A merchant's authorization endpoint: one ask, and later its result (docs/operations.md, "Metrics"). */
  endpointAsked(): void {
    this.endpointAsks.inc();
  }

  endpointResult(result: 'answered' | 'timeout_before_sending' | 'timeout_waiting' | 'error'): void {
    this.endpointResults.inc({ result });
  }

  endpointPhase(phase: 'claim' | 'rules' | 'connect', seconds: number): void {
    this.endpointSendDelay.observe({ phase }, seconds);
  }

  /** The card network link's state, read when scraped. */
  networkLink(state: { connections(): number; signedOn(): number; inFlight(): number }): void {
    this.link = state;
  }

  /** A card network link connection closed by a cap (src/card-network/link/admission.ts). */
  networkRefused(reason: 'total' | 'per_address' | 'handshake_timeout' | 'peer_not_allowed' | 'evicted'): void {
    this.linkRefused.inc({ reason });
  }

  networkHandshakeFailed(reason: 'certificate' | 'protocol'): void {
    this.linkHandshakeFailures.inc({ reason });
  }

  networkMessage(mti: string, code: string, seconds: number): void {
    this.networkMessages.inc({ mti, code });
    this.networkLatency.observe({ mti }, seconds);
  }

  /**
   * The card network link's figures of this instance since it started (the console's overview): the
   * answers per MTI and response code, the decisions' count and time (p50 and p99 as the bucket
   * bound they fall under), its connections and signed-on peers.
   */
  async networkFigures(): Promise<NetworkFigures> {
    const messages = (await this.networkMessages.get()).values
      .map((v) => ({ mti: String(v.labels.mti), code: String(v.labels.code), n: v.value }))
      .filter((m) => m.n > 0)
      .sort((a, b) => a.mti.localeCompare(b.mti) || a.code.localeCompare(b.code));
    // Cumulative buckets, summed over the MTIs.
    const buckets = new Map<number, number>();
    let count = 0;
    let sum = 0;
    for (const v of (await this.networkLatency.get()).values) {
      // A bucket's value carries its bound in the label `le` beside the histogram's own labels.
      const { metricName = '', labels } = v as { metricName?: string; labels: Record<string, string | number | undefined> };
      if (metricName.endsWith('_count')) count += v.value;
      else if (metricName.endsWith('_sum')) sum += v.value;
      else if (metricName.endsWith('_bucket') && labels.le !== '+Inf') {
        const le = Number(labels.le);
        buckets.set(le, (buckets.get(le) ?? 0) + v.value);
      }
    }
    const bounds = [...buckets].sort((a, b) => a[0] - b[0]);
    const under = (q: number) => (count === 0 ? null : (bounds.find(([, n]) => n >= q * count)?.[0] ?? Number.POSITIVE_INFINITY));
    return {
      messages,
      decisions: { count, meanSeconds: count === 0 ? null : sum / count, p50: under(0.5), p99: under(0.99) },
      connections: this.link.connections(),
      signedOn: this.link.signedOn(),
    };
  }

  /** A periodic pass failed on one row (src/db/sweep.ts). */
  sweepFailure(job: string): void {
    this.sweepFailures.inc({ job });
  }

  rateLimitRefusal(): void {
    this.rateLimited.inc();
  }

  transaction(seconds: number): void {
    this.transactions.observe(seconds);
  }

  groupCommit(size: number): void {
    this.groups.observe(size);
  }

  private readonly beforeScrape: Array<() => void> = [];

  /**
   * Runs `take` at the start of every scrape, before any gauge is read: a snapshot of a state that
   * the scrape's own reads would change (the pool, whose idle connections the database gauges take).
   */
  onScrape(take: () => void): void {
    this.beforeScrape.push(take);
  }

  /** A gauge whose value is read when scraped (a count in the database, the pool's state). */
  gauge(name: string, help: string, read: () => Promise<number> | number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      async collect() {
        this.set(await read());
      },
    });
  }

  /**
   * A gauge with one label, its values read when scraped: every scrape replaces the last one's
   * label values, so a label that is gone is no longer reported. The reader bounds its labels.
   */
  labeledGauge(name: string, help: string, label: string, read: () => Promise<Array<[string, number]>>): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      async collect() {
        const values = await read();
        this.reset();
        for (const [value, n] of values) this.set({ [label]: value }, n);
      },
    });
  }

  text(): Promise<string> {
    for (const take of this.beforeScrape) take();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
