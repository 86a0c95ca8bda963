-- One gate decision's verdict, confirmation and reasons, as they stand now.
SELECT nightly, verdict, confirmed, reasons FROM omni.gate_decision
WHERE decision_id = %(decision_id)s
