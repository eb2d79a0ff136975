// Loaded into a benchmarked process with `node --import <dist/bench/gc-probe.js>`: the garbage
// collector's work over a window the benchmark chooses, figures the machine's load does not move
// (a pause's length does a little: a paused thread may wait for a CPU too). The first SIGUSR2 opens
// a window, the next closes it and appends one JSON line to GC_PROBE_OUT: pauses by kind with their
// total and longest milliseconds, the bytes allocated (heap used before each collection less what
// the previous one left) and the bytes a scavenge moved to the old generation (promoted).
import { appendFileSync } from 'node:fs';
import { GCProfiler, getHeapStatistics } from 'node:v8';

export interface GcWindow {
  readonly seconds: number;
  readonly pauses: Record<string, { count: number; totalMs: number; maxMs: number }>;
  readonly pauseMs: number;
  readonly allocatedBytes: number;
  readonly promotedBytes: number;
}

interface HeapSample {
  readonly heapStatistics: { readonly usedHeapSize: number };
  readonly heapSpaceStatistics: readonly { readonly spaceName: string; readonly spaceUsedSize: number }[];
}
interface GcStatistic {
  readonly gcType: string;
  /** Microseconds. */
  readonly cost: number;
  readonly beforeGC: HeapSample;
  readonly afterGC: HeapSample;
}

const oldSpace = (sample: HeapSample) => sample.heapSpaceStatistics.find((space) => space.spaceName === 'old_space')?.spaceUsedSize ?? 0;

function summarise(statistics: readonly GcStatistic[], usedAtStart: number, usedAtEnd: number, seconds: number): GcWindow {
  const pauses: Record<string, { count: number; totalMs: number; maxMs: number }> = {};
  let allocated = 0;
  let promoted = 0;
  let used = usedAtStart;
  for (const gc of statistics) {
    const kind = (pauses[gc.gcType] ??= { count: 0, totalMs: 0, maxMs: 0 });
    kind.count += 1;
    kind.totalMs += gc.cost / 1000;
    kind.maxMs = Math.max(kind.maxMs, gc.cost / 1000);
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - used);
    used = gc.afterGC.heapStatistics.usedHeapSize;
    if (gc.gcType === 'Scavenge') promoted += Math.max(0, oldSpace(gc.afterGC) - oldSpace(gc.beforeGC));
  }
  allocated += Math.max(0, usedAtEnd - used);
  const pauseMs = Object.values(pauses).reduce((sum, kind) => sum + kind.totalMs, 0);
  return { seconds, pauses, pauseMs, allocatedBytes: allocated, promotedBytes: promoted };
}

const out = process.env.GC_PROBE_OUT;
if (out) {
  let open: { profiler: GCProfiler; used: number; began: number } | undefined;
  process.on('SIGUSR2', () => {
    if (!open) {
      const profiler = new GCProfiler();
      profiler.start();
      open = { profiler, used: getHeapStatistics().used_heap_size, began: performance.now() };
      return;
    }
    const { profiler, used, began } = open;
    open = undefined;
    const result = profiler.stop() as unknown as { statistics: GcStatistic[] } | undefined;
    const window = summarise(result?.statistics ?? [], used, getHeapStatistics().used_heap_size, (performance.now() - began) / 1000);
    appendFileSync(out, `${JSON.stringify(window)}\n`);
  });
}
