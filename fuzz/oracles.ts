import pg from 'pg';
import type { ReplyContract } from './reply-contract.js';
import type { HubRequest, HubResponse, Operation } from './requests.js';

/** An error reply is at most this big whatever the request (api-map §0). */
export const MAX_PROBLEM_BYTES = 64 * 1024;

/**
 * Tables a refused request may change: its audit record and the login failures it counts (api-map
 * §1, §6); and the lists' kept counts, which the hub writes as jobs run and folds in the background
 * whatever the requests.
 */
const MAY_CHANGE = /^(audit|login)|_counts$|^migrations$/;

/** What an oracle found wrong with one reply. */
export interface Finding {
  readonly oracle: string;
  readonly detail: string;
}

/** The oracles on one reply: never a 5xx, every error a small problem+json, and a 401 for missing or bad credentials first. */
export function checkReply(operation: Operation, response: HubResponse, unauthenticated: boolean): Finding[] {
  const findings: Finding[] = [];
  if (response.status >= 500) findings.push({ oracle: 'never a 5xx', detail: `${response.status}: ${response.body.subarray(0, 300).toString()}` });
  if (unauthenticated && !operation.public && response.status !== 401)
    findings.push({ oracle: 'a request without valid credentials is 401', detail: `answered ${response.status}` });
  if (response.status >= 400) findings.push(...problemFindings(response));
  return findings;
}

/**
 * The reply is one its operation documents (status, media type, body schema, documented headers:
 * fuzz/reply-contract.ts); a request whose path no longer names a route (a mutated path) gets a
 * 4xx problem. The route is found from the path the request was sent to, as the hub's router would.
 */
export function contractFindings(contract: ReplyContract, request: HubRequest, response: HubResponse): Finding[] {
  const { violations } = contract.check({
    method: request.method,
    route: contract.routeOf(request.method, request.path),
    status: response.status,
    headers: response.headers,
    body: response.body,
  });
  return violations.length === 0 ? [] : [{ oracle: 'every reply is one its operation documents', detail: violations.join('; ').slice(0, 1000) }];
}

function problemFindings(response: HubResponse): Finding[] {
  const findings: Finding[] = [];
  if (response.body.length >= MAX_PROBLEM_BYTES)
    findings.push({ oracle: 'an error is smaller than 64 KiB', detail: `${response.body.length} bytes: ${response.body.subarray(0, 200).toString()}…` });
  const contentType = String(response.headers['content-type'] ?? '');
  if (!contentType.startsWith('application/problem+json'))
    findings.push({ oracle: 'an error is problem+json', detail: `content-type ${JSON.stringify(contentType)}` });
  let problem: Record<string, unknown> | undefined;
  try {
    problem = JSON.parse(response.body.toString()) as Record<string, unknown>;
  } catch {
    return [...findings, { oracle: 'an error is problem+json', detail: `not JSON: ${response.body.subarray(0, 200).toString()}` }];
  }
  const missing = ['type', 'title', 'detail', 'msg'].filter((field) => typeof problem?.[field] !== 'string');
  if (problem?.status !== response.status) missing.push('status');
  if (missing.length > 0)
    findings.push({ oracle: 'an error is problem+json', detail: `without a proper ${missing.join(', ')}: ${response.body.subarray(0, 200).toString()}` });
  return findings;
}

/**
 * A fingerprint of what the hub stores, to tell that a refused request changed nothing. For each
 * table: its row count and primary keys, and where the table has a `version` (what the API's
 * writes bump), every row's content. Tables the hub's background work writes (the cluster's) have
 * no version, so a job that runs meanwhile does not look like a change.
 */
export class StateSnapshot {
  private constructor(
    private readonly client: pg.Client,
    private readonly sql: string,
  ) {}

  static async connect(databaseUrl: string): Promise<StateSnapshot> {
    const client = new pg.Client({ connectionString: databaseUrl });
    // Errors of the connection surface in the next query; the hub's database going away is not one to crash on.
    client.on('error', () => undefined);
    await client.connect();
    const { rows } = await client.query<{ table_name: string; keys: string[] | null; versioned: boolean }>(
      `SELECT t.table_name,
              (SELECT array_agg(k.column_name::text ORDER BY k.ordinal_position) FROM information_schema.key_column_usage k
                 JOIN information_schema.table_constraints c ON c.constraint_name = k.constraint_name AND c.table_name = k.table_name
                WHERE k.table_name = t.table_name AND c.constraint_type = 'PRIMARY KEY' AND k.table_schema = 'public') AS keys,
              EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = t.table_name AND column_name = 'version') AS versioned
         FROM information_schema.tables t WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY 1`,
    );
    const parts = rows
      .filter((row) => !MAY_CHANGE.test(row.table_name))
      .map((row) => {
        const table = `"${row.table_name}"`;
        const keys = row.versioned ? 'r::text' : row.keys ? `(${row.keys.map((key) => `r."${key}"`).join(', ')})::text` : 'r::text';
        return `SELECT '${row.table_name}' AS name, count(*) || ':' || coalesce(md5(string_agg(${keys}, ',' ORDER BY ${keys})), '') AS print FROM ${table} r`;
      });
    return new StateSnapshot(client, parts.join(' UNION ALL '));
  }

  async take(): Promise<Map<string, string>> {
    const { rows } = await this.client.query<{ name: string; print: string }>(this.sql);
    return new Map(rows.map((row) => [row.name, row.print]));
  }

  /** The tables whose fingerprints differ. */
  static changed(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): string[] {
    return [...after.keys()].filter((name) => before.get(name) !== after.get(name));
  }

  close(): Promise<void> {
    return this.client.end().catch(() => undefined);
  }
}
