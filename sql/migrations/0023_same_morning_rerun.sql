-- Same-morning confirmation (jobs/rerun.py, analysis/rerun.py): a REGRESSED, unconfirmed
-- night's either-broken items re-run on both branches at fresh seeds. Its runs are their own
-- trigger, `rerun`, so no night's statistics, decision or baseline history ever reads them;
-- its result is one row per series' night and pair, which the night's decision reads back.
ALTER TABLE omni.run DROP CONSTRAINT run_trigger_check;
ALTER TABLE omni.run ADD CONSTRAINT run_trigger_check
    CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import', 'ab', 'ablate',
                       'retry', 'concurrency', 'rerun'));

CREATE TABLE omni.rerun (
    rerun_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    benchmark         text NOT NULL,
    model             text NOT NULL,
    lane              text NOT NULL,
    nightly           date NOT NULL,
    candidate_branch  text NOT NULL,
    baseline_branch   text NOT NULL,
    variant           text NOT NULL,
    result            jsonb NOT NULL,   -- analysis/rerun.py RerunResult
    run_keys          text[] NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (benchmark, model, lane, nightly, candidate_branch, baseline_branch, variant)
);
