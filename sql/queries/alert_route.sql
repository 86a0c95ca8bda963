-- Where an alert's messages go: its own parent message and thread, and its group's (a member's
-- opening post goes into its group's thread).
SELECT a.kind, a.parent_ts, a.thread_ts, g.alert_id AS group_id, g.parent_ts AS group_ts
FROM omni.alert a LEFT JOIN omni.alert g ON g.alert_id = a.group_id
WHERE a.alert_id = %(alert_id)s
