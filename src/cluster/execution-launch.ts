import { join } from 'node:path';
import type { ClaimedExecution } from './cluster.repository.js';
import type { Launch } from './drivers/cluster-driver.js';

/** What the hub passes to every execution from its own environment; nothing else of it (its settings, secrets) leaks to jobs. */
const INHERITED_VARIABLES = ['PATH', 'LANG', 'LC_ALL', 'TZ'];

/** What the driver needs to launch a claimed execution on a node. */
export function launchOf(execution: ClaimedExecution, nodeName: string, excludedNodes: string[]): Launch {
  const { task } = execution;
  if (task.identity === undefined) throw new Error('it was submitted before jobs ran as their users; submit it again');
  const inherited = Object.fromEntries(
    INHERITED_VARIABLES.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name] as string]),
  );
  const env = {
    ...inherited,
    ...task.environment,
    ...Object.fromEntries(task.envVars.map(({ name, value }) => [name, value])),
    HOME: join(execution.executionDir, 'work'),
    HUB_JOB_ID: execution.jobId,
    HUB_EXECUTION_ID: execution.id,
    HUB_TASK_NAME: task.name,
  };
  return {
    executionId: execution.id,
    nodeName,
    command: task.command,
    args: task.args,
    env,
    identity: task.identity,
    limits: task.limits ?? {},
    executionDir: execution.executionDir,
    cpu: execution.reservedCpu,
    memory: execution.reservedMemory,
    constraints: task.constraints,
    excludedNodes,
  };
}
