INSERT INTO omni.run (
    run_key, benchmark, model, lane, nightly, branch, commit_sha, commit_time, observed_head, lineage,
    variant, config, config_hash, stack, execution, execution_fingerprint, dataset_fingerprint,
    prompt_fingerprint, system_prompt, seed, trigger, airflow_dag_id, airflow_run_id, status,
    n_expected, summary, source, content_hash, finished_at)
VALUES (
    %(run_key)s, %(benchmark)s, %(model)s, %(lane)s, %(nightly)s, %(branch)s, %(commit_sha)s, %(commit_time)s,
    %(observed_head)s, %(lineage)s, %(variant)s, %(config)s, %(config_hash)s, %(stack)s,
    %(execution)s, %(execution_fingerprint)s, %(dataset_fingerprint)s, %(prompt_fingerprint)s,
    %(system_prompt)s, %(seed)s, %(trigger)s, %(airflow_dag_id)s, %(airflow_run_id)s, %(status)s,
    %(n_expected)s, %(summary)s, %(source)s, %(content_hash)s,
    CASE WHEN %(status)s = 'running' THEN NULL ELSE now() END)
RETURNING run_id
