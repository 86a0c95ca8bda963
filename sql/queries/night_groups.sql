-- Alert groups a night can join or close: those of the series' open alerts, and those of the
-- baseline whose nights overlap the window.
SELECT * FROM omni.alert
WHERE kind = 'group'
  AND (alert_id = ANY(%(ids)s)
       OR (split_part(alert_key, '|', 3) = %(baseline)s
           AND range_from < %(last)s AND %(first)s < range_to))
ORDER BY alert_id
