-- Alerts (open first) with their triage status and how many of their messages are delivered.
SELECT a.alert_id, a.alert_key, a.kind, a.state, a.details -> 'triage' ->> 'status' AS triage,
       a.opened_nightly, a.last_nightly, a.resolved_nightly, count(o.*) AS messages,
       count(o.*) FILTER (WHERE o.state <> 'sent') AS undelivered
FROM omni.alert a LEFT JOIN omni.alert_outbox o USING (alert_id)
GROUP BY a.alert_id
ORDER BY a.state, a.opened_nightly DESC
