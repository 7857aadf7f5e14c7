-- 0005: an idempotency record belongs to the principal that made it (app/api/idempotency.py).
-- A stored answer is replayed only to the same key or user token; the header's text is
-- kept only as its sha256 (a caller may put anything in it); records of requests about a
-- user carry that user's id so forget-me removes them; a claim in flight holds a short
-- lease that its request renews, so a request that died frees its key within seconds.
-- Records written before this migration have no principal and cannot be bound to one:
-- they are dropped (they are a 24 h replay cache; a retry after the upgrade runs anew).
DELETE FROM idempotency;
ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;
ALTER TABLE idempotency
  ADD COLUMN principal_id uuid NOT NULL,
  ADD COLUMN user_id text,
  ADD COLUMN lease_until timestamptz,
  ADD COLUMN withheld boolean NOT NULL DEFAULT false,  -- the answer carried a secret
  ADD COLUMN claim_id uuid;  -- which request holds the claim (renew/settle only their own)
ALTER TABLE idempotency ADD PRIMARY KEY (tenant_id, principal_id, key, method, path);
CREATE INDEX idempotency_user ON idempotency (tenant_id, user_id) WHERE user_id IS NOT NULL;
