-- Another regression alert of this candidate/baseline pair (key benchmark|model|lane|candidate|
-- baseline|…) of another series or variant, in no group yet, whose nights overlap
-- (range_from, range_to]: the two form one.
SELECT * FROM omni.alert
WHERE kind = 'regression' AND group_id IS NULL
  AND alert_key <> (SELECT alert_key FROM omni.alert WHERE alert_id = %(alert_id)s)
  AND split_part(alert_key, '|', 4) = %(candidate)s
  AND split_part(alert_key, '|', 5) = %(baseline)s
  AND range_from < %(range_to)s AND %(range_from)s < range_to
ORDER BY state = 'open' DESC, alert_id DESC
LIMIT 1
FOR UPDATE
