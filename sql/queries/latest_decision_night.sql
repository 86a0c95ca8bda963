SELECT max(nightly) AS n FROM omni.gate_decision WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
