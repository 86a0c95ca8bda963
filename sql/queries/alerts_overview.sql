-- Alerts (open first) with their triage status and how many of their messages are delivered;
-- each filter applies when given (a series' key starts `benchmark|model|lane|candidate|…`).
SELECT a.alert_id, a.alert_key, a.kind, a.state, a.details -> 'triage' ->> 'status' AS triage,
       a.opened_nightly, a.last_nightly, a.resolved_nightly, count(o.*) AS messages,
       count(o.*) FILTER (WHERE o.state <> 'sent') AS undelivered
FROM omni.alert a LEFT JOIN omni.alert_outbox o USING (alert_id)
WHERE (%(state)s::text IS NULL OR a.state = %(state)s)
  AND (%(benchmark)s::text IS NULL OR split_part(a.alert_key, '|', 1) = %(benchmark)s)
  AND (%(model)s::text IS NULL OR split_part(a.alert_key, '|', 2) = %(model)s)
  AND (%(lane)s::text IS NULL OR split_part(a.alert_key, '|', 3) = %(lane)s)
  AND (%(branch)s::text IS NULL OR split_part(a.alert_key, '|', 4) = %(branch)s)
  AND (%(since)s::date IS NULL OR a.last_nightly >= %(since)s)
GROUP BY a.alert_id
ORDER BY a.state, a.opened_nightly DESC
