import { Body, Controller, Param, Query } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListDenials, ListScope, type ItemDenials, type NamespaceScope } from '../common/http/access-scope.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import type { ByteWindowReply } from '../common/http/byte-reply.js';
import type { TotalEnvelope } from '../common/http/list-envelope.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, ResourceId } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import { ClusterService } from './cluster.service.js';
import {
  DrainDto,
  ExecutionDto,
  ExecutionListDto,
  JobDto,
  JobListDto,
  NodeDto,
  NodeListDto,
  SubmitJobDto,
  VersionDto,
  type ExecutionListItemDto,
  type JobListItemDto,
  type NodeListItemDto,
} from './dto/cluster.dto.js';
import { EXECUTION_LIST_QUERY, JOB_LIST_QUERY, NODE_LIST_QUERY } from './list-queries.js';

const JOB = { resource: 'clusterJob', param: 'jobId' } as const;
const EXECUTION = { resource: 'jobExecution', param: 'jobExecutionId' } as const;
const OWN = 'Their owner (who submitted the job) may do this without the permission.';
const RAW = 'With `Accept: application/octet-stream` the reply is the window’s exact bytes, as that media type.';
const WINDOW = {
  origin: 'start (default) or end: where offset counts from',
  offset: 'Bytes from the origin (int64, default 0)',
  limit: 'Bytes to read (1 to 16777216, default 65536)',
};

@ApiTags('Cluster')
@Controller('api/v2/cluster')
export class ClusterController {
  constructor(private readonly cluster: ClusterService) {}

  @Route({ method: 'GET', path: 'version', summary: "Get the hub's version", access: { public: true }, response: VersionDto })
  getVersion(): VersionDto {
    return this.cluster.version();
  }

  @Route({
    method: 'GET',
    path: 'nodes',
    summary: 'Query cluster nodes',
    access: { object: '/ClusterNodes', action: 'Read' },
    list: NODE_LIST_QUERY,
    response: NodeListDto,
  })
  queryNodes(
    @CurrentCaller() caller: Caller,
    @ListParams() query: ListQuery,
    @ListDenials() denials: ItemDenials | undefined,
  ): Promise<TotalEnvelope<NodeListItemDto>> {
    return this.cluster.queryNodes(caller, query, denials);
  }

  @Route({
    method: 'GET',
    path: 'nodes/:nodeId',
    summary: 'Get a cluster node',
    access: { object: '/ClusterNodes/{nodeId}', action: 'Read' },
    response: NodeDto,
  })
  getNode(@CurrentCaller() caller: Caller, @Param('nodeId', new ResourceId('Cluster node')) nodeId: string): Promise<NodeDto> {
    return this.cluster.getNode(caller, nodeId);
  }

  @Route({
    method: 'POST',
    path: 'nodes/:nodeId/drain',
    summary: 'Drain or undrain a node',
    description: 'A draining node takes no new work; what runs there goes on.',
    access: { object: '/ClusterNodes/{nodeId}', action: 'Update' },
    response: NodeDto,
  })
  drainNode(@CurrentCaller() caller: Caller, @Param('nodeId', new ResourceId('Cluster node')) nodeId: string, @Body() body: DrainDto): Promise<NodeDto> {
    return this.cluster.drainNode(caller, nodeId, body.enable);
  }

  @Route({ method: 'GET', path: 'node-labels', summary: 'The labels of the nodes', access: { object: '/ClusterNodes', action: 'Read' }, response: [String] })
  nodeLabels(@CurrentCaller() caller: Caller): Promise<string[]> {
    return this.cluster.nodeLabels(caller);
  }

  @Route({
    method: 'GET',
    path: 'operating-systems',
    summary: 'The operating systems of the nodes',
    access: { object: '/ClusterNodes', action: 'Read' },
    response: [String],
  })
  operatingSystems(@CurrentCaller() caller: Caller): Promise<string[]> {
    return this.cluster.operatingSystems(caller);
  }

