SELECT max(nightly) AS n FROM omni.run WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s
