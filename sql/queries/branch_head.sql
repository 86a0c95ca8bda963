-- The head recorded for a branch on a night, if any.
SELECT commit_sha, reconstructed FROM omni.branch_head
WHERE benchmark = %(benchmark)s AND branch = %(branch)s AND nightly = %(nightly)s
