import { describe, expect, it } from '@jest/globals';
import { constraintValueProblem, describeConstraint, meets, unmetConstraint, type NodeConstraint, type NodeFacts } from './node-constraints.js';

const NODE: NodeFacts = { name: 'node-a', os: 'linux', labels: ['gpu', 'fast-disk'], attributes: { rack: 'r12' } };
const c = (attribute: string, operator: NodeConstraint['operator'], value: string): NodeConstraint => ({ attribute, operator, value });

describe('meets', () => {
  it.each([
    [c('node.label', '=', 'gpu'), true],
    [c('node.label', '=', 'cpu'), false],
    [c('node.label', '!=', 'gpu'), false],
    [c('node.label', '!=', 'cpu'), true],
    [c('node.label', 'in', 'cpu, gpu'), true],
    [c('node.label', 'in', 'cpu,tpu'), false],
    [c('node.label', 'not_in', 'cpu,tpu'), true],
    [c('node.label', 'not_in', 'tpu,fast-disk'), false],
    [c('node.label', 'contains', 'disk'), true],
    [c('node.label', 'contains', 'ssd'), false],
    [c('node.label', 'regexp', 'fast-.*'), true],
    [c('node.label', 'regexp', 'fast'), false],
    [c('node.os', '=', 'linux'), true],
    [c('node.os', '=', 'Linux'), false],
    [c('node.os', '!=', 'windows'), true],
    [c('node.name', 'regexp', 'node-[a-c]'), true],
    [c('node.name', 'in', 'node-b,node-c'), false],
    [c('node.attr.rack', '=', 'r12'), true],
    [c('node.attr.rack', 'contains', 'r1'), true],
    [c('node.attr.room', '=', 'r12'), false],
    [c('node.attr.room', '!=', 'r12'), true],
  ])('%j → %s', (constraint, expected) => {
    expect(meets(NODE, constraint)).toBe(expected);
  });
});

describe('unmetConstraint', () => {
  it('is undefined when every constraint is met, else the first that is not', () => {
    expect(unmetConstraint(NODE, [])).toBeUndefined();
    expect(unmetConstraint(NODE, [c('node.os', '=', 'linux'), c('node.label', '=', 'gpu')])).toBeUndefined();
    const unmet = unmetConstraint(NODE, [c('node.os', '=', 'linux'), c('node.label', '=', 'tpu'), c('node.name', '=', 'x')]);
    expect(unmet && describeConstraint(unmet)).toBe('node.label = tpu');
  });
});

describe('constraintValueProblem', () => {
  it('refuses empty items in a list and regular expressions RE2 cannot compile', () => {
    expect(constraintValueProblem(c('node.label', 'in', 'a,,b'))).toMatch(/comma-separated/);
    expect(constraintValueProblem(c('node.label', 'not_in', ''))).toMatch(/comma-separated/);
    expect(constraintValueProblem(c('node.label', 'regexp', '(unclosed'))).toMatch(/not a valid regular expression/);
    expect(constraintValueProblem(c('node.label', 'regexp', '(a)\\1'))).toMatch(/not a valid regular expression/);
    expect(constraintValueProblem(c('node.label', 'in', 'a, b'))).toBeUndefined();
    expect(constraintValueProblem(c('node.label', '=', ''))).toBeUndefined();
  });
});
