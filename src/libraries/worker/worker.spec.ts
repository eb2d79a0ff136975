import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import type { HubConfig } from '../../common/config/hub-config.js';
import { ShippedPrograms } from '../../cluster/shipped-programs.js';
import { createDatabaseFromTemplate, databaseUrl, dropDatabase, SERVER_URL_VARIABLE, TEMPLATE_VARIABLE } from '../../../test/support/test-database.js';
import { type StartedWorker, startLibraryWorker } from '../worker-process.js';
import { openLockedDuckDB } from './duckdb.js';

/**
 * The library worker as the hub runs it: placed by ShippedPrograms, started as a child process
 * against generated fixtures of every engine (CSV and JSON written here, Parquet and DuckDB files
 * made with DuckDB, a committed SAS7BDAT file, a PostgreSQL schema), and asked over HTTP. Filter
 * row counts are checked against the same predicate evaluated in JavaScript on the same rows.
 */
const FIXTURES = fileURLToPath(new URL('../../../test/fixtures/libraries/', import.meta.url));
const SAS_FIXTURE = join(FIXTURES, 'sas7bdat', 'class.sas7bdat');

let root: string;
const workers: StartedWorker[] = [];
let csv: StartedWorker;
let parquet: StartedWorker;
let json: StartedWorker;
let duck: StartedWorker;
let sas: StartedWorker;
let postgres: StartedWorker;
let pgDatabase: string | undefined;
let pgUrl: string;

/** The rows of events.parquet, as the SQL below makes them. */
interface Event {
  id: number;
  user: string;
  amount: number;
  day: string;
  at: string;
  flag: boolean;
  note: string | null;
  big: number;
}
const EVENTS: Event[] = Array.from({ length: 1000 }, (_, i) => ({
  id: i,
  user: `user${i % 10}`,
  amount: (i % 100) / 4,
  day: new Date(Date.UTC(2024, 0, 1) + (i % 366) * 86_400_000).toISOString().slice(0, 10),
  at: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString().slice(0, 19),
  flag: i % 3 === 0,
  note: i % 7 === 0 ? null : `note ${i}`,
  big: i * 1_000_000_000,
}));
const EVENTS_SQL = `SELECT i::INTEGER AS id, 'user' || (i % 10) AS "user", (i % 100) / 4.0 AS amount, DATE '2024-01-01' + (i % 366)::INTEGER AS day,
  TIMESTAMP '2024-01-01 00:00:00' + to_minutes(i) AS "at", i % 3 = 0 AS flag, CASE WHEN i % 7 = 0 THEN NULL ELSE 'note ' || i END AS note,
  i * 1000000000 AS big FROM range(1000) t(i)`;
const BIG_ROWS = 3_000_000;

