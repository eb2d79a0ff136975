import type { ExecutionRow, TaskSummary } from './cluster.repository.js';
import type { ExecutionDto, ExecutionListItemDto, JobDto, JobListItemDto, NodeDto, NodeListItemDto } from './dto/cluster.dto.js';
import type { ClusterJob } from './entities/cluster-job.entity.js';
import type { ClusterNode } from './entities/cluster-node.entity.js';
import type { JobExecution } from './entities/job-execution.entity.js';

const NO_TASKS: TaskSummary = { queued: 0, completed: 0, failed: 0, running: 0, starting: 0, lost: 0 };

export function toNodeListItem(node: ClusterNode): NodeListItemDto {
  return {
    id: node.id,
    name: node.name,
    address: node.address,
    type: node.type,
    isWorker: node.isWorker,
    isServer: node.isServer,
    status: node.status,
    nodeLabels: node.labels,
  };
}

/** `attributes` carry the driver's own, and the node's OS and whether it is draining. */
export function toNodeResponse(node: ClusterNode): NodeDto {
  return {
    id: node.id,
    name: node.name,
    hostname: node.hostname,
    address: node.address,
    resources: { memory: node.memory, cpu: node.cpu },
    type: node.type,
    isWorker: node.isWorker,
    isServer: node.isServer,
    status: node.status,
    attributes: { ...node.attributes, os: node.os, draining: String(node.draining) },
  };
}

/** What a job list reads of each job (ClusterRepository.listJobs), and all that list items show. */
export type JobListRow = Pick<ClusterJob, 'id' | 'name' | 'status' | 'type' | 'submitTime' | 'priority' | 'namespaceId' | 'ownerId'>;

/** What a job shows in a list and in its detail alike. */
function jobFields(job: JobListRow): Omit<JobDto, 'properties'> {
  return { id: job.id, name: job.name, status: job.status, type: job.type, submitTime: job.submitTime.toISOString(), priority: job.priority };
}

export function toJobListItem(job: JobListRow, summary: TaskSummary = NO_TASKS): JobListItemDto {
  return { ...jobFields(job), taskSummary: summary };
}

export function toJobResponse(job: ClusterJob): JobDto {
  return { ...jobFields(job), properties: job.properties };
}

export function toExecutionListItem(execution: ExecutionRow): ExecutionListItemDto {
  return {
    id: execution.id,
    jobId: execution.jobId,
    status: execution.status,
    creationTime: execution.creationTime.toISOString(),
    modifiedTime: execution.modifiedTime.toISOString(),
    nodeId: execution.nodeId ?? undefined,
    nodeName: execution.nodeName ?? undefined,
  };
}

/** Absent times are left out of a task state rather than sent as null; fields come in the interface's order (jsonb keeps its own). */
export function toExecutionResponse(execution: JobExecution, job: ClusterJob): ExecutionDto {
  const { status, failed, restarts, lastRestart, startedAt, finishedAt } = execution.taskState;
  const events = execution.taskState.events.map(({ type, time, displayMessage, details, message }) => ({ type, time, displayMessage, details, message }));
  return {
    id: execution.id,
    jobId: execution.jobId,
    status: execution.status,
    creationTime: execution.created.toISOString(),
    modifiedTime: execution.modified.toISOString(),
    nodeId: execution.nodeId ?? undefined,
    nodeName: execution.node?.name ?? undefined,
    taskStates: {
      [execution.taskName]: {
        status,
        failed,
        restarts,
        lastRestart: lastRestart ?? undefined,
        startedAt: startedAt ?? undefined,
        finishedAt: finishedAt ?? undefined,
        events,
      },
    },
    resources: { reservedCPU: execution.reservedCpu, reservedMemory: execution.reservedMemory },
    jobProperties: job.properties,
  };
}
