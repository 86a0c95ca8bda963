-- Replacing a run (a partial run redone) deletes its gradings and their comparisons; the gate
-- decisions that cite them get NULL links. Two cascades reach one decision row (the run and the
-- comparison); checked immediately, the first SET NULL trips over the second's pending delete.
-- Checking at commit lets both cascades finish.
ALTER TABLE omni.gate_decision
    ALTER CONSTRAINT gate_decision_comparison_id_fkey DEFERRABLE INITIALLY DEFERRED,
    ALTER CONSTRAINT gate_decision_candidate_run_id_fkey DEFERRABLE INITIALLY DEFERRED,
    ALTER CONSTRAINT gate_decision_baseline_run_id_fkey DEFERRABLE INITIALLY DEFERRED;
