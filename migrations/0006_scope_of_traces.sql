-- 0006: what a key may see of audit rows and session hints follows its scopes and its
-- sensitivity ceiling, as for facts (app/store/audit.py, app/store/recall.py).
-- Audit rows record the scope and sensitivity of what they are about. Rows written before
-- this migration have neither: reads take them from the fact or candidate the row names,
-- else from the scope in its detail, else global / normal.
ALTER TABLE audit_events ADD COLUMN scope text, ADD COLUMN sensitivity text;
-- The last session's hint is shown only to recalls that may read the session's scope.
-- A hint written before this migration has no known scope: it is dropped (a one-line
-- resume hint; the session's summary fact, which has its scope, stays).
ALTER TABLE user_state ADD COLUMN last_session_scope text;
UPDATE user_state SET last_session_hint = NULL WHERE last_session_hint IS NOT NULL;
