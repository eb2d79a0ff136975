import { describe, expect, it } from '@jest/globals';
import { acceptsBytes, reserveWindow, WINDOW_MEMORY_BUDGET } from './byte-reply.js';

describe('the window budget', () => {
  it('lets windows take no more than the budget at once: a read waits until earlier ones are given back, in order', async () => {
    const half = WINDOW_MEMORY_BUDGET / 2;
    const first = await reserveWindow(half);
    const second = await reserveWindow(half);
    const granted: string[] = [];
    const third = reserveWindow(half).then((release) => (granted.push('third'), release));
    // A larger window than the whole budget waits for all of it, and takes no more.
    const huge = reserveWindow(WINDOW_MEMORY_BUDGET * 4).then((release) => (granted.push('huge'), release));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(granted).toEqual([]);
    first();
    first(); // Given back once, however often called.
    const releaseThird = await third;
    expect(granted).toEqual(['third']);
    second();
    releaseThird();
    (await huge)();
    expect(granted).toEqual(['third', 'huge']);
    // All of it is free again.
    (await reserveWindow(WINDOW_MEMORY_BUDGET))();
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
