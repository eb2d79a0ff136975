import type pg from 'pg';
import { statementName } from './named-statements.js';

/** The most statements one connection keeps planned; past it, the one used longest ago is let go. */
const KEPT_PER_CONNECTION = 64;
/** The prefix of the names of kept statements, which no other statement of the hub's uses (queryKept's are `hub_named_`). */
const PREFIX = 'hub_kept_';

/** What each connection has kept, by name, the one used longest ago first. */
const keptOn = new WeakMap<pg.ClientBase, Set<string>>();

/**
 * Statements of a batch (one simple query of several statements: one round trip) that run with the
 * plan PostgreSQL made the first time their text reached the connection. A text that repeats
 * round after round (its values written in and checked: a hub's nodes, the line's limit) is sent
 * the first time as `PREPARE` ahead of the batch, then only as `EXECUTE`. Planning was most of
 * such a statement's cost: the placement round's line was planned in 1.3 ms and ran in 0.5
 * (pg_stat_statements over the pipelines benchmark's fan-out, docs/pipelines.md). A kept plan
 * is made again by PostgreSQL when what it rests on changes (a table's statistics, its indexes).
 * The simple query cannot carry the extended protocol's named statements (runNamed), and a batch
 * saves a round trip per statement.
 */
export class KeptPlans {
  private readonly kept: Set<string>;
  private readonly prepares: string[] = [];

  constructor(private readonly client: pg.ClientBase) {
    let kept = keptOn.get(client);
    if (!kept) keptOn.set(client, (kept = new Set()));
    this.kept = kept;
  }

  /**
   * `text` as the batch runs it: `EXECUTE` of the statement kept for it, prepared first if the
   * connection lacks it; with `args`, the values of its parameters (`$1`…, each typed by a cast in
   * `text`), as SQL the caller has checked or quoted.
   */
  execute(text: string, args: readonly string[] = []): string {
    const name = statementName(PREFIX, text);
    const execute = args.length > 0 ? `EXECUTE ${name}(${args.join(', ')})` : `EXECUTE ${name}`;
    if (this.kept.has(name)) {
      // Used last, let go last: never the one a batch runs, for a batch of fewer texts than the bound.
      this.kept.delete(name);
      this.kept.add(name);
      return execute;
    }
    if (this.kept.size >= KEPT_PER_CONNECTION) {
      const oldest = this.kept.values().next().value as string;
      this.kept.delete(oldest);
      this.prepares.push(`DEALLOCATE ${oldest}`);
    }
    this.kept.add(name);
    this.prepares.push(`PREPARE ${name} AS ${text}`);
    return execute;
  }

  /** What must go ahead of the batch (its results come first, and are not the batch's), once. */
  prelude(): string[] {
    return this.prepares.splice(0);
  }

  /**
   * After a batch failed, what the connection keeps as the server says: a `PREPARE` ahead of the
   * failure stays (it is not undone with a transaction), one after it was never made.
   */
  async resync(): Promise<void> {
    this.prepares.length = 0;
    this.kept.clear();
    // Unread (the connection lost), nothing is taken as kept: a PREPARE of a name that exists fails
    // its batch, and the next resync reads them.
    const { rows } = await this.client.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE starts_with(name, $1)', [PREFIX]);
    for (const row of rows) this.kept.add(row.name);
  }
}
