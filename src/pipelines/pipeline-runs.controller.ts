import { Body, Controller, Param, Query } from '@nestjs/common';
import { ApiTags } from '../common/http/openapi-decorators.js';
import { ListScope, type NamespaceScope } from '../common/http/access-scope.js';
import type { ByteWindowReply } from '../common/http/byte-reply.js';
import { CurrentCaller, type Caller } from '../common/http/caller.js';
import { MessageDto } from '../common/http/message.dto.js';
import { Route } from '../common/http/route.decorator.js';
import { ListParams, ResourceId } from '../common/http/route-params.js';
import type { ListQuery } from '../common/query/list-query.js';
import {
  NodeStatusDto,
  PipelineRunDto,
  PipelineRunInputDto,
  PipelineRunListDto,
  ResultEntryDto,
  ResultMetadataDto,
  RunStatusDto,
  SubmitPipelineDto,
  SubmittedRunDto,
  type PipelineRunListItemDto,
} from './dto/pipeline-run.dto.js';
import { PIPELINE_RUN_LIST_QUERY } from './list-queries.js';
import { PipelineRunsService } from './pipeline-runs.service.js';

const RUN = { resource: 'pipelineRun', param: 'pipelineRunId' } as const;
const OWN = 'Their owner may do this without the permission.';
const runId = new ResourceId('Pipeline run');
const WINDOW = {
  origin: 'start (default) or end: where offset counts from',
  offset: 'Bytes from the origin (int64, default 0)',
  limit: 'Bytes to read (1 to 16777216, default 65536)',
};

@ApiTags('Pipelines')
@Controller('api/v2/pipelines')
export class PipelineRunsController {
  constructor(private readonly runs: PipelineRunsService) {}

  @Route({
    method: 'POST',
    path: 'entries/:id/submit',
    status: 201,
    summary: 'Submit a pipeline',
    description:
      "Starts a run of the stored pipeline under an execution profile bound to its namespace, which the caller may Use there. A spec that validate finds problems in, a profile unknown, unbound or not usable, or a node's envVars that name a variable the profile sets is a 400 whose `errors` lists every problem as a string; nothing is created. Needs Execute on the pipeline.",
    access: { object: '/Pipelines/{id}', action: 'Execute', namespace: { resource: 'pipelineEntry', param: 'id' } },
    response: SubmittedRunDto,
  })
  submitPipeline(
    @CurrentCaller() caller: Caller,
    @Param('id', new ResourceId('Pipeline entry')) id: string,
    @Body() body: SubmitPipelineDto,
  ): Promise<SubmittedRunDto> {
    return this.runs.submit(caller, id, body.executionProfileId);
  }

  @Route({
    method: 'GET',
    path: 'runs',
    summary: 'Query pipeline runs',
    description:
      'The runs in the namespaces where the caller may read them, and the caller’s own runs wherever they are; newest first unless sorted. `{data}` only.',
    access: { object: '/PipelineRuns', action: 'Read', namespaced: true, self: { owned: true } },
    list: PIPELINE_RUN_LIST_QUERY,
    response: PipelineRunListDto,
  })
  queryRuns(@CurrentCaller() caller: Caller, @ListParams() query: ListQuery, @ListScope() scope: NamespaceScope): Promise<{ data: PipelineRunListItemDto[] }> {
    return this.runs.query(caller, query, scope);
  }

