-- One gate decision's verdict and confirmation, as they stand now.
SELECT nightly, verdict, confirmed FROM omni.gate_decision WHERE decision_id = %(decision_id)s
