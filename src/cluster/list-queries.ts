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
});

/** What `GET /cluster/jobs` accepts; columns are over the alias `job`. */
export const JOB_LIST_QUERY = defineListQuery({
  filters: {
    name: { column: 'job.name', type: 'string', operators: ['ST', 'CO'] },
    status: { column: 'job.status', type: JOB_STATUSES, operators: ['EQ', 'IN'] },
    type: { column: 'job.type', type: JOB_TYPES, operators: ['EQ'] },
    submitTime: { column: 'job.submit_time', type: 'datetime', operators: ['LT', 'GT'] },
  },
  sorts: { name: 'lower(job.name)', status: 'job.status', type: 'job.type', submitTime: 'job.submit_time' },
  defaultSort: '-submitTime',
  tieBreaker: 'job.id',
});

/** What `GET /cluster/executions` accepts: executions as the derived table `execution`. */
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
});
