/**
 * An 0100/0200's decision against its deadline (decisions §12.8): the gate where the commit and the
 * deadline's `91` meet, so that only one of them happens. The link's dispatch closes it at the
 * deadline (./link/dispatch.ts); the authorization verb enters it before its claim (./authorize.ts).
 */

/** The answer's deadline passed before the decision could commit: nothing is written, the answer is 91. */
export class DeadlinePassed extends Error {
  override name = 'DeadlinePassed';
}

/**
 * Where an 0100/0200's decision and its deadline meet, once (decisions §12.8). The verb enters it
 * right before its claim and commit; the deadline's timer closes it before answering 91. Whichever
 * comes first wins: a decision that entered is waited for (its answer is the truth, even a little
 * late), and one that finds the gate closed rolls back, so that a 91 always means nothing was written.
 * Without it a commit still running at the deadline was answered 91 and stored as decided, and a
 * retransmission got another answer than the first. Both sides run on the process's one thread,
 * so checking and setting the state cannot interleave.
 */
export class DecisionGate {
  private state: 'open' | 'committing' | 'closed' = 'open';
  private joined: DecisionGate | null = null;

  /** A copy of a message still being decided: its deadline meets that decision's gate. */
  join(running: DecisionGate): void {
    this.joined = running;
  }

  /** The verb, before its claim: true when it may commit (after which the answer waits for it), false past `deadline` or once 91 was answered. */
  enter(now: number, deadline: number): boolean {
    if (this.joined) return this.joined.enter(now, deadline);
    if (this.state === 'committing') return true; // a transaction run again (a deadlock's victim)
    if (this.state === 'closed' || now > deadline) {
      this.state = 'closed';
      return false;
    }
    this.state = 'committing';
    return true;
  }

  /** The deadline: true when the decision can no longer commit (91 may be answered), false when it is committing. */
  close(): boolean {
    if (this.joined) return this.joined.close();
    if (this.state === 'committing') return false;
    this.state = 'closed';
    return true;
  }
}
