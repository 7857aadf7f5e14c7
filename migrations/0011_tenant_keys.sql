-- 0011: tenant_id leads every primary key of a tenant table (issue 18, docs/scaling.md);
-- the relay's functions in PL/pgSQL (end of file).
--
-- A table distributed by tenant_id (Citus) can only enforce a primary key or a unique
-- constraint that contains tenant_id: each shard checks its own rows. The same keys on a
-- single node cost nothing (ids are random uuids or a sequence: they never collide across
-- tenants) and keep one schema for both. Lookups by id alone still use these indexes: RLS
-- adds tenant_id = memgate_tenant() to every query of the application role.
--
-- Unchanged: `tenants` and `api_keys` become reference tables on Citus (app/store/migrate.py,
-- REFERENCE_TABLES), whose keys need no tenant; idempotency and user_state already lead
-- with tenant_id; every foreign key points at tenants(id), a reference table.
-- The distribution itself is not here: app/store/migrate.py does it when the database has
-- the citus extension, after every migration, so a table added later is distributed too.

ALTER TABLE facts DROP CONSTRAINT facts_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE candidates DROP CONSTRAINT candidates_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE tombstones DROP CONSTRAINT tombstones_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE audit_events DROP CONSTRAINT audit_events_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE recall_log DROP CONSTRAINT recall_log_pkey, ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE fact_hits DROP CONSTRAINT fact_hits_pkey, ADD PRIMARY KEY (tenant_id, fact_id);

-- The relay's cross-tenant views as PL/pgSQL: Citus cannot plan a SQL function's statement
-- with parameters over a distributed table (a PL/pgSQL function's statements it can).
-- Same bodies and rights as in 0001 and 0002.
CREATE OR REPLACE FUNCTION memgate_relay_jobs(p_limit integer, p_queued_before timestamptz,
                                              p_running_before timestamptz)
RETURNS TABLE (id uuid, tenant_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
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
   ORDER BY j.updated_at LIMIT p_limit);
END
$$;

CREATE OR REPLACE FUNCTION memgate_unrelayed_jobs(p_limit integer, p_older_than interval)
RETURNS TABLE (id uuid, tenant_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT j.id, j.tenant_id FROM jobs j
  WHERE j.state = 'queued' AND (j.enqueued_at IS NULL OR j.enqueued_at < now() - p_older_than)
  ORDER BY j.created_at LIMIT p_limit;
END
$$;
