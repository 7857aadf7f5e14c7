-- memgate schema v1: tenants, keys, facts, candidates, tombstones, audit, outbox/jobs,
-- recall log, idempotency records, per-user state.
-- Every tenant table has tenant_id and row-level security keyed on the per-transaction
-- setting app.tenant_id; the application runs as role memgate_app, which RLS applies to.

CREATE EXTENSION IF NOT EXISTS vector;

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'memgate_app') THEN
    CREATE ROLE memgate_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END
$$;
-- The migrating user must be able to SET ROLE memgate_app (superusers always can).
DO $$
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    EXECUTE format('GRANT memgate_app TO %I', current_user);
  END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO memgate_app;

-- The tenant of the current transaction, NULL when unset (then RLS shows nothing).
CREATE OR REPLACE FUNCTION memgate_tenant() RETURNS uuid
LANGUAGE sql STABLE AS $$
  SELECT NULLIF(current_setting('app.tenant_id', true), '')::uuid
$$;

CREATE TABLE tenants (
  id uuid PRIMARY KEY,
  name text NOT NULL UNIQUE,
  policy_override jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('key', 'user_token')),
  name text,
  prefix text NOT NULL,                 -- first characters, for humans; never the secret
  key_hash bytea NOT NULL UNIQUE,       -- sha256 of the full key
  role text NOT NULL CHECK (role IN ('agent', 'ops', 'admin', 'user')),
  scopes text[],                        -- NULL = every scope
  max_sensitivity text NOT NULL DEFAULT 'personal',
  user_id text,                         -- user tokens only
  expires_at timestamptz,
  revoked_at timestamptz,
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'user_token') = (user_id IS NOT NULL))
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);
CREATE INDEX api_keys_user ON api_keys (tenant_id, user_id) WHERE user_id IS NOT NULL;

