-- Whether any run of the night came from the simulator (the report says so on top).
SELECT coalesce(bool_or(coalesce((stack ->> 'simulated')::boolean, false)
                        OR config::text ILIKE '%%simulat%%'), false) AS s
FROM omni.run WHERE benchmark = %(benchmark)s AND model = %(model)s AND lane = %(lane)s AND nightly = %(nightly)s
