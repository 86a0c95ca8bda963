-- The concurrency experiment's runs (jobs/concurrency.py): the same items at each level, stored
-- as their own trigger so they are never a night's run, and as variants `cN` of their branch.
ALTER TABLE omni.run DROP CONSTRAINT run_trigger_check;
ALTER TABLE omni.run ADD CONSTRAINT run_trigger_check
    CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import', 'ab', 'ablate',
                       'retry', 'concurrency'));
