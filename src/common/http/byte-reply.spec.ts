import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, expect, it } from '@jest/globals';
import { acceptsBytes, MessageEncoder, reserveWindow, WINDOW_MEMORY_BUDGET, WINDOW_SHARE } from './byte-reply.js';

describe('the window budget', () => {
  it('lets windows in flight take no more than the budget: a window holds one share whatever its size, and the rest wait in order', async () => {
    const windows = WINDOW_MEMORY_BUDGET / WINDOW_SHARE;
    const held = await Promise.all(Array.from({ length: windows - 1 }, () => reserveWindow(16 * 1024 * 1024)));
    const first = await reserveWindow(WINDOW_SHARE);
    const granted: string[] = [];
    const next = reserveWindow(16 * 1024 * 1024).then((release) => (granted.push('next'), release));
    const small = reserveWindow(10).then((release) => (granted.push('small'), release));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(granted).toEqual([]);
    first();
    first(); // Given back once, however often called.
    const releaseNext = await next;
    expect(granted).toEqual(['next']);
    releaseNext();
    (await small)();
    expect(granted).toEqual(['next', 'small']);
    held.forEach((release) => release());
    // All of it is free again.
    const all = await Promise.all(Array.from({ length: windows }, () => reserveWindow(WINDOW_SHARE)));
    all.forEach((release) => release());
  });
});

describe('MessageEncoder', () => {
  /** `bytes` through the encoder, cut into chunks of the given sizes in turn. */
  const encode = (bytes: Buffer, sizes: number[]) => {
    const chunks: Buffer[] = [];
    for (let at = 0, i = 0; at < bytes.length; i += 1) {
      const size = sizes[i % sizes.length];
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    return text(Readable.from(chunks).pipe(new MessageEncoder()));
  };
  const windows: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['text with quotes, controls and a byte-order mark', Buffer.from('\uFEFFsaid "hi"\\\n\t\u0000\u001f \u2028 é € 😀 done', 'utf8')],
    ['characters cut at every edge', Buffer.from('é€😀'.repeat(50), 'utf8')],
    ['a truncated sequence at the end', Buffer.from([0x61, 0xf0, 0x9f, 0x98])],
    ['surrogate halves and overlong forms', Buffer.from([0xed, 0xa0, 0x80, 0xc0, 0xaf, 0xe0, 0x80, 0xaf, 0xf4, 0x90, 0x80, 0x80, 0xff, 0x41])],
    ['random bytes', randomBytes(200_000)],
  ];

  it.each(windows)('encodes %s as JSON.stringify({msg}) of the decoded bytes does, however it is cut', async (_name, bytes) => {
    const expected = JSON.stringify({ msg: bytes.toString('utf8') });
    for (const sizes of [[1], [2, 3], [7, 1, 4096], [65_536], [bytes.length || 1]]) expect(await encode(bytes, sizes)).toBe(expected);
  });
});

describe('acceptsBytes', () => {
  it.each([
    ['application/octet-stream', true],
    ['application/octet-stream, application/json;q=0.9', true],
    ['application/json, application/octet-stream', true],
    ['application/json, application/octet-stream;q=0.5', false],
    ['application/octet-stream;q=0', false],
    ['*/*', false],
    ['application/json', false],
    [undefined, false],
  ])('%j → %j', (accept, expected) => {
    expect(acceptsBytes(accept)).toBe(expected);
  });
});
