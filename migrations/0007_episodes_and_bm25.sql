-- 0007: episodic memory keeps when things happened; recall ranks keywords by BM25.
--
-- occurred_at: when the event took place (an episode's date; NULL when unknown or not an
-- event). keys: extra text written beside the statement to find it by (the turn before
-- it, keyphrases): indexed for recall, shown to the user, never injected.
ALTER TABLE facts ADD COLUMN occurred_at timestamptz, ADD COLUMN keys text[];
ALTER TABLE candidates ADD COLUMN occurred_at timestamptz, ADD COLUMN keys text[];

-- The full-text column stems English words ("researched" finds "research", "paintings"
-- finds "painting") and drops English stop words. Chinese words come segmented in
-- search_text and pass unchanged. The column is regenerated from search_text, so facts
-- written before this migration are re-indexed here.
DROP INDEX IF EXISTS facts_tsv;
ALTER TABLE facts DROP COLUMN tsv;
ALTER TABLE facts ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED;
CREATE INDEX facts_tsv ON facts USING gin (tsv);
