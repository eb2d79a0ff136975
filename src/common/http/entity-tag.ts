import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { PreconditionFailedError } from '../errors/hub-errors.js';

/**
 * A single resource and the version of its stored state. The reply interceptor sends the body
 * with the version as a strong `ETag`; `If-Match` is checked against the same version.
 */
export class Versioned<T> {
  constructor(
    readonly body: T,
    readonly version: number,
  ) {}
}

export function entityTag(version: number): string {
  return `"${version}"`;
}

/** A parsed `If-Match` or `If-None-Match` header: `*`, or a list of entity tags. */
export interface EntityTagCondition {
  readonly any: boolean;
  /** Strong tags, quoted; weak ones never match a strong comparison and are dropped. */
  readonly tags: readonly string[];
}

export function parseEntityTags(header: string | undefined): EntityTagCondition | undefined {
  if (header === undefined) return undefined;
  const items = header
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  return {
    any: items.includes('*'),
    // Unquoted tags are accepted too, as curl users often send them so.
    tags: items.filter((item) => item !== '*' && !item.startsWith('W/')).map((item) => (item.startsWith('"') ? item : `"${item}"`)),
  };
}

export function conditionMatches(condition: EntityTagCondition, version: number): boolean {
  return condition.any || condition.tags.includes(entityTag(version));
}

/** Throws 412 when the request's `If-Match` names another version of the resource. */
export function requireIfMatch(condition: EntityTagCondition | undefined, version: number): void {
  if (condition && !conditionMatches(condition, version)) {
    throw new PreconditionFailedError(`If-Match does not match the current version ${entityTag(version)}; read the resource again`);
  }
}

/** The request's `If-Match` condition, or undefined when there is none. */
export const IfMatch = createParamDecorator((_data: unknown, context: ExecutionContext): EntityTagCondition | undefined => {
  const header = context.switchToHttp().getRequest<FastifyRequest>().headers['if-match'];
  return parseEntityTags(Array.isArray(header) ? header.join(',') : header);
});
