-- A series' night's same-morning re-run result (one per pair; a retry replaces it).
INSERT INTO omni.rerun (benchmark, model, lane, nightly, candidate_branch, baseline_branch,
                        variant, result, run_keys)
VALUES (%(benchmark)s, %(model)s, %(lane)s, %(nightly)s, %(candidate_branch)s,
        %(baseline_branch)s, %(variant)s, %(result)s, %(run_keys)s)
ON CONFLICT (benchmark, model, lane, nightly, candidate_branch, baseline_branch, variant)
DO UPDATE SET result = EXCLUDED.result, run_keys = EXCLUDED.run_keys, created_at = now()
