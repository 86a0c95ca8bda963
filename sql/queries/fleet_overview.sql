-- Every series of the fleet: our newest verdict per candidate beside upstream's newest
-- imported verdict, its failing nights and streak, whether that night was valid, the hardware
-- it ran on and whether upstream's step blocks.
SELECT benchmark, model, lane, candidate_branch, variant, nightly, verdict, regressed_14d,
       upstream_nightly, upstream_verdict, upstream_failing_14d, upstream_fail_streak, validity,
       blocking, sku
FROM omni.v_fleet_latest
ORDER BY benchmark, model COLLATE "C", lane, candidate_branch, variant;
