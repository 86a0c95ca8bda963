-- A new open alert; a group (its members join it next, join_group.sql) has a range of nights
-- and no details.
INSERT INTO omni.alert (
    alert_key, kind, state, opened_nightly, last_nightly, details, range_from, range_to
)
VALUES (
    %(alert_key)s, %(kind)s, 'open', %(nightly)s, %(nightly)s,
    coalesce(%(details)s::jsonb, '{}'::jsonb), %(range_from)s, %(range_to)s
)
RETURNING alert_id