async function body<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'hub-library-worker-'));
  chmodSync(root, 0o755);
  const dir = (name: string) => {
    const path = join(root, name);
    mkdirSync(path, { recursive: true, mode: 0o755 });
    return path;
  };
  // CSV: a header line; types by every value; other files, a subdirectory and a link out of the library are not members.
  const csvDir = dir('csv');
  writeFileSync(
    join(csvDir, 'people.csv'),
    'id,name,score,born,seen,active,mixed,slashed\n' +
      '1,Ann,9.5,2000-01-01,2020-01-01 10:00:00,true,1,01/02/2020\n' +
      '2,Bob,7,2001-02-03,2020-01-02 11:30:00,false,x,03/04/2021\n' +
      '3,"O\'Brien, Pat",,1999-12-31,,true,2,\n' +
      '4,,12.25,,2020-01-04 00:00:00,,,05/06/2022\n',
  );
  writeFileSync(join(csvDir, 'notes.txt'), 'not a member\n');
  writeFileSync(join(csvDir, 'iso.csv'), 'when\n2020-01-01T10:00:00Z\n2020-06-01T00:00:00+02:00\n');
  mkdirSync(join(csvDir, 'sub'));
  writeFileSync(join(csvDir, 'sub', 'deeper.csv'), 'a\n1\n');
  const outside = dir('outside');
  writeFileSync(join(outside, 'secret.csv'), 'secret\nhunter2\n');
  symlinkSync(join(outside, 'secret.csv'), join(csvDir, 'leak.csv'));
  symlinkSync('/etc/passwd', join(csvDir, 'passwd.csv'));

  // Parquet and DuckDB files, made with DuckDB itself.
  const parquetDir = dir('parquet');
  const duckDir = dir('duckdb');
  const maker = await (await DuckDBInstance.create(':memory:')).connect();
  await maker.run(`COPY (${EVENTS_SQL}) TO '${join(parquetDir, 'events.parquet')}' (FORMAT parquet)`);
  await maker.run(
    `COPY (SELECT i AS id, md5(i::VARCHAR) AS h, i % 1000 AS k FROM range(${BIG_ROWS}) t(i)) TO '${join(parquetDir, 'big.parquet')}' (FORMAT parquet)`,
  );
  maker.closeSync();
  const duckFile = join(duckDir, 'shop.duckdb');
  // Closed explicitly below: an instance left to the garbage collector keeps its write lock, and the worker could not open the file.
  const shopInstance = await DuckDBInstance.create(duckFile);
  const shop = await shopInstance.connect();
  await shop.run(
    `CREATE TABLE orders (id INTEGER, item VARCHAR, placed DATE, "at" TIMESTAMP, paid BOOLEAN, price DECIMAL(10,2), huge HUGEINT, tags VARCHAR[])`,
  );
  await shop.run(`INSERT INTO orders VALUES
    (1, 'pen', '2024-03-01', '2024-03-01 09:00:00', true, 1.50, 12345678901234, ['a','b']),
    (2, 'ink', '2024-03-02', NULL, false, 20.00, NULL, NULL),
    (3, NULL, NULL, '2024-03-03 12:00:00', NULL, 3.25, -1, [])`);
  await shop.run(`CREATE VIEW paid_orders AS SELECT id, item FROM orders WHERE paid`);
  await shop.run(`CREATE SCHEMA archive; CREATE TABLE archive.old (x INTEGER); INSERT INTO archive.old VALUES (7)`);
  shop.closeSync();
  shopInstance.closeSync();

  // JSON: an array, and one object a line.
  const jsonDir = dir('json');
  writeFileSync(
    join(jsonDir, 'cities.json'),
    JSON.stringify([
      { city: 'Oslo', pop: 709000, capital: true },
      { city: 'Bergen', pop: 285900, capital: false },
      { city: 'Tromsø', pop: null, capital: false },
    ]),
  );
  writeFileSync(join(jsonDir, 'lines.jsonl'), '{"n": 1, "s": "a"}\n{"n": 2, "s": "b"}\n');
  writeFileSync(join(jsonDir, 'more.ndjson'), '{"d": "2024-01-05"}\n{"d": "2024-02-06"}\n');

  // SAS7BDAT: the committed fixture, and a format catalog that is a CATALOG member.
  const sasDir = dir('sas7bdat');
  copyFileSync(SAS_FIXTURE, join(sasDir, 'class.sas7bdat'));
  writeFileSync(join(sasDir, 'formats.sas7bcat'), 'catalog');

  // PostgreSQL: a schema of a fresh database on the test server.
  const server = process.env[SERVER_URL_VARIABLE] as string;
  pgDatabase = await createDatabaseFromTemplate(server, process.env[TEMPLATE_VARIABLE] as string);
  pgUrl = databaseUrl(server, pgDatabase);
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  await client.query(`CREATE SCHEMA sales;
    CREATE TABLE sales.customers (id integer, name text, since date, seen timestamptz, vip boolean, balance numeric(10,2), extra jsonb);
    INSERT INTO sales.customers VALUES (1, 'Acme', '2020-01-01', '2024-01-01 10:00:00+00', true, 100.50, '{"a":1}'),
      (2, 'Initech', '2021-06-15', NULL, false, -5, NULL), (3, NULL, NULL, NULL, NULL, NULL, NULL);
    CREATE VIEW sales.vips AS SELECT id, name FROM sales.customers WHERE vip;`);
  await client.end();

  const program = await new ShippedPrograms({ sharedDir: dir('shared') } as HubConfig).libraryWorker();
  const start = async (engine: string, path: string, options: Record<string, unknown> = {}) => {
    const worker = await startLibraryWorker(program, { HUB_LIBRARY_ENGINE: engine, HUB_LIBRARY_PATH: path, HUB_LIBRARY_OPTIONS: JSON.stringify(options) });
    workers.push(worker);
    return worker;
  };
  // All settled before any failure is thrown, so that afterAll stops every worker that did start.
  const started = await Promise.allSettled([
    start('csv', csvDir),
    start('parquet', parquetDir),
    start('json', jsonDir),
    start('duckdb', duckFile),
    start('sas7bdat', sasDir),
    start('postgres', '', { authDomainId: 'ignored-here' }),
  ]);
  const failed = started.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  [csv, parquet, json, duck, sas, postgres] = started.map((result) => (result as PromiseFulfilledResult<StartedWorker>).value);
}, 120_000);

afterAll(async () => {
  for (const worker of workers) worker.stop();
  if (pgDatabase) await dropDatabase(process.env[SERVER_URL_VARIABLE] as string, pgDatabase);
  rmSync(root, { recursive: true, force: true });
});

