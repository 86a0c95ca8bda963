-- One branch x variant's nightly series of the harness's official mean, summary-only nights
-- included and marked.
SELECT nightly, official_mean, summary_only, runs
FROM omni.v_official_trend
WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND branch = %(branch)s AND variant = %(variant)s
  AND official_mean IS NOT NULL
ORDER BY nightly
