-- The alert groups a series had a member in on a night (open then): the report lists them.
SELECT DISTINCT g.alert_id
FROM omni.alert g JOIN omni.alert m ON m.group_id = g.alert_id
WHERE g.kind = 'group'
  AND split_part(m.alert_key, '|', 1) = %(benchmark)s
  AND split_part(m.alert_key, '|', 2) = %(model)s
  AND split_part(m.alert_key, '|', 3) = %(lane)s
  AND g.opened_nightly <= %(nightly)s
  AND coalesce(g.resolved_nightly, 'infinity'::date) >= %(nightly)s
ORDER BY g.alert_id
