-- A new alert group; its members join it next (join_group.sql).
INSERT INTO omni.alert (alert_key, kind, state, opened_nightly, last_nightly, range_from, range_to)
VALUES (%(alert_key)s, 'group', 'open', %(nightly)s, %(nightly)s, %(range_from)s, %(range_to)s)
RETURNING alert_id
