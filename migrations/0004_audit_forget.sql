-- 0004: forget-me events found without reading the audit trail around them.
-- The recall-log flusher asks, for every batch, whether a user in it was forgotten since
-- the batch's recalls (app/store/recall.py, FORGET_MARGIN). Every write leaves an audit
-- event, so a time range of the whole trail is thousands of rows under load; forget-me
-- events are rare, and this index holds only them. Built once here (a scan of
-- audit_events; writes wait for it).
CREATE INDEX audit_forget ON audit_events (tenant_id, created_at) WHERE action = 'forget_me';
