SELECT max(nightly) AS n FROM omni.gate_decision WHERE benchmark = %(benchmark)s
