\timing on
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job WHERE job.name ILIKE 'bulk-123%' ORDER BY job.submit_time DESC, job.id DESC LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT count(*) FROM cluster_jobs job WHERE job.name ILIKE 'bulk-123%';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job WHERE job.status = ANY('{running,pending}') ORDER BY job.submit_time DESC, job.id DESC LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job ORDER BY job.submit_time DESC, job.id DESC OFFSET 900000 LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job WHERE (job.namespace_id = ANY('{6c879c58-8618-4fd6-a1bb-31a0c32bdaf9}') OR job.owner_id = '0f8e075c-b48d-4449-9edc-5a1a8209a4ce') ORDER BY job.submit_time DESC, job.id DESC LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job WHERE (job.namespace_id = ANY('{6c879c58-8618-4fd6-a1bb-31a0c32bdaf9}') OR job.owner_id = '0f8e075c-b48d-4449-9edc-5a1a8209a4ce') AND job.status='running' ORDER BY job.submit_time DESC, job.id DESC LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job WHERE job.name ILIKE '%150000%' ORDER BY job.submit_time DESC, job.id DESC LIMIT 100;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT job.id FROM cluster_jobs job ORDER BY lower(job.name) ASC, job.id ASC LIMIT 1000;