describe('the secret', () => {
  it.each([
    ['no secret', null],
    ['a wrong secret', 'guess'],
    ['an empty secret', ''],
  ])('refuses every request with %s', async (_, secret) => {
    for (const [path, payload] of [
      ['/health', undefined],
      ['/members', undefined],
      ['/datasets/events', undefined],
      ['/records', { name: 'events' }],
      ['/distinct-values', { name: 'events' }],
      ['/cancel/x', {}],
    ] as const) {
      const reply = await parquet.request(path, payload, secret);
      expect([path, reply.status]).toEqual([path, 403]);
      expect(await body(reply)).toEqual({ msg: 'Forbidden' });
    }
  });

  it('is 400 for a malformed path escape, not a failure', async () => {
    expect((await parquet.request('/datasets/%E0%A4%A')).status).toBe(400);
  });

  it('answers health with it', async () => {
    const health = await body(await parquet.request('/health'));
    expect(health).toEqual({ state: 'ready', startTime: expect.any(String), requestsServed: expect.any(Number) });
  });
});

describe('members', () => {
  it('lists the files with the engine’s extensions, not recursively, no link out of the library', async () => {
    expect(await body(await csv.request('/members'))).toEqual([
      { name: 'iso', type: 'DATA' },
      { name: 'people', type: 'DATA' },
    ]);
    expect(await body(await parquet.request('/members'))).toEqual([
      { name: 'big', type: 'DATA' },
      { name: 'events', type: 'DATA' },
    ]);
    expect(await body(await json.request('/members'))).toEqual([
      { name: 'cities', type: 'DATA' },
      { name: 'lines', type: 'DATA' },
      { name: 'more', type: 'DATA' },
    ]);
    expect(await body(await sas.request('/members'))).toEqual([
      { name: 'class', type: 'DATA' },
      { name: 'formats', type: 'CATALOG' },
    ]);
  });

  it('lists a DuckDB database’s tables as DATA and views as VIEW, other schemas qualified', async () => {
    expect(await body(await duck.request('/members'))).toEqual([
      { name: 'archive.old', type: 'DATA' },
      { name: 'orders', type: 'DATA' },
      { name: 'paid_orders', type: 'VIEW' },
    ]);
  });

  it('is 404 for a dataset that is not a member', async () => {
    for (const [worker, name] of [
      [csv, 'notes'],
      [csv, 'deeper'],
      [csv, 'leak'],
      [csv, 'passwd'],
      [sas, 'formats'],
      [parquet, '..%2Fcsv%2Fpeople'],
      [csv, '%2E%2E%2Foutside%2Fsecret'],
    ] as const) {
      const reply = await worker.request(`/datasets/${name}`);
      expect([name, reply.status]).toEqual([name, 404]);
      expect((await body(reply)).msg).toEqual(expect.any(String));
      expect((await worker.request('/records', { name: decodeURIComponent(name) })).status).toBe(404);
    }
  });
});

describe('metadata', () => {
  it('types CSV columns by every value as api-map §5 says, with exact nobs and the file’s times', async () => {
    const metadata = await body(await csv.request('/datasets/people'));
    expect(metadata).toMatchObject({
      name: 'people',
      engine: 'csv',
      nobs: 4,
      type: 'DATA',
      label: '',
      lastModified: expect.any(String),
      created: expect.any(String),
    });
    expect(metadata.fields).toEqual([
      { name: 'id', type: 'number', label: '', length: 8, format: '' },
      { name: 'name', type: 'string', label: '', length: 12, format: '' },
      { name: 'score', type: 'number', label: '', length: 8, format: '' },
      { name: 'born', type: 'date', label: '', length: 8, format: '' },
      { name: 'seen', type: 'datetime', label: '', length: 8, format: '' },
      { name: 'active', type: 'boolean', label: '', length: 1, format: '' },
      { name: 'mixed', type: 'string', label: '', length: 1, format: '' },
      { name: 'slashed', type: 'string', label: '', length: 10, format: '' },
    ]);
    for (const key of [
      'compressionType',
      'charEncoding',
      'isPointobs',
      'dataRepresentation',
      'recordLength',
      'engineProperties',
      'sort',
      'sortOptions',
      'indexes',
    ]) {
      expect(metadata).toHaveProperty(key);
    }
    expect((await body<{ fields: unknown[] }>(await csv.request('/datasets/iso'))).fields).toEqual([
      { name: 'when', type: 'datetime', label: '', length: 8, format: '' },
    ]);
  });

  it('types Parquet, JSON and DuckDB columns by their DuckDB types', async () => {
    const types = async (worker: StartedWorker, name: string) =>
      (await body<{ fields: { name: string; type: string }[] }>(await worker.request(`/datasets/${encodeURIComponent(name)}`))).fields.map(
        (f) => `${f.name}:${f.type}`,
      );
    expect(await types(parquet, 'events')).toEqual([
      'id:number',
      'user:string',
      'amount:number',
      'day:date',
      'at:datetime',
      'flag:boolean',
      'note:string',
      'big:number',
    ]);
    expect(await types(json, 'cities')).toEqual(['city:string', 'pop:number', 'capital:boolean']);
    expect(await types(json, 'lines')).toEqual(['n:number', 's:string']);
    expect(await types(json, 'more')).toEqual(['d:date']);
    expect(await types(duck, 'orders')).toEqual([
      'id:number',
      'item:string',
      'placed:date',
      'at:datetime',
      'paid:boolean',
      'price:number',
      'huge:number',
      'tags:string',
    ]);
    expect(await types(duck, 'archive.old')).toEqual(['x:number']);
    expect((await body(await duck.request('/datasets/paid_orders'))).type).toBe('VIEW');
    expect((await body(await parquet.request('/datasets/events'))).nobs).toBe(1000);
    expect((await body(await parquet.request('/datasets/big'))).nobs).toBe(BIG_ROWS);
  });

  it('reads SAS7BDAT labels, formats and lengths from the file', async () => {
    const metadata = await body(await sas.request('/datasets/class'));
    expect(metadata).toMatchObject({ name: 'class', engine: 'sas7bdat', nobs: 6, type: 'DATA' });
    expect(metadata.fields).toEqual([
      { name: 'id', type: 'number', label: '', length: 8, format: '' },
      { name: 'name', type: 'string', label: 'Student name', length: 8, format: '' },
      { name: 'score', type: 'number', label: '', length: 8, format: 'COMMA8.2' },
      { name: 'born', type: 'date', label: expect.any(String), length: 8, format: 'DATE9.' },
    ]);
  });
});

