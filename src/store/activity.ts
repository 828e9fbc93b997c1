/**
 * What a store has asked of its database since it opened: the counts behind "commits per run" and "round
 * trips per run" (bench/README.md), which tests assert so that a change cannot add commits unnoticed.
 */
export interface StoreActivity {
  /**
   * Commits that made something durable: transactions (a SQLite group commit of several writes counts
   * once) and single statements that changed rows. One that only read, or whose writes all found nothing
   * to change (a claim with no run waiting, a refused fenced write), is not counted.
   */
  commits: number;
  /**
   * Statements sent to the database: on SQLite each statement run; on PostgreSQL each round trip (BEGIN,
   * and COMMIT with the transaction's notifications, included).
   */
  statements: number;
}
