-- 0010: webhooks (issue 17 §4, docs/webhooks.md). An admin registers endpoints per tenant;
-- every memory event writes one delivery row per subscribed endpoint in the transaction of
-- what it announces (the outbox), and the worker delivers them, signed, with retries and a
-- dead-letter state.
--
-- tenant_id leads every primary key, unique constraint and foreign key: the tables can be
-- distributed by tenant_id (Citus) and colocated with the rest.

CREATE TABLE webhook_endpoints (
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  id uuid NOT NULL,
  url text NOT NULL,
  description text,
  events text[] NOT NULL,               -- the event types it receives
  secret_enc bytea NOT NULL,            -- AES-GCM under a key derived from MEMGATE_SECRET
  previous_secret_enc bytea,            -- the secret before the last rotation ...
  previous_until timestamptz,           -- ... which also signs deliveries until then
  created_by uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);

-- One message to one endpoint. Its id is the `webhook-id` header: the same on every attempt
-- and on a replay, so receivers dedupe. `payload` is the body as sent: ids and metadata only.
CREATE TABLE webhook_deliveries (
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  event_type text NOT NULL,
  user_id text,
  payload jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_status integer,                  -- the receiver's HTTP status of the last attempt
  last_error text,                      -- a code (timeout, connect_error, http_500...), never a body
  delivered_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, endpoint_id) REFERENCES webhook_endpoints (tenant_id, id)
    ON DELETE CASCADE
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
  WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (tenant_id, endpoint_id, id);
CREATE INDEX webhook_deliveries_state ON webhook_deliveries (tenant_id, state, id);

DO $$
DECLARE t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['webhook_endpoints', 'webhook_deliveries'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = memgate_tenant()) '
                   'WITH CHECK (tenant_id = memgate_tenant())', t);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO memgate_app', t);
  END LOOP;
END
$$;

-- The dispatcher finds due deliveries across tenants (ids and tenants only), then claims
-- them inside each tenant's own transaction, under RLS like the API. PL/pgSQL, not SQL:
-- Citus cannot plan a SQL function's parameterised statement over a distributed table
-- (the same reason as the relay's functions in 0011).
CREATE FUNCTION memgate_due_webhooks(p_limit integer, p_now timestamptz)
RETURNS TABLE (id uuid, tenant_id uuid)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  SELECT d.id, d.tenant_id FROM webhook_deliveries d
  WHERE d.state = 'pending' AND d.next_attempt_at <= p_now
  ORDER BY d.next_attempt_at LIMIT p_limit;
END
$$;
REVOKE ALL ON FUNCTION memgate_due_webhooks(integer, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memgate_due_webhooks(integer, timestamptz) TO memgate_app;
