-- Item outcomes that are not WER-shaped (issue 19): a multiple-choice item is right or wrong,
-- has breakdown labels (task, category, duration), and seed-TTS items may carry secondary
-- scores. `metric` is the item's value in its benchmark's own metric: WER for seed-TTS,
-- 1 (correct) or 0 for multiple choice.
ALTER TABLE omni.clip_grade
    ADD COLUMN incorrect boolean,
    ADD COLUMN breakdown jsonb,
    ADD COLUMN sim double precision,
    ADD COLUMN utmos double precision,
    ADD COLUMN metric double precision GENERATED ALWAYS AS (
        CASE WHEN incorrect IS NULL THEN wer WHEN incorrect THEN 0.0 ELSE 1.0 END) STORED;

-- Figures shown beside the gated tail, never gated: a multiple-choice run's accuracy, and the
-- secondary scores seed-TTS items may carry (speaker similarity, UTMOS); NULL where a run has
-- none.
CREATE VIEW omni.v_item_scores AS
SELECT t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau,
       avg((t.stats ->> 'accuracy')::double precision) AS accuracy,
       avg((t.stats ->> 'sim_mean')::double precision) AS sim_mean,
       avg((t.stats ->> 'utmos_mean')::double precision) AS utmos_mean
FROM omni.v_run_stats t
GROUP BY t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau;

GRANT SELECT ON omni.v_item_scores TO omni_reader;
