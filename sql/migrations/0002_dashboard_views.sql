-- Views the Grafana panels and the HTML report read. They follow Grafana's Postgres
-- conventions (a `time` column; branch/variant/benchmark columns for `IN ($var)` filters) and
-- read only pre-aggregated rows (run_stats, comparison, gate_decision): a panel never scans
-- clip tables except the regressed-clips drill-down, which is bounded by one comparison.

-- One row per run x tau: the statistics of the run's newest grading (newest policy version).
-- Written so that filters on run columns (benchmark, branch, nightly) reach the run table
-- before any join: a 90-day panel touches 90 nights of runs, not a year of them.
CREATE VIEW omni.v_run_stats AS
SELECT (r.nightly::timestamp AT TIME ZONE 'UTC') AS time,
       r.run_id, r.run_key, r.benchmark, r.nightly, r.branch, r.variant, r.seed, r.commit_sha,
       r.status, r.trigger, g.grading_id, g.grader_id, s.tau, s.policy_version,
       s.tail_fraction, s.tail_ci_low, s.tail_ci_high, s.capped_mean_wer, s.mean_wer,
       s.median_wer, s.coverage, s.n_expected, s.n_scored, s.n_failed, s.n_infra,
       coalesce((s.stats ->> 'n_broken')::int, 0) AS n_broken, s.stats
FROM omni.run r
JOIN omni.grading g
  ON g.grading_id = (SELECT max(g2.grading_id) FROM omni.grading g2 WHERE g2.run_id = r.run_id)
JOIN LATERAL (
    SELECT DISTINCT ON (rs.tau) rs.* FROM omni.run_stats rs
    WHERE rs.grading_id = g.grading_id ORDER BY rs.tau, rs.computed_at DESC
) s ON true;

-- Nightly trend per benchmark x branch x variant x tau, seeds pooled, with the night's verdict
-- for that branch as a candidate (NULL for the baseline itself).
CREATE VIEW omni.v_nightly_trend AS
SELECT t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau,
       count(*) AS runs,
       sum(t.n_broken)::double precision / nullif(sum(t.n_scored + t.n_failed), 0)
           AS tail_fraction,
       min(t.tail_ci_low) AS tail_ci_low, max(t.tail_ci_high) AS tail_ci_high,
       avg(t.capped_mean_wer) AS capped_mean_wer, avg(t.mean_wer) AS mean_wer,
       min(t.coverage) AS coverage,
       d.verdict, d.confirmed
FROM omni.v_run_stats t
LEFT JOIN LATERAL (
    SELECT verdict, confirmed FROM omni.gate_decision gd
    WHERE gd.benchmark = t.benchmark AND gd.nightly = t.nightly
      AND gd.candidate_branch = t.branch AND gd.variant = t.variant
    ORDER BY gd.decided_at DESC LIMIT 1
) d ON true
GROUP BY t.time, t.benchmark, t.nightly, t.branch, t.variant, t.tau, d.verdict, d.confirmed;

-- Broken clips by failure mode (over_generation, garbled, truncated, no_output).
CREATE VIEW omni.v_failure_modes AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, m.key AS mode,
       sum((m.value ->> 'clips')::int) AS clips
FROM omni.v_run_stats t, jsonb_each(t.stats -> 'failure_modes') m
GROUP BY t.time, t.benchmark, t.branch, t.variant, t.tau, m.key;

-- Broken clips by origin: thinker (its text was already wrong), talker, unknown.
CREATE VIEW omni.v_origin_mix AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, o.key AS origin,
       sum(o.value::int) AS clips
FROM omni.v_run_stats t, jsonb_each_text(t.stats -> 'origins') o
GROUP BY t.time, t.benchmark, t.branch, t.variant, t.tau, o.key;

-- Tail fraction of questions/requests vs statements.
CREATE VIEW omni.v_question_split AS
SELECT t.time, t.benchmark, t.branch, t.variant, t.tau, k.kind,
       avg((t.stats -> k.kind ->> 'tail_fraction')::double precision) AS tail_fraction,
       sum((t.stats -> k.kind ->> 'n_broken')::int) AS broken
FROM omni.v_run_stats t, (VALUES ('questions'), ('statements')) AS k (kind)
WHERE t.stats ? k.kind
GROUP BY t.time, t.benchmark, t.branch, t.variant, t.tau, k.kind;

-- Every gate decision with its paired figures (verdict history, latest A/B table).
CREATE VIEW omni.v_gate_history AS
SELECT (d.nightly::timestamp AT TIME ZONE 'UTC') AS time, d.decision_id, d.benchmark,
       d.nightly, d.candidate_branch, d.baseline_branch, d.variant, d.verdict, d.confirmed,
       d.mcnemar_p, d.mcnemar_p_holm, d.policy_version, c.comparison_id, c.tau, c.n_paired,
       c.stable_broken, c.regressed, c.improved, c.stable_ok, c.delta_tail_fraction,
       c.delta_tail_ci_low, c.delta_tail_ci_high, c.delta_capped_mean_wer,
       rc.run_key AS candidate_run_key, rb.run_key AS baseline_run_key, d.reasons
FROM omni.gate_decision d
LEFT JOIN omni.comparison c ON c.comparison_id = d.comparison_id
LEFT JOIN omni.run rc ON rc.run_id = d.candidate_run_id
LEFT JOIN omni.run rb ON rb.run_id = d.baseline_run_id;

-- The newest decision per key.
CREATE VIEW omni.v_latest_paired AS
SELECT DISTINCT ON (benchmark, candidate_branch, baseline_branch, variant) *
FROM omni.v_gate_history
ORDER BY benchmark, candidate_branch, baseline_branch, variant, nightly DESC, decision_id DESC;

-- Regressed clips of each decided comparison: reference, both transcripts, audio.
CREATE VIEW omni.v_regressed_clips AS
SELECT h.time, h.benchmark, h.nightly, h.candidate_branch, h.baseline_branch, h.variant,
       h.comparison_id, u.utt_id, ca.reference_text AS reference,
       cg.hypothesis AS candidate_heard, cg.wer AS candidate_wer,
       bg.hypothesis AS baseline_heard, bg.wer AS baseline_wer,
       ca.synth_status AS candidate_status, ca.audio_uri, ca.thinker_text
FROM omni.v_gate_history h
JOIN omni.comparison c ON c.comparison_id = h.comparison_id
CROSS JOIN LATERAL jsonb_array_elements_text(c.result -> 'regressed_clips') AS u (utt_id)
JOIN omni.grading cgr ON cgr.grading_id = c.candidate_grading_id
JOIN omni.clip_audio ca ON ca.run_id = cgr.run_id AND ca.utt_id = u.utt_id
LEFT JOIN omni.clip_grade cg ON cg.grading_id = c.candidate_grading_id AND cg.utt_id = u.utt_id
LEFT JOIN omni.clip_grade bg ON bg.grading_id = c.baseline_grading_id AND bg.utt_id = u.utt_id;

-- Set once an event has been pushed to Grafana as an API annotation (each event once).
ALTER TABLE omni.event ADD COLUMN grafana_annotation_id bigint;

-- Annotations: stack / grader / config changes, regressions opened and resolved.
CREATE VIEW omni.v_events AS
SELECT time, event_id, kind, benchmark, branch, variant, text, array_to_string(tags, ',') AS tags,
       grafana_annotation_id
FROM omni.event;

GRANT SELECT ON ALL TABLES IN SCHEMA omni TO omni_reader;
