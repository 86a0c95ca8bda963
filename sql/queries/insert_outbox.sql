-- A message to deliver; the idempotency key makes a re-planned night add nothing.
INSERT INTO omni.alert_outbox (idempotency_key, alert_id, kind, payload)
VALUES (%(idempotency_key)s, %(alert_id)s, %(kind)s, %(payload)s)
ON CONFLICT (idempotency_key) DO NOTHING
RETURNING message_id
