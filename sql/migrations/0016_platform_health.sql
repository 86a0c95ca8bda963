-- The platform watching itself (the fleet dashboard's "Platform health" panel): the Slack
-- outbox's backlog, and how long ago each Buildkite pipeline's sync last imported a run.
CREATE VIEW omni.v_outbox_backlog AS
SELECT count(*) FILTER (WHERE state IN ('pending', 'sending')) AS pending,
       count(*) FILTER (WHERE state = 'failed') AS failed,
       min(created_at) FILTER (WHERE state IN ('pending', 'sending')) AS oldest_pending_at
FROM omni.alert_outbox;

CREATE VIEW omni.v_sync_staleness AS
SELECT source -> 'buildkite' ->> 'pipeline' AS pipeline,
       max((source -> 'buildkite' ->> 'build')::bigint) AS last_build,
       max(created_at) AS last_imported_at,
       round((extract(epoch FROM now() - max(created_at)) / 3600)::numeric, 1) AS hours_since
FROM omni.run
WHERE trigger = 'import' AND source ? 'buildkite'
GROUP BY 1;

GRANT SELECT ON omni.v_outbox_backlog, omni.v_sync_staleness TO omni_reader;
