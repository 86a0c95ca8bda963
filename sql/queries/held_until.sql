-- When the last held opening post may go out (NULL: none is held); given a series, the last
-- of its alerts' posts (each held by its own hold, or its group's once in one).
SELECT max(coalesce(g.hold_until, a.hold_until)) AS until
FROM omni.alert_outbox o
JOIN omni.alert a ON a.alert_id = o.alert_id
LEFT JOIN omni.alert g ON g.alert_id = a.group_id
WHERE o.state IN ('pending', 'sending') AND o.kind = 'post'
  AND coalesce(g.hold_until, a.hold_until) > now()
  AND (%(benchmark)s::text IS NULL OR split_part(a.alert_key, '|', 1) = %(benchmark)s)
  AND (%(model)s::text IS NULL OR split_part(a.alert_key, '|', 2) = %(model)s)
  AND (%(lane)s::text IS NULL OR split_part(a.alert_key, '|', 3) = %(lane)s)
