-- Which of some alerts' opening posts are still pending (a group's can be rewritten).
SELECT DISTINCT alert_id FROM omni.alert_outbox
WHERE alert_id = ANY(%(ids)s) AND kind = 'post' AND state = 'pending'
