-- On-demand A/B runs (omni-tasks ab, the omni_ab DAG) are their own trigger: a night's gate
-- never reads them (nightly_runs.sql), and neither does it read a bisection's subset runs.
ALTER TABLE omni.run DROP CONSTRAINT run_trigger_check;
ALTER TABLE omni.run ADD CONSTRAINT run_trigger_check
    CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import', 'ab'));
