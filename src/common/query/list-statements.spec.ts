import { afterEach, describe, expect, it } from '@jest/globals';
import { DataSource, type ObjectLiteral, type SelectQueryBuilder } from 'typeorm';
import { builderShape, checkListStatements, listStatement } from './list-statements.js';

/** Never connected: the driver only turns query builders into SQL. */
const dataSource = new DataSource({ type: 'postgres' });

/**
 * A list's builder as a repository hands it over, its filter and narrowing in place. Texts are kept
 * for the whole process: each test selects under a name of its own (`as`) for shapes of its own.
 */
function things(name: string, namespaces?: string[], as = 'id'): SelectQueryBuilder<ObjectLiteral> {
  const qb = dataSource.createQueryBuilder().select('t.id', as).from('things', 't').where('t.name ILIKE :filter_0', { filter_0: name });
  return namespaces ? qb.andWhere('t.namespace_id = ANY(:scopeOnly)', { scopeOnly: namespaces }) : qb;
}

/** Finishes a builder as the list machinery would, counting how often it is asked to. */
function finisher() {
  const finish = (qb: SelectQueryBuilder<ObjectLiteral>) => () => {
    finish.calls += 1;
    return qb.orderBy('t.created', 'DESC').addOrderBy('t.id', 'DESC').limit(50).offset(0);
  };
  finish.calls = 0;
  return finish;
}

describe('listStatement', () => {
  afterEach(() => checkListStatements(false));

  it('makes a shape’s text once and binds each request’s own values to it', () => {
    const finish = finisher();
    const first = things('%data%');
    const [sql, values] = listStatement(first, builderShape(first), finish(first));
    const second = things('%web%');
    const [again, otherValues] = listStatement(second, builderShape(second), finish(second));
    expect(finish.calls).toBe(1);
    expect(again).toBe(sql);
    expect(sql).toBe('SELECT t.id AS "id" FROM "things" "t" WHERE t.name ILIKE $1 ORDER BY t.created DESC, t.id DESC LIMIT 50 OFFSET 0');
    expect(values).toEqual(['%data%']);
    expect(otherValues).toEqual(['%web%']);
  });

  it('never gives a caller another’s narrowing: a narrowed builder has a shape of its own', () => {
    const finish = finisher();
    const everyone = things('%a%', undefined, 'narrowing');
    listStatement(everyone, builderShape(everyone), finish(everyone));
    const narrowed = things('%a%', ['ns-1', 'ns-2'], 'narrowing');
    expect(builderShape(narrowed)).not.toBe(builderShape(everyone));
    const [sql, values] = listStatement(narrowed, builderShape(narrowed), finish(narrowed));
    expect(finish.calls).toBe(2);
    expect(sql).toContain('t.namespace_id = ANY($2)');
    expect(values).toEqual(['%a%', ['ns-1', 'ns-2']]);
  });

  it('binds a spread array by its length, which is part of the shape', () => {
    const spread = (ids: string[]) => dataSource.createQueryBuilder().select('t.id').from('things', 't').where('t.id IN (:...ids)', { ids });
    expect(builderShape(spread(['a']))).not.toBe(builderShape(spread(['a', 'b'])));
  });

  it('gives no shape to a builder it cannot describe: a join, or a parameter that is SQL of its own', () => {
    const joined = things('%a%').leftJoin('owners', 'o', 'o.id = t.owner_id');
    expect(builderShape(joined)).toBeUndefined();
    const raw = things('%a%');
    raw.expressionMap.parameters.since = () => 'now()';
    expect(builderShape(raw)).toBeUndefined();
    const finish = finisher();
    listStatement(joined, undefined, finish(joined));
    listStatement(joined, undefined, finish(joined));
    expect(finish.calls).toBe(2);
  });

  it('keeps no text when finishing the statement adds parameters its builder does not have', () => {
    const finish = (qb: SelectQueryBuilder<ObjectLiteral>) => () => {
      finish.calls += 1;
      return qb.andWhere('t.kind = :kind', { kind: `kind-${finish.calls}` });
    };
    finish.calls = 0;
    const qb = () => things('%a%', ['ns-9'], 'unkept');
    const [, first] = listStatement(qb(), builderShape(qb()), finish(qb()));
    const [, second] = listStatement(qb(), builderShape(qb()), finish(qb()));
    expect(finish.calls).toBe(2);
    expect([first, second]).toEqual([
      ['%a%', ['ns-9'], 'kind-1'],
      ['%a%', ['ns-9'], 'kind-2'],
    ]);
  });

  it('checks, when asked, that a kept text is what the builder makes, and fails loudly when not', () => {
    checkListStatements(true);
    const finish = finisher();
    const qb = things('%check%', ['ns-3'], 'checked');
    const shape = builderShape(qb);
    listStatement(qb, shape, finish(qb));
    const same = things('%other%', ['ns-4'], 'checked');
    expect(() => listStatement(same, shape, finish(same))).not.toThrow();
    expect(finish.calls).toBe(2);
    // A shape that missed something: another statement under the same shape.
    const other = things('%check%', ['ns-3'], 'checked').andWhere('t.retired IS NULL');
    expect(() => listStatement(other, shape, finish(other))).toThrow(/not what its builder makes/);
  });
});
