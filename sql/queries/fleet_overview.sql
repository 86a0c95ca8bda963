-- Every series of the fleet: our newest verdict per candidate beside upstream's newest
-- imported verdict, its failing nights and streak, and whether that night was valid.
SELECT coalesce(f.benchmark, u.benchmark) AS benchmark, coalesce(f.model, u.model) AS model,
       coalesce(f.lane, u.lane) AS lane, f.candidate_branch, f.variant, f.nightly, f.verdict,
       f.regressed_14d, u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d,
       u.upstream_fail_streak, u.validity
FROM (SELECT * FROM omni.v_fleet_latest WHERE nightly IS NOT NULL) f
FULL OUTER JOIN omni.v_fleet_upstream u USING (benchmark, model, lane)
ORDER BY 1, 2, 3, 4;
