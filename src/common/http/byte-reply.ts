import { type MessageDto } from './message.dto.js';

export const OCTET_STREAM = 'application/octet-stream';

/**
 * Bytes of file windows (logs, files) the hub holds at once, across all requests; a read waits
 * for room. As JSON a window also takes up to 5 times its size while it is decoded and encoded
 * (invalid UTF-8 becomes 3-byte U+FFFD), so windows in flight hold at most 6 × this (docs/security.md).
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

/** Takes room for a window of `bytes` from the hub's budget; the function gives it back. */
export function reserveWindow(bytes: number): Promise<() => void> {
  return budget.take(bytes);
}

/**
 * A window of bytes a route answers (api-map §0): the exact bytes as `application/octet-stream`
 * when the request's `Accept` prefers them, else `{msg}` with the bytes decoded as UTF-8. Its
 * share of the window budget is given back once the reply has gone.
 */
export class ByteWindowReply {
  constructor(
    readonly bytes: Buffer,
    readonly release: () => void = () => undefined,
  ) {}

  static text(text: string): ByteWindowReply {
    return new ByteWindowReply(Buffer.from(text, 'utf8'));
  }

  asMessage(): MessageDto {
    return { msg: this.bytes.toString('utf8') };
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
