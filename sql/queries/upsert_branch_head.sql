-- The head seen first on a night is the one that counts (rebases force-push later).
INSERT INTO omni.branch_head (benchmark, branch, nightly, commit_sha, commit_time, reconstructed)
VALUES (%(benchmark)s, %(branch)s, %(nightly)s, %(commit_sha)s, %(commit_time)s, %(reconstructed)s)
ON CONFLICT (benchmark, branch, nightly) DO NOTHING