  @Route({
    method: 'GET',
    path: 'jobs',
    summary: 'Query jobs',
    description: 'The jobs in the namespaces where the caller may read them, and the caller’s own jobs wherever they are.',
    access: { object: '/ClusterJobs', action: 'Read', namespaced: true, self: { owned: true } },
    list: JOB_LIST_QUERY,
    response: JobListDto,
  })
  queryJobs(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<TotalEnvelope<JobListItemDto>> {
    return this.cluster.queryJobs(caller, query, scope);
  }

  @Route({
    method: 'POST',
    path: 'jobs',
    status: 201,
    summary: 'Submit a batch job',
    description:
      'Needs Create on /ClusterJobs in the namespace, and Use there on the execution profile, which must be bound to the namespace. The job waits (pending) until a node meets the profile’s constraints and has a free CPU.',
    access: { object: '/ClusterJobs', action: 'Create', namespace: { body: 'namespace' } },
    response: JobDto,
  })
  submitJob(@CurrentCaller() caller: Caller, @Body() body: SubmitJobDto): Promise<JobDto> {
    return this.cluster.submit(caller, body);
  }

  @Route({
    method: 'GET',
    path: 'jobs/:jobId',
    summary: 'Get a job',
    description: `Exactly the job-detail fields; its executions are listed by GET /cluster/executions?filter[jobId][EQ]=. ${OWN}`,
    access: { object: '/ClusterJobs/{jobId}', action: 'Read', namespace: JOB, self: { owner: true } },
    query: { 'page[offset]': 'Accepted, as the interface lists it; the job detail has no list to page', 'page[limit]': 'Accepted likewise' },
    response: JobDto,
  })
  getJob(@CurrentCaller() caller: Caller, @Param('jobId', new ResourceId('Job')) jobId: string, @Query() query: Record<string, unknown>): Promise<JobDto> {
    return this.cluster.getJob(caller, jobId, query);
  }

  @Route({
    method: 'POST',
    path: 'jobs/:jobId/stop',
    summary: 'Stop a job',
    description: `Its pending executions never start; its running ones are killed with their whole process group; the job is then dead. ${OWN}`,
    access: { object: '/ClusterJobs/{jobId}', action: 'Update', namespace: JOB, self: { owner: true } },
    response: JobDto,
  })
  stopJob(@CurrentCaller() caller: Caller, @Param('jobId', new ResourceId('Job')) jobId: string): Promise<JobDto> {
    return this.cluster.stop(caller, jobId);
  }

  @Route({
    method: 'GET',
    path: 'executions',
    summary: 'Query job executions',
    description: 'Executions of the jobs the caller may read, and of the caller’s own jobs.',
    access: { object: '/ClusterJobs', action: 'Read', namespaced: true, self: { owned: true } },
    list: EXECUTION_LIST_QUERY,
    response: ExecutionListDto,
  })
  queryExecutions(
    @CurrentCaller() caller: Caller,
    @ListParams() query: ListQuery,
    @ListScope() scope: NamespaceScope,
  ): Promise<TotalEnvelope<ExecutionListItemDto>> {
    return this.cluster.queryExecutions(caller, query, scope);
  }

  @Route({
    method: 'GET',
    path: 'executions/:jobExecutionId',
    summary: 'Get a job execution, with its task states',
    description: `Checked as its job: Read on /ClusterJobs/<job id>. ${OWN}`,
    access: { object: '/ClusterJobs/{jobExecutionId}', action: 'Read', namespace: EXECUTION, self: { owner: true } },
    response: ExecutionDto,
  })
  getExecution(@CurrentCaller() caller: Caller, @Param('jobExecutionId', new ResourceId('Job execution')) id: string): Promise<ExecutionDto> {
    return this.cluster.getExecution(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'executions/:jobExecutionId/tasks/:taskName/logs/:logname',
    summary: "Read a window of a task's log",
    description: `logname is stdout or stderr; the reply's msg is the window's text. ${RAW} Checked as its job. ${OWN}`,
    access: { object: '/ClusterJobs/{jobExecutionId}', action: 'Read', namespace: EXECUTION, self: { owner: true } },
    query: WINDOW,
    bytes: true,
  })
  readLog(
    @CurrentCaller() caller: Caller,
    @Param('jobExecutionId', new ResourceId('Job execution')) id: string,
    @Param('taskName') taskName: string,
    @Param('logname') logName: string,
    @Query() window: Record<string, unknown>,
  ): Promise<ByteWindowReply> {
    return this.cluster.readLog(caller, id, taskName, logName, window);
  }

  @Route({
    method: 'GET',
    path: 'executions/:jobExecutionId/files',
    summary: "Read a window of a file in an execution's working directory, or list a directory",
    description: `path is relative to the working directory (empty: the directory itself); .., absolute paths and links out of it are refused. ${RAW} Checked as its job. ${OWN}`,
    access: { object: '/ClusterJobs/{jobExecutionId}', action: 'Read', namespace: EXECUTION, self: { owner: true } },
    query: { path: 'A path relative to the working directory', offset: WINDOW.offset, limit: WINDOW.limit },
    bytes: true,
  })
  readFile(
    @CurrentCaller() caller: Caller,
    @Param('jobExecutionId', new ResourceId('Job execution')) id: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ByteWindowReply> {
    return this.cluster.readFile(caller, id, query);
  }
}
