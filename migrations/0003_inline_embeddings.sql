-- 0003: keep a fact's embedding and text in its row (issue 4, recall at 1M facts).
--
-- A 512-d vector is 2 KB, and PostgreSQL toasts any row over 2 KB: every vector (pgvector
-- defaults to EXTERNAL storage) lived in the TOAST table, so the dense channel paid a
-- TOAST index descent and a TOAST page per fact of the pool (measured at 1M facts over
-- 5k users: 2.7 ms of PostgreSQL CPU per recall, most of it reading those pages).
-- Only MAIN storage for the vector is not enough: the toaster then moves the statement,
-- search text and tsvector out instead, trying to get the row under 2 KB.
-- So: toast a facts row only past a full page (8160 bytes, the largest target), and when
-- a row is that big (long value JSON, 3072-d vectors), move the text columns out first
-- and the vector last (MAIN).
-- Applies to rows written from now on; re-embedding (POST /v1/ops/reembed) rewrites the
-- vectors of existing ones.
ALTER TABLE facts SET (toast_tuple_target = 8160);
ALTER TABLE facts ALTER COLUMN embedding SET STORAGE MAIN;
