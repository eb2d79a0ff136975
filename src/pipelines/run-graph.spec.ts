import { describe, expect, it } from '@jest/globals';
import type { PipelineNodeShape } from './pipeline-validation.js';
import { RunGraph } from './run-graph.js';

const node = (name: string, connections: PipelineNodeShape['connections'] = {}): PipelineNodeShape => ({ name, connections, task: { command: 'true' } });

describe('RunGraph.heldAfter', () => {
  it('holds after a node the nodes that run exactly when it succeeds: its success alone leads there, and nothing else does', () => {
    const graph = new RunGraph(
      [
        node('a', { onSuccess: ['b'] }),
        node('b', { onSuccess: ['c'], onError: ['handler'] }),
        node('c', { onSuccess: ['join'] }),
        node('d', { onSuccess: ['join'] }),
        node('handler'),
        node('join'),
      ],
      false,
    );
    expect(graph.heldAfter('a', 8)).toEqual(['b']);
    // c follows b's success alone; the handler its error.
    expect(graph.heldAfter('b', 8)).toEqual(['c']);
    // The join has two predecessors: it runs when both have ended.
    expect(graph.heldAfter('c', 8)).toEqual([]);
    expect(graph.heldAfter('join', 8)).toEqual([]);
    expect(graph.holdsAny(8)).toBe(true);
  });

  it('holds nothing after a node that leads to more than `most`, nor in a fan-out whose branches all meet at a join', () => {
    const fanned = Array.from({ length: 20 }, (_, i) => `f${i}`);
    const graph = new RunGraph([node('start', { onSuccess: fanned }), ...fanned.map((name) => node(name, { onSuccess: ['join'] })), node('join')], false);
    expect(graph.heldAfter('start', 8)).toEqual([]);
    expect(graph.heldAfter('f3', 8)).toEqual([]);
    expect(graph.holdsAny(8)).toBe(false);
    // With room for all twenty, each branch is held after the start.
    expect(graph.heldAfter('start', 20)).toEqual(fanned);
    expect(graph.holdsAny(20)).toBe(true);
  });

  it('holds nothing the entry point starts from, nor nodes it cannot reach', () => {
    const graph = new RunGraph(
      [node('a', { onSuccess: ['b'] }), node('b', { onSuccess: ['c'] }), node('c'), node('x', { onSuccess: ['y'] }), node('y')],
      false,
      'b',
    );
    expect(graph.heldAfter('a', 8)).toEqual([]);
    expect(graph.heldAfter('b', 8)).toEqual(['c']);
    expect(graph.heldAfter('x', 8)).toEqual([]);
  });
});
