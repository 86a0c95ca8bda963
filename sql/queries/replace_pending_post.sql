-- An alert's opening post not yet sent, rewritten (a group that gained a member before it went
-- out); returns nothing once it is on its way.
UPDATE omni.alert_outbox SET payload = %(payload)s
WHERE alert_id = %(alert_id)s AND kind = 'post' AND state = 'pending'
RETURNING message_id
