// The worker's DuckDB, locked down before any request reaches it.
import { sep } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Engine } from './library.js';
import { literal } from './sql.js';

/**
 * An in-memory DuckDB (the library's database file itself, read-only, for `duckdb`) that installs
 * and loads no extension on demand, may read files only below `path` (a directory library) or none
 * at all (a database file, already open; PostgreSQL, read through pg), has external access off
 * (Parquet footers kept between queries), and then has its configuration locked, so that no
 * statement can widen any of it again.
 */
export async function openLockedDuckDB(engine: Engine, path: string): Promise<DuckDBInstance> {
  const instance = await DuckDBInstance.create(engine === 'duckdb' ? path : ':memory:', {
    ...(engine === 'duckdb' ? { access_mode: 'READ_ONLY' } : {}),
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
  });
  const setup = await instance.connect();
  try {
    // The trailing separator: `/data/lib` must not let `/data/lib-other` in.
    const allowed = engine === 'duckdb' || engine === 'postgres' ? [] : [`${path}${sep}`];
    await setup.run(`SET allowed_directories = [${allowed.map(literal).join(', ')}]`);
    // A worker asks the same files again and again: a Parquet file's footer (its row groups and
    // their statistics) is parsed once and kept until the file changes (DuckDB compares the file
    // before it uses what it kept), not parsed again for every page of records.
    if (engine === 'parquet') await setup.run('SET parquet_metadata_cache = true');
    await setup.run('SET enable_external_access = false');
    await setup.run('SET lock_configuration = true');
  } finally {
    setup.closeSync();
  }
  return instance;
}