describe('caching', () => {
  it('reads a member again when its file changes, and sees members come and go', async () => {
    const file = join(root, 'csv', 'fresh.csv');
    writeFileSync(file, 'n\n1\n');
    expect(await body(await csv.request('/members'))).toContainEqual({ name: 'fresh', type: 'DATA' });
    expect((await body(await csv.request('/datasets/fresh'))).nobs).toBe(1);
    writeFileSync(file, 'n,s\n1,a\n2,b\n3,c\n');
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    const metadata = await body<{ nobs: number; fields: { name: string }[] }>(await csv.request('/datasets/fresh'));
    expect([metadata.nobs, metadata.fields.map((f) => f.name)]).toEqual([3, ['n', 's']]);
    expect((await body(await csv.request('/records', { name: 'fresh', filter: "s = 'c'" }))).values).toEqual([[3, 'c']]);
    rmSync(file);
    expect(await body(await csv.request('/members'))).not.toContainEqual({ name: 'fresh', type: 'DATA' });
    expect((await csv.request('/datasets/fresh')).status).toBe(404);
  });

  it('replaces a SAS7BDAT member’s table when its file changes', async () => {
    const file = join(root, 'sas7bdat', 'class.sas7bdat');
    expect((await body(await sas.request('/datasets/class'))).nobs).toBe(6);
    copyFileSync(SAS_FIXTURE, file);
    utimesSync(file, new Date(), new Date(Date.now() + 5000));
    expect((await body(await sas.request('/datasets/class'))).nobs).toBe(6);
    expect((await body<{ values: unknown[] }>(await sas.request('/records', { name: 'class' }))).values).toHaveLength(6);
  });
});

