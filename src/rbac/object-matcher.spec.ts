import { describe, expect, it } from '@jest/globals';
import { RE2JS } from 're2js';
import { ANY_SUBJECT, compileObjectMatcher, globToRegex, subjectTypeOf, type ObjectMatcherKind } from './object-matcher.js';

describe('subjectTypeOf', () => {
  it.each([
    ['/Pipelines', 'Pipelines'],
    ['/Pipelines/1234', 'Pipelines'],
    ['/Pipelines/1234/logs', 'Pipelines'],
    ['/Users/', 'Users'],
    ['/', ''],
  ])('%s is of type %j', (path, type) => {
    expect(subjectTypeOf(path)).toBe(type);
  });
});

describe('compileObjectMatcher', () => {
  describe('simple', () => {
    it.each([
      ['/Pipelines', '/Pipelines', true],
      ['/Pipelines', '/Pipelines/1', false],
      ['/Pipelines', '/pipelines', false],
      ['/Pipelines', '/PipelinesX', false],
      ['/Pipelines/1', '/Pipelines/1', true],
      ['/Pipelines/1', '/Pipelines/12', false],
      ['/Pipelines/1', '/Pipelines/1/logs', false],
      ['/Pipelines/*', '/Pipelines/1', true],
      ['/Pipelines/*', '/Pipelines/1/logs', true],
      ['/Pipelines/*', '/Pipelines/1/logs/stdout', true],
      ['/Pipelines/*', '/Pipelines/.hidden', true],
      ['/Pipelines/*', '/Pipelines', false],
      ['/Pipelines/*', '/Pipelines/', false],
      ['/Pipelines/*', '/PipelinesX/1', false],
      ['/Pipelines/*', '/Users/1', false],
      ['/Pipelines/1/*', '/Pipelines/1/logs', true],
      ['/Pipelines/1/*', '/Pipelines/12/logs', false],
      ['/Pipelines/1/*', '/Pipelines/1', false],
      // Only a trailing `/*` is special: anywhere else a star is an ordinary character.
      ['/Pipelines/*/logs', '/Pipelines/*/logs', true],
      ['/Pipelines/*/logs', '/Pipelines/1/logs', false],
      ['/Pipe*', '/Pipelines', false],
      ['/Pipe*', '/Pipe*', true],
      ['/Pipe.*', '/Pipelines', false],
      ['/*', '/Pipelines', true],
      ['/*', '/Users/1/claims', true],
      ['/*', '/', false],
    ])('%s against %s: %s', (object, path, expected) => {
      expect(compileObjectMatcher('simple', object).matches(path)).toBe(expected);
    });

    it.each([
      ['/Pipelines', 'Pipelines'],
      ['/Pipelines/1234', 'Pipelines'],
      ['/Pipelines/*', 'Pipelines'],
      ['/Pipelines/1/*', 'Pipelines'],
      ['/*', ANY_SUBJECT],
    ])('%s is indexed under %s', (object, subjectType) => {
      expect(compileObjectMatcher('simple', object).subjectType).toBe(subjectType);
    });
  });

  describe('glob', () => {
    it.each([
      ['/Pipelines', '/Pipelines', true],
      ['/Pipelines', '/Pipelines/1', false],
      ['/Pipelines/*', '/Pipelines/1', true],
      ['/Pipelines/*', '/Pipelines/.hidden', true],
      ['/Pipelines/*', '/Pipelines/1/logs', false],
      ['/Pipelines/*', '/Pipelines', false],
      ['/Pipelines/*', '/PipelinesX/1', false],
      ['/Pipelines/*/logs', '/Pipelines/1/logs', true],
      ['/Pipelines/*/logs', '/Pipelines/1/2/logs', false],
      ['/Pipelines/**', '/Pipelines/1', true],
      ['/Pipelines/**', '/Pipelines/1/logs', true],
      ['/Pipelines/**', '/Pipelines/.runs/1/.logs', true],
      ['/Pipelines/**', '/PipelinesX/1', false],
      ['/Pipelines/**', '/Users/1', false],
      ['/Pipelines/**/logs', '/Pipelines/1/logs', true],
      ['/Pipelines/**/logs', '/Pipelines/1/nodes/a/logs', true],
      ['/Pipelines/**/logs', '/Pipelines/1/results', false],
      ['/Pipe*', '/Pipelines', true],
      ['/Pipe*', '/Pipelines/1', false],
      ['/Pipe*/**', '/Pipelines/1/logs', true],
      ['/*/1', '/Pipelines/1', true],
      ['/*/1', '/Users/1', true],
      ['/*/1', '/Users/2', false],
      ['/*/1', '/.config/1', true],
      ['/**', '/Pipelines', true],
      ['/**', '/Pipelines/1/logs', true],
      ['/**', '/.hidden/x', true],
      ['/Pipelines/?', '/Pipelines/1', true],
      ['/Pipelines/?', '/Pipelines/12', false],
      ['/Pipelines/{1,2}', '/Pipelines/2', true],
      ['/Pipelines/{1,2}', '/Pipelines/3', false],
    ])('%s against %s: %s', (object, path, expected) => {
      expect(compileObjectMatcher('glob', object).matches(path)).toBe(expected);
    });

    it.each([
      ['/Pipelines', 'Pipelines'],
      ['/Pipelines/*', 'Pipelines'],
      ['/Pipelines/**', 'Pipelines'],
      ['/Pipelines/**/logs', 'Pipelines'],
      ['/Pipelines/{1,2}', 'Pipelines'],
      ['/Pipe*', ANY_SUBJECT],
      ['/Pipe*/**', ANY_SUBJECT],
      ['/*/1', ANY_SUBJECT],
      ['/**', ANY_SUBJECT],
      ['/{Pipelines,Users}/*', ANY_SUBJECT],
      ['/Pipeline?/1', ANY_SUBJECT],
      ['/[PU]*/1', ANY_SUBJECT],
    ])('%s is indexed under %s', (object, subjectType) => {
      expect(compileObjectMatcher('glob', object).subjectType).toBe(subjectType);
    });
  });

  describe('glob on RE2', () => {
    it.each([
      ['/Pipelines/[0-9]', '/Pipelines/7', true],
      ['/Pipelines/[!0-9]', '/Pipelines/a', true],
      ['/Pipelines/[!0-9]', '/Pipelines/7', false],
      ['/Pipelines/[!0-9]', '/Pipelines//', false],
      ['/Pipelines/[a', '/Pipelines/[a', true],
      ['/Pipelines/a.b', '/Pipelines/a.b', true],
      ['/Pipelines/a.b', '/Pipelines/axb', false],
      ['/Pipelines/\\*', '/Pipelines/*', true],
      ['/Pipelines/\\*', '/Pipelines/1', false],
      ['/Pipelines/{1,{2,3}}', '/Pipelines/3', true],
      ['/Pipelines/(1|2)', '/Pipelines/2', true],
      ['/Pipelines/**', '/Pipelines', false],
      ['/Pipelines/**/logs', '/Pipelines/logs', true],
      ['**/logs', '/Pipelines/1/logs', true],
      ['/Pipelines/1$', '/Pipelines/1$', true],
      ['/Pipelines/é*', '/Pipelines/été', true],
    ])('%s against %s: %s', (object, path, expected) => {
      expect(compileObjectMatcher('glob', object).matches(path)).toBe(expected);
    });

    it.each(['/ClusterJobs/+(+(a))b', '/ClusterJobs/*(a)', '/ClusterJobs/?(a)', '/ClusterJobs/@(a|b)', '/ClusterJobs/!(a)'])(
      'refuses the extglob %s, naming the pattern',
      (object) => {
        expect(() => compileObjectMatcher('glob', object)).toThrow(new RegExp(`extglob.*'${object.replace(/[()+*?|]/g, '\\$&')}'`));
      },
    );

    it.each(['/Pipelines', '/Pipelines/**', '/**', '/Pipe.lines/**'])('compares %s as a string exactly as RE2 would match it', (object) => {
      const re2 = RE2JS.compile(`^(?:${globToRegex(object)})$`);
      for (const path of [
        '/',
        '/Pipelines',
        '/Pipelines/',
        '/Pipelines/1',
        '/Pipelines/1/logs',
        '/PipelinesX',
        '/Pipe.lines/1',
        '/Pipexlines/1',
        '/Users/1',
        '',
      ])
        expect([object, path, compileObjectMatcher('glob', object).matches(path)]).toEqual([object, path, re2.matches(path)]);
    });

    it.each(['/Pipelines/{1,2', '/Pipelines/(1'])('refuses the unbalanced glob %s', (object) => {
      expect(() => compileObjectMatcher('glob', object)).toThrow(SyntaxError);
    });

    it.each([
      ['/ClusterJobs/*a*a*a*a*a*a*a*a*b', `/ClusterJobs/${'a'.repeat(1000)}`, false],
      ['/**/a/**/a/**/a/**/b', `/${'a/'.repeat(500)}c`, false],
      ['/ClusterJobs/{a,a}{a,a}{a,a}{a,a}*b', `/ClusterJobs/${'a'.repeat(1000)}`, false],
    ])('matches %s, which picomatch compiled to a backtracking expression, in linear time', (object, path, expected) => {
      expect(compileObjectMatcher('glob', object).matches(path)).toBe(expected);
    });
  });

  describe('regex', () => {
    it.each([
      ['/Pipelines', '/Pipelines', true],
      ['Pipe', '/Pipelines', false],
      ['/Pipe', '/Pipelines', false],
      ['/Pipe.*', '/Pipelines', true],
      ['/Pipe.*', '/Pipelines/1/logs', true],
      ['/Pipe.*', '/Users/Pipe', false],
      ['.*/logs', '/Pipelines/1/logs', true],
      ['.*/logs', '/Pipelines/1/logs/stdout', false],
      ['/Pipelines/[0-9]+', '/Pipelines/123', true],
      ['/Pipelines/[0-9]+', '/Pipelines/123/logs', false],
      ['/Pipelines/[0-9]+', '/Pipelines/abc', false],
      // An alternation stays anchored on both sides.
      ['/Users|/Groups', '/Users', true],
      ['/Users|/Groups', '/Groups', true],
      ['/Users|/Groups', '/Users/1', false],
      ['/Users|/Groups', '/X/Groups', false],
      ['/(Users|Groups)/.+', '/Groups/1', true],
      ['/(Users|Groups)/.+', '/Pipelines/1', false],
    ])('%s against %s: %s', (object, path, expected) => {
      expect(compileObjectMatcher('regex', object).matches(path)).toBe(expected);
    });

    it.each(['/Pipelines', '/Pipelines/.*', '.*', '/(Users|Groups)/.+'])('%s is indexed under all', (object) => {
      expect(compileObjectMatcher('regex', object).subjectType).toBe(ANY_SUBJECT);
    });

    it.each(['/Pipelines/(', '/Pipelines/[', '*', '+/Pipelines', '/Pipelines/**', '/(?<x/1'])('refuses the invalid regex %s', (object) => {
      expect(() => compileObjectMatcher('regex', object)).toThrow(SyntaxError);
    });

    it.each([
      ['/Roles/(a|a)*', `/Roles/${'a'.repeat(5000)}!`, false],
      ['/Roles/(a|a)*', `/Roles/${'a'.repeat(5000)}`, true],
      ['.*.*.*.*.*.*.*.*x', `/${'a'.repeat(5000)}`, false],
      ['/Pipelines/(a+)+', `/Pipelines/${'a'.repeat(5000)}b`, false],
    ])('matches %s, a pattern a backtracking engine takes exponential time on, in linear time', (object, path, expected) => {
      expect(compileObjectMatcher('regex', object).matches(path)).toBe(expected);
    });

    it.each(['(?<=a)b', '/(a)\\1'])('refuses %s, which RE2 does not support', (object) => {
      expect(() => compileObjectMatcher('regex', object)).toThrow(SyntaxError);
    });
  });

  // A decision only tries the permissions indexed under its object's first segment or `all`, so
  // a matcher that matches a path must be indexed under that path's first segment or `all`.
  it.each<[ObjectMatcherKind, string, string]>([
    ['simple', '/Pipelines', '/Pipelines'],
    ['simple', '/Pipelines/*', '/Pipelines/1/logs'],
    ['simple', '/*', '/Users/1'],
    ['glob', '/Pipelines/**', '/Pipelines/1/logs'],
    ['glob', '/*/1', '/Users/1'],
    ['glob', '/**', '/Groups/1'],
    ['glob', '/{Pipelines,Users}/*', '/Users/1'],
    ['glob', '/Pipelines|/Users', '/Pipelines'],
    ['glob', '/Pipelines|/Users', '/Users'],
    ['glob', '/Pipe\\lines/*', '/Pipelines/1'],
    ['regex', '/Users/.*', '/Users/1'],
    ['regex', '/(Users|Groups)/.+', '/Groups/1'],
  ])('%s %s is indexed so that it applies to %s, which it matches', (kind, object, path) => {
    const matcher = compileObjectMatcher(kind, object);
    expect(matcher.matches(path)).toBe(true);
    expect([ANY_SUBJECT, subjectTypeOf(path)]).toContain(matcher.subjectType);
  });
});
