import { applyPatch, type Operation } from 'rfc6902';
import { InvalidInputError, type FieldError } from '../errors/hub-errors.js';
import { isPlainObject } from '../validation/validate-input.js';
import { SERVER_OWNED_FIELDS } from '../validation/server-owned-fields.js';

export const PATCH_OPERATIONS = ['add', 'remove', 'replace'] as const;
export type PatchOperationName = (typeof PATCH_OPERATIONS)[number];

export interface JsonPatchOperation {
  readonly op: PatchOperationName;
  readonly path: string;
  readonly value?: unknown;
}

export type JsonPatch = readonly JsonPatchOperation[];

const MAX_OPERATIONS = 1000;

/** A JSON Pointer below the root: `/` segments, `~` only as `~0` or `~1`. Linear, so no regex backtracking. */
function isFieldPointer(path: unknown): boolean {
  return typeof path === 'string' && path.startsWith('/') && !/~(?![01])/.test(path);
}

function checkOperation(item: unknown, index: number): FieldError[] {
  const at = (field: string, message: string) => ({ path: `/${index}${field}`, message });
  if (!isPlainObject(item)) return [at('', 'must be an object with op and path')];
  const errors: FieldError[] = [];
  if (!PATCH_OPERATIONS.includes(item.op as PatchOperationName)) {
    errors.push(at('/op', `op must be one of ${PATCH_OPERATIONS.join(', ')}`));
  }
  if (!isFieldPointer(item.path)) {
    errors.push(at('/path', 'path must be a JSON Pointer to a field, such as /description'));
  }
  if ((item.op === 'add' || item.op === 'replace') && !('value' in item)) {
    errors.push(at('/value', `value is required for ${item.op}`));
  }
  const unknown = Object.keys(item).filter((key) => !['op', 'path', 'value'].includes(key));
  errors.push(...unknown.map((key) => at(`/${key}`, `property ${key} should not exist`)));
  return errors;
}

/** Checks that a request body is an RFC 6902 document using the operations the API allows. */
export function parseJsonPatch(body: unknown): JsonPatch {
  if (!Array.isArray(body)) throw InvalidInputError.at('', 'A patch body must be a JSON array of operations (RFC 6902)');
  if (body.length > MAX_OPERATIONS) throw InvalidInputError.at('', `A patch may hold at most ${MAX_OPERATIONS} operations`);
  const errors = body.flatMap(checkOperation);
  if (errors.length > 0) throw new InvalidInputError(`Invalid patch: ${errors.map((e) => e.message).join('; ')}`, errors);
  return body as JsonPatch;
}

function targetsServerOwnedField(operation: JsonPatchOperation): boolean {
  const field = operation.path.split('/')[1];
  return (SERVER_OWNED_FIELDS as readonly string[]).includes(field);
}

/**
 * Applies a patch to a copy of a resource's public shape. Operations on server-owned fields are
 * ignored; the patch is all or nothing. The result still has to be validated like a replace.
 */
export function applyJsonPatch(document: object, patch: JsonPatch): Record<string, unknown> {
  // Through JSON, so that the copy is exactly what a client reads (undefined fields are absent).
  const copy = JSON.parse(JSON.stringify(document)) as Record<string, unknown>;
  const operations = patch.filter((operation) => !targetsServerOwnedField(operation));
  const failures = operations.flatMap((operation) => {
    let error: Error | null;
    try {
      [error] = applyPatch(copy, [operation as Operation]);
    } catch (thrown) {
      // rfc6902 throws, rather than returns, for some impossible targets (a field inside a string).
      error = thrown as Error;
    }
    return error ? [{ path: `/${patch.indexOf(operation)}`, message: `${operation.op} ${operation.path}: ${error.message}` }] : [];
  });
  if (failures.length > 0) throw new InvalidInputError(`The patch cannot be applied: ${failures.map((f) => f.message).join('; ')}`, failures);
  return copy;
}