describe('records', () => {
  const events = (request: Record<string, unknown>) => parquet.request('/records', { name: 'events', ...request });

  it('answers {fields, values} with JSON numbers, ISO dates and date-times, booleans and null', async () => {
    const reply = await body<{ fields: { name: string }[]; values: unknown[][] }>(await events({ limit: 2, offset: 7 }));
    expect(Object.keys(reply)).toEqual(['fields', 'values']);
    expect(reply.fields.map((f) => f.name)).toEqual(['id', 'user', 'amount', 'day', 'at', 'flag', 'note', 'big']);
    expect(reply.values).toEqual([
      [7, 'user7', 1.75, '2024-01-08', '2024-01-01T00:07:00', false, null, 7_000_000_000],
      [8, 'user8', 2, '2024-01-09', '2024-01-01T00:08:00', false, 'note 8', 8_000_000_000],
    ]);
  });

  it('applies filter, then orderby (several keys, - descending), then offset and limit', async () => {
    expect((await body<{ values: unknown[][] }>(await events({ limit: 5, offset: 10, orderby: ['-id'], fields: ['id'] }))).values).toEqual([
      [989],
      [988],
      [987],
      [986],
      [985],
    ]);
    expect((await body<{ values: unknown[][] }>(await events({ limit: 3, orderby: ['user', '-id'], fields: ['user', 'id'] }))).values).toEqual([
      ['user0', 990],
      ['user0', 980],
      ['user0', 970],
    ]);
    const filtered = await body<{ values: unknown[][] }>(
      await events({ filter: "user = 'user3' and amount > 20", orderby: ['-amount', 'id'], limit: 2, offset: 1, fields: ['id', 'amount'] }),
    );
    const expected = EVENTS.filter((e) => e.user === 'user3' && e.amount > 20)
      .sort((a, b) => b.amount - a.amount || a.id - b.id)
      .slice(1, 3)
      .map((e) => [e.id, e.amount]);
    expect(filtered.values).toEqual(expected);
  });

  it('defaults limit to 1000 and selects and orders fields as asked, whatever their case', async () => {
    expect((await body<{ values: unknown[] }>(await events({}))).values).toHaveLength(1000);
    const reply = await body<{ fields: { name: string }[]; values: unknown[][] }>(await events({ fields: ['NOTE', 'id'], limit: 1, offset: 1 }));
    expect(reply.fields.map((f) => f.name)).toEqual(['note', 'id']);
    expect(reply.values).toEqual([['note 1', 1]]);
  });

  it('formats fields as asked (all: every field); a missing value stays null', async () => {
    const reply = await body<{ values: unknown[][] }>(await sas.request('/records', { name: 'class', formatted: ['all'], orderby: ['id'] }));
    expect(reply.values).toEqual([
      ['1', 'Alice', '1,234.50', '01JAN2000'],
      ['2', 'Bob', '88.00', '02JAN2000'],
      ['3', "O'Hara", '-2.25', '01MAR2000'],
      ['4', null, null, null],
      ['5', 'Zed', '99.75', '01JAN2020'],
      ['6', 'alice', '1,234.50', '01JAN2000'],
    ]);
    const raw = await body<{ values: unknown[][] }>(
      await sas.request('/records', { name: 'class', formatted: ['score'], fields: ['score', 'born'], limit: 1 }),
    );
    expect(raw.values).toEqual([['1,234.50', '2000-01-01']]);
  });

  it.each([
    [{ limit: 100_001 }, 'limit'],
    [{ limit: -1 }, 'limit'],
    [{ limit: 1.5 }, 'limit'],
    [{ offset: -3 }, 'offset'],
    [{ offset: '2' }, 'offset'],
    [{ fields: ['id', 'nope'] }, 'nope'],
    [{ orderby: ['-nope'] }, 'nope'],
    [{ formatted: ['nope'] }, 'nope'],
    [{ fields: 'id' }, 'fields'],
    [{ filter: 'nope = 1' }, 'nope'],
    [{ filter: 42 }, 'filter'],
  ])('is 400 for %j', async (request, named) => {
    const reply = await events(request);
    expect(reply.status).toBe(400);
    expect((await body(reply)).msg).toContain(named);
  });

  it('is 400 for a body that is not a JSON object, or names no dataset', async () => {
    expect((await parquet.request('/records', [1, 2])).status).toBe(400);
    expect((await parquet.request('/records', {})).status).toBe(400);
    const broken = await fetch(`${parquet.url}/records`, { method: 'POST', headers: { 'x-hub-service-secret': 'worker-secret' }, body: '{nope' });
    expect(broken.status).toBe(400);
  });

  it('reads every engine', async () => {
    expect((await body(await csv.request('/records', { name: 'people', orderby: ['id'] }))).values).toEqual([
      [1, 'Ann', 9.5, '2000-01-01', '2020-01-01T10:00:00', true, '1', '01/02/2020'],
      [2, 'Bob', 7, '2001-02-03', '2020-01-02T11:30:00', false, 'x', '03/04/2021'],
      [3, "O'Brien, Pat", null, '1999-12-31', null, true, '2', null],
      [4, null, 12.25, null, '2020-01-04T00:00:00', null, null, '05/06/2022'],
    ]);
    expect((await body(await csv.request('/records', { name: 'iso' }))).values).toEqual([['2020-01-01T10:00:00Z'], ['2020-05-31T22:00:00Z']]);
    expect((await body(await json.request('/records', { name: 'cities', filter: 'capital = false' }))).values).toEqual([
      ['Bergen', 285900, false],
      ['Tromsø', null, false],
    ]);
    expect((await body(await json.request('/records', { name: 'more', filter: "d > '01FEB2024'd" }))).values).toEqual([['2024-02-06']]);
    expect((await body(await duck.request('/records', { name: 'orders', orderby: ['id'] }))).values).toEqual([
      [1, 'pen', '2024-03-01', '2024-03-01T09:00:00', true, 1.5, 12345678901234, '[a, b]'],
      [2, 'ink', '2024-03-02', null, false, 20, null, null],
      [3, null, null, '2024-03-03T12:00:00', null, 3.25, -1, '[]'],
    ]);
    expect((await body(await duck.request('/records', { name: 'paid_orders' }))).values).toEqual([[1, 'pen']]);
    expect((await body(await duck.request('/records', { name: 'archive.old' }))).values).toEqual([[7]]);
    expect((await body(await duck.request('/records', { name: 'orders', filter: "tags = '[a, b]'", fields: ['id'] }))).values).toEqual([[1]]);
    expect(
      (await body(await sas.request('/records', { name: 'class', filter: "born = '01JAN2000'd and name ^= 'alice'", fields: ['id', 'name', 'score', 'born'] })))
        .values,
    ).toEqual([[1, 'Alice', 1234.5, '2000-01-01']]);
  });
});

