-- 0002: bookkeeping for the workers (issue 5): tombstone purge progress, recall-log lookup
-- by fact id, and the relay's view of jobs a dead worker or a lost Redis left behind.

-- A deleted fact is "scrubbed" once its text is gone from every place that copied it
-- (recall log, idempotency records, audit details, candidates). Deletion itself erases
-- the facts row at once; the purge sweep does the rest and sets this.
ALTER TABLE facts ADD COLUMN scrubbed_at timestamptz;
CREATE INDEX facts_deleted_unscrubbed ON facts (tenant_id, id)
  WHERE status = 'deleted' AND scrubbed_at IS NULL;
CREATE INDEX recall_log_fact_ids ON recall_log USING gin (fact_ids);
CREATE INDEX candidates_fact ON candidates (tenant_id, fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX audit_fact ON audit_events (tenant_id, fact_id) WHERE fact_id IS NOT NULL;
CREATE INDEX jobs_stale_running ON jobs (updated_at) WHERE state = 'running';

-- Jobs the relay must (re)hand to arq (times come from the app's one clock): never enqueued, queued but enqueued long ago (Redis
-- lost them), or running with no progress for longer than any job may run (the worker
-- died and Redis lost the job too). Re-enqueueing is safe: arq dedupes on the job id and
-- a job that is done commits nothing twice.
CREATE FUNCTION memgate_relay_jobs(p_limit integer, p_queued_before timestamptz,
                                   p_running_before timestamptz)
RETURNS TABLE (id uuid, tenant_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  (SELECT j.id, j.tenant_id FROM jobs j
   WHERE j.state = 'queued' AND j.enqueued_at IS NULL
   ORDER BY j.created_at LIMIT p_limit)
  UNION ALL
  (SELECT j.id, j.tenant_id FROM jobs j
   WHERE j.state = 'queued' AND j.enqueued_at < p_queued_before
   ORDER BY j.enqueued_at LIMIT p_limit)
  UNION ALL
  (SELECT j.id, j.tenant_id FROM jobs j
   WHERE j.state = 'running' AND j.updated_at < p_running_before
   ORDER BY j.updated_at LIMIT p_limit)
$$;
REVOKE ALL ON FUNCTION memgate_relay_jobs(integer, timestamptz, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_relay_jobs(integer, timestamptz, timestamptz) TO memgate_app;
