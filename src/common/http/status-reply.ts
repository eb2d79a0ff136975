/**
 * A reply whose status or headers the service decides (a 202 that goes on as an asynchronous
 * operation, with its `Location`), or whose body is JSON already serialised elsewhere (a worker's
 * reply relayed as its bytes, a result stored as JSON text): the reply interceptor sends it as it is.
 */
export class StatusReply<T = unknown> {
  constructor(
    readonly body: T,
    readonly status?: number,
    readonly headers: Readonly<Record<string, string>> = {},
    /** `body` is a JSON document's text or bytes, sent without serialising it again. */
    readonly rawJson = false,
  ) {}

  /** JSON already serialised, answered with `status` (200 unless given). */
  static json(text: string | Buffer, status?: number): StatusReply<string | Buffer> {
    return new StatusReply(text, status, {}, true);
  }
}
