import picomatch from 'picomatch';
import { RE2JS } from 're2js';

export const OBJECT_MATCHERS = ['simple', 'glob', 'regex'] as const;
export type ObjectMatcherKind = (typeof OBJECT_MATCHERS)[number];

/** Any subject type: a matcher whose paths may start with different segments. */
export const ANY_SUBJECT = 'all';

/** A permission's `object` compiled once: what paths it covers, and which subject type it is indexed under. */
export interface ObjectMatcher {
  /**
   * The first segment of every path the matcher can match (`Pipelines` for `/Pipelines/*`), so
   * that a decision only tries the permissions of its object's first segment; `all` when the
   * matcher may match paths of different first segments.
   */
  readonly subjectType: string;
  matches(path: string): boolean;
}

/** A first segment of plain characters only: any other may mean something to a glob (`*?[]{}()!+@|\\`). */
const LITERAL_SEGMENT = /^\/([A-Za-z0-9_.~-]+)(?:\/|$)/;

/** The first segment of an object path (`Pipelines` of `/Pipelines/1234`). */
export function subjectTypeOf(path: string): string {
  const end = path.indexOf('/', 1);
  return end < 0 ? path.slice(1) : path.slice(1, end);
}

function literalFirstSegment(pattern: string): string {
  return LITERAL_SEGMENT.exec(pattern)?.[1] ?? ANY_SUBJECT;
}

/** `simple`: exact, or, ending in `/*`, every path below (not the path itself). */
function simpleMatcher(object: string): ObjectMatcher {
  const subjectType = literalFirstSegment(object);
  if (object.endsWith('/*')) {
    const prefix = object.slice(0, -1);
    return { subjectType, matches: (path) => path.length > prefix.length && path.startsWith(prefix) };
  }
  return { subjectType, matches: (path) => path === object };
}

/**
 * Compiles a permission's object matcher. Throws a SyntaxError for a regex that does not
 * compile (RE2 syntax: no backreferences or lookaround); the caller turns it into a 400.
 */
export function compileObjectMatcher(kind: ObjectMatcherKind, object: string): ObjectMatcher {
  switch (kind) {
    case 'simple':
      return simpleMatcher(object);
    case 'glob': {
      // `*` stays within a segment and `**` crosses them; names starting with a dot are ordinary.
      const pattern = picomatch.makeRe(object, { dot: true, strictSlashes: true });
      return { subjectType: literalFirstSegment(object), matches: (path) => pattern.test(path) };
    }
    case 'regex': {
      // RE2's linear-time engine: every request may be matched against the pattern, and a
      // backtracking engine would let one pattern such as (a|a)* stall the hub.
      let pattern: RE2JS;
      try {
        pattern = RE2JS.compile(`^(?:${object})$`);
      } catch (error) {
        throw new SyntaxError((error as Error).message);
      }
      return { subjectType: ANY_SUBJECT, matches: (path) => pattern.matches(path) };
    }
  }
}
