import type { RE2JS } from 're2js';
import { re2js } from '../common/on-first-use.js';

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

/** The literal first segment of a pattern, or `all` when it may match paths of different first segments. */
export function literalFirstSegment(pattern: string): string {
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

/** The longest object path a decision takes (api-map §6); a longer one is refused with a 400 before any matching. */
export const MAX_OBJECT_PATH_LENGTH = 1024;

/** Extglob operators: a glob that uses one is refused rather than given a meaning of its own. */
const EXTGLOB = /[+*?@!]\(/;

/** `[`…`]` at `start` as an RE2 class that never matches `/`; undefined when the bracket is not closed (then it is a literal `[`). */
function globClass(glob: string, start: number): { source: string; end: number } | undefined {
  let index = start + 1;
  const negated = glob[index] === '!' || glob[index] === '^';
  if (negated) index++;
  let body = '';
  for (let first = true; index < glob.length; first = false, index++) {
    const char = glob[index];
    if (char === ']' && !first) return { source: negated ? `[^/${body}]` : `[${body}]`, end: index };
    if (char === '\\' && index + 1 < glob.length) body += escapeRegex(glob[++index]);
    else if (char === '-' && !first && glob[index + 1] !== ']') body += '-';
    else body += escapeRegex(char);
  }
  return undefined;
}

/**
 * A glob as RE2 source (unanchored): `*` any characters but `/` (at least one when it is a whole
 * segment), `?` one such character, `**` as a whole segment any number of segments, `[…]` and
 * `[!…]` a class of characters but `/`, `{a,b}` either, `(a|b)` and a top-level `|` alternation,
 * `\x` the character x; every other character stands for itself. Extglob syntax (`+(` `*(` `?(`
 * `@(` `!(`) is refused: picomatch compiled it to a backtracking regular expression, and a role
 * such as `/ClusterJobs/+(+(a))b` stalled the hub.
 */
export function globToRegex(glob: string): string {
  const extglob = EXTGLOB.exec(glob);
  if (extglob) throw new SyntaxError(`extglob syntax '${extglob[0]}' is not supported in glob '${glob}'; use a regex permission instead`);
  let source = '';
  let braces = 0;
  for (let index = 0; index < glob.length; index++) {
    const char = glob[index];
    switch (char) {
      case '*': {
        let end = index;
        while (glob[end + 1] === '*') end++;
        const segmentStart = index === 0 || glob[index - 1] === '/';
        const segmentEnd = end + 1 === glob.length || glob[end + 1] === '/';
        if (end > index && segmentStart && segmentEnd) {
          // `**` alone in its segment: `/**/` is one slash or any segments between two; a trailing `/**` is anything below.
          if (glob[end + 1] === '/') {
            source += '(?:.*/)?';
            end++;
          } else source += '.*';
        } else source += segmentStart && segmentEnd ? '[^/]+' : '[^/]*';
        index = end;
        break;
      }
      case '?':
        source += '[^/]';
        break;
      case '[': {
        const charClass = globClass(glob, index);
        if (charClass) {
          source += charClass.source;
          index = charClass.end;
        } else source += '\\[';
        break;
      }
      case '{':
        braces++;
        source += '(?:';
        break;
      case ',':
        source += braces > 0 ? '|' : ',';
        break;
      case '}':
        if (braces > 0) {
          braces--;
          source += ')';
        } else source += '\\}';
        break;
      case '(':
        source += '(?:';
        break;
      case ')':
      case '|':
        source += char;
        break;
      case '\\':
        if (index + 1 < glob.length) source += escapeRegex(glob[++index]);
        break;
      default:
        source += escapeRegex(char);
    }
  }
  if (braces > 0) throw new SyntaxError(`unclosed '{' in glob '${glob}'`);
  return source;
}

/** A character as itself in RE2 source, in or out of a class: ASCII punctuation escaped. */
function escapeRegex(char: string): string {
  return /[!-/:-@[-`{-~]/.test(char) ? `\\${char}` : char;
}

/** RE2 source compiled anchored, as RE2's linear-time engine: no pattern can make a decision backtrack. */
function re2Matcher(source: string, subjectType: string): ObjectMatcher {
  let pattern: RE2JS;
  try {
    pattern = re2js().RE2JS.compile(`^(?:${source})$`);
  } catch (error) {
    throw new SyntaxError((error as Error).message);
  }
  return { subjectType, matches: (path) => pattern.matches(path) };
}

/** Characters that mean something in a glob. */
const GLOB_SYNTAX = /[*?[\]{}()|\\!+@,]/;

/**
 * A glob on RE2, as regexes are: every request may be matched against it. The commonest globs,
 * a plain path and one ending in `/**` (HubAdministrator's `/**`), are compared as strings.
 */
function globMatcher(glob: string): ObjectMatcher {
  const subjectType = literalFirstSegment(glob);
  if (!GLOB_SYNTAX.test(glob)) return { subjectType, matches: (path) => path === glob };
  const below = glob.endsWith('/**') ? glob.slice(0, -2) : undefined;
  if (below !== undefined && !GLOB_SYNTAX.test(below)) return { subjectType, matches: (path) => path.startsWith(below) };
  return re2Matcher(globToRegex(glob), subjectType);
}

/**
 * Compiles a permission's object matcher. Throws a SyntaxError for a regex that does not
 * compile (RE2 syntax: no backreferences or lookaround) or a glob that uses extglob syntax; the
 * caller turns it into a 400.
 */
export function compileObjectMatcher(kind: ObjectMatcherKind, object: string): ObjectMatcher {
  switch (kind) {
    case 'simple':
      return simpleMatcher(object);
    case 'glob':
      return globMatcher(object);
    case 'regex':
      return re2Matcher(object, ANY_SUBJECT);
  }
}
