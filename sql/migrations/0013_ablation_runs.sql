-- Ablation runs (omni-tasks ablate, the omni_ablate DAG) are their own trigger: the candidate
-- stack with one deploy override on a night's discriminating clips, which no gate reads.
ALTER TABLE omni.run DROP CONSTRAINT run_trigger_check;
ALTER TABLE omni.run ADD CONSTRAINT run_trigger_check
    CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import', 'ab', 'ablate'));
