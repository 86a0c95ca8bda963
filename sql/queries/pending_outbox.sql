-- Messages to deliver: a group's own post first (its members' posts go into its thread), then
-- in order. An opening post is held while its triage delay runs (its group's, once in one).
SELECT o.message_id, o.idempotency_key, o.alert_id, o.kind, o.payload, o.state, o.attempts,
       (o.kind = 'post' AND coalesce(coalesce(g.hold_until, a.hold_until) > now(), false))
           AS held
FROM omni.alert_outbox o
LEFT JOIN omni.alert a ON a.alert_id = o.alert_id
LEFT JOIN omni.alert g ON g.alert_id = a.group_id
WHERE o.state IN ('pending', 'sending')
ORDER BY coalesce(o.kind = 'post' AND a.kind = 'group', false) DESC, o.message_id
