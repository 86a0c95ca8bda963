-- When the last held opening post may go out (NULL: none is held).
SELECT max(coalesce(g.hold_until, a.hold_until)) AS until
FROM omni.alert_outbox o
JOIN omni.alert a ON a.alert_id = o.alert_id
LEFT JOIN omni.alert g ON g.alert_id = a.group_id
WHERE o.state IN ('pending', 'sending') AND o.kind = 'post'
  AND coalesce(g.hold_until, a.hold_until) > now()
