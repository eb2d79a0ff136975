import { QueryFailedError } from 'typeorm';

function isViolation(error: unknown, code: string, constraint: string | undefined): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const driverError = error.driverError as { code?: string; constraint?: string };
  return driverError.code === code && (constraint === undefined || driverError.constraint === constraint);
}

/** True for PostgreSQL's unique_violation, optionally of one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  return isViolation(error, '23505', constraint);
}

/** True for PostgreSQL's foreign_key_violation, optionally of one named constraint. */
export function isForeignKeyViolation(error: unknown, constraint?: string): boolean {
  return isViolation(error, '23503', constraint);
}
