/** A problem reply lists at most this many errors; its detail says how many there were (api-map §0). */
export const MAX_LISTED_ERRORS = 50;

/** One problem with one input: a body JSON Pointer, a query parameter or a header name. */
export interface FieldError {
  readonly path: string;
  readonly message: string;
}

/**
 * The errors services throw. The exception filter turns each into an RFC 9457 problem; nothing
 * else in the code builds HTTP error replies.
 */
export abstract class HubError extends Error {
  abstract readonly status: number;
  readonly headers: Readonly<Record<string, string>> = {};
  readonly errors?: readonly FieldError[];
}

/** 400: the request is malformed or fails validation. */
export class InvalidInputError extends HubError {
  readonly status = 400;
  constructor(
    message: string,
    override readonly errors?: readonly FieldError[],
  ) {
    super(message);
  }

  /** One error for one input, repeating the message as the detail. */
  static at(path: string, message: string): InvalidInputError {
    return new InvalidInputError(message, [{ path, message }]);
  }
}

/**
 * 400: what the caller asked to run breaks rules an operation reports as plain messages, each
 * naming what it is about (a pipeline's problems on submit): `errors` is then an array of
 * strings, as the interface shapes submit's reply, rather than of {path, message}.
 */
export class RefusedError extends HubError {
  readonly status = 400;
  constructor(
    message: string,
    readonly problems: readonly string[],
  ) {
    super(message);
  }
}

/** 401: no credentials, or credentials that do not identify an active user. */
export class UnauthorizedError extends HubError {
  readonly status = 401;
  override readonly headers = { 'www-authenticate': 'Bearer realm="hub"' };
}

/** 403: the caller is known but may not do this. */
export class ForbiddenError extends HubError {
  readonly status = 403;
}

/** 404: no such resource, or one the caller may not see. */
export class NotFoundError extends HubError {
  readonly status = 404;
}

/** 409: the request conflicts with the current state (a duplicate name, a non-empty container). */
export class ConflictError extends HubError {
  readonly status = 409;
}

/** 412: an `If-Match` precondition does not hold. */
export class PreconditionFailedError extends HubError {
  readonly status = 412;
}

/** 415: the body's media type is not one the operation accepts. */
export class UnsupportedMediaTypeError extends HubError {
  readonly status = 415;
}

/** 429: too many attempts, or a quota reached; `Retry-After` says when to try again, when that is known. */
export class TooManyRequestsError extends HubError {
  readonly status = 429;
  override readonly headers: Readonly<Record<string, string>>;
  constructor(message: string, retryAfterSeconds?: number) {
    super(message);
    this.headers = retryAfterSeconds === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) };
  }
}

/** 503: the hub cannot serve the request right now (not ready, shutting down). */
export class ServiceUnavailableError extends HubError {
  readonly status = 503;
}
