import { expect } from '@jest/globals';
import { poll } from './poll.js';
import { bearer, type TestHub } from './test-hub.js';

/** The pipeline runs' path (api-map §7). */
export const RUNS = '/api/v2/pipelines/runs';
const ENDED = ['Succeeded', 'Failed', 'Cancelled'];

export interface NodeStatus {
  state: string;
  startedAt?: string;
  finishedAt?: string;
  events: { type: string; time: string; details: Record<string, string> }[];
}

export interface RunStatus {
  state: string;
  nodeStatus: Record<string, NodeStatus>;
}

/** The id of the built-in Standard execution profile, as the administrator lists it. */
export async function standardProfileId(hub: TestHub): Promise<string> {
  const profiles = await hub.inject({
    method: 'GET',
    url: '/api/v2/execution-profiles/execprofiles?filter[name][EQ]=Standard',
    headers: bearer(hub.adminToken),
  });
  return profiles.json<{ data: { _id: string }[] }>().data[0]._id;
}

/** An ad hoc run of `nodes` by the administrator under `executionProfileId`, created (201); its id. */
export async function startRun(hub: TestHub, nodes: Record<string, unknown>[], executionProfileId: string): Promise<string> {
  const response = await hub.inject({
    method: 'POST',
    url: RUNS,
    headers: bearer(hub.adminToken),
    payload: { spec: { nodes }, executionProfileId },
  });
  expect([response.statusCode, response.body]).toEqual([201, expect.any(String)]);
  return response.json<{ id: string }>().id;
}

/** A run's status as the administrator reads it. */
export async function runStatus(hub: TestHub, id: string): Promise<RunStatus> {
  return (await hub.inject({ method: 'GET', url: `${RUNS}/${id}/status`, headers: bearer(hub.adminToken) })).json<RunStatus>();
}

/** A run's status once it has ended (Succeeded, Failed or Cancelled). */
export function runEnded(hub: TestHub, id: string, timeoutMs = 30_000): Promise<RunStatus> {
  return poll(
    () => runStatus(hub, id),
    (status) => ENDED.includes(status.state),
    `run ${id} to end`,
    timeoutMs,
  );
}
