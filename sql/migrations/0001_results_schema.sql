-- Results DB schema for omni-tasks (never Airflow's metadata DB).
--
-- Sizing plan (decided with the schema, for ~100 M clip rows = a year of fleet history:
-- benchmarks x branches x variants x seeds x 1088 clips x nights):
--   * Every clip-level access is "all clips of one run" (COPY on write, stats, paired A/B of two
--     runs, regrade) -- never a scan across runs. So clip_audio / clip_grade are HASH-partitioned
--     on their run/grading id (16 partitions): each partition stays ~6 M rows, its PK index stays
--     small enough to live in memory, and autovacuum works on partitions in parallel.
--   * Dashboards never read clip tables for trends: they read run_stats / comparison /
--     gate_decision (one row per run, pair or decision), which are tiny. Only the drill-down of
--     one comparison reads clips, by primary key.
--   * Retention prunes audio files (audio_uri), never rows: rows are small (~200 B) and are the
--     unit of truth, so no time-range partition drop is needed.
--   * Run-level lookups (nightly x branch x variant, run_key) are btree-indexed below.

CREATE SCHEMA IF NOT EXISTS omni;

CREATE TABLE omni.run (
    run_id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_key               text NOT NULL UNIQUE,
    benchmark             text NOT NULL,
    nightly               date NOT NULL,
    branch                text NOT NULL,
    commit_sha            text,
    commit_time           timestamptz,
    observed_head         text,              -- branch head recorded that night (branch_head)
    lineage               jsonb NOT NULL DEFAULT '{}'::jsonb,  -- flags, e.g. reachable_from_baseline
    variant               text NOT NULL DEFAULT 'default',
    config                jsonb NOT NULL DEFAULT '{}'::jsonb,
    config_hash           text NOT NULL,
    stack                 jsonb NOT NULL DEFAULT '{}'::jsonb,  -- vllm, vllm_omni, torch, cuda, driver
    execution             jsonb NOT NULL DEFAULT '{}'::jsonb,  -- gpu class, concurrency, max_num_seqs
    execution_fingerprint text,
    dataset_fingerprint   text,
    prompt_fingerprint    text,
    system_prompt         text,
    seed                  bigint,
    trigger               text NOT NULL
        CHECK (trigger IN ('nightly', 'backfill', 'manual', 'bisect', 'import')),
    airflow_dag_id        text,
    airflow_run_id        text,
    status                text NOT NULL
        CHECK (status IN ('running', 'complete', 'partial', 'failed', 'summary_only')),
    n_expected            integer NOT NULL CHECK (n_expected >= 0),
    summary               jsonb NOT NULL DEFAULT '{}'::jsonb,  -- source-reported aggregates
    source                jsonb NOT NULL DEFAULT '{}'::jsonb,  -- import file, sha256, build
    content_hash          text NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    finished_at           timestamptz
);
CREATE INDEX run_nightly_idx ON omni.run (benchmark, nightly, branch, variant);
CREATE INDEX run_branch_time_idx ON omni.run (benchmark, branch, variant, nightly DESC);

-- One row per (run, utterance): synthesis outcome. Failed requests are rows with a status.
CREATE TABLE omni.clip_audio (
    run_id          bigint NOT NULL REFERENCES omni.run (run_id) ON DELETE CASCADE,
    utt_id          text NOT NULL,
    ordinal         integer NOT NULL,
    reference_text  text NOT NULL,
    synth_status    text NOT NULL CHECK (synth_status IN (
        'ok', 'over_long', 'no_audio', 'timeout_partial', 'timeout_no_output', 'request_failed')),
    audio_uri       text,
    audio_seconds   double precision,
    latency_s       double precision,
    thinker_text    text,
    error_detail    text,
    PRIMARY KEY (run_id, utt_id)
) PARTITION BY HASH (run_id);

-- One grading = one grader applied to one run's audio. Re-grading adds a grading, not a run.
CREATE TABLE omni.grading (
    grading_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      bigint NOT NULL REFERENCES omni.run (run_id) ON DELETE CASCADE,
    grader_id   text NOT NULL,
    grader      jsonb NOT NULL DEFAULT '{}'::jsonb,
    status      text NOT NULL DEFAULT 'complete' CHECK (status IN ('running', 'complete', 'failed')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, grader_id)
);

CREATE TABLE omni.clip_grade (
    grading_id       bigint NOT NULL REFERENCES omni.grading (grading_id) ON DELETE CASCADE,
    utt_id           text NOT NULL,
    grade_status     text NOT NULL
        CHECK (grade_status IN ('graded', 'empty_transcript', 'grader_error')),
    hypothesis       text,
    hypothesis_norm  text,
    ref_words        integer,
    hyp_words        integer,
    substitutions    integer,
    deletions        integer,
    insertions       integer,
    hits             integer,
    wer              double precision,        -- uncapped, the official figure
    wer_capped       double precision GENERATED ALWAYS AS (least(wer, 1.0)) STORED,
    thinker_wer      double precision,        -- thinker text vs reference (origin)
    task_leak        boolean NOT NULL DEFAULT false,
    is_question      boolean NOT NULL DEFAULT false,
    error_detail     text,
    PRIMARY KEY (grading_id, utt_id),
    CHECK (wer IS NULL OR wer >= 0)
) PARTITION BY HASH (grading_id);

DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format('CREATE TABLE omni.clip_audio_p%s PARTITION OF omni.clip_audio '
                       'FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
        EXECUTE format('CREATE TABLE omni.clip_grade_p%s PARTITION OF omni.clip_grade '
                       'FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
    END LOOP;
END $$;

-- Per grading x tau x policy version; columns the dashboards read, plus the full stats object.
CREATE TABLE omni.run_stats (
    grading_id        bigint NOT NULL REFERENCES omni.grading (grading_id) ON DELETE CASCADE,
    tau               double precision NOT NULL,
    policy_version    text NOT NULL,
    n_expected        integer NOT NULL,
    n_scored          integer NOT NULL,
    n_failed          integer NOT NULL,
    n_infra           integer NOT NULL,
    coverage          double precision,
    mean_wer          double precision,
    median_wer        double precision,
    capped_mean_wer   double precision,
    tail_fraction     double precision,
    tail_ci_low       double precision,
    tail_ci_high      double precision,
    stats             jsonb NOT NULL,
    computed_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (grading_id, tau, policy_version)
);

CREATE TABLE omni.comparison (
    comparison_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    baseline_grading_id    bigint NOT NULL REFERENCES omni.grading (grading_id) ON DELETE CASCADE,
    candidate_grading_id   bigint NOT NULL REFERENCES omni.grading (grading_id) ON DELETE CASCADE,
    tau                    double precision NOT NULL,
    policy_version         text NOT NULL,
    comparable             boolean NOT NULL,
    n_paired               integer NOT NULL,
    stable_broken          integer NOT NULL,
    regressed              integer NOT NULL,
    improved               integer NOT NULL,
    stable_ok              integer NOT NULL,
    p_regress              double precision,
    p_improve              double precision,
    delta_tail_fraction    double precision,
    delta_tail_ci_low      double precision,
    delta_tail_ci_high     double precision,
    delta_capped_mean_wer  double precision,
    result                 jsonb NOT NULL,
    computed_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (baseline_grading_id, candidate_grading_id, tau, policy_version)
);

CREATE TABLE omni.gate_decision (
    decision_id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    benchmark         text NOT NULL,
    nightly           date NOT NULL,
    candidate_branch  text NOT NULL,
    baseline_branch   text NOT NULL,
    variant           text NOT NULL,
    policy_version    text NOT NULL,
    verdict           text NOT NULL
        CHECK (verdict IN ('REGRESSED', 'SAME', 'IMPROVED', 'UNKNOWN', 'INFRA')),
    confirmed         boolean NOT NULL DEFAULT false,
    mcnemar_p         double precision,
    mcnemar_p_holm    double precision,
    comparison_id     bigint REFERENCES omni.comparison (comparison_id) ON DELETE SET NULL,
    candidate_run_id  bigint REFERENCES omni.run (run_id) ON DELETE SET NULL,
    baseline_run_id   bigint REFERENCES omni.run (run_id) ON DELETE SET NULL,
    reasons           jsonb NOT NULL DEFAULT '[]'::jsonb,
    policy            jsonb NOT NULL,
    decided_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (benchmark, nightly, candidate_branch, baseline_branch, variant, policy_version)
);
CREATE INDEX gate_decision_series_idx
    ON omni.gate_decision (benchmark, candidate_branch, baseline_branch, variant, nightly);

CREATE TABLE omni.alert (
    alert_id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    alert_key         text NOT NULL,          -- benchmark|candidate|baseline|variant|metric
    kind              text NOT NULL CHECK (kind IN ('regression', 'infra')),
    state             text NOT NULL CHECK (state IN ('open', 'resolved')),
    opened_nightly    date NOT NULL,
    last_nightly      date NOT NULL,
    resolved_nightly  date,
    channel           text,
    parent_ts         text,
    details           jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at        timestamptz NOT NULL DEFAULT now()
);
-- At most one open alert per key.
CREATE UNIQUE INDEX alert_open_key_idx ON omni.alert (alert_key) WHERE state = 'open';

CREATE TABLE omni.alert_outbox (
    message_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    idempotency_key   text NOT NULL UNIQUE,
    alert_id          bigint REFERENCES omni.alert (alert_id) ON DELETE CASCADE,
    kind              text NOT NULL,          -- post, update, reply, upload
    payload           jsonb NOT NULL,
    state             text NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts          integer NOT NULL DEFAULT 0,
    last_error        text,
    slack_ts          text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    sent_at           timestamptz
);
CREATE INDEX alert_outbox_pending_idx ON omni.alert_outbox (message_id) WHERE state <> 'sent';

-- Rebases force-push: the head seen each night cannot be rebuilt later, so it is recorded.
CREATE TABLE omni.branch_head (
    benchmark      text NOT NULL,
    branch         text NOT NULL,
    nightly        date NOT NULL,
    commit_sha     text NOT NULL,
    commit_time    timestamptz,
    reconstructed  boolean NOT NULL DEFAULT false,
    observed_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (benchmark, branch, nightly)
);

CREATE TABLE omni.event (
    event_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time        timestamptz NOT NULL,
    kind        text NOT NULL,    -- stack_change, grader_change, config_change, regression_opened...
    benchmark   text,
    branch      text,
    variant     text,
    text        text NOT NULL,
    tags        text[] NOT NULL DEFAULT '{}',
    details     jsonb NOT NULL DEFAULT '{}'::jsonb,
    dedup_key   text UNIQUE
);
CREATE INDEX event_time_idx ON omni.event (time);

-- Read-only role for dashboards: SELECT on the results schema, nothing else.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omni_reader') THEN
        CREATE ROLE omni_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;  -- roles are cluster-wide: another database's migration created it meanwhile
END $$;
GRANT USAGE ON SCHEMA omni TO omni_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA omni TO omni_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA omni GRANT SELECT ON TABLES TO omni_reader;
