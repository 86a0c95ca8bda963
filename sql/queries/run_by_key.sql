SELECT run_id, run_key, benchmark, nightly, branch, commit_sha, commit_time, observed_head,
       lineage, variant, config, config_hash, stack, execution, execution_fingerprint,
       dataset_fingerprint, prompt_fingerprint, system_prompt, seed, trigger, airflow_dag_id,
       airflow_run_id, status, n_expected, summary, source, content_hash, created_at,
       finished_at, model, lane
FROM omni.run WHERE run_key = %(run_key)s
