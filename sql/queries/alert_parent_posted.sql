-- A delivered opening post: the alert's parent message, and the thread its replies go to (its
-- own, or its group's when it was posted as a reply there).
UPDATE omni.alert SET parent_ts = %(ts)s, channel = %(channel)s,
                      thread_ts = coalesce(%(thread)s, %(ts)s)
WHERE alert_id = %(alert_id)s
