SELECT max(nightly) AS n FROM omni.run WHERE benchmark = %(benchmark)s