describe('filters on records, each clause by its exact row count', () => {
  const count = async (filter: string) => {
    const reply = await parquet.request('/records', { name: 'events', filter, fields: ['id'], limit: 100_000 });
    expect([filter, reply.status]).toEqual([filter, 200]);
    return (await body<{ values: unknown[] }>(reply)).values.length;
  };
  it.each<[string, (e: Event) => boolean]>([
    ['id < 10', (e) => e.id < 10],
    ['id lt 10 or id GE 995', (e) => e.id < 10 || e.id >= 995],
    ['id le 10 and id gt 5', (e) => e.id <= 10 && e.id > 5],
    ['amount = 12.5', (e) => e.amount === 12.5],
    ['amount eq 0', (e) => e.amount === 0],
    ['amount ^= 0', (e) => e.amount !== 0],
    ['amount ~= 0', (e) => e.amount !== 0],
    ['amount ne 0', (e) => e.amount !== 0],
    ['amount > -1', () => true],
    ["user = 'user3'", (e) => e.user === 'user3'],
    ['user = "user3"', (e) => e.user === 'user3'],
    ["user = 'USER3'", () => false],
    ['flag', (e) => e.flag],
    ['not flag', (e) => !e.flag],
    ['flag = true', (e) => e.flag],
    ['note is missing', (e) => e.note === null],
    ['note is null', (e) => e.note === null],
    ['note is not missing', (e) => e.note !== null],
    ['amount between 10 and 20', (e) => e.amount >= 10 && e.amount <= 20],
    ['amount not between 10 and 20', (e) => !(e.amount >= 10 && e.amount <= 20)],
    ["user in ('user1', 'user2') and not flag", (e) => (e.user === 'user1' || e.user === 'user2') && !e.flag],
    ["user not in ('user1', 'user2')", (e) => e.user !== 'user1' && e.user !== 'user2'],
    ['id in (1, 2, 3, 999, 5000)', (e) => [1, 2, 3, 999].includes(e.id)],
    ["note contains '99'", (e) => e.note !== null && e.note.includes('99')],
    ["note ? '99'", (e) => e.note !== null && e.note.includes('99')],
    ["note not contains '9'", (e) => e.note === null || !e.note.includes('9')],
    ["note like 'note 1%'", (e) => e.note !== null && e.note.startsWith('note 1')],
    ["note like 'note _'", (e) => e.note !== null && e.note.length === 6],
    ["note like '%'", (e) => e.note !== null],
    ["note contains '%'", () => false],
    ["day = '01JAN2024'd", (e) => e.day === '2024-01-01'],
    ["day >= '30dec2024'D", (e) => e.day >= '2024-12-30'],
    ["at >= '01JAN2024:16:00:00'dt", (e) => e.at >= '2024-01-01T16:00:00'],
    ["at < '01JAN2024:00:10'dt", (e) => e.at < '2024-01-01T00:10:00'],
    ['big > 5e11', (e) => e.big > 5e11],
    ["user = 'user1' or user = 'user2' and flag", (e) => e.user === 'user1' || (e.user === 'user2' && e.flag)],
    ["(user = 'user1' or user = 'user2') and flag", (e) => (e.user === 'user1' || e.user === 'user2') && e.flag],
    ["not user = 'user1' and id < 100", (e) => e.user !== 'user1' && e.id < 100],
    ["NOT (user = 'user1' AND id < 100)", (e) => !(e.user === 'user1' && e.id < 100)],
    ['Id < 3 Or ID > 997', (e) => e.id < 3 || e.id > 997],
  ])('%s', async (filter, predicate) => {
    expect(await count(filter)).toBe(EVENTS.filter(predicate).length);
  });
});

describe('hostile filters: a 400 or honest rows, and the data intact', () => {
  const records = (filter: string) => parquet.request('/records', { name: 'events', filter, fields: ['id'], limit: 100_000 });
  it.each([
    ['id = 1; drop table events', 7],
    ["user = '' or 1=1 --", 18],
    ['id = 1 /* */', 8],
    ["id in (select id from read_csv('/etc/passwd'))", 8],
    ["read_text('/etc/passwd') is missing", 10],
    ['id = 1 union select 1', 8],
  ])('%s is a 400 with the position', async (filter, position) => {
    const reply = await records(filter);
    expect(reply.status).toBe(400);
    const answer = await body(reply);
    expect(answer.position).toBe(position);
    expect(answer.msg).toContain(`at column ${position}`);
  });

  it('keeps quotes and SQL inside a literal as data', async () => {
    expect((await body<{ values: unknown[] }>(await records("user = 'user1''; DROP TABLE x; --'"))).values).toEqual([]);
    expect((await body<{ values: unknown[] }>(await records("user = 'ü\u0000\u202e' or user = 'user1'"))).values).toHaveLength(100);
    expect((await body<{ values: unknown[] }>(await records(`user = '${"'".repeat(2000)}'`))).values).toEqual([]);
    expect((await body(await parquet.request('/datasets/events'))).nobs).toBe(1000);
  });

  it('refuses very long and very deep filters with a 400', async () => {
    expect((await records(`${'id = 1 or '.repeat(1100)}id = 2`)).status).toBe(400);
    expect((await records(`${'('.repeat(3000)}id = 1${')'.repeat(3000)}`)).status).toBe(400);
    expect((await records(`${'not '.repeat(2400)}flag`)).status).toBe(400);
    expect((await parquet.request('/health')).status).toBe(200);
  });
});

