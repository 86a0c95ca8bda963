-- Alerts (open first) with their group, triage status and how many of their messages are
-- delivered; each filter applies when given (a series' key starts `benchmark|model|lane|
-- candidate|…`; a group matches through any of its members' keys).
WITH keyed AS (
    SELECT a.alert_id, coalesce(m.alert_key, a.alert_key) AS k
    FROM omni.alert a
    LEFT JOIN omni.alert m ON a.kind = 'group' AND m.group_id = a.alert_id
)
SELECT a.alert_id, a.alert_key, a.kind, a.group_id, a.state,
       a.details -> 'triage' ->> 'status' AS triage,
       a.opened_nightly, a.last_nightly, a.resolved_nightly, count(o.*) AS messages,
       count(o.*) FILTER (WHERE o.state <> 'sent') AS undelivered
FROM omni.alert a LEFT JOIN omni.alert_outbox o USING (alert_id)
WHERE (%(state)s::text IS NULL OR a.state = %(state)s)
  AND (%(since)s::date IS NULL OR a.last_nightly >= %(since)s)
  AND a.alert_id IN (
      SELECT alert_id FROM keyed
      WHERE (%(benchmark)s::text IS NULL OR split_part(k, '|', 1) = %(benchmark)s)
        AND (%(model)s::text IS NULL OR split_part(k, '|', 2) = %(model)s)
        AND (%(lane)s::text IS NULL OR split_part(k, '|', 3) = %(lane)s)
        AND (%(branch)s::text IS NULL OR split_part(k, '|', 4) = %(branch)s))
GROUP BY a.alert_id
ORDER BY a.state, a.opened_nightly DESC, a.alert_id
