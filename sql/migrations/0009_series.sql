-- Series = model × benchmark × lane (omni_tasks/series.py): every run and gate decision names
-- its model and hardware lane, and a decision's key includes them, so two lanes (or models) of
-- one benchmark keep their own baselines. Rows stored before this belong to the one series the
-- platform then ran: the model the run asked for (else Qwen3-Omni), lane `default`.
ALTER TABLE omni.run
    ADD COLUMN model text NOT NULL DEFAULT 'Qwen/Qwen3-Omni-30B-A3B-Instruct',
    ADD COLUMN lane  text NOT NULL DEFAULT 'default';
UPDATE omni.run SET model = config ->> 'model'
WHERE config ? 'model' AND config ->> 'model' <> model;
CREATE INDEX run_series_night_idx ON omni.run (benchmark, model, lane, nightly);

ALTER TABLE omni.gate_decision
    ADD COLUMN model text NOT NULL DEFAULT 'Qwen/Qwen3-Omni-30B-A3B-Instruct',
    ADD COLUMN lane  text NOT NULL DEFAULT 'default';
UPDATE omni.gate_decision d SET model = r.model
FROM omni.run r WHERE r.run_id = d.candidate_run_id AND r.model <> d.model;
ALTER TABLE omni.gate_decision DROP CONSTRAINT
    gate_decision_benchmark_nightly_candidate_branch_baseline_b_key;
ALTER TABLE omni.gate_decision ADD CONSTRAINT gate_decision_series_key UNIQUE
    (benchmark, model, lane, nightly, candidate_branch, baseline_branch, variant, policy_version);
DROP INDEX omni.gate_decision_series_idx;
CREATE INDEX gate_decision_series_idx ON omni.gate_decision
    (benchmark, model, lane, candidate_branch, baseline_branch, variant, nightly);

-- Alert keys gain the series after the benchmark (`benchmark|model|lane|…`); task-failure
-- keys (`benchmark|task|…`) are the DAG's, not a series'.
UPDATE omni.alert
SET alert_key = split_part(alert_key, '|', 1) || '|Qwen/Qwen3-Omni-30B-A3B-Instruct|default|'
    || substr(alert_key, length(split_part(alert_key, '|', 1)) + 2)
WHERE split_part(alert_key, '|', 2) <> 'task';

-- The dashboard views carry the series (appended columns: CREATE OR REPLACE keeps the old
-- ones in place), and everything aggregated or joined per night is aggregated per series.
CREATE OR REPLACE VIEW omni.v_run_stats AS
SELECT (r.nightly::timestamp AT TIME ZONE 'UTC') AS time,
       r.run_id, r.run_key, r.benchmark, r.nightly, r.branch, r.variant, r.seed, r.commit_sha,
       r.status, r.trigger, g.grading_id, g.grader_id, s.tau, s.policy_version,
       s.tail_fraction, s.tail_ci_low, s.tail_ci_high, s.capped_mean_wer, s.mean_wer,
       s.median_wer, s.coverage, s.n_expected, s.n_scored, s.n_failed, s.n_infra,
       coalesce((s.stats ->> 'n_broken')::int, 0) AS n_broken, s.stats, r.model, r.lane
FROM omni.run r
JOIN omni.grading g
  ON g.grading_id = (SELECT max(g2.grading_id) FROM omni.grading g2
                     WHERE g2.run_id = r.run_id AND g2.status = 'complete')
JOIN LATERAL (
    SELECT DISTINCT ON (rs.tau) rs.* FROM omni.run_stats rs
    WHERE rs.grading_id = g.grading_id ORDER BY rs.tau, rs.computed_at DESC
) s ON true;

CREATE OR REPLACE VIEW omni.v_nightly_trend AS
SELECT t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau,
       count(*) AS runs,
       sum(t.n_broken)::double precision / nullif(sum(t.n_scored + t.n_failed), 0)
           AS tail_fraction,
       min(t.tail_ci_low) AS tail_ci_low, max(t.tail_ci_high) AS tail_ci_high,
       avg(t.capped_mean_wer) AS capped_mean_wer, avg(t.mean_wer) AS mean_wer,
       min(t.coverage) AS coverage,
       d.verdict, d.confirmed, t.model, t.lane
FROM omni.v_run_stats t
LEFT JOIN LATERAL (
    SELECT verdict, confirmed FROM omni.gate_decision gd
    WHERE gd.benchmark = t.benchmark AND gd.model = t.model AND gd.lane = t.lane
      AND gd.nightly = t.nightly AND gd.candidate_branch = t.branch AND gd.variant = t.variant
    ORDER BY gd.decided_at DESC LIMIT 1
) d ON true
GROUP BY t.time, t.benchmark, t.model, t.lane, t.nightly, t.branch, t.variant, t.tau,
         d.verdict, d.confirmed;

CREATE OR REPLACE VIEW omni.v_failure_modes AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, m.key AS mode,
       sum((m.value ->> 'clips')::int) AS clips, t.model, t.lane
FROM omni.v_run_stats t, jsonb_each(t.stats -> 'failure_modes') m
GROUP BY t.time, t.benchmark, t.model, t.lane, t.branch, t.variant, t.tau, m.key;

CREATE OR REPLACE VIEW omni.v_origin_mix AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, o.key AS origin,
       sum(o.value::int) AS clips, t.model, t.lane
