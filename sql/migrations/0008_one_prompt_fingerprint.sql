-- Imported runs' prompt fingerprints, rewritten to the one fingerprint every run has
-- (omni_tasks/prompts.py: system prompt and user format). Imports used to hash the system
-- prompt alone, so an imported run never paired with a synthesized one. The rewrite is a data
-- step (store/prompt_fingerprints.py): the hash is Python's JSON of the pair.
SELECT 1;
