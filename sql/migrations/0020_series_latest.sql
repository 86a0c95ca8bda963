-- The fleet overview reads a maintained latest-per-series table, not a scan over every decision
-- and imported run: a decision or an upstream-imported run refreshes its own series' rows
-- (one series' history, through the series indexes), so the panel's cost is the number of
-- series, however many nights are on record. Only the 14-night REGRESSED count is read live,
-- over the last 14 nights' decisions (it is relative to the fleet's newest night).
CREATE TABLE omni.series_latest (
    benchmark            text NOT NULL,
    model                text NOT NULL,
    lane                 text NOT NULL,
    variant              text NOT NULL,
    candidate_branch     text,  -- NULL: a series only upstream's imports have
    baseline_branch      text,
    nightly              date,
    verdict              text,
    confirmed            boolean,
    upstream_nightly     date,
    upstream_verdict     text,
    upstream_failing_14d bigint,
    upstream_fail_streak bigint,
    validity             jsonb,
    blocking             boolean,
    sku                  text
);
CREATE UNIQUE INDEX series_latest_key
    ON omni.series_latest (benchmark, model, lane, variant, coalesce(candidate_branch, ''));
CREATE INDEX gate_decision_nightly_idx ON omni.gate_decision (nightly);
CREATE INDEX run_series_variant_idx ON omni.run (benchmark, model, lane, variant, nightly);

-- One series' rows, as v_fleet_latest (0017) computed them for every series at once.
CREATE FUNCTION omni.refresh_series_latest(b text, m text, l text, v text) RETURNS void
LANGUAGE sql AS $$
    DELETE FROM omni.series_latest
    WHERE benchmark = b AND model = m AND lane = l AND variant = v;
    INSERT INTO omni.series_latest
    WITH ours AS (
        SELECT DISTINCT ON (candidate_branch)
               candidate_branch, baseline_branch, nightly, verdict, confirmed
        FROM omni.gate_decision
        WHERE benchmark = b AND model = m AND lane = l AND variant = v
        ORDER BY candidate_branch, nightly DESC, decision_id DESC
    ), up AS (
        SELECT upstream_nightly, upstream_verdict, upstream_failing_14d, upstream_fail_streak,
               validity, blocking, sku
        FROM omni.v_fleet_upstream
        WHERE benchmark = b AND model = m AND lane = l AND variant = v
    )
    SELECT b, m, l, v, o.candidate_branch, o.baseline_branch, o.nightly, o.verdict,
           o.confirmed, u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d,
           u.upstream_fail_streak, u.validity, u.blocking, u.sku
    FROM ours o LEFT JOIN up u ON true
    UNION ALL
    SELECT b, m, l, v, NULL, NULL, NULL, NULL, NULL, u.upstream_nightly, u.upstream_verdict,
           u.upstream_failing_14d, u.upstream_fail_streak, u.validity, u.blocking, u.sku
    FROM up u WHERE NOT EXISTS (SELECT 1 FROM ours);
$$;

CREATE FUNCTION omni.series_latest_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM omni.refresh_series_latest(OLD.benchmark, OLD.model, OLD.lane, OLD.variant);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM omni.refresh_series_latest(NEW.benchmark, NEW.model, NEW.lane, NEW.variant);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER gate_decision_series_latest
    AFTER INSERT OR UPDATE OR DELETE ON omni.gate_decision
    FOR EACH ROW EXECUTE FUNCTION omni.series_latest_changed();
-- Only runs that carry upstream's verdicts (imports) change the upstream columns; a run's own
-- status updates while it runs change nothing here.
CREATE TRIGGER run_series_latest_insert AFTER INSERT ON omni.run
    FOR EACH ROW WHEN (NEW.source ? 'upstream_gates')
    EXECUTE FUNCTION omni.series_latest_changed();
CREATE TRIGGER run_series_latest_update AFTER UPDATE ON omni.run
    FOR EACH ROW WHEN (OLD.source ? 'upstream_gates' OR NEW.source ? 'upstream_gates')
    EXECUTE FUNCTION omni.series_latest_changed();
CREATE TRIGGER run_series_latest_delete AFTER DELETE ON omni.run
    FOR EACH ROW WHEN (OLD.source ? 'upstream_gates')
    EXECUTE FUNCTION omni.series_latest_changed();

-- Every series again: after a TRUNCATE (which fires no row trigger) and for what is on record
-- already.
CREATE FUNCTION omni.rebuild_series_latest() RETURNS void
LANGUAGE sql AS $$
    DELETE FROM omni.series_latest;
    SELECT omni.refresh_series_latest(benchmark, model, lane, variant)
    FROM (SELECT benchmark, model, lane, variant FROM omni.gate_decision
          UNION SELECT benchmark, model, lane, variant FROM omni.v_upstream_night) s;
$$;

CREATE FUNCTION omni.series_latest_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM omni.rebuild_series_latest();
    RETURN NULL;
END $$;

CREATE TRIGGER gate_decision_series_latest_truncate AFTER TRUNCATE ON omni.gate_decision
    FOR EACH STATEMENT EXECUTE FUNCTION omni.series_latest_truncated();
CREATE TRIGGER run_series_latest_truncate AFTER TRUNCATE ON omni.run
    FOR EACH STATEMENT EXECUTE FUNCTION omni.series_latest_truncated();

SELECT omni.rebuild_series_latest();

CREATE OR REPLACE VIEW omni.v_fleet_latest AS
WITH failing AS (
    SELECT benchmark, model, lane, candidate_branch, variant, count(*) AS regressed_nights_14d
    FROM omni.gate_decision
    WHERE nightly > (SELECT max(nightly) FROM omni.gate_decision) - 14
      AND verdict = 'REGRESSED'
    GROUP BY benchmark, model, lane, candidate_branch, variant
)
SELECT s.benchmark, s.model, s.lane, s.candidate_branch, s.baseline_branch, s.variant,
       s.nightly, s.verdict, s.confirmed, coalesce(f.regressed_nights_14d, 0) AS regressed_14d,
       s.upstream_nightly, s.upstream_verdict, s.upstream_failing_14d, s.upstream_fail_streak,
       s.validity, s.blocking, s.sku
FROM omni.series_latest s
LEFT JOIN failing f ON (f.benchmark, f.model, f.lane, f.candidate_branch, f.variant)
    = (s.benchmark, s.model, s.lane, s.candidate_branch, s.variant);

GRANT SELECT ON omni.series_latest TO omni_reader;
