import { describe, expect, it } from '@jest/globals';
import { boundsOf, defaultMaxMemoryMiB, limitMessage } from './execution-bounds.js';

describe('defaultMaxMemoryMiB', () => {
  it('shares the host’s memory less 10 % between the slots', () => {
    // 24 GiB, 2 slots: 24,576 − 2,458 (10 %) = 22,118, halved.
    expect(defaultMaxMemoryMiB(24_576, undefined, 2)).toBe(11_059);
    expect(defaultMaxMemoryMiB(65_536, undefined, 16)).toBe(3686);
  });

  it('keeps at least 1 GiB for the hub and PostgreSQL', () => {
    // 4 GiB: 10 % is 410 MiB, less than 1 GiB.
    expect(defaultMaxMemoryMiB(4096, undefined, 2)).toBe(1536);
    expect(defaultMaxMemoryMiB(8192, undefined, 1)).toBe(7168);
  });

  it('starts from the hub’s own control group’s limit when it is below the host’s memory', () => {
    expect(defaultMaxMemoryMiB(24_576, 8192, 2)).toBe(3584);
    // A limit above the host's memory changes nothing.
    expect(defaultMaxMemoryMiB(8192, 1_000_000, 2)).toBe(3584);
  });

  it('never gives less than 64 MiB, however little memory or many slots', () => {
    expect(defaultMaxMemoryMiB(24_576, 1024, 2)).toBe(64);
    expect(defaultMaxMemoryMiB(2048, undefined, 64)).toBe(64);
  });
});

describe('boundsOf', () => {
  const defaults = { maxProcesses: 4096, maxMemoryMiB: 1000 };

  it('takes the defaults for the bounds a profile leaves unset, and says which', () => {
    expect(boundsOf({}, defaults)).toEqual({ limits: { maxProcesses: 4096, maxMemoryMiB: 1000 }, defaulted: ['maxProcesses', 'maxMemoryMiB'] });
    expect(boundsOf({ maxMemoryMiB: 16, maxRunSeconds: 5 }, defaults)).toEqual({
      limits: { maxProcesses: 4096, maxMemoryMiB: 16, maxRunSeconds: 5 },
      defaulted: ['maxProcesses'],
    });
  });

  it('keeps a profile’s limits, above the defaults too', () => {
    expect(boundsOf({ maxProcesses: 10_000, maxMemoryMiB: 50_000 }, defaults)).toEqual({
      limits: { maxProcesses: 10_000, maxMemoryMiB: 50_000 },
      defaulted: [],
    });
  });
});

describe('limitMessage', () => {
  it('names the profile’s limit, or the hub’s default and its setting', () => {
    const limits = { maxProcesses: 4096, maxMemoryMiB: 64, maxRunSeconds: 60 };
    expect(limitMessage('maxRunSeconds', limits, ['maxProcesses'])).toBe("Ended for running past its execution profile's maxRunSeconds (60 s)");
    expect(limitMessage('maxProcesses', limits, ['maxProcesses'])).toBe(
      "Ended for running past the hub's default maxProcesses (4096 processes, HUB_JOB_DEFAULT_MAX_PROCESSES)",
    );
    expect(limitMessage('maxMemoryMiB', limits, ['maxMemoryMiB'])).toBe(
      "Ended for running past the hub's default maxMemoryMiB (64 MiB, HUB_JOB_DEFAULT_MAX_MEMORY_MIB)",
    );
    expect(limitMessage('maxMemoryMiB', limits)).toBe("Ended for running past its execution profile's maxMemoryMiB (64 MiB)");
  });
});