FROM omni.v_run_stats t, jsonb_each_text(t.stats -> 'origins') o
GROUP BY t.time, t.benchmark, t.model, t.lane, t.branch, t.variant, t.tau, o.key;

CREATE OR REPLACE VIEW omni.v_question_split AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, k.kind,
       avg((t.stats -> k.kind ->> 'tail_fraction')::double precision) AS tail_fraction,
       sum((t.stats -> k.kind ->> 'n_broken')::int) AS broken, t.model, t.lane
FROM omni.v_run_stats t, (VALUES ('questions'), ('statements')) AS k (kind)
WHERE t.stats ? k.kind
GROUP BY t.time, t.benchmark, t.model, t.lane, t.branch, t.variant, t.tau, k.kind;

CREATE OR REPLACE VIEW omni.v_item_scores AS
SELECT t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau,
       avg((t.stats ->> 'accuracy')::double precision) AS accuracy,
       avg((t.stats ->> 'sim_mean')::double precision) AS sim_mean,
       avg((t.stats ->> 'utmos_mean')::double precision) AS utmos_mean, t.model, t.lane
FROM omni.v_run_stats t
GROUP BY t.time, t.benchmark, t.model, t.lane, t.nightly, t.branch, t.variant, t.tau;

CREATE OR REPLACE VIEW omni.v_official_trend AS
SELECT (r.nightly::timestamp AT TIME ZONE 'UTC') AS time, r.benchmark, r.nightly, r.branch,
       r.variant, count(*) AS runs,
       bool_and(r.status = 'summary_only') AS summary_only,
       avg((coalesce(o.figures, r.summary) ->> 'seed_tts_content_error_mean')::double precision)
           AS official_mean,
       sum((coalesce(o.figures, r.summary) ->> 'seed_tts_content_evaluated')::bigint)
           AS evaluated, r.model, r.lane
FROM omni.run r
LEFT JOIN LATERAL (
    SELECT rs.stats -> 'official' AS figures
    FROM omni.grading g JOIN omni.run_stats rs USING (grading_id)
    WHERE g.run_id = r.run_id AND rs.stats ? 'official'
    ORDER BY g.grading_id DESC, rs.computed_at DESC LIMIT 1
) o ON true
WHERE r.status <> 'running'
  AND coalesce(o.figures, r.summary) ? 'seed_tts_content_error_mean'
GROUP BY r.nightly, r.benchmark, r.model, r.lane, r.branch, r.variant;

-- v_latest_paired selects * from v_gate_history: both are rebuilt, newest per series key.
DROP VIEW omni.v_regressed_clips;
DROP VIEW omni.v_latest_paired;
CREATE OR REPLACE VIEW omni.v_gate_history AS
SELECT (d.nightly::timestamp AT TIME ZONE 'UTC') AS time, d.decision_id, d.benchmark,
       d.nightly, d.candidate_branch, d.baseline_branch, d.variant, d.verdict, d.confirmed,
       d.mcnemar_p, d.mcnemar_p_holm, d.policy_version, c.comparison_id, c.tau, c.n_paired,
       c.stable_broken, c.regressed, c.improved, c.stable_ok, c.delta_tail_fraction,
       c.delta_tail_ci_low, c.delta_tail_ci_high, c.delta_capped_mean_wer,
       rc.run_key AS candidate_run_key, rb.run_key AS baseline_run_key, d.reasons,
       d.model, d.lane
FROM omni.gate_decision d
LEFT JOIN omni.comparison c ON c.comparison_id = d.comparison_id
LEFT JOIN omni.run rc ON rc.run_id = d.candidate_run_id
LEFT JOIN omni.run rb ON rb.run_id = d.baseline_run_id;

CREATE VIEW omni.v_latest_paired AS
SELECT DISTINCT ON (benchmark, model, lane, candidate_branch, baseline_branch, variant) *
FROM omni.v_gate_history
ORDER BY benchmark, model, lane, candidate_branch, baseline_branch, variant, nightly DESC,
         decision_id DESC;

CREATE VIEW omni.v_regressed_clips AS
SELECT h.time, h.benchmark, h.nightly, h.candidate_branch, h.baseline_branch, h.variant,
       h.comparison_id, u.utt_id, ca.reference_text AS reference,
       cg.hypothesis AS candidate_heard, cg.wer AS candidate_wer,
       bg.hypothesis AS baseline_heard, bg.wer AS baseline_wer,
       ca.synth_status AS candidate_status, ca.audio_uri, ca.thinker_text, h.model, h.lane
FROM omni.v_gate_history h
JOIN omni.comparison c ON c.comparison_id = h.comparison_id
CROSS JOIN LATERAL jsonb_array_elements_text(c.result -> 'regressed_clips') AS u (utt_id)
JOIN omni.grading cgr ON cgr.grading_id = c.candidate_grading_id
JOIN omni.clip_audio ca ON ca.run_id = cgr.run_id AND ca.utt_id = u.utt_id
LEFT JOIN omni.clip_grade cg ON cg.grading_id = c.candidate_grading_id AND cg.utt_id = u.utt_id
LEFT JOIN omni.clip_grade bg ON bg.grading_id = c.baseline_grading_id AND bg.utt_id = u.utt_id;

GRANT SELECT ON ALL TABLES IN SCHEMA omni TO omni_reader;
