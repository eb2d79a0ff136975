import { describe, expect, it } from '@jest/globals';
import { PreconditionFailedError } from '../errors/hub-errors.js';
import { conditionMatches, entityTag, parseEntityTags, requireIfMatch, type EntityTagCondition } from './entity-tag.js';

describe('entityTag', () => {
  it('is the version as a strong, quoted tag', () => {
    expect(entityTag(1)).toBe('"1"');
    expect(entityTag(42)).toBe('"42"');
  });
});

describe('parseEntityTags', () => {
  it('returns undefined when there is no header', () => {
    expect(parseEntityTags(undefined)).toBeUndefined();
  });

  it('parses * as any', () => {
    expect(parseEntityTags('*')).toEqual({ any: true, tags: [] });
  });

  it('parses a quoted tag', () => {
    expect(parseEntityTags('"3"')).toEqual({ any: false, tags: ['"3"'] });
  });

  it('accepts an unquoted tag, quoting it', () => {
    expect(parseEntityTags('3')).toEqual({ any: false, tags: ['"3"'] });
  });

  it('drops weak tags', () => {
    expect(parseEntityTags('W/"1"')).toEqual({ any: false, tags: [] });
  });

  it('keeps the strong tags of a list that mixes weak and strong ones', () => {
    expect(parseEntityTags('W/"1", "2"')).toEqual({ any: false, tags: ['"2"'] });
  });

  it('parses a list, trimming the spaces around each item', () => {
    expect(parseEntityTags(' "1" ,"2",   3  ')).toEqual({ any: false, tags: ['"1"', '"2"', '"3"'] });
  });

  it('ignores empty items of a list', () => {
    expect(parseEntityTags('"1",, ,"2",')).toEqual({ any: false, tags: ['"1"', '"2"'] });
  });

  it('parses an empty header as a condition with no tags', () => {
    expect(parseEntityTags('')).toEqual({ any: false, tags: [] });
    expect(parseEntityTags('   ')).toEqual({ any: false, tags: [] });
  });

  it('notes * when it appears in a list', () => {
    expect(parseEntityTags('"1", *')).toEqual({ any: true, tags: ['"1"'] });
  });
});

describe('conditionMatches', () => {
  it('matches any version for *', () => {
    expect(conditionMatches({ any: true, tags: [] }, 7)).toBe(true);
  });

  it('matches the version named by one of the tags', () => {
    expect(conditionMatches({ any: false, tags: ['"1"', '"7"'] }, 7)).toBe(true);
  });

  it('does not match a version no tag names', () => {
    expect(conditionMatches({ any: false, tags: ['"1"', '"17"'] }, 7)).toBe(false);
  });

  it('does not match when there are no tags', () => {
    expect(conditionMatches({ any: false, tags: [] }, 1)).toBe(false);
  });
});

describe('requireIfMatch', () => {
  const condition = (header: string): EntityTagCondition => {
    const parsed = parseEntityTags(header);
    if (!parsed) throw new Error('expected a condition');
    return parsed;
  };

  it('passes when there is no condition', () => {
    expect(() => requireIfMatch(undefined, 5)).not.toThrow();
  });

  it('passes when the tag matches the version', () => {
    expect(() => requireIfMatch(condition('"5"'), 5)).not.toThrow();
  });

  it('passes when an unquoted tag matches the version', () => {
    expect(() => requireIfMatch(condition('5'), 5)).not.toThrow();
  });

  it('passes when one tag of a list matches', () => {
    expect(() => requireIfMatch(condition('"4", "5"'), 5)).not.toThrow();
  });

  it('passes for *', () => {
    expect(() => requireIfMatch(condition('*'), 5)).not.toThrow();
  });

  it('throws PreconditionFailedError (412) naming the current version on a mismatch', () => {
    let thrown: unknown;
    try {
      requireIfMatch(condition('"4"'), 5);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PreconditionFailedError);
    expect((thrown as PreconditionFailedError).status).toBe(412);
    expect((thrown as PreconditionFailedError).message).toContain('"5"');
  });

  it('throws when the only tag that names the version is weak', () => {
    expect(() => requireIfMatch(condition('W/"5"'), 5)).toThrow(PreconditionFailedError);
  });

  it('throws for an empty If-Match header', () => {
    expect(() => requireIfMatch(condition(''), 5)).toThrow(PreconditionFailedError);
  });
});
