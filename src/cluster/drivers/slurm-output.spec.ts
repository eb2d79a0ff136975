import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { featureExpression, parseJobs, parseNodes, SlurmCommandError } from './slurm-output.js';

/** Real output of Slurm 22.05 (scripts/slurm-up.sh's two nodes), recorded in test/cluster/fixtures/slurm. */
const fixture = (name: string) => readFileSync(join(process.cwd(), 'test', 'cluster', 'fixtures', 'slurm', name), 'utf8');

describe('parseNodes', () => {
  it('reads the nodes of sinfo --json: features as labels, CPUs, memory, the OS', () => {
    const nodes = parseNodes(fixture('sinfo-idle.json'));
    expect(nodes.map((node) => [node.name, node.status, node.labels, node.cpu, node.memory, node.os])).toEqual([
      ['vm', 'ready', ['linux', 'prod'], 2, 2000, 'linux'],
      ['vm2', 'ready', ['linux', 'staging'], 2, 2000, 'linux'],
    ]);
    expect(nodes[0]).toMatchObject({ isWorker: true, isServer: false, address: '127.0.0.1', attributes: { slurmState: 'idle' } });
  });

  it('keeps a drained node ready, its drain and reason as attributes', () => {
    const drained = parseNodes(fixture('sinfo-drain.json')).find((node) => node.name === 'vm2');
    expect(drained).toMatchObject({ status: 'ready', attributes: { slurmState: 'idle+DRAIN', slurmReason: 'test' } });
  });

  it('reads a node that does not respond as down', () => {
    expect(parseNodes(fixture('sinfo-down.json')).map((node) => [node.name, node.status])).toEqual([
      ['vm', 'ready'],
      ['vm2', 'down'],
    ]);
    expect(parseNodes(fixture('sinfo-resumed.json')).find((node) => node.name === 'vm2')?.status).toBe('down');
  });

  it('throws the errors Slurm reports while exiting 0 (a controller that does not answer)', () => {
    expect(() => parseNodes('{"errors":[{"error":"Unspecified error","errno":-1}],"nodes":[]}')).toThrow(SlurmCommandError);
    expect(() => parseNodes('not json')).toThrow(/did not print JSON/);
  });
});

describe('parseJobs', () => {
  it('reads every job squeue --json lists, by id, with its state, node and wait status', () => {
    const jobs = parseJobs(fixture('squeue-all.json'));
    expect(jobs.get('23')).toEqual({ state: 'COMPLETED', reason: 'None', node: 'vm', waitStatus: 0 });
    expect(jobs.get('24')).toMatchObject({ state: 'FAILED', waitStatus: 768 });
    expect((jobs.get('24')?.waitStatus ?? 0) >> 8).toBe(3);
    expect(jobs.get('28')).toMatchObject({ state: 'CANCELLED', node: undefined });
    expect(jobs.get('30')).toMatchObject({ state: 'NODE_FAIL', node: 'vm2' });
  });

  it('tells running from pending', () => {
    const jobs = parseJobs(fixture('squeue-active.json'));
    expect([jobs.get('25')?.state, jobs.get('26')?.state]).toEqual(['RUNNING', 'PENDING']);
  });
});

describe('featureExpression', () => {
  it('requires every node.label = constraint as a feature, and leaves out what Slurm cannot read as one', () => {
    expect(featureExpression([])).toBeUndefined();
    expect(
      featureExpression([
        { attribute: 'node.label', operator: '=', value: 'linux' },
        { attribute: 'node.label', operator: '=', value: 'staging' },
        { attribute: 'node.label', operator: '!=', value: 'prod' },
        { attribute: 'node.os', operator: '=', value: 'linux' },
        { attribute: 'node.label', operator: '=', value: 'a|b' },
      ]),
    ).toBe('linux&staging');
  });
});