CREATE TABLE facts (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  scope text NOT NULL DEFAULT 'global',
  type text NOT NULL CHECK (type IN ('profile', 'semantic', 'episodic', 'procedural')),
  predicate text,
  value jsonb,
  value_key text,                       -- normalized predicate+value, for conflicts
  statement text NOT NULL,
  statement_key text NOT NULL,          -- normalized statement, for dedupe
  polarity smallint NOT NULL DEFAULT 1,
  source_kind text NOT NULL,
  source_trace_id text,
  source_turn_id text,
  source_evidence text,
  source_writer uuid,                   -- the key that wrote it
  confidence real NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
  sensitivity text NOT NULL DEFAULT 'normal',
  valid_from timestamptz NOT NULL,
  valid_to timestamptz,
  expires_at timestamptz,
  status text NOT NULL CHECK (status IN ('active', 'superseded', 'archived', 'deleted')),
  version integer NOT NULL DEFAULT 1,
  supersedes uuid,
  contested boolean NOT NULL DEFAULT false,
  observations integer NOT NULL DEFAULT 1,
  hits integer NOT NULL DEFAULT 0,
  last_hit_at timestamptz,
  last_observed_at timestamptz NOT NULL DEFAULT now(),
  feedback_up integer NOT NULL DEFAULT 0,
  feedback_down integer NOT NULL DEFAULT 0,
  weight real NOT NULL DEFAULT 1,       -- decay bookkeeping: only ever down-weights
  embedding vector,                     -- no fixed dimension: embedders can change
  embedding_model text,
  search_text text NOT NULL DEFAULT '', -- segmented words (Chinese has no spaces)
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED,
  policy_version text NOT NULL,
  archived_reason text,
  purged_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- The recall pool and conflict lookups go through the owner: cost follows the user's
-- own pool, never the table size.
CREATE INDEX facts_pool ON facts (tenant_id, user_id, status, scope);
CREATE INDEX facts_predicate ON facts (tenant_id, user_id, scope, predicate) WHERE predicate IS NOT NULL;
CREATE INDEX facts_statement_key ON facts (tenant_id, user_id, scope, statement_key);
CREATE INDEX facts_tsv ON facts USING gin (tsv);
CREATE INDEX facts_supersedes ON facts (supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX facts_expiry ON facts (expires_at) WHERE status = 'active' AND expires_at IS NOT NULL;
CREATE INDEX facts_deleted_unpurged ON facts (tenant_id) WHERE status = 'deleted' AND purged_at IS NULL;
CREATE INDEX facts_created ON facts (tenant_id, created_at);

CREATE TABLE candidates (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  scope text NOT NULL DEFAULT 'global',
  type text NOT NULL,
  predicate text,
  value jsonb,
  statement text NOT NULL,
  match_key text NOT NULL,              -- same candidate seen again = same key
  source_kind text NOT NULL,
  evidence text,
  trace_id text,
  confidence real NOT NULL,
  sensitivity text NOT NULL DEFAULT 'normal',
  reason text,                          -- why it waits (e.g. sensitive_needs_consent)
  observations integer NOT NULL DEFAULT 1,
  turn_keys text[] NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'promoted', 'rejected', 'expired', 'deleted')),
  fact_id uuid,
  policy_version text NOT NULL,
  expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX candidates_pending_key ON candidates (tenant_id, user_id, scope, match_key)
  WHERE status = 'pending';
CREATE INDEX candidates_user ON candidates (tenant_id, user_id, status, created_at);
CREATE INDEX candidates_expiry ON candidates (expires_at) WHERE status = 'pending';

CREATE TABLE tombstones (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  scope text NOT NULL,
  hash text NOT NULL,                   -- sha256 of normalized predicate+value or statement
  fact_id uuid,
  source_refs jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tombstones_lookup ON tombstones (tenant_id, user_id, scope, hash);

CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text,
  actor uuid,                           -- key id (NULL for system jobs)
  actor_role text,
  action text NOT NULL,                 -- write, update, delete, reject, cleanup, ...
  decision text,
  reason text,
  fact_id uuid,
  candidate_id uuid,
  source_kind text,
  trace_id text,
  policy_version text,
  detail jsonb NOT NULL DEFAULT '{}'::jsonb,   -- redacted: never a secret
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_user ON audit_events (tenant_id, user_id, id);
CREATE INDEX audit_time ON audit_events (tenant_id, created_at);

-- Jobs: the transactional outbox. A relay enqueues rows to arq; state lives here.
CREATE TABLE jobs (
  id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text,
  kind text NOT NULL,                   -- observe, reembed, cleanup, ...
  payload jsonb NOT NULL,               -- redacted before insert
  state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  enqueued_at timestamptz,              -- NULL: the relay has not handed it to arq yet
  decisions jsonb NOT NULL DEFAULT '[]'::jsonb,
  result jsonb,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_unrelayed ON jobs (created_at) WHERE enqueued_at IS NULL AND state = 'queued';
CREATE INDEX jobs_tenant ON jobs (tenant_id, created_at);

CREATE TABLE recall_log (
  id bigserial PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  trace_id text NOT NULL,
  user_id text NOT NULL,
  scope text,
  fact_ids uuid[] NOT NULL DEFAULT '{}',
  detail jsonb NOT NULL DEFAULT '{}'::jsonb,   -- channels, scores; never the query text
  tokens integer NOT NULL DEFAULT 0,
  tier text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recall_log_trace ON recall_log (tenant_id, trace_id);
CREATE INDEX recall_log_user ON recall_log (tenant_id, user_id);
CREATE INDEX recall_log_time ON recall_log (tenant_id, created_at);

CREATE TABLE idempotency (
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  key text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  body_hash text NOT NULL,
  status_code integer,                  -- NULL while the first request is in flight
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key, method, path)
);
CREATE INDEX idempotency_age ON idempotency (created_at);

CREATE TABLE user_state (
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  last_interaction_at timestamptz,
  last_session_id text,
  last_session_hint text,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, user_id)
);

-- Row-level security on every tenant table.
DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['api_keys', 'facts', 'candidates', 'tombstones', 'audit_events',
                           'jobs', 'recall_log', 'idempotency', 'user_state'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = memgate_tenant()) '
                   'WITH CHECK (tenant_id = memgate_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO memgate_app', t);
  END LOOP;
END
$$;
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants USING (id = memgate_tenant())
  WITH CHECK (id = memgate_tenant());
GRANT SELECT, UPDATE ON tenants TO memgate_app;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO memgate_app;

-- Key lookup by hash before any tenant is known. SECURITY DEFINER runs as the schema
-- owner (not subject to RLS), so the app role itself never bypasses row-level security.
CREATE FUNCTION memgate_lookup_key(p_hash bytea)
RETURNS TABLE (id uuid, tenant_id uuid, kind text, role text, scopes text[],
               max_sensitivity text, user_id text, expires_at timestamptz,
               revoked_at timestamptz)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT k.id, k.tenant_id, k.kind, k.role, k.scopes, k.max_sensitivity, k.user_id,
         k.expires_at, k.revoked_at
  FROM api_keys k WHERE k.key_hash = p_hash
$$;
REVOKE ALL ON FUNCTION memgate_lookup_key(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_lookup_key(bytea) TO memgate_app;

-- Workers sweep every tenant; they learn the tenant ids here and then work inside each
-- tenant's own transaction, under RLS like the API.
CREATE FUNCTION memgate_tenant_ids() RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT id FROM tenants ORDER BY id
$$;
REVOKE ALL ON FUNCTION memgate_tenant_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_tenant_ids() TO memgate_app;

-- The outbox relay finds unrelayed jobs across tenants (ids and tenants only).
CREATE FUNCTION memgate_unrelayed_jobs(p_limit integer, p_older_than interval)
RETURNS TABLE (id uuid, tenant_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT j.id, j.tenant_id FROM jobs j
  WHERE j.state = 'queued' AND (j.enqueued_at IS NULL OR j.enqueued_at < now() - p_older_than)
  ORDER BY j.created_at LIMIT p_limit
$$;
REVOKE ALL ON FUNCTION memgate_unrelayed_jobs(integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_unrelayed_jobs(integer, interval) TO memgate_app;

-- Memory count and growth per tenant for /metrics (aggregates only, no content).
CREATE FUNCTION memgate_fact_counts()
RETURNS TABLE (tenant_id uuid, status text, n bigint, last_day bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
  SELECT f.tenant_id, f.status, count(*),
         count(*) FILTER (WHERE f.created_at > now() - interval '1 day')
  FROM facts f GROUP BY f.tenant_id, f.status
$$;
REVOKE ALL ON FUNCTION memgate_fact_counts() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_fact_counts() TO memgate_app;