describe('validate-filter', () => {
  it('answers ok, or not ok with the parser’s message', async () => {
    expect(await body(await parquet.request('/validate-filter', { name: 'events', filter: "user = 'a' and id > 3" }))).toEqual({ ok: true });
    const bad = await body<{ ok: boolean; msg: string }>(await parquet.request('/validate-filter', { name: 'events', filter: 'id = ' }));
    expect(bad.ok).toBe(false);
    expect(bad.msg).toContain('at column 6');
    expect(await body(await parquet.request('/validate-filter', { name: 'events', filter: 'nope = 1' }))).toEqual({
      ok: false,
      msg: expect.stringContaining('"nope"'),
    });
    expect((await parquet.request('/validate-filter', { name: 'nope', filter: 'id = 1' })).status).toBe(404);
  });
});

describe('distinct values', () => {
  it('lists each field’s values ascending, missing once as null, at most maxValues', async () => {
    const values = await body<Record<string, unknown[]>>(await parquet.request('/distinct-values', { name: 'events', maxValues: 3 }));
    expect(Object.keys(values)).toEqual(['id', 'user', 'amount', 'day', 'at', 'flag', 'note', 'big']);
    expect(values.id).toEqual([0, 1, 2]);
    expect(values.user).toEqual(['user0', 'user1', 'user2']);
    expect(values.flag).toEqual([false, true]);
    expect(values.day).toEqual(['2024-01-01', '2024-01-02', '2024-01-03']);
    expect(values.note).toEqual(['note 1', 'note 10', 'note 100']);
    const all = await body<Record<string, unknown[]>>(await parquet.request('/distinct-values', { name: 'events', maxValues: 5000 }));
    expect(all.note).toHaveLength(new Set(EVENTS.map((e) => e.note)).size);
    expect(all.note.filter((v) => v === null)).toHaveLength(1);
    expect(all.note.at(-1)).toBeNull();
    const csvValues = await body<Record<string, unknown[]>>(await csv.request('/distinct-values', { name: 'people' }));
    expect(csvValues.name).toEqual(['Ann', 'Bob', "O'Brien, Pat", null]);
    expect(csvValues.born).toEqual(['1999-12-31', '2000-01-01', '2001-02-03', null]);
  });

  it('is 400 for a maxValues that is not a whole number, 404 for a non-member', async () => {
    expect((await parquet.request('/distinct-values', { name: 'events', maxValues: 2.5 })).status).toBe(400);
    expect((await parquet.request('/distinct-values', { name: 'events', timeoutMs: 0 })).status).toBe(400);
    expect((await parquet.request('/distinct-values', { name: 'nope' })).status).toBe(404);
  });

  it('interrupts a query past its timeout with a 504, and serves on', async () => {
    const reply = await parquet.request('/distinct-values', { name: 'big', maxValues: 100_000, timeoutMs: 5 });
    expect(reply.status).toBe(504);
    expect((await body(reply)).msg).toContain('5 ms');
    expect((await parquet.request('/records', { name: 'events', limit: 1, fields: ['id'] })).status).toBe(200);
  });
});

describe('cancellation', () => {
  const slow = { name: 'big', filter: "h contains 'zz'", orderby: ['-h', 'id'], limit: 10 };

  it('POST /cancel/<requestId> interrupts the query of that request (409), and the worker serves on', async () => {
    const pending = parquet.request('/records', slow, undefined, { headers: { 'x-hub-request-id': 'op-1' } });
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(await body(await parquet.request('/cancel/op-1', {}))).toEqual({ cancelled: true });
    const reply = await pending;
    expect(reply.status).toBe(409);
    expect(await body(await parquet.request('/cancel/op-1', {}))).toEqual({ cancelled: false });
    expect((await parquet.request('/records', { name: 'events', limit: 1, fields: ['id'] })).status).toBe(200);
  });

  it('a request closed by the hub ends its query', async () => {
    const controller = new AbortController();
    const pending = parquet.request('/records', slow, undefined, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 40));
    controller.abort();
    await expect(pending).rejects.toThrow();
    // The connection it held is free again: as many queries as the worker has connections still run.
    const replies = await Promise.all(Array.from({ length: 6 }, () => parquet.request('/records', { name: 'events', limit: 1, fields: ['id'] })));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
  });
});

