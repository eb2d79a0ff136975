import { defineListQuery } from '../common/query/list-query.js';
import { JOB_STATUSES, JOB_TYPES } from './entities/cluster-job.entity.js';
import { EXECUTION_STATUSES } from './entities/job-execution.entity.js';
import { NODE_STATUSES } from './entities/cluster-node.entity.js';

/** What `GET /cluster/nodes` accepts (hub-interface §4.11); columns are over the alias `node`. */
export const NODE_LIST_QUERY = defineListQuery({
  filters: {
    status: { column: 'node.status', type: NODE_STATUSES, operators: ['EQ', 'IN'] },
    isWorker: { column: 'node.is_worker', type: 'boolean', operators: ['EQ'] },
    isServer: { column: 'node.is_server', type: 'boolean', operators: ['EQ'] },
    nodeLabels: { column: 'node.labels', type: 'string[]', operators: ['ALL', 'ANY'] },
  },
  sorts: { id: 'node.id', name: 'node.name', address: 'node.address', status: 'node.status' },
  defaultSort: 'name',
  tieBreaker: 'node.id',
  small: 'the nodes of the cluster the hub drives: hundreds at most',
});

/** Names sort and match by prefix lower-cased, byte by byte: one btree index serves both. */
const JOB_NAME_KEY = 'lower(job.name) COLLATE "C"';

/**
 * What `GET /cluster/jobs` accepts; columns are over the alias `job`. `total` comes from the counts
 * per namespace, owner, status and type unless another filter is given.
 */
export const JOB_LIST_QUERY = defineListQuery({
  filters: {
    name: { column: 'job.name', type: 'string', operators: ['ST', 'CO'], prefixColumn: JOB_NAME_KEY },
    status: { column: 'job.status', type: JOB_STATUSES, operators: ['EQ', 'IN'] },
    type: { column: 'job.type', type: JOB_TYPES, operators: ['EQ'] },
    submitTime: { column: 'job.submit_time', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: JOB_NAME_KEY, status: 'job.status', type: 'job.type', submitTime: 'job.submit_time' },
  defaultSort: '-submitTime',
  tieBreaker: 'job.id',
  indexes: {
    sorts: {
      name: 'cluster_jobs_name_lower_idx',
      status: 'cluster_jobs_status_idx',
      type: 'cluster_jobs_type_idx',
      submitTime: 'cluster_jobs_submit_time_idx',
    },
    filters: {
      name: ['cluster_jobs_name_lower_idx', 'cluster_jobs_name_trgm_idx'],
      status: ['cluster_jobs_status_submit_time_idx', 'cluster_jobs_status_idx'],
      type: { unindexed: 'two values, each a large share of the jobs: the index of the sort finds a page sooner' },
      submitTime: 'cluster_jobs_submit_time_idx',
    },
    ordered: [
      { filter: 'submitTime', operators: ['LT', 'GT'], sorts: ['submitTime'] },
      { filter: 'status', operators: ['EQ'], sorts: ['submitTime', 'status'] },
      { filter: 'type', operators: ['EQ'], sorts: ['type'] },
      { filter: 'name', operators: ['ST'], sorts: ['name'] },
    ],
  },
  counts: [{ table: 'cluster_job_counts', filters: { status: 'status', type: 'type' }, namespace: 'namespace_id', owner: 'owner_id' }],
});

/**
 * What `GET /cluster/executions` accepts: executions as the derived table `execution`. `total`
 * comes from the counts per namespace, owner and status, or per node besides for a request that
 * names the node, unless another filter is given.
 */
export const EXECUTION_LIST_QUERY = defineListQuery({
  filters: {
    jobId: { column: 'execution."jobId"', type: 'uuid', operators: ['EQ'] },
    nodeId: { column: 'execution."nodeId"', type: 'uuid', operators: ['EQ'] },
    status: { column: 'execution."status"', type: EXECUTION_STATUSES, operators: ['EQ', 'IN'] },
    creationTime: { column: 'execution."creationTime"', type: 'datetime', operators: ['LT', 'GT'] },
    modifiedTime: { column: 'execution."modifiedTime"', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { creationTime: 'execution."creationTime"', modifiedTime: 'execution."modifiedTime"' },
  defaultSort: '-creationTime',
  tieBreaker: 'execution."id"',
  indexes: {
    sorts: { creationTime: 'job_executions_created_idx', modifiedTime: 'job_executions_modified_idx' },
    filters: {
      jobId: 'job_executions_job_status_idx',
      nodeId: 'job_executions_node_created_idx',
      status: 'job_executions_status_created_idx',
      creationTime: 'job_executions_created_idx',
      modifiedTime: 'job_executions_modified_idx',
    },
  },
  counts: [
    { table: 'job_execution_counts', filters: { status: 'status' }, namespace: 'namespace_id', owner: 'owner_id' },
    { table: 'job_execution_node_counts', filters: { nodeId: 'node_id', status: 'status' }, namespace: 'namespace_id', owner: 'owner_id' },
  ],
});
