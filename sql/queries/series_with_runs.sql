-- Every series with runs, and its newest night.
SELECT benchmark, model, lane, max(nightly) AS latest FROM omni.run
GROUP BY benchmark, model, lane ORDER BY benchmark, model, lane LIMIT 50
