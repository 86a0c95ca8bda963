-- Every series of the fleet: our newest verdict per candidate beside upstream's newest
-- imported verdict, its failing nights and streak, and whether that night was valid.
SELECT benchmark, model, lane, candidate_branch, variant, nightly, verdict, regressed_14d,
       upstream_nightly, upstream_verdict, upstream_failing_14d, upstream_fail_streak, validity
FROM omni.v_fleet_latest
ORDER BY 1, 2, 3, 4;
