-- A series' open alerts, and per key the last one a person closed (triage.CLOSING's statuses).
SELECT * FROM omni.alert
WHERE left(alert_key, length(%(prefix)s)) = %(prefix)s AND kind <> 'group' AND state = 'open'
UNION ALL
SELECT * FROM (
    SELECT DISTINCT ON (alert_key) * FROM omni.alert
    WHERE left(alert_key, length(%(prefix)s)) = %(prefix)s AND state = 'resolved'
      AND details -> 'triage' ->> 'status' IN ('invalid', 'duplicate', 'downstream', 'ignored')
    ORDER BY alert_key, alert_id DESC
) closed
