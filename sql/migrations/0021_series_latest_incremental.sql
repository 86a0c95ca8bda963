-- A decision refreshes only its own branch's row of series_latest: the newest decision of that
-- (series, candidate branch), read through an index, with the series' upstream columns kept
-- as they are (only imports change those). 0020 recomputed the series' whole decision history
-- and every imported run on each decision, so `decide` grew with history (bench_fleet_year).
-- A branch's last decision going away still rebuilds its series.
CREATE INDEX gate_decision_latest_idx ON omni.gate_decision
    (benchmark, model, lane, variant, candidate_branch, nightly DESC, decision_id DESC);

CREATE FUNCTION omni.refresh_series_decision(b text, m text, l text, v text, cand text)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    d record;
    u omni.series_latest%ROWTYPE;
BEGIN
    SELECT baseline_branch, nightly, verdict, confirmed INTO d
    FROM omni.gate_decision
    WHERE benchmark = b AND model = m AND lane = l AND variant = v AND candidate_branch = cand
    ORDER BY nightly DESC, decision_id DESC
    LIMIT 1;
    IF NOT FOUND THEN
        PERFORM omni.refresh_series_latest(b, m, l, v);
        RETURN;
    END IF;
    -- Every row of a series carries the same upstream columns (0020's join).
    SELECT * INTO u FROM omni.series_latest
    WHERE benchmark = b AND model = m AND lane = l AND variant = v
    LIMIT 1;
    DELETE FROM omni.series_latest
    WHERE benchmark = b AND model = m AND lane = l AND variant = v
      AND (candidate_branch = cand OR candidate_branch IS NULL);
    INSERT INTO omni.series_latest VALUES (
        b, m, l, v, cand, d.baseline_branch, d.nightly, d.verdict, d.confirmed,
        u.upstream_nightly, u.upstream_verdict, u.upstream_failing_14d, u.upstream_fail_streak,
        u.validity, u.blocking, u.sku);
END $$;

CREATE FUNCTION omni.decision_series_latest_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM omni.refresh_series_decision(
            OLD.benchmark, OLD.model, OLD.lane, OLD.variant, OLD.candidate_branch);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM omni.refresh_series_decision(
            NEW.benchmark, NEW.model, NEW.lane, NEW.variant, NEW.candidate_branch);
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER gate_decision_series_latest ON omni.gate_decision;
CREATE TRIGGER gate_decision_series_latest
    AFTER INSERT OR UPDATE OR DELETE ON omni.gate_decision
    FOR EACH ROW EXECUTE FUNCTION omni.decision_series_latest_changed();
