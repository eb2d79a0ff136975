import { describe, expect, it } from '@jest/globals';
import { cyclesOf, validatePipelineSpec, type PipelineNodeShape } from './pipeline-validation.js';

const node = (name: string, connections: PipelineNodeShape['connections'] = {}, task: PipelineNodeShape['task'] = { command: 'true' }): PipelineNodeShape => ({
  name,
  connections,
  task,
});

describe('validatePipelineSpec', () => {
  it('accepts a DAG with a condition, a fan-out and a join', () => {
    expect(
      validatePipelineSpec({
        nodes: [
          node('check', { onTrue: ['a', 'b'], onFalse: ['skip'] }, { command: 'test', conditionNode: true }),
          node('a', { onSuccess: ['join'] }),
          node('b', { onSuccess: ['join'], onError: ['join'] }),
          node('skip'),
          node('join', { onAny: [] }),
        ],
      }),
    ).toEqual([]);
  });

  it('refuses a spec without nodes, or no spec at all', () => {
    expect(validatePipelineSpec({ nodes: [] })).toEqual(['spec.nodes: a pipeline needs at least one node']);
    expect(validatePipelineSpec(undefined)).toEqual(['spec.nodes: a pipeline needs at least one node']);
  });

  it('reports every problem at once, each naming its node', () => {
    const errors = validatePipelineSpec({
      nodes: [
        { task: { command: 'true' } },
        node('a', { onSuccess: ['ghost', 'b'], onTrue: ['b'] }),
        node('b', { onSuccess: ['a'] }, { command: '  ' }),
        node('a'),
        { name: 'c', task: { command: 'true' }, inputs: { resources: { src: { type: 'git' } } } },
        { name: 'd' },
      ],
    });
    expect(errors).toEqual([
      'spec.nodes[0]: the node has no name',
      "Node 'a': onSuccess names 'ghost', which is no node of the pipeline",
      "Node 'a': onTrue is only for a node whose task is a conditionNode",
      "Node 'b': the task's command is empty",
      "Node 'c': the git input 'src' has no repo",
      "Node 'd': the task's command is empty",
      "Node 'a': the name is used by 2 nodes (spec.nodes[1], spec.nodes[3])",
      "Nodes 'a', 'b': they form a cycle, so none of them could ever run",
    ]);
  });

  it('names a node connected to itself, and several unknown targets in one message', () => {
    expect(validatePipelineSpec({ nodes: [node('loop', { onAny: ['loop'], onError: ['x', 'y', 'x'] })] })).toEqual([
      "Node 'loop': onError names 'x', 'y', which are no nodes of the pipeline",
      "Node 'loop': it connects to itself, a cycle",
    ]);
  });

  it('checks onTrue and onFalse only on nodes that are not conditionNodes', () => {
    expect(validatePipelineSpec({ nodes: [node('c', { onTrue: ['d'], onFalse: ['d'] }, { command: 'x', conditionNode: true }), node('d')] })).toEqual([]);
    expect(validatePipelineSpec({ nodes: [node('c', { onTrue: ['d'], onFalse: ['d'] }), node('d')] })).toEqual([
      "Node 'c': onTrue and onFalse are only for a node whose task is a conditionNode",
    ]);
  });
});

describe('cyclesOf', () => {
  it('finds each strongly connected component, and none in a DAG', () => {
    expect(cyclesOf([[1], [2], []])).toEqual([]);
    expect(cyclesOf([[1], [2, 3], [0], [4], [3]])).toEqual([
      [0, 1, 2],
      [3, 4],
    ]);
  });

  it('walks a chain of 100,000 nodes without recursion', () => {
    const edges = Array.from({ length: 100_000 }, (_, i) => (i + 1 < 100_000 ? [i + 1] : [0]));
    expect(cyclesOf(edges)).toHaveLength(1);
  });
});
