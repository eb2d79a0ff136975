import { Readable, Transform, type TransformCallback } from 'node:stream';

export const OCTET_STREAM = 'application/octet-stream';

/** Bytes a window's reply reads from its file at a time. */
export const WINDOW_CHUNK = 64 * 1024;

/**
 * What one window in flight holds at most, whatever its size: a chunk read from the file, its JSON
 * form (up to 3 bytes a byte: invalid UTF-8 becomes U+FFFD) with the strings it is made from, and
 * what waits in the socket's queue while the client is slow (the stream stops reading until it drains).
 */
export const WINDOW_SHARE = 1024 * 1024;

/**
 * Bytes that windows in flight (logs, files) may hold at once, across all requests: 64 windows
 * streaming at once at most, the rest waiting in order (docs/security.md, "Byte windows and memory").
 */
export const WINDOW_MEMORY_BUDGET = 64 * 1024 * 1024;

/** A budget of bytes that readers take a share of and give back, waiting in order while it is spent. */
class ByteBudget {
  private available: number;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];

  constructor(private readonly total: number) {
    this.available = total;
  }

  /** Takes `bytes` (at most the whole budget) once available; resolves with the function that gives them back (once). */
  async take(bytes: number): Promise<() => void> {
    const share = Math.min(bytes, this.total);
    if (this.waiting.length > 0 || this.available < share) await new Promise<void>((grant) => this.waiting.push({ bytes: share, grant }));
    else this.available -= share;
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.available += share;
      this.grantWaiting();
    };
  }

  private grantWaiting(): void {
    while (this.waiting.length > 0 && this.available >= this.waiting[0].bytes) {
      const next = this.waiting.shift() as { bytes: number; grant: () => void };
      this.available -= next.bytes;
      next.grant();
    }
  }
}

const budget = new ByteBudget(WINDOW_MEMORY_BUDGET);

/** Takes room for a window of `bytes` from the hub's budget (at most {@link WINDOW_SHARE}); the function gives it back. */
export function reserveWindow(bytes: number): Promise<() => void> {
  return budget.take(Math.min(bytes, WINDOW_SHARE));
}

/** The property a window's JSON reply carries its bytes in: `{msg}` (task logs, files), `{message}` (session logs). */
export type WindowKey = 'msg' | 'message';

/**
 * Encodes a stream of bytes as `{"msg": <the bytes as UTF-8 text>}` as they come, a chunk at a
 * time: the same JSON as `JSON.stringify({msg: bytes.toString('utf8')})` (invalid sequences become
 * U+FFFD, a byte-order mark stays), without ever holding the whole text.
 */
export class MessageEncoder extends Transform {
  // ignoreBOM keeps a leading U+FEFF as Buffer#toString does; the decoder carries a character cut by a chunk's edge to the next.
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  /** `key`: the reply's one property (`msg`, or `message` where the interface says so: session logs). */
  constructor(key: WindowKey = 'msg') {
    super({ writableHighWaterMark: WINDOW_CHUNK });
    this.push(`{"${key}":"`);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    done(null, escaped(this.decoder.decode(chunk, { stream: true })));
  }

  override _flush(done: TransformCallback): void {
    done(null, `${escaped(this.decoder.decode())}"}`);
  }
}

/** `text` as the inside of a JSON string. */
function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/**
 * A window of bytes a route answers (api-map §0), streamed: the exact bytes as
 * `application/octet-stream` when the request's `Accept` prefers them, else `{msg}` with the bytes
 * decoded as UTF-8. `release` closes its file and gives back its share of the budget: it is called
 * once the reply has gone, or the client has left.
 */
export class ByteWindowReply {
  constructor(
    private readonly source: Readable,
    readonly release: () => void = () => undefined,
    /** Set for bytes that are always answered raw, as this media type (a stored result asked for with `?raw=true`). */
    readonly rawMediaType?: string,
    /** The property of its JSON reply. */
    readonly key: WindowKey = 'msg',
  ) {}

  /** The same window, answered as `{<key>}` in JSON. */
  keyed(key: WindowKey): ByteWindowReply {
    return new ByteWindowReply(this.source, this.release, this.rawMediaType, key);
  }

  static text(text: string): ByteWindowReply {
    return new ByteWindowReply(Readable.from([Buffer.from(text, 'utf8')]));
  }

  /** Bytes answered as they are, with their own media type, whatever the request's `Accept`. */
  static raw(source: Readable, mediaType: string): ByteWindowReply {
    return new ByteWindowReply(source, () => source.destroy(), mediaType);
  }

  /** The window's exact bytes. */
  bytes(): Readable {
    return this.source;
  }

  /** The window as `{msg}` (or its key), encoded as it is read. */
  message(): Readable {
    const encoder = new MessageEncoder(this.key);
    this.source.once('error', (error) => encoder.destroy(error));
    return this.source.pipe(encoder);
  }
}

/** The quality an `Accept` header gives a media type (exact, `type/*` or `*\/*`); 0 when it gives none. */
function quality(accept: string, mediaType: string): number {
  const [type] = mediaType.split('/');
  let best = -1;
  let specificity = -1;
  for (const range of accept.split(',')) {
    const [name, ...parameters] = range.trim().toLowerCase().split(';');
    const q = Number(/^\s*q=([0-9.]+)\s*$/.exec(parameters.find((parameter) => /^\s*q=/.test(parameter)) ?? 'q=1')?.[1] ?? 1);
    const level = name === mediaType ? 2 : name === `${type}/*` ? 1 : name === '*/*' ? 0 : -1;
    if (level > specificity) {
      specificity = level;
      best = Number.isFinite(q) ? q : 0;
    }
  }
  return Math.max(best, 0);
}

/** Whether a request's `Accept` asks for raw bytes: it names `application/octet-stream` and prefers it to JSON. */
export function acceptsBytes(accept: string | undefined): boolean {
  if (!accept?.toLowerCase().includes(OCTET_STREAM)) return false;
  const bytes = quality(accept, OCTET_STREAM);
  return bytes > 0 && bytes >= quality(accept, 'application/json');
}
