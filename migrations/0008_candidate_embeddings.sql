-- 0008: a pending candidate keeps the embedding of its statement (promote.paraphrase_similarity).
--
-- A repeat in other words ("I prefer dark mode in every editor" / "I like dark mode in all
-- my editors") has another match key; with the vector stored, the write path finds the
-- candidate it repeats (same user, scope, type and predicate, cosine similarity at least
-- the policy's threshold, the same information) and counts the turn there. Promotion then
-- reuses the vector instead of embedding the statement a second time.
--
-- The vector lives only while the candidate is pending: promotion, rejection, expiry and
-- deletion clear it (a promoted candidate's vector is its fact's). No fixed dimension, as
-- for facts (embedders can change); a vector of another model is never compared.
ALTER TABLE candidates ADD COLUMN embedding vector, ADD COLUMN embedding_model text;
ALTER TABLE candidates ALTER COLUMN embedding SET STORAGE MAIN;
