-- Migration 0004's data step: move one stored policy version to its decision-field hash in
-- every table keyed by it; a row whose new key already exists keeps its old version.
WITH decisions AS (
    UPDATE omni.gate_decision t SET policy_version = %(new)s
    WHERE policy_version = %(old)s AND NOT EXISTS (
        SELECT 1 FROM omni.gate_decision u
        WHERE u.policy_version = %(new)s AND u.benchmark = t.benchmark AND u.nightly = t.nightly
          AND u.candidate_branch = t.candidate_branch AND u.baseline_branch = t.baseline_branch
          AND u.variant = t.variant)
), comparisons AS (
    UPDATE omni.comparison t SET policy_version = %(new)s
    WHERE policy_version = %(old)s AND NOT EXISTS (
        SELECT 1 FROM omni.comparison u
        WHERE u.policy_version = %(new)s AND u.baseline_grading_id = t.baseline_grading_id
          AND u.candidate_grading_id = t.candidate_grading_id AND u.tau = t.tau)
)
UPDATE omni.run_stats t SET policy_version = %(new)s
WHERE policy_version = %(old)s AND NOT EXISTS (
    SELECT 1 FROM omni.run_stats u
    WHERE u.policy_version = %(new)s AND u.grading_id = t.grading_id AND u.tau = t.tau)
