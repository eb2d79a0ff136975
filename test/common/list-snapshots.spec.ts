import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { CASES, listsWithoutSnapshot } from '../../bench/list-cases.js';
import { defineListQuery, LIST_QUERIES, type ListQuerySpec } from '../../src/common/query/list-query.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the committed list-query snapshots (npm run queries:check)', () => {
  const added: ListQuerySpec[] = [];

  beforeAll(async () => {
    await import('../../src/app.module.js'); // every area, so that every list is defined
  });

  afterEach(() => {
    for (const spec of added.splice(0)) LIST_QUERIES.delete(spec);
  });

  it('has a snapshot for every list of every area', () => {
    expect(LIST_QUERIES.size).toBeGreaterThanOrEqual(18);
    expect(listsWithoutSnapshot(LIST_QUERIES)).toEqual([]);
  });

  it('fails for a list that has none, naming it', () => {
    const spec = defineListQuery({
      filters: { name: { column: 'run.name', type: 'string', operators: ['EQ'] } },
      sorts: { created: 'run.created' },
      defaultSort: '-created',
      tieBreaker: 'run.id',
      small: 'a list added without its snapshot',
    });
    added.push(spec);
    expect(listsWithoutSnapshot(LIST_QUERIES)).toEqual(['the list over run.id (sorts created; filters name)']);
    expect(listsWithoutSnapshot(LIST_QUERIES, [...CASES, { spec }])).toEqual([]);
  });

  it('finds each case in its committed file, which says how the page is read', () => {
    for (const listCase of CASES) {
      const path = join(ROOT, 'src', listCase.area, 'queries', `${listCase.file}.sql`);
      expect(existsSync(path)).toBe(true);
      expect(readFileSync(path, 'utf8')).toContain(`-- ${listCase.path}`);
    }
    const jobs = readFileSync(join(ROOT, 'src', 'cluster', 'queries', 'jobs.sql'), 'utf8');
    expect(jobs).toContain('-- page read by keys');
    expect(jobs).toContain('-- page read sorted');
  });

  it('says, for every list request committed, how its page is read', () => {
    const files = new Set(CASES.map((listCase) => join(ROOT, 'src', listCase.area, 'queries', `${listCase.file}.sql`)));
    const unsaid: string[] = [];
    for (const file of files) {
      // A case is its title line, its statements and their plans, up to the next title.
      for (const block of readFileSync(file, 'utf8')
        .split(/\n(?=-- (?:GET|DELETE) )/)
        .slice(1)) {
        const title = block.slice(0, block.indexOf('\n'));
        if (title.startsWith('-- GET') && !/\n-- page read (sorted|by keys): \S/.test(block)) unsaid.push(title);
      }
    }
    expect(unsaid).toEqual([]);
    expect(readFileSync(join(ROOT, 'src', 'namespaces', 'queries', 'namespaces.sql'), 'utf8')).toContain('-- page read sorted: a small list');
  });
});
