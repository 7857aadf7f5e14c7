-- 0009: the queue's state, for backpressure and /metrics (issue 19 §1).
--
-- Observations are refused (503 overloaded) while more observe jobs are queued than the
-- workers can do; the depth and the age of the oldest queued job are read across tenants
-- by one indexed query (ids and times only, SECURITY DEFINER as the relay's view).
CREATE INDEX jobs_queued ON jobs (kind, created_at) WHERE state = 'queued';

CREATE FUNCTION memgate_queue_state()
RETURNS TABLE (kind text, depth bigint, oldest timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
  SELECT j.kind, count(*), min(j.created_at) FROM jobs j
  WHERE j.state = 'queued' GROUP BY j.kind
$$;
REVOKE ALL ON FUNCTION memgate_queue_state() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_queue_state() TO memgate_app;
