-- 0007: episodic memory keeps when things happened; recall ranks keywords by BM25.
--
-- occurred_at: when the event took place (an episode's date; NULL when unknown or not an
-- event). keys: extra text written beside the statement to find it by (the turn before
-- it, keyphrases): indexed for recall, shown to the user, never injected.
ALTER TABLE facts ADD COLUMN occurred_at timestamptz, ADD COLUMN keys text[];
ALTER TABLE candidates ADD COLUMN occurred_at timestamptz, ADD COLUMN keys text[];

-- The full-text column stems English words ("researched" finds "research", "paintings"
-- finds "painting") and drops English stop words; Chinese words come segmented in
-- search_text and pass unchanged. search_text now also lists the characters of every
-- Chinese word of two or more (app/memory/text.py search_document): facts written
-- before this migration get them here, then the column is regenerated from search_text.
DROP INDEX IF EXISTS facts_tsv;
ALTER TABLE facts DROP COLUMN tsv;
UPDATE facts f SET search_text = f.search_text || ' ' || x.chars
FROM (
    SELECT id, string_agg(ch, ' ') AS chars
    FROM facts,
         regexp_split_to_table(search_text, '\s+') AS w,
         regexp_split_to_table(w, '') AS ch
    WHERE char_length(w) > 1 AND w ~ '[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]'
      AND ch ~ '[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]'
    GROUP BY id
) x
WHERE f.id = x.id;
ALTER TABLE facts ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED;
CREATE INDEX facts_tsv ON facts USING gin (tsv);
