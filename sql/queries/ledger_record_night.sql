-- A series' branch's night as the ledger read it (which run and grading, at which tau); its
-- item rows are replaced by the caller (ledger_clear_items.sql, copy_item_night.sql).
INSERT INTO omni.ledger_night
    (benchmark, model, lane, branch, nightly, run_id, grading_id, commit_sha, tau)
VALUES (%(benchmark)s, %(model)s, %(lane)s, %(branch)s, %(nightly)s, %(run_id)s,
        %(grading_id)s, %(commit_sha)s, %(tau)s)
ON CONFLICT (benchmark, model, lane, branch, nightly) DO UPDATE
SET run_id = EXCLUDED.run_id, grading_id = EXCLUDED.grading_id,
    commit_sha = EXCLUDED.commit_sha, tau = EXCLUDED.tau, recorded_at = now()
RETURNING night_id
