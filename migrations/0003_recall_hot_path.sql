-- 0003: the recall hot path at 1M facts (issue 4).

-- Keep a fact's embedding and text in its row.
-- A 512-d vector is 2 KB, and PostgreSQL toasts any row over 2 KB: every vector (pgvector
-- defaults to EXTERNAL storage) lived in the TOAST table, so the dense channel paid a
-- TOAST index descent and a TOAST page per fact of the pool (measured at 1M facts over
-- 5k users: 2.7 ms of PostgreSQL CPU per recall, most of it reading those pages).
-- Only MAIN storage for the vector is not enough: the toaster then moves the statement,
-- search text and tsvector out instead, trying to get the row under 2 KB.
-- So: toast a facts row only past a full page (8160 bytes, the largest target), and when
-- a row is that big (long value JSON, 3072-d vectors), move the text columns out first
-- and the vector last (MAIN).
-- Applies to rows written from now on. Older rows keep their toasted vector (correct,
-- only slower) until the row is rewritten, e.g. by re-embedding to another model.
ALTER TABLE facts SET (toast_tuple_target = 8160);
ALTER TABLE facts ALTER COLUMN embedding SET STORAGE MAIN;

-- Recall hit counters live in their own narrow table. Bumping `hits` on the facts row
-- wrote a new 2.7 KB version of every injected fact (rows that wide never fit a HOT
-- update on their page) plus an entry in each of the table's nine indexes, GIN included,
-- for every recall. Here an update touches a 60-byte row and no index (HOT).
-- No foreign key to facts: checking it locked the facts row of every first hit (a write
-- to that page and to the WAL), most of the counter's cost. Facts are tombstoned, not
-- removed; the one hard delete (forget-me) removes the user's counters with them.
CREATE TABLE fact_hits (
  fact_id uuid PRIMARY KEY,
  tenant_id uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
  hits integer NOT NULL,
  last_hit_at timestamptz NOT NULL
) WITH (fillfactor = 70);
INSERT INTO fact_hits (fact_id, tenant_id, hits, last_hit_at)
  SELECT id, tenant_id, hits, coalesce(last_hit_at, updated_at) FROM facts WHERE hits > 0;
ALTER TABLE facts DROP COLUMN hits, DROP COLUMN last_hit_at;
ALTER TABLE fact_hits ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fact_hits USING (tenant_id = memgate_tenant())
  WITH CHECK (tenant_id = memgate_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON fact_hits TO memgate_app;
