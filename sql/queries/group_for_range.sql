-- The group a regression of this candidate/baseline pair joins: the newest whose range of nights
-- (range_from, range_to] overlaps the member's (open groups first; a resolved one reopens).
SELECT * FROM omni.alert
WHERE kind = 'group'
  AND split_part(alert_key, '|', 2) = %(candidate)s
  AND split_part(alert_key, '|', 3) = %(baseline)s
  AND range_from < %(range_to)s AND %(range_from)s < range_to
ORDER BY state = 'open' DESC, alert_id DESC
LIMIT 1
FOR UPDATE
