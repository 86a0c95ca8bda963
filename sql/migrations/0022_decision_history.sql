-- Each decision keeps its history-aware evidence (issue 65): tonight's candidate against the
-- baseline's per-item history {"z", "delta", "n", "nights", "refused", "phi", "phi_nights"},
-- so the accumulating detector over a key's nights reads stored z's, never item rows again.
-- NULL: decided before it was kept, or a pair with no history (INFRA, a non-default baseline).
ALTER TABLE omni.gate_decision ADD COLUMN history jsonb;

-- A run's newest complete grading, looked up by run (night_baseline_totals.sql reads 60 nights
-- of baseline runs): without it each lookup scans gradings back from the newest, a cost that
-- grows with history (bench/bench_fleet_year.py).
CREATE INDEX grading_run_idx ON omni.grading (run_id, grading_id DESC);
