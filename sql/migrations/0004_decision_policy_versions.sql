-- Policy versions hash only the decision-relevant fields from here on (a report-only edit such
-- as the SLO keeps the version, so streaks and alerts carry on). The Python data step of this
-- migration (omni_tasks/store/policy_versions.py) rewrites stored versions to the new hash, so
-- decisions stored before keep their streaks. Nothing changes in the schema itself.
SELECT 1;
