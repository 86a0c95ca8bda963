-- Imported runs and the system prompt their fingerprint was made from.
SELECT run_id, system_prompt, prompt_fingerprint FROM omni.run
WHERE trigger = 'import' AND system_prompt IS NOT NULL
