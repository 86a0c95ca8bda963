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