describe('postgres', () => {
  it('answers 503 until the hub sends the connection, refuses a bad one without echoing it', async () => {
    expect((await postgres.request('/members')).status).toBe(503);
    expect((await postgres.request('/records', { name: 'customers' })).status).toBe(503);
    const bad = await postgres.request('/connection', { connectionString: pgUrl.replace('postgres@', 'nobody:pa55word-xyz@') });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await body(bad))).not.toContain('pa55word-xyz');
    expect((await postgres.request('/connection', {})).status).toBe(400);
    expect((await csv.request('/connection', { connectionString: pgUrl })).status).toBe(400);
    // A credential's data as the hub sends it: strings, `username`, and the schema.
    const url = new URL(pgUrl);
    const fields = {
      host: url.hostname,
      port: url.port || '5432',
      username: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      dbname: url.pathname.slice(1),
      schema: 'sales',
    };
    expect(await body(await postgres.request('/connection', fields))).toEqual({ ok: true });
  });

  it('serves the schema’s tables and views, typed, filtered in DuckDB', async () => {
    expect(await body(await postgres.request('/members'))).toEqual([
      { name: 'customers', type: 'DATA' },
      { name: 'vips', type: 'VIEW' },
    ]);
    const metadata = await body<{ nobs: number; fields: { name: string; type: string }[] }>(await postgres.request('/datasets/customers'));
    expect(metadata.nobs).toBe(3);
    expect(metadata.fields.map((f) => `${f.name}:${f.type}`)).toEqual([
      'id:number',
      'name:string',
      'since:date',
      'seen:datetime',
      'vip:boolean',
      'balance:number',
      'extra:string',
    ]);
    expect((await body(await postgres.request('/records', { name: 'customers', orderby: ['id'] }))).values).toEqual([
      [1, 'Acme', '2020-01-01', '2024-01-01T10:00:00Z', true, 100.5, '{"a": 1}'],
      [2, 'Initech', '2021-06-15', null, false, -5, null],
      [3, null, null, null, null, null, null],
    ]);
    expect(
      (await body(await postgres.request('/records', { name: 'customers', filter: "since < '01JAN2021'd or name is missing", fields: ['id'] }))).values,
    ).toEqual([[1], [3]]);
    expect((await body(await postgres.request('/records', { name: 'vips' }))).values).toEqual([[1, 'Acme']]);
    expect((await postgres.request('/datasets/nope')).status).toBe(404);
  });
});

describe('stopping', () => {
  it('ends promptly on SIGTERM though the hub keeps a connection alive', async () => {
    const program = await new ShippedPrograms({ sharedDir: join(root, 'shared') } as HubConfig).libraryWorker();
    const worker = await startLibraryWorker(program, { HUB_LIBRARY_ENGINE: 'csv', HUB_LIBRARY_PATH: join(root, 'csv') });
    workers.push(worker);
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) =>
      httpGet(`${worker.url}/health`, { agent, headers: { 'x-hub-service-secret': 'worker-secret' } }, (response) => {
        response.resume();
        response.on('end', resolve);
      }).on('error', reject),
    );
    const began = Date.now();
    const exited = new Promise<number | null>((resolve) => worker.child.on('exit', (code) => resolve(code)));
    worker.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - began).toBeLessThan(2000);
    agent.destroy();
  });
});

describe('DuckDB lock-down', () => {
  it('reads the library’s directory only, and cannot be unlocked', async () => {
    const library = join(root, 'csv');
    const connection = await (await openLockedDuckDB('csv', library)).connect();
    const run = async (sql: string) => (await connection.runAndReadAll(sql)).getRowsJS();
    expect(await run(`SELECT count(*)::INTEGER FROM read_csv('${join(library, 'people.csv')}')`)).toEqual([[4]]);
    for (const sql of [
      `SELECT * FROM read_text('/etc/passwd')`,
      `SELECT * FROM read_csv('/etc/passwd')`,
      `SELECT * FROM read_csv('${join(root, 'outside', 'secret.csv')}')`,
      `SELECT * FROM read_csv('${library}/../outside/secret.csv')`,
      `SELECT * FROM read_csv('${library}-x/a.csv')`,
      `SELECT * FROM glob('/etc/*')`,
      `ATTACH '${join(root, 'duckdb', 'shop.duckdb')}'`,
      `SET enable_external_access = true`,
      `SET allowed_directories = ['/']`,
      `SET lock_configuration = false`,
      `INSTALL httpfs`,
      `LOAD httpfs`,
    ]) {
      await expect(run(sql)).rejects.toThrow();
    }
    connection.closeSync();
  });

  it('opens a DuckDB library read-only with no file access at all', async () => {
    const instance = await openLockedDuckDB('duckdb', join(root, 'duckdb', 'shop.duckdb'));
    const connection = await instance.connect();
    expect((await connection.runAndReadAll('SELECT count(*)::INTEGER FROM orders')).getRowsJS()).toEqual([[3]]);
    await expect(connection.run('DELETE FROM orders')).rejects.toThrow();
    await expect(connection.run(`SELECT * FROM read_csv('${join(root, 'csv', 'people.csv')}')`)).rejects.toThrow();
    connection.closeSync();
    instance.closeSync();
  });
});