  @Route({
    method: 'POST',
    path: 'runs',
    status: 201,
    summary: 'Create a run from a spec',
    description:
      'An ad hoc run in `namespace` (`default` when absent). Needs Execute on /Pipelines and Use on the execution profile there; refusals are as for submit, and an `entryPoint` that names no node is one.',
    access: { object: '/Pipelines', action: 'Execute', namespace: { body: 'namespace', default: 'default' } },
    response: PipelineRunDto,
  })
  createRun(@CurrentCaller() caller: Caller, @Body() body: PipelineRunInputDto): Promise<PipelineRunDto> {
    return this.runs.create(caller, body);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId',
    summary: 'Get a pipeline run',
    description: OWN,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    response: PipelineRunDto,
  })
  getRun(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string): Promise<PipelineRunDto> {
    return this.runs.get(caller, id);
  }

  @Route({
    method: 'DELETE',
    path: 'runs/:pipelineRunId',
    summary: 'Delete a pipeline run',
    description: `Beyond the interface: deletes a run that has ended, with its logs and results (409 for a run not ended). ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Delete', namespace: RUN, self: { owner: true } },
    response: MessageDto,
    errors: { 409: 'Pipeline run 5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11 has not ended (Executing); cancel it first' },
  })
  deleteRun(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string): Promise<MessageDto> {
    return this.runs.delete(caller, id);
  }

  @Route({
    method: 'POST',
    path: 'runs/:pipelineRunId/cancel',
    summary: 'Cancel a pipeline run',
    description: `Running nodes are stopped and end Cancelled (their jobs dead), waiting ones end Cancelled, and the run Cancelled; the reply comes once every job is recorded dead. A run that has ended is 409. ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Update', namespace: RUN, self: { owner: true } },
    response: RunStatusDto,
    errors: { 409: 'Pipeline run 5f0c6a1e-4b8e-4a5e-9a55-0d7f3c1c2b11 has already ended (Succeeded); only a run not ended can be cancelled' },
  })
  cancelRun(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string): Promise<RunStatusDto> {
    return this.runs.cancel(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/status',
    summary: 'Get the status of a pipeline run',
    description: OWN,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    response: RunStatusDto,
  })
  getRunStatus(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string): Promise<RunStatusDto> {
    return this.runs.status(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/results',
    summary: 'List the results of a pipeline run',
    description: `By node name, the results each node stored. ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    responseSchema: { type: 'object', additionalProperties: { type: 'array', items: { $ref: '#/components/schemas/ResultEntryDto' } } },
  })
  listRunResults(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string): Promise<Record<string, ResultEntryDto[]>> {
    return this.runs.runResults(caller, id);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/nodes/:nodeName/status',
    summary: 'Get the status of a node of a pipeline run',
    description: `A name that is no node of the run is 404. ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    response: NodeStatusDto,
  })
  getNodeStatus(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string, @Param('nodeName') nodeName: string): Promise<NodeStatusDto> {
    return this.runs.nodeStatus(caller, id, nodeName);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/nodes/:nodeName/logs/:logType',
    summary: "Read a window of a node's log",
    description: `logType is stdout or stderr, of the node's latest attempt; kept in the hub's store once the node has ended. With \`Accept: application/octet-stream\` the reply is the window's exact bytes. ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    query: WINDOW,
    bytes: true,
  })
  getNodeLog(
    @CurrentCaller() caller: Caller,
    @Param('pipelineRunId', runId) id: string,
    @Param('nodeName') nodeName: string,
    @Param('logType') logType: string,
    @Query() window: Record<string, unknown>,
  ): Promise<ByteWindowReply> {
    return this.runs.nodeLog(caller, id, nodeName, logType, window);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/nodes/:nodeName/results',
    summary: 'List the results of a node',
    description: OWN,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    response: [ResultEntryDto],
  })
  listNodeResults(@CurrentCaller() caller: Caller, @Param('pipelineRunId', runId) id: string, @Param('nodeName') nodeName: string): Promise<ResultEntryDto[]> {
    return this.runs.nodeResults(caller, id, nodeName);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/nodes/:nodeName/results/:resultName',
    summary: "Read a node's result",
    description: `\`{msg}\`: a window of the result's bytes read as UTF-8 (invalid sequences replaced), or its exact bytes with \`Accept: application/octet-stream\`; with \`raw=true\`, the whole result as its stored content type. ${OWN}`,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    query: { ...WINDOW, raw: 'true: the whole result, its exact bytes, as its content type' },
    bytes: { rawAnyType: 'with raw=true, the whole result as its stored content type' },
  })
  getNodeResult(
    @CurrentCaller() caller: Caller,
    @Param('pipelineRunId', runId) id: string,
    @Param('nodeName') nodeName: string,
    @Param('resultName') resultName: string,
    @Query() query: Record<string, unknown>,
  ): Promise<ByteWindowReply> {
    return this.runs.resultContent(caller, id, nodeName, resultName, query);
  }

  @Route({
    method: 'GET',
    path: 'runs/:pipelineRunId/nodes/:nodeName/results/:resultName/metadata',
    summary: "Get a node's result's metadata",
    description: OWN,
    access: { object: '/PipelineRuns/{pipelineRunId}', action: 'Read', namespace: RUN, self: { owner: true } },
    response: ResultMetadataDto,
  })
  getNodeResultMetadata(
    @CurrentCaller() caller: Caller,
    @Param('pipelineRunId', runId) id: string,
    @Param('nodeName') nodeName: string,
    @Param('resultName') resultName: string,
  ): Promise<ResultMetadataDto> {
    return this.runs.resultMetadata(caller, id, nodeName, resultName);
  }
}
