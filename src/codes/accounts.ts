/**
 * Accounts of the double-entry journal (src/ledger/journal.ts writes its entries). Named here, with
 * the code tables, because readers below the ledger name them too (the card network's reads in
 * src/trades/network-reads.ts). A card has two: what the holder can spend (`available`)
 * and what authorizations hold (`held`); its ledger balance is their sum. The program's accounts
 * are the other side of every card movement, and each merchant's funding account is where its
 * top-ups come from.
 */
export const Account = {
  available: (cardId: string) => `card:${cardId}:available`,
  held: (cardId: string) => `card:${cardId}:held`,
  /**
   * What forced posts took beyond the available balance (decisions §12.7): sums to minus the card's
   * debt (`cards.debt`); money coming to the card pays it first (book()).
   */
  debt: (cardId: string) => `card:${cardId}:debt`,
  /** What a merchant can put on its cards, in each currency; the operator credits it (docs/funding.md). */
  merchantFunding: (merchantId: string) => `merchant:${merchantId}:funding`,
  /** The other side of every operator credit: what operators funded, negated. */
  capital: 'program:capital',
  /** Where top-ups came from before merchants had funding accounts (0009); counted as capital. */
  funding: 'program:funding',
  settlement: 'program:settlement',
  /**
   * The card network's side of disputes, per currency (decisions §13.3): a won dispute's credit is
   * drawn from it, so it sums to minus what the network paid back on won disputes (`ledger check`).
   */
  disputes: 'network:disputes',
  /**
   * Advices held for an operator (decisions §12.13): a clearing above the forced posts' ceilings is
   * owed to the network (`program:settlement`) but on no card yet, so it is drawn from here; it sums,
   * per currency, to minus the open exceptions' total (`ledger check`), back to zero as each is
   * posted to its card or returned to the network.
   */
  suspense: 'network:suspense',
  fees: 'program:fees',
} as const;
